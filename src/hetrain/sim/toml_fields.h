// Reading TOML tables with errors that name the file, the line and the key:
// shared by the cluster file (hetrain sim) and the inventory (hetrain plan).
#pragma once

#include <toml++/toml.h>

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hetrain::sim {

// Parses `text` as TOML; a syntax error becomes a DataError
// "FILE:LINE:COL: ...". `file` names the source in every message.
toml::table parse_toml(std::string_view text, const std::string& file);

// Reads `path` (DataError if it cannot) and parses it.
toml::table load_toml(const std::string& path);

// One table of the document. `where` is its dotted name for messages
// ("network", "group[2]"); empty for the root.
class Fields {
 public:
  Fields(const toml::table& table, std::string file, std::string where);

  // A number (integer or float) > 0, or >= 0 when `allow_zero`.
  double number(std::string_view key, std::optional<double> fallback, bool allow_zero = false) const;
  // A non-negative integer; at least `min`.
  std::size_t count(std::string_view key, std::optional<std::size_t> fallback, std::size_t min = 0) const;
  std::string text(std::string_view key, std::optional<std::string> fallback) const;
  bool has(std::string_view key) const;
  // An array of tables (`[[key]]`), each with its own Fields; empty if absent.
  std::vector<Fields> tables(std::string_view key) const;
  // A sub-table (`[key]`); nullopt if absent.
  std::optional<Fields> table(std::string_view key) const;
  // DataError naming every key not in `known` (a typo must not pass silently).
  void only(std::initializer_list<std::string_view> known) const;
  // A DataError "FILE:LINE: key 'K': MESSAGE" for this table's key (or the table).
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

 private:
  const toml::node* find(std::string_view key) const;
  std::string key_name(std::string_view key) const;
  const toml::table* table_;
  std::string file_;
  std::string where_;
};

}  // namespace hetrain::sim

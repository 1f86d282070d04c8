#include "hetrain/sim/toml_fields.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "hetrain/common/error.h"

namespace hetrain::sim {
namespace {

std::string location(const std::string& file, const toml::source_region& r) {
  return fmt::format("{}:{}:{}", file, r.begin.line, r.begin.column);
}

}  // namespace

toml::table parse_toml(std::string_view text, const std::string& file) {
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw DataError(fmt::format("{}: {}", location(file, e.source()), e.description()));
  }
}

toml::table load_toml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(fmt::format("cannot read {}", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_toml(text.str(), path);
}

Fields::Fields(const toml::table& table, std::string file, std::string where)
    : table_(&table), file_(std::move(file)), where_(std::move(where)) {}

const toml::node* Fields::find(std::string_view key) const { return table_->get(key); }

std::string Fields::key_name(std::string_view key) const {
  return where_.empty() ? std::string(key) : fmt::format("{}.{}", where_, key);
}

void Fields::fail(std::string_view key, const std::string& message) const {
  const toml::node* n = key.empty() ? nullptr : find(key);
  const auto& region = n != nullptr ? n->source() : table_->source();
  const std::string name = key.empty() ? where_ : key_name(key);
  throw DataError(fmt::format("{}: key '{}': {}", location(file_, region), name, message));
}

bool Fields::has(std::string_view key) const { return find(key) != nullptr; }

double Fields::number(std::string_view key, std::optional<double> fallback, bool allow_zero) const {
  const toml::node* n = find(key);
  if (n == nullptr) {
    if (!fallback) fail(key, "missing (required)");
    return *fallback;
  }
  std::optional<double> v;
  if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
  if (n->is_floating_point()) v = n->as_floating_point()->get();
  if (!v) fail(key, "expected a number");
  if (!std::isfinite(*v) || *v < 0.0 || (!allow_zero && *v == 0.0)) {
    fail(key, fmt::format("expected a {} number, got {}", allow_zero ? "non-negative" : "positive", *v));
  }
  return *v;
}

std::size_t Fields::count(std::string_view key, std::optional<std::size_t> fallback, std::size_t min) const {
  const toml::node* n = find(key);
  if (n == nullptr) {
    if (!fallback) fail(key, "missing (required)");
    return *fallback;
  }
  if (!n->is_integer()) fail(key, "expected an integer");
  const std::int64_t v = n->as_integer()->get();
  if (v < 0 || static_cast<std::size_t>(v) < min) {
    fail(key, fmt::format("expected an integer >= {}, got {}", min, v));
  }
  return static_cast<std::size_t>(v);
}

std::string Fields::text(std::string_view key, std::optional<std::string> fallback) const {
  const toml::node* n = find(key);
  if (n == nullptr) {
    if (!fallback) fail(key, "missing (required)");
    return *fallback;
  }
  if (!n->is_string()) fail(key, "expected a string");
  return n->as_string()->get();
}

std::vector<Fields> Fields::tables(std::string_view key) const {
  std::vector<Fields> out;
  const toml::node* n = find(key);
  if (n == nullptr) return out;
  const toml::array* a = n->as_array();
  if (a == nullptr) fail(key, fmt::format("expected an array of tables ([[{}]])", key));
  for (std::size_t i = 0; i < a->size(); ++i) {
    const toml::table* t = a->get(i)->as_table();
    if (t == nullptr) fail(key, fmt::format("expected an array of tables ([[{}]])", key));
    out.emplace_back(*t, file_, fmt::format("{}[{}]", key_name(key), i));
  }
  return out;
}

std::optional<Fields> Fields::table(std::string_view key) const {
  const toml::node* n = find(key);
  if (n == nullptr) return std::nullopt;
  const toml::table* t = n->as_table();
  if (t == nullptr) fail(key, "expected a table");
  return Fields(*t, file_, key_name(key));
}

void Fields::only(std::initializer_list<std::string_view> known) const {
  for (const auto& [k, v] : *table_) {
    bool ok = false;
    for (auto name : known) ok = ok || k.str() == name;
    if (!ok) fail(k.str(), "unknown key");
  }
}

}  // namespace hetrain::sim

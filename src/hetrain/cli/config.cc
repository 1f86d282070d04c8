#include "hetrain/cli/config.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

namespace hetrain::cli {
namespace {

// CLI11's TOML reader, with keys outside any section (or in a [run] or
// [worker] section) moved into the chosen subcommand's section, and unknown
// keys reported by name.
class SubcommandToml : public CLI::ConfigTOML {
 public:
  explicit SubcommandToml(std::vector<CLI::App*> subcommands) : subcommands_(std::move(subcommands)) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    auto items = CLI::ConfigTOML::from_config(input);
    const CLI::App* chosen = nullptr;
    for (const auto* s : subcommands_) {
      if (s->parsed()) chosen = s;
    }
    if (chosen == nullptr) return items;
    for (auto& item : items) {
      if (item.name == "++" || item.name == "--") continue;  // section markers
      // `run` hands its arguments, --config included, to the workers it
      // starts: a [run] section must reach `worker` too, so every section
      // named after one of the subcommands means the chosen one.
      if (item.parents.empty()) item.parents.push_back(chosen->get_name());
      for (const auto* s : subcommands_) {
        if (item.parents.size() == 1 && item.parents.front() == s->get_name())
          item.parents.front() = chosen->get_name();
      }
      if (item.parents.size() == 1 && item.parents.front() == chosen->get_name() &&
          chosen->get_option_no_throw("--" + item.name) == nullptr &&
          chosen->get_option_no_throw("-" + item.name) == nullptr) {
        throw CLI::ConfigError(
            fmt::format("config file: unknown key '{}' (keys are the long flags of `hetrain {}`)", item.name,
                        chosen->get_name()));
      }
    }
    return items;
  }

 private:
  std::vector<CLI::App*> subcommands_;
};

}  // namespace

void add_config_file(CLI::App& app, const std::vector<CLI::App*>& subcommands) {
  app.set_config("--config", "",
                 "Read flags from this TOML file (keys: long flag names); flags given override it");
  app.config_formatter(std::make_shared<SubcommandToml>(subcommands));
  app.allow_config_extras(CLI::config_extras_mode::error);
  for (auto* s : subcommands) {
    s->fallthrough();  // `hetrain run --config f.toml`: the top level reads it
    s->footer(
        "Flags can also come from a TOML file: --config run.toml (keys are the long flag names, e.g.\n"
        "  model = \"cnn\"\n  epochs = 3\n  speeds = [1, 1, 1, 0.25]\n  quiet = true\n"
        "); flags given on the command line override the file.");
  }
}

}  // namespace hetrain::cli

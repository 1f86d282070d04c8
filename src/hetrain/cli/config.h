// `--config FILE`: every flag of `run` and `worker` can come from a TOML file;
// flags on the command line override it. Built on CLI11's own config-file
// support: keys are the long flag names (`epochs = 3`, `speeds = [1, 1, 0.25]`,
// `quiet = true`), at the top of the file or under a `[run]` or `[worker]`
// section (the same thing: `run` hands --config on to the workers it starts).
#pragma once

#include <vector>

namespace CLI {
class App;
}

namespace hetrain::cli {

// Adds --config to `app`. CLI11 reads config files only at the top level, so
// the subcommands pass --config up to it (fallthrough), and keys outside a
// section are given to whichever of `subcommands` was chosen. An unknown key
// or a bad value is a parse error (exit code 2).
void add_config_file(CLI::App& app, const std::vector<CLI::App*>& subcommands);

}  // namespace hetrain::cli

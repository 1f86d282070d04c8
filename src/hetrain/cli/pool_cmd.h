// `hetrain pool`: the multi-job controller on Slurm (src/hetrain/pool/).
#pragma once

#include <optional>
#include <string>

#include "hetrain/pool/controller.h"

namespace CLI {
class App;
}

namespace hetrain::cli {

struct PoolCommand {
  CLI::App* app = nullptr;
  pool::ControllerOptions controller;
  std::string cluster;  // the pool's machine types (TOML); type names are Slurm node features
  std::string objective = "max-min-fair";
  std::string solver = "auto";
  bool until_done = false;
  double max_seconds = 0.0;  // 0: no limit
};

void add_pool_command(CLI::App& app, PoolCommand& c);
// The exit code when `hetrain pool` was given.
std::optional<int> run_pool_command(const PoolCommand& c);

}  // namespace hetrain::cli

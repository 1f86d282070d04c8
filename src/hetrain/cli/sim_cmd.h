// `hetrain sim` and `hetrain plan`: the command-line side of the simulator
// (src/hetrain/sim/). Kept apart from args.cc, which only registers and runs
// them; errors are thrown, main_entry turns them into exit codes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "hetrain/alloc/policy.h"
#include "hetrain/cli/jobs_cmd.h"

namespace CLI {
class App;
}

namespace hetrain::cli {

struct SimCommands {
  // hetrain sim
  std::string cluster;    // cluster TOML
  std::string calibrate;  // a real run's metrics JSON
  std::vector<std::string> policies{"equal", "static", "adaptive"};
  std::vector<double> shares;  // static
  std::size_t profile_steps = alloc::kDefaultProfileSteps;
  std::size_t steps = 0;
  std::size_t epochs = 0;
  double gradient_bytes = -1.0;  // < 0: from the cluster file
  std::string json;              // full trace
  bool splits = false;           // every per-worker split in the trace
  bool quiet = false;
  // hetrain plan
  std::string inventory;
  std::string objective;  // empty: time (--inventory), max-min-fair (--jobs)
  std::size_t plan_epochs = 1;
  bool plan_all = false;
  // hetrain plan --jobs, hetrain sim --jobs (jobs_cmd.h)
  JobsOptions jobs;

  CLI::App* sim_app = nullptr;
  CLI::App* plan_app = nullptr;
};

// Registers the two subcommands on `app`, binding their flags to `out`.
void add_sim_commands(CLI::App& app, SimCommands& out);

// Runs whichever of the two was parsed and returns its exit code; nullopt if
// neither was.
std::optional<int> run_sim_commands(const SimCommands& c);

}  // namespace hetrain::cli

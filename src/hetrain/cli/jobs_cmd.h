// `hetrain plan --jobs` and `hetrain sim --jobs`: the command-line side of
// the multi-job planner (src/hetrain/sched/). sim_cmd.cc registers the flags
// on its two subcommands and hands over when --jobs is given.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace hetrain::cli {

struct JobsOptions {
  std::string jobs;       // the job list (TOML)
  std::string pool;       // the machine types (TOML): --cluster
  std::string objective;  // empty: max-min-fair
  std::string solver = "auto";
  bool one_type_per_job = false;
  std::vector<std::string> schedulers{"mixed", "one-type", "fcfs"};  // sim
  double round_seconds = 0.0;                                        // sim
  double restart_seconds = -1.0;                                     // sim; < 0: the default
  std::string json;
  bool quiet = false;
};

// The flags only --jobs uses, on `sim` and `plan` (the shared ones, --cluster,
// --objective, --json, are sim_cmd.cc's).
void add_jobs_options(CLI::App& sim, CLI::App& plan, JobsOptions& o);

int run_jobs_plan(const JobsOptions& o);
int run_jobs_sim(const JobsOptions& o);

}  // namespace hetrain::cli

#include "hetrain/cli/pool_cmd.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "hetrain/common/error.h"
#include "hetrain/sched/jobs.h"
#include "hetrain/sched/planner.h"

namespace hetrain::cli {

void add_pool_command(CLI::App& app, PoolCommand& c) {
  c.app = app.add_subcommand(
      "pool",
      "Run the multi-job planner on a real Slurm: place, move (checkpoint, resubmit, resume) "
      "and finish the jobs dropped into a spool folder (docs/scheduling.md)");
  auto& o = c.controller;
  c.app->add_option("--spool", o.spool, "Folder of job files (one [[job]] and a [run] table each)")
      ->required();
  c.app->add_option("--cluster", c.cluster, "The pool's machine types (TOML); names are Slurm node features")
      ->required();
  c.app->add_option("--hetrain", o.hetrain,
                    "The hetrain binary jobs run, on a path every node sees (default: this one)");
  c.app->add_option("--objective", c.objective, "max-min-fair | min-avg-jct | makespan | cost")
      ->capture_default_str();
  c.app->add_option("--solver", c.solver, "auto | lp | greedy")->capture_default_str();
  c.app->add_option("--round-seconds", o.round_seconds, "Re-plan at least this often")->capture_default_str();
  c.app->add_option("--poll-seconds", o.poll_seconds, "Seconds between looks at squeue and the spool")
      ->capture_default_str();
  c.app->add_option("--restart-seconds", o.plan.restart_seconds, "What a move costs a job, for the planner")
      ->capture_default_str();
  c.app->add_option("--command-timeout", o.command_timeout, "Seconds any Slurm command may take")
      ->capture_default_str();
  c.app->add_flag("--until-done", c.until_done, "Exit once every job in the spool is done or failed");
  c.app->add_option("--max-seconds", c.max_seconds, "Give up (exit code 4) after this long (0: never)");
  c.app
      ->add_option("--crash-after", o.crash_after,
                   "(testing) exit right after this command: sbatch | scancel")
      ->group("");
}

std::optional<int> run_pool_command(const PoolCommand& c) {
  if (c.app == nullptr || !c.app->parsed()) return std::nullopt;
  pool::ControllerOptions o = c.controller;
  if (o.hetrain.empty()) o.hetrain = std::filesystem::read_symlink("/proc/self/exe").string();
  if (o.poll_seconds <= 0.0 || o.round_seconds <= 0.0 || o.command_timeout <= 0.0)
    throw UsageError("--poll-seconds, --round-seconds and --command-timeout must be > 0");
  o.plan.objective = sched::parse_objective(c.objective);
  o.plan.solver = sched::parse_solver(c.solver);
  const sched::Pool pool = sched::load_pool(c.cluster);
  pool::Controller controller(pool, o);
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const std::size_t open = controller.poll();
    if (c.until_done && open == 0 && !controller.state().jobs.empty()) break;
    if (c.max_seconds > 0.0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > c.max_seconds) {
      throw CommError(fmt::format("{} jobs still open after --max-seconds {}", open, c.max_seconds));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_seconds));
  }
  for (const auto& [name, js] : controller.state().jobs) {
    if (js.status == pool::Status::kFailed) return static_cast<int>(ExitCode::kWorker);
  }
  return 0;
}

}  // namespace hetrain::cli

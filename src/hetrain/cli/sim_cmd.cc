#include "hetrain/cli/sim_cmd.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "hetrain/common/error.h"
#include "hetrain/common/file_io.h"
#include "hetrain/sim/calibrate.h"
#include "hetrain/sim/cluster.h"
#include "hetrain/sim/plan.h"
#include "hetrain/sim/report.h"
#include "hetrain/sim/simulator.h"
#include "hetrain/record/metrics.h"

namespace hetrain::cli {
namespace {

std::string fitted_summary(const sim::Cluster& c, const sim::MeasuredRun& run, const std::string& file) {
  std::string out = fmt::format("calibrated from {} ({} workers, policy {}, {} steps, {:.3f} s measured):\n",
                                file, run.world_size, run.policy, run.allocation.size(), run.train_seconds);
  for (const auto& g : c.groups) {
    out += fmt::format("  {:<8} speed {:10.2f} samples/s  overhead {:.6f} s  noise {:.3f}\n", g.name, g.speed,
                       g.overhead, g.noise);
  }
  out += fmt::format(
      "  network: latency {:.3e} s per ring step at bandwidth {:.3e} B/s, gradient {} B; "
      "step overhead {:.6f} s\n",
      c.network.latency, c.network.bandwidth, c.gradient_bytes, c.step_overhead);
  return out;
}

int run_sim(const SimCommands& o) {
  if (!o.jobs.jobs.empty()) {
    JobsOptions j = o.jobs;
    j.pool = o.cluster;
    j.objective = o.objective;
    j.json = o.json;
    j.quiet = o.quiet;
    return run_jobs_sim(j);
  }
  if (o.cluster.empty() && o.calibrate.empty())
    throw UsageError("hetrain sim needs --cluster or --calibrate");
  if (!o.json.empty()) check_writable(o.json);
  sim::Cluster cluster;
  if (!o.cluster.empty()) cluster = sim::load_cluster(o.cluster);
  if (o.gradient_bytes >= 0.0) cluster.gradient_bytes = o.gradient_bytes;
  std::optional<sim::MeasuredRun> run;
  sim::SimOptions base;
  base.alloc.shares = o.shares;
  base.alloc.profile_steps = o.profile_steps;
  base.steps = o.steps;
  base.epochs = o.epochs;
  base.record_splits = o.splits;
  if (!o.calibrate.empty()) {
    run = sim::load_run(o.calibrate);
    cluster = sim::calibrate(*run, cluster);
    if (base.steps == 0 && base.epochs == 0) base.steps = run->allocation.size();
    if (!o.quiet) std::fputs(fitted_summary(cluster, *run, o.calibrate).c_str(), stdout);
  }
  std::vector<sim::SimResult> results;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& p : o.policies) {
    sim::SimOptions opts = base;
    opts.alloc.name = p;
    if (p != "static") opts.alloc.shares.clear();
    results.push_back(sim::simulate(cluster, opts));
  }
  const std::chrono::duration<double> host = std::chrono::steady_clock::now() - start;
  if (!o.quiet) {
    std::string out = fmt::format("\n{} workers, B={}, gradient {} B\n", cluster.workers(),
                                  cluster.global_batch, cluster.gradient_bytes);
    out += sim::comparison_table(results);
    out += fmt::format("(simulated in {:.2f} s of this machine's time)\n", host.count());
    for (const auto& r : results) out += "\n" + sim::split_over_time(r, cluster);
    if (run) {
      for (const auto& r : results) {
        if (r.policy != run->policy) continue;
        out += fmt::format("\n{}: predicted {:.3f} s, measured {:.3f} s, ratio {:.3f}\n", r.policy,
                           r.total_seconds, run->train_seconds, r.total_seconds / run->train_seconds);
      }
    }
    std::fputs(out.c_str(), stdout);
  }
  if (!o.json.empty()) write_file_atomic(o.json, sim::trace_json(cluster, results));
  return 0;
}

int run_plan(const SimCommands& o) {
  if (!o.jobs.jobs.empty()) {
    JobsOptions j = o.jobs;
    j.objective = o.objective;
    return run_jobs_plan(j);
  }
  if (o.inventory.empty())
    throw UsageError("hetrain plan needs --inventory (one job) or --jobs with --cluster (several jobs)");
  const auto objective = sim::parse_objective(o.objective.empty() ? "time" : o.objective);
  const sim::Cluster inventory = sim::load_cluster(o.inventory);
  const auto result = sim::plan(inventory, o.plan_epochs, objective);
  std::fputs(sim::plan_report(inventory, result, objective, o.plan_all).c_str(), stdout);
  return 0;
}

}  // namespace

void add_sim_commands(CLI::App& app, SimCommands& c) {
  c.sim_app = app.add_subcommand(
      "sim", "Simulate a heterogeneous cluster (TOML) under each policy, with the real allocation code");
  auto* s = c.sim_app;
  s->footer(R"(
Examples:
  hetrain sim --cluster examples/mixed.toml --epochs 20
  hetrain sim --cluster examples/add_slow.toml --steps 2000 --policy equal,adaptive --json trace.json
  hetrain sim --calibrate run.json --gradient-bytes 814120 --policy equal,static,adaptive --shares 4,4,4,1
  hetrain sim --jobs examples/jobs.toml --cluster examples/pool.toml --objective min-avg-jct --json out.json
)");
  s->add_option("--cluster", c.cluster, "Cluster file (TOML; see docs/simulation.md)");
  s->add_option("--calibrate", c.calibrate,
                "A real run's --metrics JSON: fit the workers and the network to it, then predict it");
  s->add_option("--policy", c.policies, "Policies to compare: equal,static,adaptive")
      ->delimiter(',')
      ->capture_default_str();
  s->add_option("--shares", c.shares, "static: relative shares, one per worker (default: profile first)")
      ->delimiter(',');
  s->add_option("--profile-steps", c.profile_steps, "static without --shares: steps measured first")
      ->capture_default_str();
  s->add_option("--steps", c.steps, "Steps to simulate (with --epochs: at most this many)");
  s->add_option("--epochs", c.epochs, "Epochs of dataset_samples (from the cluster file)");
  s->add_option("--gradient-bytes", c.gradient_bytes, "Bytes reduced per step (overrides the file)");
  s->add_option("--json", c.json, "Write the full trace here (atomically)");
  s->add_flag("--splits", c.splits, "Put every step's per-worker split in the --json trace");
  s->add_flag("-q,--quiet", c.quiet, "Print nothing (with --json)");
  s->add_option("--objective", c.objective,
                "--jobs: max-min-fair | min-avg-jct | makespan | cost (default max-min-fair)");

  c.plan_app = app.add_subcommand(
      "plan", "Choose the machines and starting shares that finish fastest or cheapest (an inventory TOML)");
  auto* p = c.plan_app;
  p->footer(R"(
Examples:
  hetrain plan --inventory examples/inventory.toml --epochs 90
  hetrain plan --inventory examples/inventory.toml --epochs 90 --objective cost --all
  hetrain plan --jobs examples/jobs.toml --cluster examples/pool.toml --objective max-min-fair
)");
  p->add_option("--inventory", c.inventory,
                "Machines available for one job (a cluster file with price_per_hour)");
  p->add_option("--objective", c.objective,
                "time | cost (default time); with --jobs: max-min-fair | min-avg-jct | makespan | cost "
                "(default max-min-fair)");
  p->add_option("--cluster", c.jobs.pool, "--jobs: the pool of machine types (TOML; docs/scheduling.md)");
  p->add_option("--json", c.jobs.json, "--jobs: also write the plans as JSON here (atomically)");
  add_jobs_options(*s, *p, c.jobs);
  p->add_option("--epochs", c.plan_epochs, "Epochs of dataset_samples")->capture_default_str();
  p->add_flag("--all", c.plan_all, "List every alternative, not only the best 20");
}

std::optional<int> run_sim_commands(const SimCommands& c) {
  if (c.sim_app != nullptr && c.sim_app->parsed()) return run_sim(c);
  if (c.plan_app != nullptr && c.plan_app->parsed()) return run_plan(c);
  return std::nullopt;
}

}  // namespace hetrain::cli

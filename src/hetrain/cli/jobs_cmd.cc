#include "hetrain/cli/jobs_cmd.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "hetrain/common/error.h"
#include "hetrain/common/file_io.h"
#include "hetrain/sched/jobs.h"
#include "hetrain/sched/planner.h"
#include "hetrain/sched/report.h"
#include "hetrain/sched/simulate.h"

namespace hetrain::cli {
namespace {

sched::PlanOptions plan_options(const JobsOptions& o) {
  if (o.pool.empty())
    throw UsageError("--jobs needs --cluster POOL.toml (the machine types and their counts)");
  sched::PlanOptions p;
  p.objective = sched::parse_objective(o.objective.empty() ? "max-min-fair" : o.objective);
  p.solver = sched::parse_solver(o.solver);
  p.one_type_per_job = o.one_type_per_job;
  return p;
}

sched::SimJobsOptions sim_options(const JobsOptions& o, const std::string& scheduler) {
  sched::SimJobsOptions s;
  s.plan = plan_options(o);
  s.round_seconds = o.round_seconds;
  s.restart_seconds = o.restart_seconds < 0.0 ? sched::kDefaultRestartSeconds : o.restart_seconds;
  if (scheduler == "mixed") {
    s.plan.one_type_per_job = false;
  } else if (scheduler == "one-type") {
    s.plan.one_type_per_job = true;
  } else if (scheduler == "fcfs") {
    s.scheduler = sched::Scheduler::kFcfs;
  } else {
    throw UsageError(fmt::format("--schedulers item '{}' (expected mixed, one-type or fcfs)", scheduler));
  }
  return s;
}

}  // namespace

void add_jobs_options(CLI::App& sim, CLI::App& plan, JobsOptions& o) {
  for (CLI::App* app : {&sim, &plan}) {
    app->add_option("--jobs", o.jobs,
                    "Several jobs (TOML; docs/scheduling.md): plan or simulate them on --cluster");
    app->add_option("--solver", o.solver, "--jobs: auto (the LP when built in) | lp | greedy")
        ->capture_default_str();
    app->add_flag("--one-type-per-job", o.one_type_per_job,
                  "--jobs: give every job machines of one type only (what equal-split systems need)");
  }
  sim.add_option("--schedulers", o.schedulers, "--jobs: which to compare: mixed,one-type,fcfs")
      ->delimiter(',')
      ->capture_default_str();
  sim.add_option("--round-seconds", o.round_seconds,
                 "--jobs: also re-plan this long after the last plan (0: at arrivals and completions only)")
      ->check(CLI::NonNegativeNumber);
  sim.add_option("--restart-seconds", o.restart_seconds,
                 fmt::format("--jobs: seconds a job loses when its machines change (checkpoint + restart; "
                             "default {})",
                             sched::kDefaultRestartSeconds))
      ->check(CLI::NonNegativeNumber);
}

int run_jobs_plan(const JobsOptions& o) {
  const sched::PlanOptions options = plan_options(o);
  if (!o.json.empty()) check_writable(o.json);
  const sched::Pool pool = sched::load_pool(o.pool);
  const std::vector<sched::Job> jobs = sched::load_jobs(o.jobs, pool);
  const sched::Pricer pricer(pool, jobs);
  std::vector<sched::ActiveJob> all;
  for (std::size_t j = 0; j < jobs.size(); ++j) all.push_back({j, static_cast<double>(jobs[j].steps), {}, false});
  std::vector<sched::PlanSummary> plans;
  for (const bool one_type : {o.one_type_per_job, !o.one_type_per_job}) {
    sched::PlanOptions each = options;
    each.one_type_per_job = one_type;
    plans.push_back(
        sched::summarize_plan(pricer, one_type ? "one-type" : "mixed", sched::plan_round(pricer, all, each)));
  }
  if (!o.quiet) std::fputs(sched::plan_text(pricer, options, plans).c_str(), stdout);
  if (!o.json.empty()) write_file_atomic(o.json, sched::plan_json(pricer, options, plans));
  return 0;
}

int run_jobs_sim(const JobsOptions& o) {
  std::vector<sched::SimJobsOptions> runs;
  for (const auto& s : o.schedulers) runs.push_back(sim_options(o, s));
  if (runs.empty()) throw UsageError("--schedulers is empty (expected some of mixed, one-type, fcfs)");
  if (!o.json.empty()) check_writable(o.json);
  const sched::Pool pool = sched::load_pool(o.pool);
  const std::vector<sched::Job> jobs = sched::load_jobs(o.jobs, pool);
  const sched::Pricer pricer(pool, jobs);
  std::vector<sched::NamedResult> results;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < runs.size(); ++i)
    results.push_back({o.schedulers[i], sched::simulate_jobs(pricer, runs[i])});
  const std::chrono::duration<double> host = std::chrono::steady_clock::now() - start;
  if (!o.quiet) {
    std::string text = sched::schedule_text(pricer, runs.front().plan, results);
    text += fmt::format("(simulated in {:.2f} s of this machine's time)\n", host.count());
    std::fputs(text.c_str(), stdout);
  }
  if (!o.json.empty()) write_file_atomic(o.json, sched::schedule_json(pricer, runs.front().plan, results));
  return 0;
}

}  // namespace hetrain::cli

#include "hetrain/sched/planner.h"

#include <fmt/format.h>

#include <algorithm>

#include "hetrain/common/error.h"
#include "hetrain/sched/lp.h"
#include "hetrain/sched/plan_steps.h"

namespace hetrain::sched {

Objective parse_objective(const std::string& name) {
  if (name == "max-min-fair") return Objective::kMaxMinFair;
  if (name == "min-avg-jct") return Objective::kMinAvgJct;
  if (name == "makespan") return Objective::kMakespan;
  if (name == "cost") return Objective::kCost;
  throw UsageError(fmt::format(
      "--objective '{}' (expected max-min-fair, min-avg-jct, makespan or cost with --jobs)", name));
}

std::string objective_name(Objective o) {
  switch (o) {
    case Objective::kMinAvgJct:
      return "min-avg-jct";
    case Objective::kMakespan:
      return "makespan";
    case Objective::kCost:
      return "cost";
    case Objective::kMaxMinFair:
      break;
  }
  return "max-min-fair";
}

Solver parse_solver(const std::string& name) {
  if (name == "auto") return Solver::kAuto;
  if (name == "lp") return Solver::kLp;
  if (name == "greedy") return Solver::kGreedy;
  throw UsageError(fmt::format("--solver '{}' (expected auto, lp or greedy)", name));
}

double job_level(const Pricer& p, Objective o, const ActiveJob& a, double throughput) {
  const Job& job = p.jobs()[a.job];
  const double remaining = std::max(a.remaining_steps, 1.0) * static_cast<double>(job.global_batch);
  switch (o) {
    case Objective::kMakespan:
      return throughput / remaining;
    case Objective::kMinAvgJct:
      return remaining / job.weight;
    case Objective::kMaxMinFair:
    case Objective::kCost:
      break;
  }
  return throughput / (job.weight * p.isolated(a.job));
}

RoundPlan plan_round(const Pricer& p, const std::vector<ActiveJob>& active, const PlanOptions& o) {
  RoundPlan out;
  if (active.empty()) return out;
  if (o.solver == Solver::kLp && !lp_solver_available()) solve_lp({});  // throws the one-line reason
  const Allowed all = allowed_types(p, active);
  const bool lp = o.solver != Solver::kGreedy && lp_solver_available();
  if (!lp) {
    out.allocation = greedy_plan(p, active, o, all);
    return out;
  }
  Relaxation r = solve_relaxation(p, active, o.objective, all);
  Allowed allowed = all;
  if (r.optimal && o.one_type_per_job) {
    // The relaxation picks each job's type; a second one plans within them.
    allowed = one_type_each(p, active, r.x, all);
    r = solve_relaxation(p, active, o.objective, allowed);
  }
  if (!r.optimal) {  // only a solver failure: every program here is feasible (x = 0)
    out.allocation = greedy_plan(p, active, o, all);
    return out;
  }
  out.used_lp = true;
  out.relaxation = r.value;
  out.allocation = round_relaxation(p, active, o, allowed, r.x);
  if (o.one_type_per_job) {
    // A job the rounding left without machines may still take a type of its
    // own that others left free.
    for (std::size_t a = 0; a < active.size(); ++a) {
      if (machines_in(out.allocation[a]) == 0) allowed[a] = all[a];
    }
    fill_free(p, active, o, allowed, r.x, out.allocation);
  }
  return out;
}

}  // namespace hetrain::sched

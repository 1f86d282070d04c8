// The multi-job planner: which machines of the pool each job holds for the
// next round, under one of four objectives (docs/scheduling.md has the
// formulation). An LP relaxation over jobs x machine types (lp.h), rounded to
// whole machines; or a greedy heuristic where no solver is built in or
// --solver greedy asks for it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hetrain/sched/pricing.h"

namespace hetrain::sched {

enum class Objective {
  kMaxMinFair,  // maximise the least weighted normalised throughput (Gavel's max-min fairness)
  kMinAvgJct,   // shortest remaining work first, by comparative advantage
  kMakespan,    // every job's rate in proportion to its remaining work: all finish together
  kCost,        // the max-min fair level, on the cheapest machines that hold it
};
Objective parse_objective(const std::string& name);  // UsageError unless one of the four names
std::string objective_name(Objective o);

enum class Solver { kAuto, kLp, kGreedy };  // auto: the LP when built in, greedy otherwise
Solver parse_solver(const std::string& name);

// Seconds a job loses when its machines change: checkpoint, stop, restart on
// the new machines and reload (a minute-scale restart of a PyTorch job).
inline constexpr double kDefaultRestartSeconds = 30.0;

struct PlanOptions {
  Objective objective = Objective::kMaxMinFair;
  Solver solver = Solver::kAuto;
  bool one_type_per_job = false;  // each job on machines of one type only (what equal-split systems need)
  // What moving a job costs it (plan_value): the planner moves a job only
  // where the plan's value, with this loss priced in, gains.
  double restart_seconds = kDefaultRestartSeconds;
};

// A job waiting or running, with the work it has left and the machines it
// holds (empty: none). Moving a job that has started costs it a restart.
struct ActiveJob {
  std::size_t job = 0;  // index into Pricer::jobs()
  double remaining_steps = 0.0;
  Allocation current;
  bool started = false;  // has held machines before (new ones cost a restart even after a pause)
};

struct RoundPlan {
  std::vector<Allocation> allocation;  // one per active job, in the request's order
  bool used_lp = false;                // false: the greedy heuristic planned it
  double relaxation = 0.0;             // the LP's first-phase optimum (z*, or the weighted rate sum)
};

// Plans one round for `active` (empty allocations for a job left out).
// Without --one-type-per-job the one-type plan is one of the candidates, so
// the plan returned is never worse by plan_value than the one-type plan.
RoundPlan plan_round(const Pricer& pricer, const std::vector<ActiveJob>& active, const PlanOptions& options);

// A plan's worth under its objective, restarts priced in: compared first by
// `primary`, then by `secondary` (better_plan). Each job counts at its
// effective rate, R / (R / T + restart) when the plan moves it and T
// otherwise (R: remaining samples, T: samples/s on the plan), which is its
// average rate over its remaining work if the plan held until it ends.
//   max-min fair: least effective share; then the sum of shares T / iso
//   cost:         least effective share; then minus the money rate
//   makespan:     least effective T / R (1 / the last predicted finish); then
//                 the sum of shares
//   min-avg-jct:  the sum of w T / R (w / the predicted time left); then 0
struct PlanValue {
  double primary = 0.0;
  double secondary = 0.0;
};
PlanValue plan_value(const Pricer& pricer, const std::vector<ActiveJob>& active, const PlanOptions& options,
                     const std::vector<Allocation>& allocation);
// a beats b: a higher primary (beyond rounding noise), or an equal one and a higher secondary.
bool better_plan(const PlanValue& a, const PlanValue& b);

// What the objective compares between jobs; lower is needier. max-min and
// cost: throughput / (weight x isolated); makespan: throughput / remaining
// samples; min-avg-jct: remaining samples / weight (shortest first).
double job_level(const Pricer& pricer, Objective objective, const ActiveJob& a, double throughput);

}  // namespace hetrain::sched

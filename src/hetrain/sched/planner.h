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

struct PlanOptions {
  Objective objective = Objective::kMaxMinFair;
  Solver solver = Solver::kAuto;
  bool one_type_per_job = false;  // each job on machines of one type only (what equal-split systems need)
};

// A job waiting or running, with the work it has left and the machines it
// holds (empty: none), which the LP prefers to keep (a move costs a restart).
struct ActiveJob {
  std::size_t job = 0;  // index into Pricer::jobs()
  double remaining_steps = 0.0;
  Allocation current;
};

struct RoundPlan {
  std::vector<Allocation> allocation;  // one per active job, in the request's order
  bool used_lp = false;                // false: the greedy heuristic planned it
  double relaxation = 0.0;             // the LP's first-phase optimum (z*, or the weighted rate sum)
};

// Plans one round for `active` (empty allocations for a job left out).
RoundPlan plan_round(const Pricer& pricer, const std::vector<ActiveJob>& active, const PlanOptions& options);

// What the objective compares between jobs; lower is needier. max-min and
// cost: throughput / (weight x isolated); makespan: throughput / remaining
// samples; min-avg-jct: remaining samples / weight (shortest first).
double job_level(const Pricer& pricer, Objective objective, const ActiveJob& a, double throughput);

}  // namespace hetrain::sched

// Test-side reference for the planner: a plan's value under each objective,
// computed from its definition in docs/scheduling.md ("Choosing the plan"),
// and the best integer plan by exhaustive search over jobs x machine types.
//
// Independent of the planner's code paths (planner.cc's plan_value and
// better_plan, relaxation.cc, rounding.cc, greedy.cc): the one call into
// sched/ is Pricer::throughput (pricing.h), the pricing that defines a job's
// samples/s on an allocation, which every plan's value is made of.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hetrain/sched/planner.h"

namespace hetrain::sched::testing {

// Compared by primary, then secondary (docs/scheduling.md's table).
struct Value {
  double primary = 0.0;
  double secondary = 0.0;
};
// a is better than b beyond floating-point noise (relative kSame).
bool beats(const Value& a, const Value& b);
inline constexpr double kSame = 1e-9;

// Currency per hour of the machines the plan holds.
double money_rate(const Pricer& p, const std::vector<Allocation>& plan);

// The plan's value with restarts priced in: a job the plan moves counts at
// R / (R / T + restart) samples/s (R: samples left, T: Pricer::throughput).
Value value_of(const Pricer& p, const std::vector<ActiveJob>& active, Objective objective, double restart_seconds,
               const std::vector<Allocation>& plan);

// Empty when the plan fits: per type at most the pool's machines, per job at
// most its cap (Job::cap) and none of a type it cannot run on; else why not.
std::string misfit(const Pricer& p, const std::vector<ActiveJob>& active, const std::vector<Allocation>& plan);

// Each job's allocation uses at most one machine type.
bool one_type_each(const std::vector<Allocation>& plan);

// The best primary value over every integer plan that fits (misfit), per
// objective (max-min-fair and cost share theirs: the least share).
struct Optimum {
  double least_share = 0.0;           // max-min-fair, cost
  double least_per_remaining = 0.0;   // makespan: least rate / R
  double weighted_per_remaining = 0.0;  // min-avg-jct: sum w rate / R
  double of(Objective objective) const;
};

struct Search {
  Optimum mixed;     // over every plan
  Optimum one_type;  // over the plans with one type per job
  // Per level asked for: the least money rate of a plan whose least share
  // is at least that level (within kSame); +inf when none reaches it.
  std::vector<double> cheapest;
  std::size_t plans = 0;  // enumerated
};
Search exhaustive(const Pricer& p, const std::vector<ActiveJob>& active, double restart_seconds,
                  const std::vector<double>& cost_levels = {});

}  // namespace hetrain::sched::testing

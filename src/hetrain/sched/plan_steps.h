// The planner's steps (planner.cc strings them together): the LP relaxation
// (relaxation.cc), its rounding to whole machines (rounding.cc) and the
// greedy heuristic (greedy.cc). Internal to sched/.
#pragma once

#include <cstddef>
#include <vector>

#include "hetrain/sched/planner.h"

namespace hetrain::sched {

// Fractional machines: x[a][t] of type t for active job a.
using Fractional = std::vector<std::vector<double>>;

// Machines of each type a plan may hand out: the pool's counts, or what is
// left of them after the jobs that keep their machines (planner.cc).
using Capacity = std::vector<std::size_t>;
Capacity pool_capacity(const Pricer& pricer);

// allowed[a][t]: job a may hold machines of type t (its speed there is
// positive, the capacity has machines of it, and under one type per job it
// is the job's type).
using Allowed = std::vector<std::vector<bool>>;
Allowed allowed_types(const Pricer& pricer, const std::vector<ActiveJob>& active, const Capacity& capacity);

struct Relaxation {
  bool optimal = false;
  double value = 0.0;  // first phase's optimum
  Fractional x;
};
Relaxation solve_relaxation(const Pricer& pricer, const std::vector<ActiveJob>& active, Objective objective,
                            const Allowed& allowed, const Capacity& capacity);

// One type per job from a mixed relaxation: jobs in order of the share their
// best type carries in it, each taking its best type (by the throughput the
// relaxation gave it there, then by speed) that still has a machine no
// earlier job was promised.
Allowed one_type_each(const Pricer& pricer, const std::vector<ActiveJob>& active, const Fractional& x,
                      const Allowed& allowed, const Capacity& capacity);

std::vector<Allocation> round_relaxation(const Pricer& pricer, const std::vector<ActiveJob>& active,
                                         const PlanOptions& options, const Allowed& allowed,
                                         const Fractional& x, const Capacity& capacity);

std::vector<Allocation> greedy_plan(const Pricer& pricer, const std::vector<ActiveJob>& active,
                                    const PlanOptions& options, const Allowed& allowed,
                                    const Capacity& capacity);

// Steps (3) and (4) of round_relaxation: free machines to the jobs that
// gain, then improve_least.
void fill_free(const Pricer& pricer, const std::vector<ActiveJob>& active, const PlanOptions& options,
               const Allowed& allowed, const Fractional& x, const Capacity& capacity,
               std::vector<Allocation>& alloc);

// Local search after rounding or greedy (max-min, makespan, cost): moves one
// machine at a time to the job of lowest level while that raises the least
// level (rounding.cc).
void improve_least(const Pricer& pricer, const std::vector<ActiveJob>& active, const PlanOptions& options,
                   const Allowed& allowed, std::vector<Allocation>& alloc);

// Drops machines whose removal makes a job's step faster (a slow type pinned
// at one sample, or a ring step that costs more than the machine adds).
void trim_useless(const Pricer& pricer, std::size_t job, Allocation& x);

}  // namespace hetrain::sched

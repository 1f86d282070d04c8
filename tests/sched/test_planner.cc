// The planner's formulation on small cases with hand-computed optima, its
// rounding, the one-type restriction and the restart hysteresis. Against
// the enumerated optimum on random pools: test_optimum.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hetrain/sched/lp.h"
#include "hetrain/sched/plan_steps.h"
#include "hetrain/sched/planner.h"
#include "sched_fixtures.h"

namespace hetrain::sched {
namespace {

using testing::job_of;
using testing::pool_of;

// The LP's second phase may give up this share of the first's optimum
// (relaxation.cc), so the fractional x is that close to the hand optimum.
constexpr double kPhase = 1e-5;

std::vector<ActiveJob> all_of(const std::vector<Job>& jobs) {
  std::vector<ActiveJob> out;
  for (std::size_t j = 0; j < jobs.size(); ++j) out.push_back({j, static_cast<double>(jobs[j].steps), {}, false});
  return out;
}

double least_share(const Pricer& p, const std::vector<Allocation>& x) {
  double least = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < x.size(); ++j)
    least = std::min(least, p.throughput(j, x[j]) / (p.jobs()[j].weight * p.isolated(j)));
  return least;
}

// Two types of 4 machines. Job 0 runs 4x faster on type 0 (4 vs 1 samples/s),
// job 1 equally on both (2, 2): iso_0 = 20, iso_1 = 16. Max-min fair gives
// job 1 all of type 1 (share 8/16) and job 0 type 0, then moves f machines of
// type 0 to job 1 until (16 - 4f)/20 = (8 + 2f)/16: f = 12/13, z* = 8/13.
TEST(Planner, MaxMinFairHandComputedOptimum) {
  HETRAIN_REQUIRE_LP();
  const Pool pool = pool_of({4, 4});
  const std::vector<Job> jobs{job_of({4, 1}), job_of({2, 2})};
  const Pricer p(pool, jobs);
  const auto active = all_of(jobs);
  const Relaxation r = solve_relaxation(p, active, Objective::kMaxMinFair,
                                        allowed_types(p, active, pool_capacity(p)), pool_capacity(p));
  ASSERT_TRUE(r.optimal);
  EXPECT_NEAR(r.value, 8.0 / 13.0, kPhase);
  EXPECT_NEAR(r.x[0][0], 4.0 - 12.0 / 13.0, kPhase);
  EXPECT_NEAR(r.x[1][0], 12.0 / 13.0, kPhase);
  EXPECT_NEAR(r.x[1][1], 4.0, kPhase);
  // Rounded: floors {3,0} and {0,4}; the free type-0 machine goes to the lower
  // share (job 1: 8/16 < 12/20). 0.6 is also the best integer plan.
  const RoundPlan plan = plan_round(p, active, {});
  EXPECT_TRUE(plan.used_lp);
  EXPECT_EQ(plan.allocation[0], (Allocation{3, 0}));
  EXPECT_EQ(plan.allocation[1], (Allocation{1, 4}));
  EXPECT_NEAR(least_share(p, plan.allocation), 0.6, 1e-12);
}

// One type per job on the same case: job 0 on type 0 (share 0.8), job 1 on
// type 1 (0.5); the mix's 0.6 is better, which is the point of mixing.
TEST(Planner, OneTypePerJobIsWorseOnTheSameCase) {
  const Pool pool = pool_of({4, 4});
  const std::vector<Job> jobs{job_of({4, 1}), job_of({2, 2})};
  const Pricer p(pool, jobs);
  for (const Solver solver : {Solver::kAuto, Solver::kGreedy}) {
    PlanOptions o;
    o.solver = solver;
    o.one_type_per_job = true;
    const RoundPlan plan = plan_round(p, all_of(jobs), o);
    EXPECT_EQ(plan.allocation[0], (Allocation{4, 0}));
    EXPECT_EQ(plan.allocation[1], (Allocation{0, 4}));
    EXPECT_NEAR(least_share(p, plan.allocation), 0.5, 1e-12);
  }
}

// Makespan: job 0 has 300 samples left at 10/s on either type, job 1 240 at
// 10/s on type 0, 2/s on type 1; two machines of each. The LP gives job 0
// type 1 and 2/9 of a type-0 machine: all finish at 13.5 s together. Rounded:
// job 0 {0, 2} (15 s), job 1 {2, 0} (12 s), the best integer plan.
TEST(Planner, MakespanHandComputedOptimum) {
  HETRAIN_REQUIRE_LP();
  const Pool pool = pool_of({2, 2});
  std::vector<Job> jobs{job_of({10, 10}, 3), job_of({10, 2}, 3)};
  jobs[0].global_batch = 100;
  jobs[1].global_batch = 80;
  const Pricer p(pool, jobs);
  const auto active = all_of(jobs);
  const Relaxation r = solve_relaxation(p, active, Objective::kMakespan,
                                        allowed_types(p, active, pool_capacity(p)), pool_capacity(p));
  ASSERT_TRUE(r.optimal);
  const double rate0 = 10 * r.x[0][0] + 10 * r.x[0][1], rate1 = 10 * r.x[1][0] + 2 * r.x[1][1];
  EXPECT_NEAR(300.0 / rate0, 13.5, 13.5 * kPhase);
  EXPECT_NEAR(240.0 / rate1, 13.5, 13.5 * kPhase);
  EXPECT_NEAR(r.x[0][0], 2.0 / 9.0, kPhase);
  PlanOptions o;
  o.objective = Objective::kMakespan;
  const RoundPlan plan = plan_round(p, active, o);
  EXPECT_EQ(plan.allocation[0], (Allocation{0, 2}));
  EXPECT_EQ(plan.allocation[1], (Allocation{2, 0}));
}

// Shortest remaining work first: the short job takes every machine that helps.
TEST(Planner, MinAvgJctServesTheShortJobFirst) {
  const Pool pool = pool_of({4});
  const std::vector<Job> jobs{job_of({10}, 1000), job_of({10}, 100)};
  const Pricer p(pool, jobs);
  for (const Solver solver : {Solver::kAuto, Solver::kGreedy}) {
    PlanOptions o;
    o.objective = Objective::kMinAvgJct;
    o.solver = solver;
    const RoundPlan plan = plan_round(p, all_of(jobs), o);
    EXPECT_EQ(plan.allocation[0], (Allocation{0}));
    EXPECT_EQ(plan.allocation[1], (Allocation{4}));
  }
}

// Cost: the fair level (here a job capped at 2 machines, on any 2) on the
// cheapest machines that hold it.
TEST(Planner, CostHoldsTheFairLevelOnCheapMachines) {
  HETRAIN_REQUIRE_LP();
  const Pool pool = pool_of({2, 2}, {10.0, 1.0});
  std::vector<Job> jobs{job_of({10, 10})};
  jobs[0].max_workers = 2;
  const Pricer p(pool, jobs);
  PlanOptions o;
  o.objective = Objective::kCost;
  EXPECT_EQ(plan_round(p, all_of(jobs), o).allocation[0], (Allocation{0, 2}));
}

// Hysteresis: a job on 3 of 4 machines (10 samples/s each) with 100,000
// samples left finishes in 3,333 s where it is, 2,500 s on all four. The
// move saves 833 s, so the planner makes it when a restart costs 500 s and
// not when it costs 1,000 s, under every objective and solver.
TEST(Planner, MovesAJobOnlyWhenTheGainPaysForTheRestart) {
  const Pool pool = pool_of({4});
  const std::vector<Job> jobs{job_of({10}, 1)};
  const Pricer p(pool, jobs);
  const std::vector<ActiveJob> active{{0, 1.0, Allocation{3}, true}};
  for (const Objective objective :
       {Objective::kMaxMinFair, Objective::kMinAvgJct, Objective::kMakespan, Objective::kCost}) {
    for (const Solver solver : {Solver::kAuto, Solver::kGreedy}) {
      PlanOptions o;
      o.objective = objective;
      o.solver = solver;
      o.restart_seconds = 500.0;
      EXPECT_EQ(plan_round(p, active, o).allocation[0], (Allocation{4})) << objective_name(objective);
      o.restart_seconds = 1000.0;
      EXPECT_EQ(plan_round(p, active, o).allocation[0], (Allocation{3})) << objective_name(objective);
    }
  }
}

}  // namespace
}  // namespace hetrain::sched

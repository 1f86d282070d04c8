// The planner's formulation on small cases with hand-computed optima, its
// rounding, the one-type restriction, and the greedy fallback against the
// LP on random small pools.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

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
  if (!lp_solver_available()) GTEST_SKIP() << "built without an LP solver";
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
  if (!lp_solver_available()) GTEST_SKIP() << "built without an LP solver";
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
  if (!lp_solver_available()) GTEST_SKIP() << "built without an LP solver";
  const Pool pool = pool_of({2, 2}, {10.0, 1.0});
  std::vector<Job> jobs{job_of({10, 10})};
  jobs[0].max_workers = 2;
  const Pricer p(pool, jobs);
  PlanOptions o;
  o.objective = Objective::kCost;
  EXPECT_EQ(plan_round(p, all_of(jobs), o).allocation[0], (Allocation{0, 2}));
}

// The best integer plan's least share, by enumeration (tiny pools only).
double brute_force_least_share(const Pricer& p) {
  const std::size_t jobs = p.jobs().size(), types = p.pool().types.size();
  std::vector<Allocation> x(jobs, Allocation(types, 0));
  double best = 0.0;
  std::function<void(std::size_t, std::size_t, std::size_t)> place = [&](std::size_t t, std::size_t j,
                                                                         std::size_t left) {
    if (t == types) {
      best = std::max(best, least_share(p, x));
      return;
    }
    if (j + 1 == jobs) {
      x[j][t] = left;
      place(t + 1, 0, t + 1 < types ? p.pool().types[t + 1].count : 0);
      return;
    }
    for (std::size_t k = 0; k <= left; ++k) {
      x[j][t] = k;
      place(t, j + 1, left - k);
    }
  };
  place(0, 0, p.pool().types[0].count);
  return best;
}

// A random small case: 2-3 machine types of 1-5 machines each, 2 to
// `max_jobs` jobs with speeds 1-100 on each type (and, with `varied_steps`,
// 1-400 steps each).
struct RandomCase {
  Pool pool;
  std::vector<Job> jobs;
};

RandomCase random_case(std::mt19937& rng, std::size_t max_jobs, bool varied_steps) {
  std::uniform_int_distribution<std::size_t> types_n(2, 3), jobs_n(2, max_jobs), count(1, 5), steps(1, 400);
  std::uniform_real_distribution<double> speed(1.0, 100.0);
  std::vector<std::size_t> counts(types_n(rng));
  for (auto& n : counts) n = count(rng);
  RandomCase c{pool_of(counts), {}};
  for (std::size_t j = jobs_n(rng); j > 0; --j) {
    std::vector<double> v(counts.size());
    for (auto& s : v) s = speed(rng);
    c.jobs.push_back(varied_steps ? job_of(v, steps(rng)) : job_of(v));
  }
  return c;
}

// The stated factors (docs/scheduling.md): on 200 random pools of 2-3 types
// with up to 5 machines each and 2-3 jobs, the LP plan's least share is at
// least kRoundedFactor of the best integer plan's, and the greedy plan's at
// least kGreedyFactor of the LP plan's.
constexpr double kRoundedFactor = 0.9;
constexpr double kGreedyFactor = 0.9;

TEST(Planner, GreedyAndRoundingWithinStatedFactors) {
  if (!lp_solver_available()) GTEST_SKIP() << "built without an LP solver";
  std::mt19937 rng(11);
  double worst_rounded = 1.0, worst_greedy = 1.0;
  for (int trial = 0; trial < 200; ++trial) {
    const RandomCase c = random_case(rng, 3, false);
    const std::vector<Job>& jobs = c.jobs;
    const Pricer p(c.pool, jobs);
    const double best = brute_force_least_share(p);
    const double lp = least_share(p, plan_round(p, all_of(jobs), {}).allocation);
    PlanOptions greedy;
    greedy.solver = Solver::kGreedy;
    const double gr = least_share(p, plan_round(p, all_of(jobs), greedy).allocation);
    EXPECT_LE(lp, best + 1e-12) << trial;
    EXPECT_GE(lp, kRoundedFactor * best) << trial;
    EXPECT_GE(gr, kGreedyFactor * lp) << trial;
    worst_rounded = std::min(worst_rounded, lp / best);
    worst_greedy = std::min(worst_greedy, gr / lp);
  }
  std::printf("worst LP-rounded / integer optimum %.3f, worst greedy / LP-rounded %.3f\n", worst_rounded,
              worst_greedy);
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

// A random held allocation of the pool for some of `jobs`' jobs (the rest
// wait), as a re-plan in the middle of a trace sees it.
std::vector<ActiveJob> random_running(const Pool& pool, const std::vector<Job>& jobs, std::mt19937& rng) {
  std::vector<ActiveJob> out = all_of(jobs);
  std::uniform_real_distribution<double> share(0.0, 1.0);
  std::vector<std::size_t> left;
  for (const MachineType& t : pool.types) left.push_back(t.count);
  for (auto& a : out) {
    a.remaining_steps = std::max(1.0, share(rng) * static_cast<double>(jobs[a.job].steps));
    a.current.assign(left.size(), 0);
    if (share(rng) < 0.3) continue;  // waiting
    for (std::size_t t = 0; t < left.size(); ++t) {
      a.current[t] = static_cast<std::size_t>(share(rng) * static_cast<double>(left[t] + 1)) % (left[t] + 1);
      left[t] -= a.current[t];
    }
    a.started = machines_in(a.current) > 0;
  }
  return out;
}

// The per-plan guarantee (planner.h): one type per job restricts the plans
// the mixed planner may choose from, so on 300 random small cases (2-3
// types of 1-5 machines, 2-4 jobs, some already running) the mixed plan is
// never worse by plan_value than the one-type plan, under every objective
// and solver; and neither plan holds more machines than the pool has.
TEST(Planner, MixedPlanNeverWorseThanOneTypePlan) {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 300; ++trial) {
    RandomCase c = random_case(rng, 4, true);
    // Small enough that the one-sample minimum and the step shape matter.
    for (Job& j : c.jobs) j.global_batch = 64;
    const Pricer p(c.pool, c.jobs);
    const std::vector<ActiveJob> active = random_running(c.pool, c.jobs, rng);
    for (const Objective objective :
         {Objective::kMaxMinFair, Objective::kMinAvgJct, Objective::kMakespan, Objective::kCost}) {
      for (const Solver solver : {Solver::kAuto, Solver::kGreedy}) {
        PlanOptions o;
        o.objective = objective;
        o.solver = solver;
        const RoundPlan mixed = plan_round(p, active, o);
        o.one_type_per_job = true;
        const RoundPlan one = plan_round(p, active, o);
        EXPECT_FALSE(
            better_plan(plan_value(p, active, o, one.allocation), plan_value(p, active, o, mixed.allocation)))
            << "trial " << trial << " " << objective_name(objective);
        for (std::size_t t = 0; t < c.pool.types.size(); ++t) {
          std::size_t used = 0, used_one = 0;
          for (std::size_t a = 0; a < active.size(); ++a)
            used += mixed.allocation[a][t], used_one += one.allocation[a][t];
          EXPECT_LE(used, c.pool.types[t].count) << trial;
          EXPECT_LE(used_one, c.pool.types[t].count) << trial;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hetrain::sched

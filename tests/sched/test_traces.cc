// Properties of whole traces (docs/scheduling.md, "On random traces"): on
// seeded random job traces and pools, under every objective and both
// solvers, every plan fits the pool, every job finishes, and each plan is
// no worse than the one-type plan made at the same moment, by the plan's
// value computed test-side (plan_search.h). Prints the distribution of the
// trace-level gains of mixed types over one type per job and over FCFS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>

#include "hetrain/sched/simulate.h"
#include "plan_search.h"
#include "sched_fixtures.h"
#include "sched_random.h"

namespace hetrain::sched {
namespace {

constexpr unsigned kFirstTrace = 1, kLastTrace = 36;

constexpr Objective kObjectives[] = {Objective::kMaxMinFair, Objective::kMinAvgJct, Objective::kMakespan,
                                     Objective::kCost};

// Every job ran, and no faster than the whole pool's linear speed allows.
void expect_all_finish(const Pricer& p, const ScheduleResult& r, const std::string& what) {
  ASSERT_EQ(r.jobs.size(), p.jobs().size()) << what;
  for (std::size_t j = 0; j < r.jobs.size(); ++j) {
    const Job& job = p.jobs()[j];
    const double ideal = static_cast<double>(job.steps * job.global_batch) / p.isolated(j);
    EXPECT_GE(r.jobs[j].start, job.arrival) << what << " job " << j;
    EXPECT_GE(r.jobs[j].jct, ideal * (1.0 - 1e-9)) << what << " job " << j;
    EXPECT_NEAR(r.jobs[j].finish, job.arrival + r.jobs[j].jct, 1e-6 * r.jobs[j].finish) << what << " job " << j;
    EXPECT_GT(r.jobs[j].machine_seconds, 0.0) << what << " job " << j;
  }
  EXPECT_LE(r.utilization, 1.0 + 1e-9) << what;
}

// One scheduler's run of a trace, with every plan checked as it is made.
ScheduleResult run_checked(const Pricer& p, SimJobsOptions o, const std::string& what, std::size_t* plans) {
  const bool planner = o.scheduler == Scheduler::kPlanner;
  const bool one_type = o.plan.one_type_per_job;
  o.on_plan = [&](const std::vector<ActiveJob>& active, const std::vector<Allocation>& plan) {
    ++*plans;
    EXPECT_EQ(testing::misfit(p, active, plan), "") << what << " at plan " << *plans;
    if (!planner) return;
    if (one_type) {
      EXPECT_TRUE(testing::one_type_each(plan)) << what << " at plan " << *plans;
      return;
    }
    PlanOptions restricted = o.plan;
    restricted.one_type_per_job = true;
    restricted.restart_seconds = o.restart_seconds;
    const std::vector<Allocation> other = plan_round(p, active, restricted).allocation;
    const testing::Value mine = testing::value_of(p, active, o.plan.objective, o.restart_seconds, plan);
    const testing::Value theirs = testing::value_of(p, active, o.plan.objective, o.restart_seconds, other);
    EXPECT_FALSE(testing::beats(theirs, mine))
        << what << " at plan " << *plans << ": one-type " << theirs.primary << "/" << theirs.secondary
        << " beats mixed " << mine.primary << "/" << mine.secondary;
  };
  const ScheduleResult r = simulate_jobs(p, o);
  expect_all_finish(p, r, what);
  return r;
}

// 1 - mixed / other: the share of `other`'s value that mixed types save.
struct Gains {
  std::vector<double> jct_vs_one, makespan_vs_one, jct_vs_fcfs, makespan_vs_fcfs;
  std::vector<std::string> worse;  // traces where mixed ends worse than one type per job
};

std::string spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  char out[96];
  std::snprintf(out, sizeof out, "%+6.1f%% %+6.1f%% %+6.1f%%", 100 * v.front(), 100 * v[v.size() / 2],
                100 * v.back());
  return out;
}

TEST(Traces, EveryPlanFitsEveryJobFinishesAndMixedIsNoWorseThanOneTypePerPlan) {
  std::size_t plans = 0;
  for (const Solver solver : {Solver::kAuto, Solver::kGreedy}) {
    std::printf("%s: gains of mixed types over traces %u-%u (min, median, max; + is better)\n",
                solver == Solver::kGreedy || !lp_solver_available() ? "greedy" : "LP", kFirstTrace, kLastTrace);
    std::printf("  %-13s %-27s %-27s %-27s %-27s\n", "objective", "avg JCT vs one-type", "makespan vs one-type",
                "avg JCT vs FCFS", "makespan vs FCFS");
    for (const Objective objective : kObjectives) {
      Gains g;
      for (unsigned seed = kFirstTrace; seed <= kLastTrace; ++seed) {
        std::mt19937 rng(seed);
        const testing::RandomCase c = testing::random_trace(rng);
        const Pricer p(c.pool, c.jobs);
        const std::string what = "trace " + std::to_string(seed) + " " + objective_name(objective);
        SimJobsOptions o;
        o.plan.objective = objective;
        o.plan.solver = solver;
        const ScheduleResult mixed = run_checked(p, o, what + " mixed", &plans);
        o.plan.one_type_per_job = true;
        const ScheduleResult one = run_checked(p, o, what + " one-type", &plans);
        o.scheduler = Scheduler::kFcfs;
        const ScheduleResult fcfs = run_checked(p, o, what + " fcfs", &plans);
        g.jct_vs_one.push_back(1.0 - mixed.avg_jct / one.avg_jct);
        g.makespan_vs_one.push_back(1.0 - mixed.makespan / one.makespan);
        g.jct_vs_fcfs.push_back(1.0 - mixed.avg_jct / fcfs.avg_jct);
        g.makespan_vs_fcfs.push_back(1.0 - mixed.makespan / fcfs.makespan);
        if (mixed.avg_jct > one.avg_jct) g.worse.push_back(std::to_string(seed) + " (avg JCT)");
        if (mixed.makespan > one.makespan) g.worse.push_back(std::to_string(seed) + " (makespan)");
      }
      std::printf("  %-13s %-27s %-27s %-27s %-27s\n", objective_name(objective).c_str(), spread(g.jct_vs_one).c_str(),
                  spread(g.makespan_vs_one).c_str(), spread(g.jct_vs_fcfs).c_str(), spread(g.makespan_vs_fcfs).c_str());
      std::string worse;
      for (const std::string& w : g.worse) worse += " " + w;
      std::printf("    mixed ends worse than one-type on traces:%s\n", worse.empty() ? " none" : worse.c_str());
    }
  }
  std::printf("%zu plans checked\n", plans);
}

}  // namespace
}  // namespace hetrain::sched

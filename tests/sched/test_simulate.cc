// The trace simulation on cases small enough to follow by hand: one job
// alone, two sharing, a restart after a move, FCFS's head-of-line blocking.
#include <gtest/gtest.h>

#include "hetrain/sched/simulate.h"
#include "sched_fixtures.h"

namespace hetrain::sched {
namespace {

using testing::job_of;
using testing::pool_of;

// 20 samples per step at 10 samples/s per machine: 2 s per step on one
// machine, 1 s on two.
Job small_job(std::size_t steps, double arrival = 0.0) {
  Job j = job_of({10}, steps);
  j.global_batch = 20;
  j.arrival = arrival;
  return j;
}

TEST(Simulate, OneJobAloneUsesThePool) {
  const Pool pool = pool_of({2});
  const std::vector<Job> jobs{small_job(100)};
  const Pricer p(pool, jobs);
  const ScheduleResult r = simulate_jobs(p, {});
  EXPECT_DOUBLE_EQ(r.jobs[0].jct, 100.0);
  EXPECT_DOUBLE_EQ(r.makespan, 100.0);
  EXPECT_DOUBLE_EQ(r.utilization, 1.0);
  EXPECT_EQ(r.moves, 0u);
}

// A runs alone on both machines for 10 s (10 steps); B arrives, each gets
// one (A pays the 5 s restart: 90 steps at 2 s from 15 s, done at 195 s);
// then B takes both (paying its own restart) with 7.5 of its 100 steps left
// at 200 s: done at 207.5 s.
TEST(Simulate, ArrivalMovesAJobWhichPaysItsRestart) {
  const Pool pool = pool_of({2});
  const std::vector<Job> jobs{small_job(100), small_job(100, 10.0)};
  const Pricer p(pool, jobs);
  SimJobsOptions o;
  o.restart_seconds = 5.0;
  const ScheduleResult r = simulate_jobs(p, o);
  EXPECT_NEAR(r.jobs[0].finish, 195.0, 1e-9);
  EXPECT_NEAR(r.jobs[1].finish, 207.5, 1e-9);
  EXPECT_NEAR(r.jobs[1].jct, 197.5, 1e-9);
  EXPECT_EQ(r.jobs[0].moves, 1u);
  EXPECT_EQ(r.jobs[1].moves, 1u);
  EXPECT_NEAR(r.avg_jct, (195.0 + 197.5) / 2, 1e-9);
  EXPECT_NEAR(r.p90_jct, 197.5, 1e-9);
  // Both machines held from 0 to 207.5 s but for A's last 12.5 s: B held 2
  // from 195 s, and 1 from 10 s.
  EXPECT_NEAR(r.utilization, (2 * 10.0 + 1 * 185.0 + 1 * 185.0 + 2 * 12.5) / (2 * 207.5), 1e-9);
}

// FCFS: job 0 asks for both machines, job 1 for one; job 1 waits for job 0.
TEST(Simulate, FcfsBlocksBehindTheHead) {
  const Pool pool = pool_of({2});
  std::vector<Job> jobs{small_job(100), small_job(10, 1.0)};
  jobs[0].workers = 2;
  const Pricer p(pool, jobs);
  SimJobsOptions o;
  o.scheduler = Scheduler::kFcfs;
  const ScheduleResult r = simulate_jobs(p, o);
  EXPECT_DOUBLE_EQ(r.jobs[0].finish, 100.0);
  EXPECT_DOUBLE_EQ(r.jobs[1].start, 100.0);
  EXPECT_DOUBLE_EQ(r.jobs[1].finish, 120.0);  // one machine, 2 s a step
  EXPECT_EQ(r.moves, 0u);
}

TEST(Simulate, PeriodicRoundsWithoutChangeMoveNothing) {
  const Pool pool = pool_of({2});
  const std::vector<Job> jobs{small_job(100), small_job(100)};
  const Pricer p(pool, jobs);
  SimJobsOptions o;
  o.round_seconds = 7.0;
  const ScheduleResult r = simulate_jobs(p, o);
  EXPECT_DOUBLE_EQ(r.jobs[0].finish, 200.0);
  EXPECT_DOUBLE_EQ(r.jobs[1].finish, 200.0);
  EXPECT_EQ(r.moves, 0u);
  EXPECT_GT(r.rounds, 200.0 / 7.0);
  EXPECT_NEAR(r.jain, 1.0, 1e-12);
}

TEST(Simulate, JainIndex) {
  EXPECT_DOUBLE_EQ(jain_index({1, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(jain_index({1, 0}), 0.5);
  EXPECT_DOUBLE_EQ(jain_index({2, 1}), 9.0 / 10.0);
}

}  // namespace
}  // namespace hetrain::sched

// Pricer: the grouped water-filling against the allocation core's own
// integer split, the one-sample minimum, and the allreduce.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "hetrain/sched/plan_steps.h"
#include "hetrain/sched/pricing.h"
#include "hetrain/sim/network_cost.h"
#include "sched_fixtures.h"

namespace hetrain::sched {
namespace {

using testing::job_of;
using testing::pool_of;

TEST(Pricing, LinearWithoutOverheadOrNetwork) {
  const Pool pool = pool_of({4, 4});
  const std::vector<Job> jobs{job_of({4, 1})};
  const Pricer p(pool, jobs);
  EXPECT_DOUBLE_EQ(p.throughput(0, {3, 2}), 14.0);
  EXPECT_DOUBLE_EQ(p.isolated(0), 20.0);
  EXPECT_TRUE(std::isinf(p.step_seconds(0, {0, 0})));
  EXPECT_EQ(p.throughput(0, {0, 0}), 0.0);
}

TEST(Pricing, TypeTheJobCannotRunOnIsInfinite) {
  const Pool pool = pool_of({1, 1});
  const std::vector<Job> jobs{job_of({4, 0})};
  EXPECT_TRUE(std::isinf(Pricer(pool, jobs).step_seconds(0, {1, 1})));
}

TEST(Pricing, MoreMachinesThanSamplesIsInfinite) {
  const Pool pool = pool_of({8});
  std::vector<Job> jobs{job_of({4})};
  jobs[0].global_batch = 4;
  const Pricer p(pool, jobs);
  EXPECT_TRUE(std::isfinite(p.step_seconds(0, {4})));
  EXPECT_TRUE(std::isinf(p.step_seconds(0, {5})));
}

// A machine too slow for even its one sample sets the makespan; trimming drops it.
TEST(Pricing, PinnedSlowMachineAndTrim) {
  const Pool pool = pool_of({1, 1});
  std::vector<Job> jobs{job_of({100, 0.5})};
  jobs[0].global_batch = 100;
  const Pricer p(pool, jobs);
  EXPECT_DOUBLE_EQ(p.step_seconds(0, {1, 1}), 2.0);  // the slow one's single sample
  EXPECT_DOUBLE_EQ(p.exact_step_seconds(0, {1, 1}), 2.0);
  Allocation x{1, 1};
  trim_useless(p, 0, x);
  EXPECT_EQ(x, (Allocation{1, 0}));
  EXPECT_DOUBLE_EQ(p.step_seconds(0, x), 1.0);
}

TEST(Pricing, AddsTheRingAllreduceAndStepOverhead) {
  Pool pool = pool_of({4});
  pool.network.bandwidth = 1e9;
  std::vector<Job> jobs{job_of({100})};
  jobs[0].global_batch = 400;
  jobs[0].gradient_bytes = 4e6;
  jobs[0].step_overhead = 0.01;
  const Pricer p(pool, jobs);
  const double ring = sim::allreduce_seconds(pool.network, 4, 4e6);
  EXPECT_GT(ring, 0.0);
  EXPECT_NEAR(p.step_seconds(0, {4}), 1.0 + ring + 0.01, 1e-12);
}

// Within one sample of the slowest machine used of alloc::solve_split's
// integer split, on random jobs and allocations.
TEST(Pricing, GroupedSplitMatchesTheAllocationCore) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> speed(1.0, 200.0), overhead(0.0, 0.05);
  std::uniform_int_distribution<std::size_t> count(0, 6), batch(16, 2048);
  for (int trial = 0; trial < 300; ++trial) {
    const Pool pool = pool_of({6, 6, 6});
    std::vector<Job> jobs{job_of({speed(rng), speed(rng), speed(rng)})};
    jobs[0].overhead = overhead(rng);
    jobs[0].global_batch = batch(rng);
    const Pricer p(pool, jobs);
    const Allocation x{count(rng), count(rng), count(rng)};
    if (machines_in(x) == 0) continue;
    double one_sample = 0.0;
    for (std::size_t t = 0; t < x.size(); ++t) {
      if (x[t] > 0) one_sample = std::max(one_sample, 1.0 / jobs[0].speed[t]);
    }
    EXPECT_NEAR(p.step_seconds(0, x), p.exact_step_seconds(0, x), one_sample + 1e-12) << trial;
    EXPECT_LE(p.step_seconds(0, x), p.exact_step_seconds(0, x) + 1e-12) << trial;
  }
}

}  // namespace
}  // namespace hetrain::sched

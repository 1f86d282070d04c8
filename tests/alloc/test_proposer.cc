// The Proposer: what it keys workers by, so the Grouper compares like with like.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "hetrain/alloc/estimator.h"
#include "hetrain/alloc/proposer.h"

namespace hetrain::alloc {
namespace {

using Units = std::vector<std::size_t>;

// Three identical devices and a slower one, their lines known, overhead and
// per-sample cost apart: each measured at batches 2 and 6 in turn, noise-free.
Estimator three_twins_and_a_slower(double overhead, double per_sample) {
  Estimator e(4, AdaptiveTuning{});
  for (int step = 0; step < 60; ++step) {
    const double b = step % 2 == 0 ? 2.0 : 6.0;
    std::vector<WorkerSample> s(4, WorkerSample{b, overhead + per_sample * b});
    s[3].compute = overhead + 4.0 * per_sample * b;
    e.observe(s);
  }
  return e;
}

// A global batch of 12: the twins, one unit at [3, 3, 3] beside the slower
// worker's 3, take 10 between them when it gives one up, [4, 3, 3]. Per
// sample, the 10 ms overhead makes the first 3.5 ms and the others 4.3 ms,
// 24% apart on lines learned without noise. Keyed where each runs, the
// first left its twins' unit the moment it took the remainder; keyed where
// their unit's step is set (the most any member runs), they stay one unit.
TEST(Proposer, TwinsASampleApartAreComparedAtOneBatchAndStayOneUnit) {
  const Estimator e = three_twins_and_a_slower(0.010, 0.001);
  Proposer p(12, Bounds{}, Placement{}, AdaptiveTuning{});
  p.propose(e, {3, 3, 3, 3});
  ASSERT_EQ(p.units(), (Units{0, 0, 0, 1}));
  p.propose(e, {4, 3, 3, 2});
  EXPECT_EQ(p.units(), (Units{0, 0, 0, 1}));
  p.propose(e, {3, 4, 3, 2});
  EXPECT_EQ(p.units(), (Units{0, 0, 0, 1}));
}

// Without a unit to be compared in (the first decision), each is keyed where
// it runs: the rule holds units together, it makes no one alike. At [40, 30,
// 30, 20] of 120 the overhead makes the first 1.25 ms a sample and its twins
// 1.33 ms, 6.5% apart: more than a sample's share of their batches (1/30).
TEST(Proposer, WorkersOfNoUnitAreKeyedWhereTheyRun) {
  const Estimator e = three_twins_and_a_slower(0.010, 0.001);
  Proposer p(120, Bounds{}, Placement{}, AdaptiveTuning{});
  p.propose(e, {40, 30, 30, 20});
  EXPECT_EQ(p.units(), (Units{0, 1, 1, 2}));
}

// Two devices 6% apart a sample, lines learned without noise at 10 and 100
// samples: at 10 samples each, shares 6% apart differ by less than a sample,
// which no split can give them, so they are one unit; at 100 each, by six
// samples, and they are two.
TEST(Proposer, WorkersApartByLessThanASampleOfTheirBatchAreOneUnit) {
  Estimator e(2, AdaptiveTuning{});
  for (int step = 0; step < 60; ++step) {
    const double b = step % 2 == 0 ? 10.0 : 100.0;
    e.observe({WorkerSample{b, 0.001 * b}, WorkerSample{b, 0.00106 * b}});
  }
  Proposer small(20, Bounds{}, Placement{}, AdaptiveTuning{});
  small.propose(e, {10, 10});
  EXPECT_EQ(small.units(), (Units{0, 0}));
  Proposer large(200, Bounds{}, Placement{}, AdaptiveTuning{});
  large.propose(e, {100, 100});
  EXPECT_EQ(large.units(), (Units{0, 1}));
}

}  // namespace
}  // namespace hetrain::alloc

// The Estimator: lines recovered from exact data, spikes ignored, changes
// seen both ways (also from sparse samples), uncertainty growing unobserved.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "hetrain/alloc/estimator.h"

namespace hetrain::alloc {
namespace {

const AdaptiveTuning kTuning;

TEST(LineEstimate, RecoversOverheadAndPerSampleCostFromVaryingBatches) {
  LineEstimate l;
  const double a = 0.02, c = 0.002;
  for (int round = 0; round < 20; ++round) {
    for (double b : {10.0, 40.0, 20.0, 60.0, 30.0, 50.0}) {
      l.drift(kTuning);
      l.observe(b, a + c * b, kTuning);
    }
  }
  EXPECT_NEAR(l.overhead(), a, 0.002);
  EXPECT_NEAR(l.per_sample(), c, 0.0001);
  EXPECT_NEAR(l.predict(100.0), a + 100.0 * c, 0.01 * (a + 100.0 * c));
  EXPECT_EQ(l.changes(), 0u);
}

TEST(LineEstimate, AnIsolatedSpikeMovesTheEstimateLittleAndIsNoChange) {
  LineEstimate l;
  for (int i = 0; i < 30; ++i) l.drift(kTuning), l.observe(32.0, 0.32, kTuning);
  l.drift(kTuning);
  EXPECT_FALSE(l.observe(32.0, 3.2, kTuning));  // one 10x spike
  EXPECT_LT(l.predict(32.0), 0.32 * 1.15);
  l.drift(kTuning);
  EXPECT_FALSE(l.observe(32.0, 0.32, kTuning));
  EXPECT_EQ(l.changes(), 0u);
}

// Steps until a line at 0.32 s sees a change to `after` seconds.
int steps_to_follow(double after) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(0.0, 0.03);
  LineEstimate l;
  for (int i = 0; i < 40; ++i) l.drift(kTuning), l.observe(32.0, 0.32 * (1.0 + noise(rng)), kTuning);
  for (int k = 1; k <= 20; ++k) {
    l.drift(kTuning);
    l.observe(32.0, after * (1.0 + noise(rng)), kTuning);
    if (std::abs(l.predict(32.0) / after - 1.0) < 0.1) return k;
  }
  return 100;
}

TEST(LineEstimate, FollowsASlowdownAndARecoveryWithinFourSteps) {
  EXPECT_LE(steps_to_follow(4 * 0.32), 4);   // 4x slower
  EXPECT_LE(steps_to_follow(0.32 / 4), 4);   // 4x faster
}

TEST(LineEstimate, UncertaintyGrowsWhileUnobservedAndARareSampleIsBelieved) {
  LineEstimate l;
  for (int i = 0; i < 30; ++i) l.drift(kTuning), l.observe(1.0, 0.4, kTuning);
  const double known = l.error(1.0);
  for (int i = 0; i < 400; ++i) l.drift(kTuning);
  // The level's random walk: sd grows as speed_drift x sqrt(steps) = 0.2.
  EXPECT_GT(l.error(1.0), 0.15);
  EXPECT_GT(l.error(1.0), 3.0 * known);
  // One sample of a 4x recovery after that long moves the estimate most of the way.
  l.drift(kTuning);
  l.observe(1.0, 0.1, kTuning);
  EXPECT_LT(l.predict(1.0), 0.25);
}

TEST(LineEstimate, NoiseIsMeasured) {
  std::mt19937_64 rng(2);
  std::normal_distribution<double> noise(0.0, 0.05);
  LineEstimate l;
  for (int i = 0; i < 300; ++i) l.drift(kTuning), l.observe(16.0, 0.16 * (1.0 + noise(rng)), kTuning);
  EXPECT_NEAR(l.noise(), 0.05, 0.015);
}

TEST(Estimator, ChangesOfHostWorkersAreSeenInTheirCpuSeconds) {
  Estimator e(2, kTuning, {false, true});
  std::vector<WorkerSample> s(2);
  for (int i = 0; i < 20; ++i) {
    s[0] = {10.0, 0.1, -1.0, -1.0};
    s[1] = {10.0, 0.1, 0.1, -1.0};
    EXPECT_FALSE(e.observe(s));
  }
  // Worker 1's wall time doubles (a neighbour took its CPU), its CPU-seconds do not.
  bool changed = false;
  for (int i = 0; i < 5; ++i) {
    s[1] = {10.0, 0.2, 0.1, -1.0};
    changed = e.observe(s) || changed;
  }
  EXPECT_FALSE(changed);
  for (int i = 0; i < 5; ++i) {
    s[0] = {10.0, 0.4, -1.0, -1.0};
    changed = e.observe(s) || changed;
  }
  EXPECT_TRUE(changed);
}

TEST(Estimator, AHostWorkerThatStopsSleepingHasChangedAndPlansNoWait) {
  Estimator e(1, kTuning, {true});
  std::vector<WorkerSample> s(1);
  for (int i = 0; i < 10; ++i) {
    s[0] = {10.0, 0.4, 0.1, 0.3};
    EXPECT_FALSE(e.observe(s));
  }
  ASSERT_TRUE(e.wait(0).known());
  s[0] = {10.0, 0.1, 0.1, 0.0};  // recovered: no more time off the CPU
  EXPECT_TRUE(e.observe(s));
  EXPECT_FALSE(e.wait(0).known());
  s[0] = {10.0, 0.4, 0.1, 0.3};  // slowed again
  EXPECT_TRUE(e.observe(s));
}

TEST(Cusum, TwoSidedAndRestartsAfterAnAlarm) {
  Cusum c;
  // Drift 0.5, limit 6: clipped +3 residuals add 2.5 each.
  EXPECT_FALSE(c.add(3.0, kTuning));
  EXPECT_FALSE(c.add(3.0, kTuning));
  EXPECT_TRUE(c.add(3.0, kTuning));
  EXPECT_FALSE(c.add(-3.0, kTuning));
  EXPECT_FALSE(c.add(-3.0, kTuning));
  EXPECT_TRUE(c.add(-3.0, kTuning));
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(c.add(i % 2 ? 0.4 : -0.4, kTuning));
}

}  // namespace
}  // namespace hetrain::alloc

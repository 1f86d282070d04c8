// The Grouper: one notion of alike, one hysteresis, never a chained spread.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "hetrain/alloc/grouper.h"

namespace hetrain::alloc {
namespace {

using Units = std::vector<std::size_t>;
const AdaptiveTuning kTuning;

std::vector<GroupKey> keys(const std::vector<double>& times, double error = 0.0) {
  std::vector<GroupKey> out;
  for (const double t : times) out.push_back({t, error, 0});
  return out;
}

TEST(Grouper, WithinTheToleranceIsOneUnitBeyondItIsNot) {
  Grouper g(kTuning);
  // 1.00 and 1.01 are alike (2%), 1.10 is not; units numbered by lowest rank.
  EXPECT_EQ(g.group(keys({1.10, 1.00, 1.01})), (Units{0, 1, 1}));
}

TEST(Grouper, UncertainEstimatesAreAlikeFurther) {
  Grouper g(kTuning);
  // Errors of 5% each: 3 x 7.1% = 21% tolerance.
  EXPECT_EQ(g.group(keys({1.0, 1.15}, 0.05)), (Units{0, 0}));
  Grouper h(kTuning);
  EXPECT_EQ(h.group(keys({1.0, 1.15}, 0.0)), (Units{0, 1}));
}

TEST(Grouper, AGroupHoldsUpToTwiceTheTolerance) {
  Grouper g(kTuning);
  EXPECT_EQ(g.group(keys({1.0, 1.01})), (Units{0, 0}));
  EXPECT_EQ(g.group(keys({1.0, 1.03})), (Units{0, 0}));  // 3%: held
  EXPECT_EQ(g.group(keys({1.0, 1.05})), (Units{0, 1}));  // 5%: cut
  EXPECT_EQ(g.group(keys({1.0, 1.03})), (Units{0, 1}));  // not together last time: 3% apart is apart
}

TEST(Grouper, AContinuousSpreadIsNotChainedIntoOneGroup) {
  Grouper g(kTuning);
  std::vector<double> times;
  for (int i = 0; i < 50; ++i) times.push_back(1.0 + 0.015 * i);
  const Units u = g.group(keys(times));
  // The spread is log(1.735) = 0.551; a group spans at most twice the
  // tolerance (0.04) and the gaps between groups are at most 0.015, so
  // n groups cover at most 0.055 n - 0.015: at least 11 (unchained: one).
  EXPECT_GE(u.back(), 10u);
}

TEST(Grouper, ANoisyWorkerJoinsTheGroupItIsStatisticallyClosestTo) {
  Grouper g(kTuning);
  // Three precise workers near 1.0 and a precise pair near 2.0; a noisy one
  // at 1.6 (error 0.15) is in reach of both, closer to the pair in standard errors.
  std::vector<GroupKey> k = keys({1.0, 1.02, 0.99, 2.0, 2.02}, 0.01);
  k.push_back({1.6, 0.15, 0});
  const Units u = g.group(k);
  EXPECT_EQ(u[0], u[1]);
  EXPECT_EQ(u[3], u[4]);
  EXPECT_NE(u[0], u[3]);
  EXPECT_EQ(u[5], u[3]);
}

TEST(Grouper, AHeldGroupIsNotCutByNoiseWithinTwiceTheStatisticalTolerance) {
  Grouper g(kTuning);
  // Errors of 5%: the tolerance is 3 x 7.1% = 21%; held, 42%.
  EXPECT_EQ(g.group(keys({1.0, 1.1}, 0.05)), (Units{0, 0}));
  EXPECT_EQ(g.group(keys({1.0, 1.35}, 0.05)), (Units{0, 0}));  // 30%: held
  EXPECT_EQ(g.group(keys({1.0, 1.6}, 0.05)), (Units{0, 1}));   // 47%: cut
}

TEST(Grouper, AWorkerOfAnotherUnitSortingBetweenTwoMembersDoesNotCutTheirUnit) {
  Grouper g(kTuning);
  // Twins A and B (errors of 5%) are one unit; C (1%) is apart.
  std::vector<GroupKey> k = keys({1.0, 1.05, 1.6}, 0.05);
  k[2].error = 0.01;
  EXPECT_EQ(g.group(k), (Units{0, 0, 1}));
  // C now sorts between them, closer to B: B joins C first, and the boundary
  // A | {C, B} is between two workers that were not one unit. A and B, 20%
  // apart on 7.1% combined errors, are within their unit's hold (42%), and C,
  // between them, is held to them as they are to each other.
  k[1].time = 1.22, k[2].time = 1.18;
  EXPECT_EQ(g.group(k), (Units{0, 0, 0}));
}

TEST(Grouper, AFreshChangeStaysInItsUnitButJoinsNoOther) {
  Grouper g(kTuning);
  // Twins 1.0 and 1.0, and a worker at 1.6; errors of 1%.
  EXPECT_EQ(g.group(keys({1.0, 1.0, 1.6}, 0.01)), (Units{0, 0, 1}));
  // The second twin's alarm moved it to 1.5, a shift of log 1.5 / 3 = 0.135
  // of reach: held with its twin (2 x 3 x 0.135 = 0.81 > 0.405) ...
  std::vector<GroupKey> k = keys({1.0, 1.5, 1.6}, 0.01);
  k[1].reach = std::log(1.5) / kTuning.clip_sigmas;
  EXPECT_EQ(g.group(k), (Units{0, 0, 1}));
  // ... and, once the samples after it confirm it (no reach), cut from it
  // (1.5 and 1.6 are apart on 1% errors too).
  k[1].reach = 0.0;
  EXPECT_EQ(g.group(k), (Units{0, 1, 2}));
  // A fresh change never joins a unit it was not in on its reach.
  Grouper h(kTuning);
  std::vector<GroupKey> fresh = keys({1.0, 1.4}, 0.01);
  fresh[1].reach = 0.5;
  EXPECT_EQ(h.group(fresh), (Units{0, 1}));
}

TEST(Grouper, AUnitWhoseMembersNowSortInTwoClassesHoldsNoBoundaryOfAClassBetween) {
  Grouper g(kTuning);
  // Worker 1 is with worker 0 (class 1); workers 2 and 3 (class 2) are apart.
  std::vector<GroupKey> k = keys({1.0, 1.0, 1.0, 1.3}, 0.01);
  k[0].klass = k[1].klass = 1, k[2].klass = k[3].klass = 2;
  EXPECT_EQ(g.group(k), (Units{0, 0, 1, 2}));
  // Worker 1's class changes to 3 (its CPU line became known): its unit now
  // sorts in classes 1 and 3, around class 2, whose workers 6% apart (beyond
  // the tolerance of 4.2%, within twice it) were never one unit: still apart.
  k[1].klass = 3, k[3].time = 1.06;
  const Units u = g.group(k);
  EXPECT_NE(u[2], u[3]);
}

TEST(Grouper, DifferentClassesAreNeverAlike) {
  Grouper g(kTuning);
  std::vector<GroupKey> k = keys({1.0, 1.0, 1.0});
  k[2].klass = 7;
  EXPECT_EQ(g.group(k), (Units{0, 0, 1}));
}

}  // namespace
}  // namespace hetrain::alloc

// The TrialController's one acceptance rule (SPRT) and its state table.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "hetrain/alloc/trial.h"

namespace hetrain::alloc {
namespace {

using Split = std::vector<std::size_t>;
const AdaptiveTuning kTuning;

// A controller whose incumbent measured `times` steps of 1 s with noise `sigma`.
TrialController measured(double sigma, int times, std::mt19937_64& rng) {
  TrialController c(kTuning);
  c.ready();
  std::normal_distribution<double> n(0.0, sigma);
  for (int i = 0; i < times; ++i) c.incumbent_time(std::exp(n(rng)), 0.0);
  return c;
}

// Runs a trial of predicted `gain` on steps whose true gain is `truth`.
// Returns the verdict and the trial steps it took.
std::pair<Verdict, int> run(double sigma, double gain, double truth, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  TrialController c = measured(sigma, 20, rng);
  EXPECT_EQ(c.consider(gain, Split{1, 2}, 100), Action::kTrial);
  std::normal_distribution<double> n(0.0, sigma);
  for (int k = 1; k <= 100; ++k) {
    c.trial_time((1.0 - truth) * std::exp(n(rng)), 0.0);
    const Verdict v = c.verdict();
    if (v != Verdict::kUndecided) return {v, k};
  }
  return {Verdict::kUndecided, 100};
}

TEST(Sprt, ARealGainIsKeptQuicklyAndANullOneIsReverted) {
  // A 30% gain on 5% noise: one or two steps.
  const auto [keep, steps] = run(0.05, 0.3, 0.3, 1);
  EXPECT_EQ(keep, Verdict::kKeep);
  EXPECT_LE(steps, 2);
  EXPECT_EQ(run(0.05, 0.3, 0.0, 2).first, Verdict::kRevert);
  EXPECT_EQ(run(0.05, 0.3, -0.1, 3).first, Verdict::kRevert);
}

TEST(Sprt, ErrorRatesHoldOverManyTrials) {
  // false_keep 5%, false_revert 10%: measured over 400 trials each, with room
  // for the truncation and the incumbent mean's own error.
  int false_keeps = 0, false_reverts = 0;
  for (std::uint64_t s = 0; s < 400; ++s) {
    false_keeps += run(0.05, 0.05, 0.0, 1000 + s).first == Verdict::kKeep;
    false_reverts += run(0.05, 0.05, 0.05, 5000 + s).first == Verdict::kRevert;
  }
  EXPECT_LT(false_keeps, 0.10 * 400);
  EXPECT_LT(false_reverts, 0.18 * 400);
}

TEST(TrialController, AGainTooSmallToShowIsTakenOnATrustedModelsWordOnly) {
  std::mt19937_64 rng(4);
  TrialController c = measured(0.05, 20, rng);
  EXPECT_GT(c.steps_to_show(0.012), static_cast<double>(kTuning.max_trial_steps));
  EXPECT_EQ(c.consider(0.012, Split{1, 2}, 10), Action::kMove);
  EXPECT_EQ(c.consider(0.005, Split{1, 2}, 10), Action::kNone);  // below min_gain
}

TEST(TrialController, AfterARevertTheModelIsUntrustedUntilAChange) {
  std::mt19937_64 rng(5);
  TrialController c = measured(0.05, 20, rng);
  ASSERT_EQ(c.consider(0.3, Split{1, 2}, 10), Action::kTrial);
  while (c.verdict() == Verdict::kUndecided) c.trial_time(1.0, 0.0);
  EXPECT_FALSE(c.trusted());
  EXPECT_EQ(c.state(), TrialState::kSteady);
  EXPECT_EQ(c.consider(0.3, Split{1, 2}, 11), Action::kNone);  // the rejected split
  for (int i = 0; i < 5; ++i) c.incumbent_time(1.0, 0.0);
  EXPECT_EQ(c.consider(0.012, Split{2, 1}, 11), Action::kNone);  // too small to try, and untrusted
  EXPECT_EQ(c.consider(0.3, Split{2, 1}, 11), Action::kNone);    // backoff: 24 steps from the last trial
  EXPECT_EQ(c.consider(0.3, Split{2, 1}, 34), Action::kTrial);
  c.changed();
  EXPECT_TRUE(c.trusted());
  EXPECT_EQ(c.state(), TrialState::kSteady);
}

TEST(TrialController, AShiftOfTheStepTimeIsAChange) {
  std::mt19937_64 rng(6);
  TrialController c = measured(0.02, 30, rng);
  bool shifted = false;
  for (int i = 0; i < 4; ++i) shifted = c.incumbent_time(1.5, 0.0) || shifted;
  EXPECT_TRUE(shifted);
  EXPECT_NEAR(std::exp(c.incumbent().mean()), 1.5, 1e-9);
}

}  // namespace
}  // namespace hetrain::alloc

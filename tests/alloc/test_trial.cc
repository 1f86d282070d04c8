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
  EXPECT_EQ(c.consider(0.005, Split{1, 2}, 10), Action::kNone);  // below min_gain
  EXPECT_EQ(c.consider(0.012, Split{1, 2}, 10), Action::kChecked);
  EXPECT_EQ(c.consider(0.012, Split{2, 1}, 10), Action::kNone);  // one move on test at a time
}

// Takes a move of predicted `gain` too small to show (`before` incumbent
// steps of 1 s at noise `sigma`) on steps whose true gain is `truth`
// (negative: a harm). Returns the check's verdict, the steps it took, and
// whether the model is still trusted.
struct Checked {
  Verdict verdict = Verdict::kUndecided;
  int steps = 0;
  bool trusted = true;
};
Checked check(double sigma, double gain, double truth, std::uint64_t seed, int before = 20) {
  std::mt19937_64 rng(seed);
  TrialController c = measured(sigma, before, rng);
  EXPECT_GT(c.steps_to_show(gain), static_cast<double>(kTuning.max_trial_steps));
  EXPECT_EQ(c.consider(gain, Split{1, 2}, 100), Action::kChecked);
  EXPECT_EQ(c.state(), TrialState::kCheck);
  std::normal_distribution<double> n(0.0, sigma);
  for (int k = 1; k <= 100; ++k) {
    c.incumbent_time((1.0 - truth) * std::exp(n(rng)), 0.0);
    const Verdict v = c.verdict();
    if (v != Verdict::kUndecided) return {v, k, c.trusted()};
  }
  return {Verdict::kUndecided, 100, c.trusted()};
}

TEST(TrialController, AMoveTakenOnTheModelsWordThatSlowsTheStepIsRevertedAndTheModelUntrusted) {
  // A 1.2% gain predicted on 5% noise (too small to try), the step 25% slower:
  // shown in a step or two, as a trial's revert.
  const Checked harm = check(0.05, 0.012, -0.25, 7);
  EXPECT_EQ(harm.verdict, Verdict::kRevert);
  EXPECT_LE(harm.steps, 2);
  EXPECT_FALSE(harm.trusted);
  // The same move gaining what was predicted stands, and so does one that
  // gains nothing: no harm the step time could show.
  EXPECT_EQ(check(0.05, 0.012, 0.012, 8).verdict, Verdict::kKeep);
  EXPECT_EQ(check(0.05, 0.012, 0.0, 9).verdict, Verdict::kKeep);
}

TEST(TrialController, ACheckRevertsMovesThatGainWhatWasPredictedAtMostAtTheTrialsErrorRate) {
  // false_revert 10%; the least harm the check shows in max_trial_steps (its
  // own: sqrt(2 A s^2 (1/24 + 1/m)), A its revert bound) is kept at
  // false_keep (5%); measured over 400 checks each against m = 100 steps
  // before the move (37 and 23 at these seeds), with room for the truncation.
  int false_reverts = 0, missed = 0;
  const double m = 100.0, n = static_cast<double>(kTuning.max_trial_steps);
  const double showable = 0.05 * std::sqrt(2.0 * std::log((1.0 - kTuning.false_keep) / kTuning.false_revert) *
                                           (1.0 / n + 1.0 / m));
  for (std::uint64_t s = 0; s < 400; ++s) {
    false_reverts += check(0.05, 0.012, 0.012, 3000 + s, 100).verdict == Verdict::kRevert;
    missed += check(0.05, 0.012, -showable, 7000 + s, 100).verdict == Verdict::kKeep;
  }
  EXPECT_LT(false_reverts, 0.18 * 400);
  EXPECT_LT(missed, 0.10 * 400);
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

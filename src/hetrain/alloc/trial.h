// The TrialController: when a proposal is taken, tried, kept or reverted.
// States and transitions are the table in docs/allocation.md ("The trial
// controller"). One acceptance rule: Wald's sequential probability ratio test
// on the log step time of the trial split against the incumbent's mean,
// H1 "it gains what the model predicted" against H0 "it gains nothing", with
// error rates AdaptiveTuning::false_keep and false_revert, decided by the
// sign of the evidence after max_trial_steps.
// A model that has been right (its last tried proposal was kept, or nothing
// has been tried since the last change) stays in charge: a proposal whose gain
// the step time cannot resolve within max_trial_steps is taken without a
// trial, and then checked (kCheck) against the split it replaced: a harm the
// step time could show within max_trial_steps against the predicted gain, at
// the trial's error rates. A move the model was wrong about is reverted as a
// trial is; one whose harm does not show stands.
// After a revert the model has been wrong: only proposals the step
// time can judge are taken, as trials, after a backoff that doubles with each
// revert in a row (a reverted split may be tried again then: a tenth of real
// gains are reverted by design, false_revert).
#pragma once

#include <cstddef>
#include <vector>

#include "hetrain/alloc/estimator.h"
#include "hetrain/alloc/tuning.h"

namespace hetrain::alloc {

enum class TrialState { kWarmup, kSteady, kTrial, kCheck };

// Log step times at one split: a robust running mean and noise (clipped
// residuals, forgetting at the speed drift's rate) and a CUSUM for shifts.
class StepLog {
 public:
  // Adds log(seconds) and the step's time beyond the slowest compute; true
  // when the step time shifted (a change no worker's estimate explains).
  bool add(double seconds, double rest, const AdaptiveTuning& t);
  std::size_t size() const { return n_; }
  double mean() const { return mean_; }      // of log seconds
  double noise() const { return noise_; }    // standard deviation of log seconds
  double rest() const { return rest_; }      // seconds beyond the compute
  void clear() { *this = StepLog{}; }

 private:
  std::size_t n_ = 0;
  double mean_ = 0.0, noise_ = 0.0, rest_ = 0.0;
  Cusum cusum_;
};

// A check's test: the log step times since a move against the mean of the
// split's before it, a frozen reference of m times, as Wald's test of two
// hypotheses of their mean difference d, `null` and `alt` (log seconds), on
// the mean of n differences, each clipped beyond clip_sigmas reference noise
// deviations of either (a spike counts no more than a 3-sigma draw). Its
// variance is s^2 (1/n + 1/m): the reference's own error is shared by every
// time after the move and does not average out (summed as independent
// steps, checks against references of a few steps undid real gains within
// the noise: docs/allocation.md, "TrialController").
class MeanTest {
 public:
  MeanTest() = default;
  MeanTest(const StepLog& reference, double null, double alt, const AdaptiveTuning& t);
  void add(double seconds);
  std::size_t size() const { return n_; }
  double evidence() const;
  // The variance of the mean difference after n times.
  double variance(std::size_t n) const;

 private:
  double mean_ = 0.0, noise_ = 0.0, m_ = 1.0;  // the reference's
  double null_ = 0.0, alt_ = 0.0, clip_ = 0.0;
  double sum_ = 0.0;
  std::size_t n_ = 0;
};

// kMove: taken; kChecked: taken, and checked against the split it replaces
// (reverted on a kRevert verdict); kTrial: tried.
enum class Action { kNone, kMove, kChecked, kTrial };
enum class Verdict { kUndecided, kKeep, kRevert };

class TrialController {
 public:
  explicit TrialController(AdaptiveTuning tuning) : tuning_(tuning) {}
  TrialState state() const { return state_; }
  bool trusted() const { return trusted_; }
  const StepLog& incumbent() const { return incumbent_; }

  // Every worker has an estimate: proposals may start.
  void ready();
  // A step time measured at the incumbent split (in kCheck, the move being
  // checked): true on a shift (then call changed()).
  bool incumbent_time(double seconds, double rest);
  // A step time measured at the trial split.
  void trial_time(double seconds, double rest);
  // What to do with a proposal of `gain` (a share of the step) at `step`
  // (kSteady only); kTrial starts the trial.
  Action consider(double gain, const std::vector<std::size_t>& proposal, std::size_t step);
  // A proposal that gives a worker the incumbent leaves idle samples at no
  // predicted cost (by its optimistic plan, proposer.h): kMove in kSteady, a
  // probe taken at once; its step times start afresh.
  Action probe();
  // The trial's (or the check's) verdict so far; kKeep and kRevert end it.
  Verdict verdict();
  // Something changed (a worker, or the step): the model is trusted again,
  // rejections are forgotten, the incumbent's times restart; a trial ends
  // (the caller goes back to the incumbent).
  void changed();
  // Steps the SPRT expects to need to show `gain` (a share of the step).
  double steps_to_show(double gain) const;

 private:
  double sigma_difference() const;
  WaldBounds check_bounds() const;
  Verdict check_verdict();
  void reverted(std::size_t from);
  AdaptiveTuning tuning_;
  TrialState state_ = TrialState::kWarmup;
  bool trusted_ = true;
  bool timed_ = false;         // some step time was ever reported
  bool after_change_ = false;  // no proposal considered since the last change
  StepLog incumbent_, trial_log_;
  double gain_log_ = 0.0;    // the trial's predicted gain, log seconds
  double evidence_ = 0.0;    // its log likelihood ratio, H1 over H0
  double baseline_ = 0.0;    // the incumbent's mean when the trial's first time came
  std::size_t judged_ = 0;   // trial times in the evidence
  StepLog before_;           // kCheck: the replaced split's times
  MeanTest check_;           // kCheck: its times against before_'s
  std::vector<std::size_t> proposal_;
  std::size_t rejections_ = 0, next_trial_ = 0, started_ = 0;
};

}  // namespace hetrain::alloc

#include "hetrain/alloc/trial.h"

#include <algorithm>
#include <cmath>

namespace hetrain::alloc {

bool StepLog::add(double seconds, double rest, const AdaptiveTuning& t) {
  const double x = std::log(seconds);
  if (n_ == 0) {
    mean_ = x, noise_ = t.prior_noise, rest_ = rest, n_ = 1;
    return false;
  }
  const double z = std::clamp((x - mean_) / noise_, -t.clip_sigmas, t.clip_sigmas);
  const bool shifted = cusum_.add(z, t);
  // Forgets at the speed drift's rate, as the estimates do; the prior noise
  // counts as one residual.
  const double w = std::max(1.0 / static_cast<double>(n_ + 1), t.speed_drift);
  const double r = z * noise_;
  mean_ += w * r;
  noise_ = std::max(t.min_noise, std::sqrt((1.0 - w) * noise_ * noise_ + w * r * r));
  rest_ += w * (rest - rest_);
  ++n_;
  return shifted;
}

void TrialController::ready() {
  if (state_ == TrialState::kWarmup) state_ = TrialState::kSteady;
}

bool TrialController::incumbent_time(double seconds, double rest) {
  timed_ = true;
  if (state_ == TrialState::kCheck) check_.add(seconds);
  if (!incumbent_.add(seconds, rest, tuning_)) return false;
  changed();
  incumbent_.add(seconds, rest, tuning_);
  return true;
}

MeanTest::MeanTest(const StepLog& reference, double null, double alt, const AdaptiveTuning& t)
    : mean_(reference.mean()),
      noise_(std::max(reference.size() > 0 ? reference.noise() : t.prior_noise, t.min_noise)),
      m_(static_cast<double>(std::max<std::size_t>(reference.size(), 1))),
      null_(null),
      alt_(alt),
      clip_(t.clip_sigmas * noise_) {}

double MeanTest::variance(std::size_t n) const {
  return noise_ * noise_ * (1.0 / static_cast<double>(std::max<std::size_t>(n, 1)) + 1.0 / m_);
}

void MeanTest::add(double seconds) {
  sum_ += std::clamp(std::log(seconds) - mean_, std::min(null_, alt_) - clip_, std::max(null_, alt_) + clip_);
  ++n_;
}

// log N(d; alt, v) - log N(d; null, v), d the mean difference.
double MeanTest::evidence() const {
  if (n_ == 0) return 0.0;
  const double d = sum_ / static_cast<double>(n_);
  return (alt_ - null_) * (d - 0.5 * (alt_ + null_)) / variance(n_);
}

double TrialController::sigma_difference() const {
  const double sigma = incumbent_.size() > 0 ? incumbent_.noise() : tuning_.prior_noise;
  const double m = static_cast<double>(std::max<std::size_t>(incumbent_.size(), 1));
  return std::max(sigma, tuning_.min_noise) * std::sqrt(1.0 + 1.0 / m);
}

double TrialController::steps_to_show(double gain) const {
  if (!(gain > 0.0) || gain >= 1.0) return gain >= 1.0 ? 1.0 : INFINITY;
  const double g = -std::log1p(-gain), s = sigma_difference();
  // Wald: E[n | H1] = log((1-b)/a) / E[step's log ratio | H1] = A 2 s^2 / g^2.
  const double a = wald_bounds(tuning_.false_keep, tuning_.false_revert).h1;
  return a * 2.0 * s * s / (g * g);
}

Action TrialController::consider(double gain, const std::vector<std::size_t>& proposal, std::size_t step) {
  if (state_ != TrialState::kSteady || !(gain >= tuning_.min_gain)) return Action::kNone;
  // Where step times are reported, nothing moves before the split now running
  // has one (else untested moves would follow each other unmeasured), except
  // right after a change: the split then running is known to be stale.
  if (timed_ && incumbent_.size() == 0) {
    if (!(after_change_ && trusted_)) return Action::kNone;
    after_change_ = false;
    return Action::kMove;
  }
  after_change_ = false;
  const double g = -std::log1p(-std::min(gain, 0.999));  // the gain as a log step time
  const bool resolvable =
      incumbent_.size() > 0 && steps_to_show(gain) <= static_cast<double>(tuning_.max_trial_steps);
  if (!resolvable) {
    if (!trusted_) return Action::kNone;
    if (incumbent_.size() == 0) return Action::kMove;  // no step times: nothing to check against
    // Taken on the model's word, checked against the split it replaces: the
    // predicted gain against the least harm whose evidence reaches the
    // revert bound A in max_trial_steps times on average (h^2 / (2 v) = A).
    state_ = TrialState::kCheck;
    before_ = incumbent_;
    incumbent_.clear();  // a new split: its own times from now on
    const double v = MeanTest(before_, -g, 0.0, tuning_).variance(tuning_.max_trial_steps);
    check_ = MeanTest(before_, -g, std::sqrt(2.0 * check_bounds().h1 * v), tuning_);
    started_ = step;
    return Action::kChecked;
  }
  if (step < next_trial_) return Action::kNone;
  state_ = TrialState::kTrial;
  gain_log_ = g;
  evidence_ = 0.0, judged_ = 0;
  trial_log_.clear();
  proposal_ = proposal;
  started_ = step;
  return Action::kTrial;
}

void TrialController::trial_time(double seconds, double rest) {
  if (state_ != TrialState::kTrial) return;
  timed_ = true;
  trial_log_.add(seconds, rest, tuning_);
  if (incumbent_.size() == 0) return;  // nothing to compare with: the model decides
  if (judged_ == 0) baseline_ = incumbent_.mean();
  const double s = sigma_difference(), g = gain_log_;
  // Clipped beyond clip_sigmas of either hypothesis (a spike counts no more than a 3-sigma draw).
  const double k = tuning_.clip_sigmas * s;
  const double d = std::clamp(std::log(seconds) - baseline_, -g - k, k);
  // log N(d; -g, s^2) - log N(d; 0, s^2)
  evidence_ += -g * (d + 0.5 * g) / (s * s);
  ++judged_;
}

// A harm shown is a revert (the model was wrong: as a trial's revert);
// undecided after max_trial_steps, the sign of the evidence decides, as a
// trial's does.
// Wald's bounds for "harm" (H1) over "the predicted gain" (H0): a gain
// reverted at false_revert, a harm kept at false_keep.
WaldBounds TrialController::check_bounds() const { return wald_bounds(tuning_.false_revert, tuning_.false_keep); }

Verdict TrialController::check_verdict() {
  const WaldBounds bound = check_bounds();  // H1: harm
  const double harm_at = bound.h1, fine_at = bound.h0;
  const bool last = check_.size() >= tuning_.max_trial_steps;
  const double evidence = check_.evidence();
  if (evidence >= harm_at || (last && evidence > 0.0)) {
    incumbent_ = before_;  // the replaced split's times hold again
    state_ = TrialState::kSteady;
    reverted(started_);
    return Verdict::kRevert;
  }
  if (evidence > fine_at && !last) return Verdict::kUndecided;
  state_ = TrialState::kSteady;
  return Verdict::kKeep;
}

// The model was wrong: untrusted until a change; after r reverts in a row the
// next trial waits max_trial_steps x 2^(r-1) from `from` (losing trials take a
// shrinking share of the steps).
void TrialController::reverted(std::size_t from) {
  trusted_ = false;
  ++rejections_;
  next_trial_ = from + (tuning_.max_trial_steps << std::min<std::size_t>(rejections_ - 1, 30));
}

Verdict TrialController::verdict() {
  if (state_ == TrialState::kCheck) return check_verdict();
  if (state_ != TrialState::kTrial) return Verdict::kUndecided;
  const WaldBounds bound = wald_bounds(tuning_.false_keep, tuning_.false_revert);  // H1: the predicted gain
  const double keep_at = bound.h1, revert_at = bound.h0;
  Verdict v = Verdict::kUndecided;
  if (evidence_ >= keep_at) v = Verdict::kKeep;
  if (evidence_ <= revert_at) v = Verdict::kRevert;
  if (v == Verdict::kUndecided && trial_log_.size() >= tuning_.max_trial_steps) {
    v = judged_ == 0 || evidence_ > 0.0 ? Verdict::kKeep : Verdict::kRevert;
  }
  if (v == Verdict::kKeep) {
    incumbent_ = trial_log_;
    trusted_ = true, rejections_ = 0;
  } else if (v == Verdict::kRevert) {
    reverted(started_);
  }
  if (v != Verdict::kUndecided) state_ = TrialState::kSteady;
  return v;
}

Action TrialController::probe() {
  if (state_ != TrialState::kSteady) return Action::kNone;
  after_change_ = false;
  incumbent_.clear();
  return Action::kMove;
}

void TrialController::changed() {
  if (state_ != TrialState::kWarmup) state_ = TrialState::kSteady;
  after_change_ = true;
  trusted_ = true, rejections_ = 0, next_trial_ = 0;
  incumbent_.clear();
}

}  // namespace hetrain::alloc

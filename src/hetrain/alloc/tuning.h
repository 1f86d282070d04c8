// The adaptive policy's one tuning table. Every constant is an error rate,
// a noise model's parameter or a cost the user would notice, with its reason;
// docs/allocation.md lists them. Nothing else in alloc/ is tuned.
#pragma once

#include <cmath>
#include <cstddef>

namespace hetrain::alloc {

struct AdaptiveTuning {
  // The trial's sequential probability ratio test (trial.h): the chance of
  // keeping a move that gains nothing, and of reverting one that gains what
  // the model predicted. Wald's bounds follow: keep at log((1-b)/a), revert at
  // log(b/(1-a)).
  double false_keep = 0.05;
  double false_revert = 0.10;
  // Steps a trial may run before it is decided by the sign of its evidence: a
  // gain that needs more steps to show is too small to be worth the test.
  std::size_t max_trial_steps = 24;
  // Residuals beyond this many standard deviations are clipped (Huber): a
  // 5-10x spike moves no estimate more than a 3-sigma draw would, while
  // Gaussian noise is clipped 0.3% of the time.
  double clip_sigmas = 3.0;
  // Two-sided CUSUM on clipped standardized residuals (estimator.h, trial.h):
  // drift 0.5 sigma (tuned to a shift of 1 sigma or more), alarm at 6 sigma:
  // three clipped residuals on one side are a change, two spikes are not;
  // Gaussian noise raises a false alarm about once in 10^3 steps. A line's
  // limits are raised where its residuals are skewed or wider than unit
  // (estimator.h) so that its noise raises them no more often.
  double cusum_drift = 0.5;
  double cusum_limit = 6.0;
  // A worker's speed is a random walk of this relative step (per step): its
  // estimate forgets at that rate and its uncertainty grows while it is not
  // observed, so an idle worker is probed again (estimator.h).
  double speed_drift = 0.01;
  // Relative noise of a time before any is measured (a shared host's first
  // steps scatter this much); it counts as one residual in the noise's mean,
  // on a log scale (estimator.cc).
  double prior_noise = 0.1;
  // The noise floor: timers and the scheduler jitter by this much (relative).
  double min_noise = 0.005;
  // Workers whose planned times at the typical batch differ by less than this
  // (relative, or clip_sigmas combined standard errors) are alike: it costs at
  // most this share of the step. A group holds until twice that (grouper.h).
  double alike = 0.02;
  // Gains below this share of the step are not worth a move: a whole sample
  // of rounding on a small batch moves the step by about as much.
  double min_gain = 0.01;
  // An idle worker is planned at this many standard errors faster than its
  // estimate (optimism under uncertainty): as its uncertainty grows it is
  // given a sample again, so a recovered worker is seen.
  double explore_sigmas = 2.0;
};

// Wald's bounds on a sequential test's log likelihood ratio (H1 over H0) for
// `wrong_h1`, the chance of accepting H1 when H0 holds, and `wrong_h0`, of
// accepting H0 when H1 holds: accept H1 at `h1`, H0 at `h0`. Trials, checks
// and a change's test all derive theirs from false_keep and false_revert.
struct WaldBounds {
  double h1 = 0.0, h0 = 0.0;
};
inline WaldBounds wald_bounds(double wrong_h1, double wrong_h0) {
  return {std::log((1.0 - wrong_h0) / wrong_h1), std::log(wrong_h0 / (1.0 - wrong_h1))};
}

}  // namespace hetrain::alloc

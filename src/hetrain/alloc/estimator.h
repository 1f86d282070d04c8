// The Estimator: per worker, what one step of b samples costs it, with how
// well that is known. Each quantity (compute seconds, CPU-seconds, seconds off
// the CPU) is a line q(b) = a + c b tracked by a two-state Kalman filter:
// - the level of the line is a random walk (AdaptiveTuning::speed_drift per
//   step), so the estimate forgets and its uncertainty grows while the worker
//   is not observed (an idle worker is then probed: proposer.h);
// - residuals are standardized by the prediction's own uncertainty and clipped
//   at clip_sigmas (a spike moves the estimate no more than a 3-sigma draw);
// - measurement noise persists from step to step (a busy neighbour, a
//   thermal state): the residuals' lag-1 autocorrelation phi is measured, the
//   CUSUM runs on the residuals with it removed (prewhitened: independent
//   draws, so its false-alarm rate holds), and the reported errors are widened
//   by sqrt((1 + phi) / (1 - phi)), the variance of a mean of AR(1) noise
//   against independent noise;
// - a two-sided CUSUM on those residuals detects a change either way (a
//   slowdown or a recovery), also from the sparse samples of an idle worker;
//   each side's limit keeps the Gaussian design's false-alarm rate for the
//   residuals' own distribution (their first three moments: a shared host's
//   bursts are skewed; bench/cusum_false_alarms.cc counts them);
//   on a line whose noise seldom throws a sample far out, one such sample is
//   a change at once (its evidence capped by how often the line's own noise
//   throws one that far); on an alarm the line restarts at the median ratio
//   of measured to predicted over the samples that raised it (a spike among
//   them does not set the new level), known only as well as they tell;
// - a change is then on test: Wald's sequential test of the new level
//   against the old one on the samples after it, at the trial's error rates;
//   rejected (a burst of noise that ended), the old line is restored.
// Plain arithmetic, O(1) per sample.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include "hetrain/alloc/tuning.h"

namespace hetrain::alloc {

// Two-sided CUSUM of standardized residuals (also used on step times).
class Cusum {
 public:
  // Adds residual z (standard deviations, already clipped); true on an alarm
  // (the sums restart) at the tuning's limit on either side.
  bool add(double z, const AdaptiveTuning& t) {
    push(z, t.cusum_drift);
    return alarm(t.cusum_limit, t.cusum_limit);
  }
  // The same in two parts: add z, then check the sides against their limits
  // (only worth working out once a side has reached the least of them).
  void push(double z, double drift);
  bool reached(double least) const { return up_ >= least || down_ >= least; }
  bool alarm(double up, double down);
  // An alarm raised by one sample alone, on the side `up` (its run is that sample).
  void alarm_one(bool up) { clear(), run_ = 1, rose_ = up; }
  void clear() { up_ = down_ = 0.0, up_run_ = down_run_ = 0; }
  // Residuals since the side that raised the last alarm was last at zero
  // (Page's estimate of when the change began).
  std::size_t run() const { return run_; }
  bool up_at_zero() const { return up_ == 0.0; }
  bool down_at_zero() const { return down_ == 0.0; }
  bool rose() const { return rose_; }  // the last alarm was of the upper side
  // The side further on: its share of `limit` (at most 1), its run's length.
  double progress(double limit) const { return std::min(1.0, std::max(up_, down_) / limit); }
  std::size_t running() const { return up_ >= down_ ? up_run_ : down_run_; }

 private:
  double up_ = 0.0, down_ = 0.0;
  std::size_t up_run_ = 0, down_run_ = 0, run_ = 0;
  bool rose_ = false;
};

// One quantity of one worker: q(b) = a + c b, seconds.
class LineEstimate {
 public:
  bool known() const { return known_; }
  double overhead() const { return a_; }
  double per_sample() const { return c_; }
  double predict(double b) const { return a_ + c_ * b; }
  // Relative standard error of predict(b) (how well the line is known there).
  double error(double b) const;
  // Relative standard error of the level where the line was last measured:
  // what one more sample there would tell (it grows while unobserved).
  double level_error() const { return error(last_batch_); }
  // The part of level_error() the speed drift added since the line was last
  // measured: how far the worker may have moved unseen (a probe's news).
  double unseen_error() const {
    const double e = level_error();
    return std::sqrt(std::max(0.0, e * e - measured_error_ * measured_error_));
  }
  // Relative standard deviation of one measurement around the line.
  double noise() const { return noise_; }
  // The mean measurement over the line's (clipped) level: 1 for symmetric
  // noise, more where spikes and bursts are clipped off; as it was before
  // the run of high residuals now in the CUSUM, if any (it may be a change).
  double mean_factor() const { return 1.0 + std::max(0.0, excess_before_up_); }
  // Relative distance (log) the last change moved the level, over
  // clip_sigmas, while the change is on test, or the level a CUSUM run in
  // progress points to, in proportion to its progress (else 0; no run while
  // idle: it cannot go on): how far the level may be from where it is
  // planned (the Grouper's hold).
  double reach(const AdaptiveTuning& t) const;
  // The last change's shift (log of new level over old) while it is
  // unconfirmed (reach() > 0), else 0: predict(b) / exp(this) is the level
  // before it.
  double unconfirmed_shift(const AdaptiveTuning&) const { return on_test() ? shift_ : 0.0; }
  // The last change is on test (its old level within reach).
  bool on_test() const { return reach_ > 0.0; }
  // Lag-1 autocorrelation of the residuals (0 to just below 1).
  double persistence() const { return persist_.corr; }
  std::size_t samples() const { return samples_; }
  std::size_t changes() const { return changes_; }
  // Enough samples that a wrong start (a first sample in a burst) would have
  // raised an alarm and been corrected: the first, which sets the line, and
  // after it the fewest residuals that can raise one.
  bool settled(const AdaptiveTuning& t) const;

  // One step passes: the level's uncertainty grows by the speed drift.
  void drift(const AdaptiveTuning& t);
  // A measurement q of b > 0 samples; returns true when the line changed
  // for the plan: a detected change, and the test after it confirming it
  // (the worker then leaves its old unit) or rolling it back.
  bool observe(double b, double q, const AdaptiveTuning& t);
  // Starts from a known line (a resumed run), as if measured at b; a
  // `guess` (a new rank at others' speed) is replaced by its first sample.
  void seed(double overhead, double per_sample, double b, bool guess, const AdaptiveTuning& t);

 private:
  void start(double b, double q, const AdaptiveTuning& t);
  void update(double b, double q, const AdaptiveTuning& t);
  void project(double b);
  double whiten(double z, double raw, const AdaptiveTuning& t);
  double evidence_cap(double distance, const AdaptiveTuning& t) const;
  bool sudden(double z, const AdaptiveTuning& t) const;
  void restart(double b, const AdaptiveTuning& t);
  // A sample at batch b ended: the level is measured there, as well as it now is.
  void measured_at(double b) { last_batch_ = b, measured_error_ = level_error(); }
  enum class Test { kOpen, kConfirmed, kRejected };
  Test test_change(double b, double q, const AdaptiveTuning& t);
  // The last few log(measured / predicted): the samples an alarm restarts
  // from (the fewest that can raise one: 3 with the tuning table's values).
  static constexpr std::size_t kRecent = 8;
  bool known_ = false;
  bool guess_ = false;  // seeded from a guess: the first sample starts the line
  double a_ = 0.0, c_ = 0.0;                 // the line
  double paa_ = 0.0, pac_ = 0.0, pcc_ = 0.0;  // its covariance
  double noise_ = 0.0;                        // relative noise (standard deviation)
  double excess_before_up_ = 0.0, excess_before_down_ = 0.0;  // as persistence: before a run
  double measured_error_ = 0.0;               // level_error() just after the last sample
  double shift_ = 0.0;                        // the last change's shift (log)
  double reach_ = 0.0;                        // its size / clip_sigmas, while on test
  double pending_ = 0.0;                      // the CUSUM's run's shift (log) x its progress to an alarm
  double last_batch_ = 1.0;                   // the batch of the last sample
  // (Above, and persist_.corr: what a plan reads of every worker at every
  // step, kept in the object's first cache lines.)
  // Lag-1 autocorrelation of the residuals: E[z z_prev] / E[z^2]; and what
  // it was when each CUSUM side last stood at zero (a change's residuals are
  // a shift, not persistent noise: an alarm rolls them back).
  // Also the first three moments of the CUSUM's input (whitened, clipped),
  // whose distribution sets the limits that give its design false-alarm rate
  // (limits()).
  // And the share of residuals the clip cut (Gaussian noise: 0.27% at 3
  // sigma): how often the noise itself throws a sample as far out as a
  // change would (a change's test caps one sample's evidence by it).
  struct Persistence {
    double corr = 0.0, zz = 1.0, zl = 0.0;
    double m1 = 0.0, m2 = 1.0, m3 = 0.0;
    double tail = 0.0;
    double far = 0.0;  // ... beyond twice the clip, over the line's whole life
  };
  std::array<double, 2> limits(const AdaptiveTuning& t) const;
  Persistence persist_, before_up_, before_down_;
  double mean_sq_ = 0.0;                      // the residuals' mean square (relative), the prior left out
  double counted_ = 0.0;                      // ... how many residuals it holds (at most 1 / speed_drift)
  double log_prior2_ = 0.0;                   // log(prior_noise^2), kept: a log per sample is a tenth of the update
  double excess_ = 0.0;                       // mean of what the clip took off, relative
  // The line before the last change, while the change is on test (restored
  // if the test rejects it: then the samples of the alarm's run were noise,
  // and what they taught the noise's excess and persistence stands).
  struct Level {
    double a = 0.0, c = 0.0, paa = 0.0, pac = 0.0, pcc = 0.0, excess = 0.0;
    Persistence persist;
  };
  Level before_change_;
  double evidence_ = 0.0;  // the test's log-likelihood ratio of the new level against the old
  double last_z_ = 0.0;                       // the previous standardized residual
  std::array<double, kRecent> recent_{};      // ring of log(measured / predicted)
  std::size_t recent_n_ = 0;                  // samples written to the ring
  std::size_t since_change_ = 0;              // samples since the last change
  // Samples after a change that can refute it but not confirm it: a change
  // raised by fewer samples than a CUSUM needs (one sudden sample) is not
  // believed before a CUSUM could have raised it (its twins, whose noise let
  // no one sample raise theirs, raise theirs by then).
  std::size_t unconfirmable_ = 0;
  std::size_t samples_ = 0, changes_ = 0;
  Cusum cusum_;
};

// What a step tells about one worker.
struct WorkerSample {
  double batch = 0.0;
  double compute = 0.0;  // seconds
  double cpu = -1.0;     // CPU-seconds (< 0: not measured)
  double wait = -1.0;    // seconds off the CPU (< 0: not measured)
};

// Every worker's lines: its compute time; for a worker on the CPU also its
// CPU-seconds and time off the CPU (the others' stay unknown: no plan reads them).
class Estimator {
 public:
  // `on_cpu`, by rank (empty: none): workers sharing a host's cores, whose
  // compute time depends on their neighbours' batches; their changes are
  // seen in their CPU-seconds and time off the CPU instead.
  Estimator(std::size_t workers, AdaptiveTuning tuning, std::vector<bool> on_cpu = {});
  std::size_t workers() const { return wall_.size(); }
  const LineEstimate& wall(std::size_t i) const { return wall_[i]; }
  const LineEstimate& cpu(std::size_t i) const { return cpu_[i]; }
  const LineEstimate& wait(std::size_t i) const { return wait_[i]; }
  // One step: every worker drifts, those with samples are updated. Returns
  // true when some worker's compute time changed (a detected change).
  bool observe(const std::vector<WorkerSample>& samples);
  // Starts worker i from a saved model (overhead seconds, samples/second),
  // or from a guess its first sample replaces.
  void seed(std::size_t i, double overhead, double speed, double batch, bool guess);
  // Every worker has a compute line.
  bool all_known() const;
  // Worker i's planned line (CPU-seconds on a shared host, else compute) is settled.
  bool settled(std::size_t i) const;
  const AdaptiveTuning& tuning() const { return tuning_; }

 private:
  bool observe_wait(std::size_t i, const WorkerSample& s);
  AdaptiveTuning tuning_;
  std::vector<LineEstimate> wall_, cpu_, wait_;
  std::vector<bool> on_cpu_;
};

}  // namespace hetrain::alloc

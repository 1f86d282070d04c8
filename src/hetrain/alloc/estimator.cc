#include "hetrain/alloc/estimator.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace hetrain::alloc {
namespace {

bool usable(double b, double q) { return b > 0.0 && q > 0.0 && std::isfinite(b) && std::isfinite(q); }

}  // namespace

bool Cusum::add(double z, const AdaptiveTuning& t) {
  up_ = std::max(0.0, up_ + z - t.cusum_drift);
  down_ = std::max(0.0, down_ - z - t.cusum_drift);
  if (up_ < t.cusum_limit && down_ < t.cusum_limit) return false;
  clear();
  return true;
}

double LineEstimate::error(double b) const {
  const double y = predict(b);
  const double var = paa_ + 2.0 * b * pac_ + b * b * pcc_;
  return y > 0.0 ? std::sqrt(std::max(var, 0.0)) / y : 0.0;
}

void LineEstimate::drift(const AdaptiveTuning& t) {
  if (!known_) return;
  // The level's random walk: the whole line scales, Q = d^2 x x'.
  const double d2 = t.speed_drift * t.speed_drift;
  paa_ += d2 * a_ * a_, pac_ += d2 * a_ * c_, pcc_ += d2 * c_ * c_;
}

// The first sample: all of it per-sample cost, the overhead unknown up to
// half the step, the level known up to the prior noise.
void LineEstimate::start(double b, double q, const AdaptiveTuning& t) {
  const double sa2 = 0.25 * q * q, sy2 = t.prior_noise * t.prior_noise * q * q;
  a_ = 0.0, c_ = q / b;
  paa_ = sa2, pac_ = -sa2 / b, pcc_ = (sa2 + sy2) / (b * b);
  noise_ = t.prior_noise;
  known_ = true;
  samples_ = 1;
  last_batch_ = b;
}

// A saved line is known as well as a measured one drifts: its level to the
// speed drift (the overhead as unsure as a first sample's).
void LineEstimate::seed(double overhead, double per_sample, double b, const AdaptiveTuning& t) {
  const double y = overhead + per_sample * b, sa2 = 0.25 * y * y, sy2 = t.speed_drift * t.speed_drift * y * y;
  start(b, y, t);
  a_ = overhead, c_ = per_sample;
  paa_ = sa2, pac_ = -sa2 / b, pcc_ = (sa2 + sy2) / (b * b);
}

void LineEstimate::update(double b, double q, const AdaptiveTuning& t) {
  const double clip = t.clip_sigmas;
  const double y = std::max(predict(b), 1e-12);
  const double ph0 = paa_ + b * pac_, ph1 = pac_ + b * pcc_;
  const double hph = std::max(ph0 + b * ph1, 0.0);
  const double s = hph + noise_ * noise_ * y * y;
  const double root = std::sqrt(s);
  const double nu = std::clamp(q - y, -clip * root, clip * root);
  a_ += ph0 / s * nu, c_ += ph1 / s * nu;
  paa_ -= ph0 * ph0 / s, pac_ -= ph0 * ph1 / s, pcc_ -= ph1 * ph1 / s;
  project(b);
  // The noise: a running mean of squared residuals (the prior counts as one),
  // less the line's own uncertainty, forgetting at the speed drift's rate.
  const double r2 = std::max(0.0, (nu * nu - hph) / (y * y));
  const double w = std::max(1.0 / static_cast<double>(samples_ + 1), t.speed_drift);
  noise_ = std::max(t.min_noise, std::sqrt((1.0 - w) * noise_ * noise_ + w * r2));
}

// Onto the lines that make sense (no negative overhead, a positive cost per
// sample), keeping the prediction at batch b: the level there is what the
// samples measured, the split between overhead and slope is what is unsure.
void LineEstimate::project(double b) {
  const double y = predict(b);
  if (a_ < 0.0) a_ = 0.0, c_ = y / b;
  if (c_ < 1e-12 * std::max(y, 1e-12)) c_ = 1e-12 * std::max(y, 1e-12), a_ = std::max(0.0, y - c_ * b);
}

bool LineEstimate::observe(double b, double q, const AdaptiveTuning& t) {
  if (!usable(b, q)) return false;
  if (!known_) {
    start(b, q, t);
    return false;
  }
  const double y = std::max(predict(b), 1e-12);
  const double s = std::max(paa_ + 2.0 * b * pac_ + b * b * pcc_, 0.0) + noise_ * noise_ * y * y;
  const double z = std::clamp((q - y) / std::sqrt(s), -t.clip_sigmas, t.clip_sigmas);
  if (cusum_.add(z, t)) {
    // A change: the line restarts from this sample (the clipped samples before
    // the alarm were bent into its shape), its measured noise kept.
    const double noise = noise_;
    const std::size_t samples = samples_;
    start(b, q, t);
    noise_ = noise, samples_ = samples + 1;
    ++changes_;
    return true;
  }
  update(b, q, t);
  last_batch_ = b;
  ++samples_;
  return false;
}

Estimator::Estimator(std::size_t workers, AdaptiveTuning tuning, std::vector<bool> on_cpu)
    : tuning_(tuning), wall_(workers), cpu_(workers), wait_(workers), on_cpu_(std::move(on_cpu)) {
  on_cpu_.resize(workers, false);
}

bool Estimator::observe(const std::vector<WorkerSample>& samples) {
  bool changed = false;
  for (std::size_t i = 0; i < wall_.size(); ++i) {
    wall_[i].drift(tuning_), cpu_[i].drift(tuning_), wait_[i].drift(tuning_);
    const WorkerSample& s = samples[i];
    const bool wall = wall_[i].observe(s.batch, s.compute, tuning_);
    const bool cpu = cpu_[i].observe(s.batch, s.cpu, tuning_);
    changed = changed || (on_cpu_[i] ? observe_wait(i, s) || cpu : wall);
  }
  return changed;
}

// Time off the CPU comes and goes (an emulated slowdown, a device): a worker
// that starts or stops sleeping has changed. A worker that never sleeps has
// no line (none is planned).
bool Estimator::observe_wait(std::size_t i, const WorkerSample& s) {
  if (!(s.batch > 0.0) || s.wait < 0.0) return false;
  const bool had = wait_[i].known();
  if (s.wait == 0.0) {
    if (had) wait_[i] = LineEstimate{};
    return had;
  }
  const bool changed = wait_[i].observe(s.batch, s.wait, tuning_);
  return changed || (!had && cpu_[i].samples() > 1);
}

void Estimator::seed(std::size_t i, double overhead, double speed, double batch) {
  wall_[i].seed(overhead, 1.0 / speed, std::max(batch, 1.0), tuning_);
}

bool Estimator::all_known() const {
  return std::all_of(wall_.begin(), wall_.end(), [](const LineEstimate& l) { return l.known(); });
}

}  // namespace hetrain::alloc

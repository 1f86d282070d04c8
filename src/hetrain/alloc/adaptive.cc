#include "hetrain/alloc/adaptive.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hetrain/common/error.h"

namespace hetrain::alloc {
namespace {

// Bisection stops when the window on T is this small relative to T.
constexpr double kRelativeTolerance = 1e-9;
constexpr int kMaxBisections = 200;
// A worker whose share is (numerically) zero still needs a positive weight
// for the rounding; it then gets 0 or 1 sample.
constexpr double kTinyShare = 1e-9;
// Standard error of a median of n samples whose median absolute deviation is
// m: about 1.4826 m (the standard deviation) x 1.2533 (median vs mean) / sqrt(n).
constexpr double kMedianErrorPerScatter = 1.4826 * 1.2533;

double capacity(const WorkerModel& m, double t, double lo, double hi) {
  return std::clamp((t - m.overhead) * m.speed, lo, hi);
}

}  // namespace

double predicted_makespan(const std::vector<WorkerModel>& models, const std::vector<std::size_t>& split) {
  HETRAIN_ENFORCE_EQ(models.size(), split.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < split.size(); ++i) {
    if (split[i] == 0) continue;
    worst = std::max(worst, models[i].overhead + static_cast<double>(split[i]) / models[i].speed);
  }
  return worst;
}

SolvedSplit solve_split(const std::vector<WorkerModel>& models, std::size_t total, const Bounds& bounds) {
  const std::size_t n = models.size();
  check_feasible(n, total, bounds);
  const double lo = static_cast<double>(bounds.min_local);
  const double hi = bounds.max_local == std::numeric_limits<std::size_t>::max()
                        ? std::numeric_limits<double>::infinity()
                        : static_cast<double>(bounds.max_local);
  const double b = static_cast<double>(total);
  auto held = [&](double t) {
    double sum = 0.0;
    for (const auto& m : models) sum += capacity(m, t, lo, hi);
    return sum;
  };
  // T_lo holds nothing beyond the minimums; T_hi: the slowest worker alone
  // could do the whole batch.
  double t_lo = 0.0, t_hi = 0.0;
  for (const auto& m : models) t_hi = std::max(t_hi, m.overhead + b / m.speed);
  for (int i = 0; i < kMaxBisections && t_hi - t_lo > kRelativeTolerance * t_hi; ++i) {
    const double mid = 0.5 * (t_lo + t_hi);
    (held(mid) >= b ? t_hi : t_lo) = mid;
  }
  std::vector<double> parts(n);
  for (std::size_t i = 0; i < n; ++i) parts[i] = std::max(kTinyShare, capacity(models[i], t_hi, lo, hi));
  SolvedSplit out;
  out.split = split_proportional(parts, total, bounds);
  out.makespan = predicted_makespan(models, out.split);
  return out;
}

AdaptivePolicy::AdaptivePolicy(std::size_t workers, std::size_t global_batch, Bounds bounds,
                               AdaptiveConfig config, const std::vector<WorkerModel>& known)
    : global_batch_(global_batch), bounds_(bounds), config_(config), cost_(workers, CostModel(config.model)) {
  // Every worker keeps at least one sample, so it keeps being measured.
  if (bounds_.min_local == 0 && global_batch >= workers) bounds_.min_local = 1;
  split_ = split_proportional(std::vector<double>(workers, 1.0), global_batch, bounds_);
  std::vector<double> speeds;
  for (const auto& k : known)
    if (k.speed > 0.0 && std::isfinite(k.speed)) speeds.push_back(k.speed);
  if (speeds.empty()) return;
  std::nth_element(speeds.begin(), speeds.begin() + static_cast<std::ptrdiff_t>(speeds.size() / 2), speeds.end());
  const double typical = speeds[speeds.size() / 2];
  for (std::size_t i = 0; i < workers; ++i) {
    const bool have = i < known.size() && known[i].speed > 0.0 && std::isfinite(known[i].speed);
    cost_[i].seed(have ? known[i].speed : typical, have ? std::max(0.0, known[i].overhead) : 0.0);
  }
  split_ = solve_split(models(), global_batch_, bounds_).split;
}

std::vector<WorkerModel> AdaptivePolicy::models() const {
  std::vector<WorkerModel> out;
  for (const auto& c : cost_) out.push_back({c.overhead(), c.speed()});
  return out;
}

void AdaptivePolicy::observe(const Observation& obs) {
  HETRAIN_ENFORCE_EQ(obs.local_batch.size(), cost_.size());
  HETRAIN_ENFORCE_EQ(obs.compute_seconds.size(), cost_.size());
  if (seen_++ < config_.warmup_steps) return;
  for (std::size_t i = 0; i < cost_.size(); ++i) {
    cost_[i].observe({static_cast<double>(obs.local_batch[i]), obs.compute_seconds[i]});
  }
  std::vector<double> errors;  // relative standard error of each worker's prediction
  bool single = false;         // some worker has one sample: its noise is unknown
  for (const auto& c : cost_) {
    if (!c.fitted() || (!warmed_up_ && c.samples() < config_.min_samples)) return;
    single = single || c.samples() < 2;
    errors.push_back(kMedianErrorPerScatter * c.relative_scatter() /
                     std::sqrt(static_cast<double>(c.samples())));
  }
  warmed_up_ = true;
  double band = std::max(config_.dead_band, config_.noise_bands * *std::max_element(errors.begin(), errors.end()));
  if (single) band = std::max(band, config_.single_sample_band);
  const auto ms = models();
  const SolvedSplit best = solve_split(ms, global_batch_, bounds_);
  const double now = predicted_makespan(ms, split_);
  if (best.makespan < (1.0 - band) * now) split_ = best.split;
}

ProfiledStaticPolicy::ProfiledStaticPolicy(std::size_t workers, std::size_t global_batch, Bounds bounds,
                                           std::size_t profile_steps)
    : inner_(workers, global_batch, bounds), remaining_(profile_steps) {}

void ProfiledStaticPolicy::observe(const Observation& obs) {
  if (remaining_ == 0) return;
  --remaining_;
  inner_.observe(obs);
}

}  // namespace hetrain::alloc

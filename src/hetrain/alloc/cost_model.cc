#include "hetrain/alloc/cost_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hetrain::alloc {
namespace {

// Smallest per-sample cost accepted from a fit: 1 ns a sample (seconds).
constexpr double kMinSecondsPerSample = 1e-9;
// A surprise must exceed this many times the window's relative scatter.
constexpr double kScatterBands = 3.0;

double median(std::vector<double> v) {
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)));
}

}  // namespace

void CostModel::seed(double samples_per_second, double overhead_seconds) {
  seconds_per_sample_ = 1.0 / samples_per_second;
  overhead_ = overhead_seconds;
  window_.clear();
  surprise_ratios_.clear();
}

double CostModel::relative_scatter() const {
  if (!fitted() || window_.empty()) return 0.0;
  std::vector<double> rel;
  for (const auto& s : window_) {
    const double p = predict(s.batch);
    if (p > 0.0) rel.push_back(std::abs(s.seconds - p) / p);
  }
  return rel.empty() ? 0.0 : median(rel);
}

void CostModel::observe(Sample s) {
  if (!(s.batch > 0.0) || !(s.seconds >= 0.0) || !std::isfinite(s.seconds)) return;
  if (fitted()) {
    // A surprise is off by more than the threshold and more than this
    // worker's usual scatter, and on the same side as the previous ones:
    // noise is not a change.
    const double predicted = predict(s.batch);
    const double ratio = s.seconds / predicted;
    const double limit = std::max(config_.change_threshold, kScatterBands * relative_scatter());
    const bool same_side = surprise_ratios_.empty() || (ratio > 1.0) == (surprise_ratios_.back() > 1.0);
    if (std::abs(ratio - 1.0) > limit && same_side) {
      surprise_ratios_.push_back(ratio);
    } else {
      surprise_ratios_.clear();
      if (std::abs(ratio - 1.0) > limit) surprise_ratios_.push_back(ratio);
    }
  }
  window_.push_back(s);
  if (surprise_ratios_.size() >= config_.change_run) {
    // A real change: forget the old regime, keep the run that showed it.
    while (window_.size() > config_.change_run) window_.pop_front();
    overhead_ *= median(surprise_ratios_);
    surprise_ratios_.clear();
  }
  while (window_.size() > config_.window) window_.pop_front();
  refit();
}

void CostModel::refit() {
  std::vector<double> slopes;
  for (std::size_t i = 0; i < window_.size(); ++i) {
    for (std::size_t j = i + 1; j < window_.size(); ++j) {
      const double db = window_[j].batch - window_[i].batch;
      // Slopes over a batch difference of a sample or two are mostly noise.
      if (std::abs(db) >= config_.min_batch_spread * std::max(window_[i].batch, window_[j].batch))
        slopes.push_back((window_[j].seconds - window_[i].seconds) / db);
    }
  }
  // Slopes need batches that differ by enough to be trusted: enough pairs,
  // and at least a third of them (otherwise one odd batch size dominates).
  const std::size_t pairs = window_.size() * (window_.size() - 1) / 2;
  if (slopes.size() >= config_.min_slopes && 3 * slopes.size() >= pairs) {
    const double slope = median(slopes);
    std::vector<double> residuals;
    for (const auto& s : window_) residuals.push_back(s.seconds - slope * s.batch);
    overhead_ = median(residuals);
  }
  std::vector<double> times;
  for (const auto& s : window_) times.push_back(s.seconds);
  overhead_ = std::clamp(overhead_, 0.0, config_.max_overhead_share * median(times));
  std::vector<double> costs;
  for (const auto& s : window_) costs.push_back(std::max(0.0, s.seconds - overhead_) / s.batch);
  seconds_per_sample_ = std::max(kMinSecondsPerSample, median(costs));
}

}  // namespace hetrain::alloc

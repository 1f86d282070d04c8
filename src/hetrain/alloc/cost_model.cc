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

// The median of v, reordering v (callers pass scratch they no longer need).
double median(std::vector<double>& v) {
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
  scatter_ = 0.0;  // an empty window scatters by nothing
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
  if (window_.size() == 0 && scratch_.capacity() == 0) {
    window_.reserve(std::max(config_.window, config_.change_run));
    scratch_.reserve(config_.window + 1);
  }
  window_.push_back(s);
  if (surprise_ratios_.size() >= config_.change_run) {
    // A real change: forget the old regime, keep the run that showed it.
    window_.keep_last(config_.change_run);
    overhead_ *= median(surprise_ratios_);
    surprise_ratios_.clear();
    ++changes_;
  }
  window_.keep_last(config_.window);
  refit();
}

void CostModel::refit() {
  // Scratch vectors are members so that a step costs no allocation (the
  // simulator runs this for 10^4 workers every step); every use starts with
  // clear(), so no value carries over.
  std::vector<double>& slopes = slopes_;
  slopes.clear();
  // No pair can pass the spread test when all batches lie within
  // min_batch_spread of the smallest (|db| <= max - min < spread x min <=
  // spread x max(b_i, b_j)), as when a split holds still: skip the pairs.
  double lo = window_.front().batch, hi = lo;
  if (!window_.one_batch()) {
    for (const auto& s : window_) lo = std::min(lo, s.batch), hi = std::max(hi, s.batch);
  }
  if (hi - lo >= config_.min_batch_spread * lo) {
    for (std::size_t i = 0; i < window_.size(); ++i) {
      for (std::size_t j = i + 1; j < window_.size(); ++j) {
        const double db = window_[j].batch - window_[i].batch;
        // Slopes over a batch difference of a sample or two are mostly noise.
        if (std::abs(db) >= config_.min_batch_spread * std::max(window_[i].batch, window_[j].batch))
          slopes.push_back((window_[j].seconds - window_[i].seconds) / db);
      }
    }
  }
  // Slopes need batches that differ by enough to be trusted: enough pairs,
  // and at least a third of them (otherwise one odd batch size dominates).
  const std::size_t pairs = window_.size() * (window_.size() - 1) / 2;
  std::vector<double>& tmp = scratch_;
  if (slopes.size() >= config_.min_slopes && 3 * slopes.size() >= pairs) {
    const double slope = median(slopes);
    tmp.clear();
    for (const auto& s : window_) tmp.push_back(s.seconds - slope * s.batch);
    overhead_ = median(tmp);
  }
  if (lo == hi) {
    refit_one_batch();
    return;
  }
  tmp.clear();
  for (const auto& s : window_) tmp.push_back(s.seconds);
  overhead_ = std::clamp(overhead_, 0.0, config_.max_overhead_share * median(tmp));
  tmp.clear();
  for (const auto& s : window_) tmp.push_back(std::max(0.0, s.seconds - overhead_) / s.batch);
  seconds_per_sample_ = std::max(kMinSecondsPerSample, median(tmp));
  // The scatter of the new fit, kept for relative_scatter() (the window and
  // the fit change nowhere else).
  tmp.clear();
  for (const auto& s : window_) {
    const double p = predict(s.batch);
    if (p > 0.0) tmp.push_back(std::abs(s.seconds - p) / p);
  }
  scatter_ = tmp.empty() ? 0.0 : median(tmp);
}

// The end of refit() when every sample of the window has the same batch b
// (a split that holds still: the common case), with the same results to the
// bit. Terms: with the times in ascending order (the window keeps them so),
// t_(k) the k-th smallest,
//  - the median of the times is read off t_(mid) (and t_(mid-1));
//  - the per-sample costs f(t) = max(0, t - a) / b are a non-decreasing
//    function of t, so their k-th smallest is f(t_(k)): the same doubles the
//    general path selects;
//  - the scatter g(t) = |t - p| / p (p = predict(b), one value) falls then
//    rises in t, so its ascending order is a merge of the times below p
//    (walked down) and those from p (walked up); the walk stops at the median.
void CostModel::refit_one_batch() {
  const std::vector<double>& t = window_.sorted_seconds();
  const std::size_t n = t.size(), mid = n / 2;
  const auto median_of = [&](auto f) {  // median() of f over the window, from the sorted times
    const double upper = f(t[mid]);
    return n % 2 == 1 ? upper : 0.5 * (upper + f(t[mid - 1]));
  };
  const double b = window_.front().batch;
  overhead_ =
      std::clamp(overhead_, 0.0, config_.retained_overhead_share * median_of([](double x) { return x; }));
  const double a = overhead_;
  seconds_per_sample_ =
      std::max(kMinSecondsPerSample, median_of([a, b](double x) { return std::max(0.0, x - a) / b; }));
  const double p = predict(b);
  if (!(p > 0.0)) {
    scatter_ = 0.0;
    return;
  }
  const auto g = [p](double x) { return std::abs(x - p) / p; };
  // Ascending g: `down` walks the times below p downwards, `up` the rest upwards.
  std::size_t up = static_cast<std::size_t>(std::lower_bound(t.begin(), t.end(), p) - t.begin());
  std::size_t down = up;  // t[down - 1] is the next one below p
  double previous = 0.0, current = 0.0;
  for (std::size_t k = 0; k <= mid; ++k) {
    previous = current;
    const bool take_up = down == 0 || (up < n && g(t[up]) <= g(t[down - 1]));
    current = take_up ? g(t[up++]) : g(t[--down]);
  }
  scatter_ = n % 2 == 1 ? current : 0.5 * (current + previous);
}

}  // namespace hetrain::alloc

// The realized step times the adaptive policy's closed loop runs on: a short
// log of them at one split, its median and noise, a run that says the step
// really changed, and the state of a split on trial. Plain C++, header-only:
// a handful of small types used by adaptive.cc alone.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace hetrain::alloc {

// Standard deviation of normal noise per median absolute deviation.
inline constexpr double kSigmaPerMad = 1.4826;
// Standard error of a median of n samples of standard deviation s: about
// 1.2533 s / sqrt(n) (normal noise). With the median absolute deviation m,
// s is about kSigmaPerMad m.
inline constexpr double kMedianPerMean = 1.2533;
inline constexpr double kMedianErrorPerScatter = kSigmaPerMad * kMedianPerMean;

struct StepTime {
  std::size_t step = 0;  // the step's number (the policy's count of observations)
  double seconds = 0.0;  // wall seconds of the whole synchronous step
  double compute = 0.0;  // the slowest worker's compute seconds in it
};

// A part of a step time: the whole, the slowest worker's compute, and the
// rest (the allreduce, slicing, the update), which a split hardly changes
// but which carries most of the noise of a communication-bound step.
enum class Part { kStep, kCompute, kRest };

inline double part_of(const StepTime& t, Part p) {
  switch (p) {
    case Part::kCompute:
      return t.compute;
    case Part::kRest:
      return t.seconds - t.compute;
    case Part::kStep:
      break;
  }
  return t.seconds;
}

// The median of v (taken by value: v holds a handful of step times).
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)));
}

// The last `window` step times measured at one split, oldest first.
class StepTimeLog {
 public:
  explicit StepTimeLog(std::size_t window = 16) : window_(std::max<std::size_t>(window, 1)) {}
  void add(StepTime t) {
    entries_.push_back(t);
    if (entries_.size() > window_) entries_.erase(entries_.begin());
  }
  // Drops the times of steps before `step` (those of an old regime).
  void keep_since(std::size_t step) {
    std::erase_if(entries_, [step](const StepTime& t) { return t.step < step; });
  }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  double median(Part p = Part::kStep) const { return median_of(values(p)); }
  // The part's values for the steps before `before`, oldest first.
  std::vector<double> values(Part p, std::size_t before = std::numeric_limits<std::size_t>::max()) const {
    std::vector<double> out;
    for (const auto& t : entries_) {
      if (t.step < before) out.push_back(part_of(t, p));
    }
    return out;
  }
  // The part's noise as a share of `scale`: kSigmaPerMad x its median
  // absolute deviation / scale (0 with fewer than two times).
  double noise(Part p, double scale) const {
    if (entries_.size() < 2 || !(scale > 0.0)) return 0.0;
    const double m = median(p);
    std::vector<double> dev;
    for (const auto& t : entries_) dev.push_back(std::abs(part_of(t, p) - m));
    return kSigmaPerMad * median_of(std::move(dev)) / scale;
  }

 private:
  std::size_t window_;
  std::vector<StepTime> entries_;
};

// Consecutive step times at one split that are all off its median by more
// than a threshold, all on the same side: a run of `length` of them means the
// step really changed (a worker, the network), not noise.
class ShiftRun {
 public:
  // `ratio`: the time over the split's median. True when t completes a run.
  bool add(const StepTime& t, double ratio, double threshold, std::size_t length) {
    const bool off = std::abs(ratio - 1.0) > threshold;
    const bool same_side = ratios_.empty() || (ratio > 1.0) == (ratios_.back() > 1.0);
    if (!off || !same_side) clear();
    if (!off) return false;
    if (ratios_.empty()) first_step_ = t.step;
    ratios_.push_back(ratio);
    return ratios_.size() >= length;
  }
  bool active() const { return !ratios_.empty(); }
  std::size_t first_step() const { return first_step_; }
  void clear() { ratios_.clear(); }

 private:
  std::vector<double> ratios_;
  std::size_t first_step_ = 0;
};

// A proposed split being measured against the split it replaced.
struct Trial {
  std::vector<std::size_t> split;
  std::size_t first_step = 0;  // the first step run at it
  std::size_t budget = 0;      // step times after which an undecided trial not looking faster ends
  StepTimeLog times;
  bool resumed = false;  // paused once already, for want of the replaced split's times
  // Proposed by a model whose earlier predictions the step time confirmed:
  // kept unless it is slower, even when its gain is too small to show.
  bool trusted = false;
  double predicted_gain = 0.0;  // the model's, a share of the step (0: not the model's)
};

}  // namespace hetrain::alloc

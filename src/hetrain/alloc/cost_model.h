// A per-worker cost model t(b) = a + b / v, fitted robustly to noisy
// measurements: a is a fixed overhead per step (seconds), v a speed
// (samples per second). Plain C++: the trainer and the simulator share it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

namespace hetrain::alloc {

// Tuning constants, with units.
struct CostModelConfig {
  std::size_t window = 64;          // observations kept (steps)
  std::size_t change_run = 3;       // consecutive surprises that mean a real change (steps)
  double change_threshold = 0.25;   // relative error of a prediction that counts as a surprise
  double min_batch_spread = 0.1;    // pairs whose batches differ by less (relative) give no slope
  std::size_t min_slopes = 6;       // pairs needed before the overhead is fitted at all
  double max_overhead_share = 0.5;  // a never exceeds this share of the median step time
  // When every sample of the window has one batch size, a cannot be fitted
  // and keeps its last value; it is then capped at this looser share, so a
  // worker squeezed to a tiny batch (where overhead dominates) is not charged
  // half its step per sample and starved for good: its predicted cost of a
  // larger batch stays low enough for it to be given one and measured again.
  double retained_overhead_share = 0.9;
};

struct Sample {
  double batch = 0.0;    // samples computed
  double seconds = 0.0;  // compute-only seconds
};

// The last samples, oldest first, in one block that is never freed: dropping
// the oldest only advances a start index, and the block is compacted once
// every `keep` drops, so a step moves little memory (the simulator keeps 10^4
// of these and touches every one every step). It also keeps the window's
// times in ascending order, updated per sample instead of sorted per fit.
class SampleWindow {
 public:
  const Sample* begin() const { return buf_.data() + first_; }
  const Sample* end() const { return buf_.data() + buf_.size(); }
  std::size_t size() const { return buf_.size() - first_; }
  const Sample& operator[](std::size_t i) const { return buf_[first_ + i]; }
  const Sample& front() const { return buf_[first_]; }
  const std::vector<double>& sorted_seconds() const { return sorted_; }
  // Room for windows of up to `keep` samples without reallocating (called
  // once per model, so 10^4 models' blocks are laid out in rank order).
  void reserve(std::size_t keep) {
    buf_.reserve(2 * keep + 1);
    sorted_.reserve(keep + 1);
  }
  // True when every sample of the window has the same batch.
  bool one_batch() const { return run_ == size(); }
  void push_back(Sample s) {
    run_ = size() > 0 && buf_.back().batch == s.batch ? run_ + 1 : 1;
    buf_.push_back(s);
    sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), s.seconds), s.seconds);
  }
  // Keeps the newest `keep` samples.
  void keep_last(std::size_t keep) {
    if (size() <= keep) return;
    const std::size_t new_first = buf_.size() - keep;
    for (std::size_t i = first_; i < new_first; ++i) {
      sorted_.erase(std::lower_bound(sorted_.begin(), sorted_.end(), buf_[i].seconds));
    }
    first_ = new_first;
    run_ = std::min(run_, keep);
    if (first_ >= keep) {
      buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(first_));
      first_ = 0;
    }
  }
  void clear() { buf_.clear(), sorted_.clear(), first_ = 0, run_ = 0; }

 private:
  std::vector<Sample> buf_;
  std::vector<double> sorted_;  // the window's seconds, ascending
  std::size_t first_ = 0;
  std::size_t run_ = 0;  // the newest samples that share the newest one's batch
};

// Terms: the window holds the last `window` (b, t) samples. The overhead a
// comes from Theil-Sen: the median of the pairwise slopes between samples
// whose b differ by at least min_batch_spread gives a slope, a is the median
// residual t - slope * b. Without enough such pairs, a keeps its last value
// (0 at first). Either way a is capped at max_overhead_share of the median
// step (retained_overhead_share when the window holds one batch size), so
// noise can never explain a worker's whole time as overhead (which
// would starve it of the batch sizes that could correct the estimate), and
// the per-sample cost 1/v is the median of (t - a)/b. Medians ignore isolated
// spikes; a run of `change_run` predictions off by more than
// `change_threshold` (and three times the usual scatter), all on the same
// side, means the worker really changed: the window restarts
// from that run, and a is scaled by the median ratio of measured to
// predicted time over it (a slower device, a CPU quota or contention slows
// the whole step, overhead included), so a worker that becomes 4x slower is
// followed within change_run steps.
class CostModel {
 public:
  explicit CostModel(CostModelConfig config = {}) : config_(config) {}

  // Adds a measurement; b = 0 carries no information and is ignored.
  void observe(Sample s);

  bool fitted() const { return seconds_per_sample_.has_value(); }
  double overhead() const { return overhead_; }                       // a, seconds
  double speed() const { return 1.0 / seconds_per_sample_.value(); }  // v, samples/s
  double seconds_per_sample() const { return seconds_per_sample_.value(); }  // 1 / v
  double predict(double batch) const { return overhead_ + batch * seconds_per_sample_.value(); }
  // How far the window's samples scatter around the fit: the median of
  // |t - predicted| / predicted (0 when unfitted).
  double relative_scatter() const { return scatter_; }
  std::size_t samples() const { return window_.size(); }
  // How many real changes have been detected so far (a caller compares
  // counts before and after observe()).
  std::size_t changes() const { return changes_; }
  // Starts from a known speed (a saved state, a profile), no overhead.
  void seed(double samples_per_second, double overhead_seconds = 0.0);

 private:
  void refit();
  void refit_one_batch();
  CostModelConfig config_;
  SampleWindow window_;
  std::vector<double> surprise_ratios_;  // measured / predicted, of the current run
  double overhead_ = 0.0;
  std::optional<double> seconds_per_sample_;
  double scatter_ = 0.0;                  // relative_scatter() of the current fit and window
  std::size_t changes_ = 0;               // changes()
  std::vector<double> slopes_, scratch_;  // refit's working space (no allocation per step)
};

}  // namespace hetrain::alloc

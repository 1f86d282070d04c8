// A per-worker cost model t(b) = a + b / v, fitted robustly to noisy
// measurements: a is a fixed overhead per step (seconds), v a speed
// (samples per second). Plain C++: the trainer and the simulator share it.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <vector>

namespace hetrain::alloc {

// Tuning constants, with units.
struct CostModelConfig {
  std::size_t window = 16;          // observations kept (steps)
  std::size_t change_run = 3;       // consecutive surprises that mean a real change (steps)
  double change_threshold = 0.25;   // relative error of a prediction that counts as a surprise
  double min_batch_spread = 0.1;    // pairs whose batches differ by less (relative) give no slope
  std::size_t min_slopes = 6;       // pairs needed before the overhead is fitted at all
  double max_overhead_share = 0.5;  // a never exceeds this share of the median step time
};

struct Sample {
  double batch = 0.0;    // samples computed
  double seconds = 0.0;  // compute-only seconds
};

// Terms: the window holds the last `window` (b, t) samples. The overhead a
// comes from Theil-Sen: the median of the pairwise slopes between samples
// whose b differ by at least min_batch_spread gives a slope, a is the median
// residual t - slope * b. Without enough such pairs, a keeps its last value
// (0 at first). Either way a is capped at max_overhead_share of the median
// step, so noise can never explain a worker's whole time as overhead (which
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
  double predict(double batch) const { return overhead_ + batch * seconds_per_sample_.value(); }
  // How far the window's samples scatter around the fit: the median of
  // |t - predicted| / predicted (0 when unfitted).
  double relative_scatter() const;
  std::size_t samples() const { return window_.size(); }
  // Starts from a known speed (a saved state, a profile), no overhead.
  void seed(double samples_per_second, double overhead_seconds = 0.0);

 private:
  void refit();
  CostModelConfig config_;
  std::deque<Sample> window_;
  std::vector<double> surprise_ratios_;  // measured / predicted, of the current run
  double overhead_ = 0.0;
  std::optional<double> seconds_per_sample_;
};

}  // namespace hetrain::alloc

// A per-worker cost model t(b) = a + b / v, fitted robustly to noisy
// measurements: a is a fixed overhead per step (seconds), v a speed
// (samples per second). Plain C++: the trainer and the simulator share it.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>

namespace hetrain::alloc {

// Tuning constants, with units.
struct CostModelConfig {
  std::size_t window = 16;          // observations kept (steps)
  std::size_t change_run = 3;       // consecutive surprises that mean a real change (steps)
  double change_threshold = 0.25;   // relative error of a prediction that counts as a surprise
  double min_batch_spread = 0.1;    // pairs whose batches differ by less (relative) give no slope
  std::size_t min_slopes = 6;       // pairs needed before the overhead is fitted at all
};

struct Sample {
  double batch = 0.0;    // samples computed
  double seconds = 0.0;  // compute-only seconds
};

// Terms: the window holds the last `window` (b, t) samples. The fit is
// Theil-Sen: the per-sample cost 1/v is the median of the pairwise slopes
// between samples whose b differ by at least min_batch_spread, the overhead a the median residual
// t - b/v; with a single b in the window, a keeps its last value (0 at
// first) and 1/v is the median of (t - a)/b. Medians ignore isolated spikes;
// a run of `change_run` predictions off by more than `change_threshold`
// means the worker really changed, and the window restarts from that run,
// so a worker that becomes 4x slower is followed within change_run steps.
class CostModel {
 public:
  explicit CostModel(CostModelConfig config = {}) : config_(config) {}

  // Adds a measurement; b = 0 carries no information and is ignored.
  void observe(Sample s);

  bool fitted() const { return seconds_per_sample_.has_value(); }
  double overhead() const { return overhead_; }                       // a, seconds
  double speed() const { return 1.0 / seconds_per_sample_.value(); }  // v, samples/s
  double predict(double batch) const { return overhead_ + batch * seconds_per_sample_.value(); }
  // Starts from a known speed (a saved state, a profile), no overhead.
  void seed(double samples_per_second, double overhead_seconds = 0.0);

 private:
  void refit();
  CostModelConfig config_;
  std::deque<Sample> window_;
  std::size_t surprises_ = 0;
  double overhead_ = 0.0;
  std::optional<double> seconds_per_sample_;
};

}  // namespace hetrain::alloc

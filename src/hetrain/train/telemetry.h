// What every worker learns about every worker each step, without a
// collective of its own: a block of floats that rides after the gradients in
// the one reduced buffer (train/reducer.h reduces it with the last bucket).
//
// Layout for N workers, in floats:
//   [compute seconds x N | scaled loss x N | previous step seconds x N |
//    compute CPU-seconds x N | compute seconds off the CPU x N | fingerprint |
//    stop votes]
// Each rank writes only its own slot of each per-rank field and zeros
// elsewhere, so the SUM allreduce gathers them. The fingerprint is a checksum
// of the split each rank used: summed, it must be N times every rank's own,
// or the workers cut the batch differently and samples would be lost. The
// stop votes count the ranks asked to stop (train/stop.h): any vote stops
// every rank after this same step.
// Torch-free: the layout is plain arithmetic that tests check directly.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace hetrain::train {

class Telemetry {
 public:
  // This rank's contribution.
  struct Mine {
    double compute_seconds = 0.0;        // forward + backward (+ emulation)
    double scaled_loss = 0.0;            // this slice's mean loss x b_i / B
    double previous_step_seconds = 0.0;  // the last step's wall time on this rank (0: none)
    float fingerprint = 0.0f;            // split_fingerprint of the split this rank used
    double cpu_seconds = 0.0;            // CPU time the process used during compute
    double off_cpu_seconds = 0.0;        // of compute, slept by design (an emulated device or speed)
    bool stop = false;                   // this rank was asked to stop (a signal)
  };
  // Every rank's, after the reduction.
  struct All {
    std::vector<double> compute_seconds;  // by rank
    std::vector<double> cpu_seconds;      // by rank
    std::vector<double> off_cpu_seconds;  // by rank
    double loss = 0.0;                    // the global batch's mean loss
    // The slowest rank's view of the last step: the same number on every
    // rank, so every policy decides alike.
    double previous_step_seconds = 0.0;
    float fingerprint_sum = 0.0f;
    bool stop = false;  // some rank was asked to stop: all stop after this step
  };

  explicit Telemetry(std::size_t workers) : workers_(workers) {}
  std::size_t size() const { return kPerRankFields * workers_ + 2; }  // floats

  // Writes `mine` into `block` (size() floats, zeroed by the caller).
  void write(std::span<float> block, std::size_t rank, const Mine& mine) const;
  All read(std::span<const float> block) const;
  // True when every rank used the split whose fingerprint is `mine`.
  bool same_split(const All& all, float mine) const;

 private:
  static constexpr std::size_t kPerRankFields = 5;  // compute, loss, previous step, CPU, off the CPU
  std::size_t workers_;
};

// A checksum of a split that stays exact in float when up to
// comm::kMaxWorkers ranks add it up (below 2^24).
float split_fingerprint(const std::vector<std::size_t>& split);

}  // namespace hetrain::train

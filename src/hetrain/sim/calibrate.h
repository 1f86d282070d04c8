// Calibration: a cluster fitted to a real run's metrics JSON (--metrics of
// hetrain run), so the simulator can predict that run and its variants.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "hetrain/sim/cluster.h"

namespace hetrain::sim {

// Steps of the run ignored by the fit: the first pays for lazy
// initialisation (as the adaptive policy's warm-up).
inline constexpr std::size_t kCalibrationWarmupSteps = 1;
// Batches whose spread (max - min) / max is below this give no slope: the
// overhead is then taken as 0 and the whole time as per-sample cost.
inline constexpr double kMinCalibrationSpread = 0.1;

struct MeasuredRun {
  std::string policy;
  std::size_t world_size = 0;
  std::size_t global_batch = 0;
  std::vector<std::vector<std::size_t>> allocation;  // per step and rank
  std::vector<std::vector<double>> compute_seconds;  // per step and rank
  std::vector<std::vector<double>> wait_seconds;     // per step and rank
  double train_seconds = 0.0;                        // sum of epochs[].train_seconds
};

// Reads a metrics document (record/run.h parses it); DataError naming the file and
// the field when it is not one.
MeasuredRun parse_run(std::string_view json_text, const std::string& file);
MeasuredRun load_run(const std::string& path);

// Terms: for rank i and step k, b_ik samples took c_ik compute seconds and
// the rank then waited w_ik in the allreduce.
//  - compute: t = a_i + b / v_i by least squares over the steps after the
//    warm-up (a_i = 0 when the batches hardly vary): the mean time is kept,
//    spikes included. noise_i is the typical jitter on top of it, from the
//    median absolute deviation of c / t(b) - 1 (x 1.4826, a normal's
//    standard deviation): robust, so that the spikes a shared machine
//    throws in are not counted twice. One group per rank ("rank0", ...).
//  - allreduce: the slowest worker of a step waits for nothing but the
//    transfer, so A = mean over steps of min_i w_ik. The ring's time is
//    2(N-1) latency + 2(N-1)/N x G / bandwidth: with one message size only
//    their sum is known, so the bandwidth is kept from `base` and the latency
//    fitted (clamped at 0).
//  - step_overhead: what the steps' sum of (max_i c_ik + min_i w_ik) leaves
//    unexplained of the measured train seconds (optimizer, data), per step.
// `base` supplies the network template and gradient_bytes; its groups and
// events are ignored.
Cluster calibrate(const MeasuredRun& run, const Cluster& base);

}  // namespace hetrain::sim

// One synchronous training step as named phases (docs/architecture.md):
//
//   slice    the policy's split of this step's global batch, and this rank's
//            rows of it (a contiguous run of the epoch's permutation)
//   compute  forward and backward of the slice, the loss scaled by b_i/B;
//            emulated heterogeneity (Emulation) plugs in here
//   reduce   one SUM allreduce of [gradients | Telemetry], the gradients'
//            buckets overlapped with backward (train/reducer.h)
//   apply    the learning-rate schedule and the optimizer step
//   observe  the policy learns from every rank's compute time and the last
//            step's wall time; StepObservers (train/observers.h) see the rest
//
// Every rank runs the same phases on the same numbers, so every rank ends
// the step with the same parameters and the same next split.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <memory>
#include <span>
#include <vector>

#include "hetrain/alloc/policy.h"
#include "hetrain/comm/group.h"
#include "hetrain/data/cursor.h"
#include "hetrain/train/device_time.h"
#include "hetrain/train/examples.h"
#include "hetrain/train/model.h"
#include "hetrain/train/objective.h"
#include "hetrain/train/options.h"
#include "hetrain/train/reducer.h"
#include "hetrain/train/telemetry.h"
#include "hetrain/train/tensors.h"

namespace hetrain::train {

using Clock = std::chrono::steady_clock;

// The slice phase's output: what this step trains on.
struct StepPlan {
  std::size_t epoch = 0;          // 0-based
  std::size_t step = 0;           // in the epoch, 0-based
  std::size_t global_step = 0;    // steps done in the whole run before this one
  std::size_t batch = 0;          // samples in this global batch (B, fewer at an epoch's end)
  std::size_t first = 0;          // the batch's first position in the epoch's permutation
  std::vector<std::size_t> split;  // b_i of every rank
  data::Slice slice;               // this rank's part: positions first + slice.begin ...
  std::span<const std::uint32_t> rows;  // ... and the sample ids there
};

// When each phase of a step ended on this rank.
struct StepClock {
  Clock::time_point begin, compute_begin, compute_end, reduce_end, apply_end, observe_end;
};

// What a finished step leaves behind, for the observers.
struct StepOutcome {
  StepPlan plan;
  double compute_seconds = 0.0;  // this rank: forward + backward (+ emulation)
  double wait_seconds = 0.0;     // this rank: blocked in the reduction after compute
  double hidden_seconds = 0.0;   // this rank: communication hidden behind backward
  double input_seconds = 0.0;    // this rank: waiting for the slice's samples before the step
  Telemetry::All all;            // every rank's telemetry
  StepClock clock;
};

// Emulated heterogeneity inside the compute phase (TrainOptions: --speeds,
// --slowdown, --sample-cost-ms): the device's time is slept where a device
// would hold the host (train/device_time.h), and the host's own compute c is
// stretched to c / s for a worker of speed s.
class Emulation {
 public:
  Emulation(const TrainOptions& o, std::size_t rank, torch::nn::Module& model);
  void begin(std::size_t global_step, std::size_t samples);
  void after_forward() { device_.after_forward(); }
  // Sleeps what makes the host's compute last c / s; `elapsed`: seconds since begin.
  void after_backward(double elapsed);
  // Seconds slept this step (the device's time and the stretch): off the CPU.
  double slept_seconds() const { return device_.slept_seconds() + stretched_; }

 private:
  const TrainOptions& options_;
  std::size_t rank_;
  DeviceTime device_;
  double speed_ = 1.0;
  double stretched_ = 0.0;  // seconds slept by after_backward this step
};

class StepRunner {
 public:
  StepRunner(const TrainOptions& o, Model& model, torch::optim::Optimizer& optimizer, comm::Group& group,
             alloc::Policy& policy, std::size_t planned_steps, LossKind loss);

  StepPlan slice(std::size_t epoch, std::size_t step, std::size_t global_step,
                 std::span<const std::uint32_t> permutation) const;
  // compute -> reduce -> apply -> observe. `slice`: this rank's samples,
  // plan.rows gathered (train/prefetch.h).
  StepOutcome run(const StepPlan& plan, const Batch& slice);
  // The next step has no predecessor to time (the start of an epoch, after
  // evaluation and checkpoints).
  void forget_last_step() { last_step_seconds_ = 0.0; }

 private:
  double compute(const StepPlan& plan, const Batch& slice, Clock::time_point begin);
  Telemetry::All reduce(const StepPlan& plan, const Telemetry::Mine& mine, StepOutcome& out);
  void apply(std::size_t global_step);
  void observe(const StepPlan& plan, const Telemetry::All& all);

  const TrainOptions& options_;
  Model& model_;
  torch::optim::Optimizer& optimizer_;
  comm::Group& group_;
  alloc::Policy& policy_;
  std::size_t planned_steps_;
  LossKind loss_;
  std::size_t rank_;
  std::size_t num_params_;
  Telemetry telemetry_;
  std::vector<float> buffer_;  // [gradients | telemetry]
  GradientReducer reducer_;
  Emulation emulation_;
  clockid_t cpu_clock_;  // what measures the compute's CPU time (step.cc)
  double last_step_seconds_ = 0.0;  // this rank's wall time of the step before (0: none)
  bool first_step_ = true;          // of this process
};

}  // namespace hetrain::train

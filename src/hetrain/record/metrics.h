// What a run measured, per step and per worker, and its JSON form.
// Torch-free so the simulator and the report can read and write it too.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hetrain::record {

// One synchronous step as every worker saw it (index = rank).
struct StepRecord {
  std::size_t epoch = 0;
  std::vector<std::size_t> local_batch;  // b_i
  std::vector<double> compute_seconds;   // forward+backward (+ emulated slowdown)
  std::vector<double> wait_seconds;      // blocked in the gradient allreduce after compute (exposed)
  std::vector<double> hidden_seconds;    // allreduce time hidden behind backward (overlap)
  std::vector<double> input_seconds;     // waiting for this step's samples (prefetch missed or late)
  double loss = 0.0;                     // the global batch's mean training loss
  double end_seconds = 0.0;  // rank 0's wall-clock at the step's end, from the run's start, evaluations excluded
};

struct EpochRecord {
  std::size_t epoch = 0;
  double seconds = 0.0;
  double train_seconds = 0.0;  // the step loop only, evaluation excluded
  double train_loss = 0.0;     // mean over the epoch's global batches
  double test_accuracy = 0.0;  // on the held-out split (classification; else 0)
  double test_metric = 0.0;    // the run's metric (RunMetrics::metric) on the held-out split
};

// One evaluation of the test set (at --eval-every steps and each epoch's end).
struct EvalRecord {
  std::size_t step = 0;      // global steps done
  double seconds = 0.0;      // wall-clock since the run started (rank 0), evaluations' own time excluded
  double train_loss = 0.0;   // mean over the steps since the previous evaluation
  double test_metric = 0.0;  // RunMetrics::metric
};

struct RunMetrics {
  int world_size = 1;
  std::string model, policy, data, allreduce;
  std::size_t global_batch = 0;
  std::vector<double> speeds;  // emulated relative speeds; empty = none
  double wall_seconds = 0.0;
  std::vector<EpochRecord> epochs;
  std::vector<StepRecord> steps;
  // The loss minimised (cross-entropy | mse | bce-with-logits) and the test
  // metric (accuracy | rmse | label_accuracy; "" without a test set), in the
  // JSON as test_<metric>.
  std::string loss = "cross-entropy", metric = "accuracy";
  std::vector<EvalRecord> evals;
  // A resumed run: where it continued from, and the workers of the run that
  // wrote the checkpoint (0: not resumed).
  int resumed_world_size = 0;
  // How often the allocation policy changed the split, and how many of
  // those changes it took back because the step got no faster.
  std::size_t policy_moves = 0, policy_reverts = 0;
  std::size_t resumed_epoch = 0, resumed_step = 0;
  // The launcher restarted the workers this many times before this run
  // (torchrun --max_restarts, hetrain run --max-restarts); 0: first attempt.
  int restarts = 0;
};

// sum of compute seconds / (N x sum over steps of the slowest worker's
// compute): 1 when nobody ever waits for a slower worker. 1 for no steps.
double balance_efficiency(const std::vector<StepRecord>& steps);

// The metrics document (see README, "Metrics").
std::string to_json(const RunMetrics& m);

}  // namespace hetrain::record

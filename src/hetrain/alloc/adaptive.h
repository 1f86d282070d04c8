// Self-adaptive allocation: every worker fits each worker's cost model from
// the compute times reduced with the gradients, and computes the same next
// split. No coordinator: same numbers in, same split out.
#pragma once

#include <cstddef>
#include <vector>

#include "hetrain/alloc/cost_model.h"
#include "hetrain/alloc/policy.h"

namespace hetrain::alloc {

struct SolvedSplit {
  std::vector<std::size_t> split;
  double makespan = 0.0;  // predicted seconds of the slowest worker
};

// Predicted step compute time of `split`: max_i a_i + b_i / v_i (workers
// with b_i = 0 take no time).
double predicted_makespan(const std::vector<WorkerModel>& models, const std::vector<std::size_t>& split);

// Terms: T is the common finish time. For a given T worker i can take
// b_i(T) = clamp((T - a_i) v_i, lo, hi) samples; sum_i b_i(T) grows with T,
// so bisection finds the smallest T whose capacity holds B (water-filling).
// The real-valued b_i(T) are then rounded by largest remainder within the
// bounds, which keeps sum b_i = B.
SolvedSplit solve_split(const std::vector<WorkerModel>& models, std::size_t total, const Bounds& bounds);

struct AdaptiveConfig {
  CostModelConfig model;
  // Move only when the predicted step gets faster by at least the larger
  // of `dead_band` and `noise_bands` standard errors of the prediction
  // (relative scatter / sqrt(samples), of the least certain worker): noise
  // inside the band moves nothing, and a noisy machine needs a clearer gain.
  double dead_band = 0.02;
  double noise_bands = 3.0;
  // Samples each worker's model needs before the first move (later, a
  // detected change may act on CostModelConfig::change_run of them). One:
  // a single sample says nothing about a worker's noise, so until every
  // worker has two the move must gain at least `single_sample_band` (a
  // worker over ~2.3x slower than three others). A 4x slower worker is then
  // rebalanced after the first step, while the first step's scheduling
  // noise among equal workers (1.7x in the one cnn run inspected on the
  // 2-core machine) moves nothing. After that the noise band scales with
  // 1/sqrt(samples): a small, uncertain gain waits for more of them.
  std::size_t min_samples = 1;
  double single_sample_band = 0.5;
  // Steps ignored at the start. 0: the first step pays for lazy
  // initialisation, but on every worker alike, and the medians of the cost
  // model shrug it off.
  std::size_t warmup_steps = 0;
};

class AdaptivePolicy final : public Policy {
 public:
  // `known`: models learned in an earlier run, by rank (a resumed run; may be
  // shorter or longer than `workers`). Known workers start from them, new
  // ones from the median known speed, and the first split is solved from
  // these guesses; learning then goes on as usual.
  AdaptivePolicy(std::size_t workers, std::size_t global_batch, Bounds bounds, AdaptiveConfig config = {},
                 const std::vector<WorkerModel>& known = {});
  std::vector<std::size_t> split() const override { return split_; }
  void observe(const Observation& obs) override;
  std::vector<WorkerModel> learned() const override { return models(); }
  // What the policy currently believes (for metrics, checkpoints, the simulator).
  std::vector<WorkerModel> models() const;

 private:
  std::size_t global_batch_;
  Bounds bounds_;
  AdaptiveConfig config_;
  std::vector<CostModel> cost_;
  std::vector<std::size_t> split_;
  std::size_t seen_ = 0;
  bool warmed_up_ = false;
};

// `static` without --shares: adaptive for `profile_steps` steps, then the
// split is frozen for the rest of the run.
class ProfiledStaticPolicy final : public Policy {
 public:
  ProfiledStaticPolicy(std::size_t workers, std::size_t global_batch, Bounds bounds,
                       std::size_t profile_steps);
  std::vector<std::size_t> split() const override { return inner_.split(); }
  void observe(const Observation& obs) override;
  std::vector<WorkerModel> learned() const override { return inner_.models(); }

 private:
  AdaptivePolicy inner_;
  std::size_t remaining_;
};

}  // namespace hetrain::alloc

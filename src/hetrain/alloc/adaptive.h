// Self-adaptive allocation as one model. Objective: the expected wall time of
// a synchronous step, E[max_i t_i(b_i)] plus what the split does not change
// (the allreduce), subject to sum_i b_i = B and the bounds. The pipeline
// (docs/allocation.md):
//   Estimator (estimator.h) -> Grouper (grouper.h) -> StepCostModel over the
//   one solver (device_cost.h, hosts.h, solver.h) -> Proposer (proposer.h)
//   -> TrialController (trial.h).
// Every worker runs its own copy on the same observations: no clock, no
// randomness, so every worker computes the same split.
#pragma once

#include <cstddef>
#include <vector>

#include "hetrain/alloc/estimator.h"
#include "hetrain/alloc/policy.h"
#include "hetrain/alloc/proposer.h"
#include "hetrain/alloc/trial.h"
#include "hetrain/alloc/tuning.h"

namespace hetrain::alloc {

class AdaptivePolicy final : public Policy {
 public:
  // `known`: models learned in an earlier run, by rank (a resumed run; may be
  // shorter or longer than `workers`): known workers start from them, new
  // ones from the median known speed, and the first split is solved from them.
  // `placement`: which workers share a host's cores (empty: none do).
  AdaptivePolicy(std::size_t workers, std::size_t global_batch, Bounds bounds, AdaptiveTuning tuning = {},
                 const std::vector<WorkerModel>& known = {}, Placement placement = {});
  std::vector<std::size_t> split() const override { return issued_; }
  void observe(const Observation& obs) override;
  // Each worker's compute line as (overhead, speed); speed 0 for a worker not
  // yet measured (a checkpoint may come before the first step).
  std::vector<WorkerModel> learned() const override;
  PolicyStats stats() const override { return stats_; }
  // The split kept when no trial runs (the best measured so far).
  const std::vector<std::size_t>& best_split() const { return incumbent_; }
  TrialState state() const { return control_.state(); }
  const Estimator& estimator() const { return estimator_; }

 private:
  void observe_step(const Observation& obs);
  void issue();
  std::vector<std::size_t> turned(const std::vector<std::size_t>& split, std::size_t offset) const;
  std::vector<std::size_t> as_kept(const std::vector<std::size_t>& ran) const;
  void record_step_time(const Observation& obs, std::size_t step);
  void learn(const Observation& obs);
  void judge_trial();
  void even_out_units();
  void decide(std::size_t step);
  std::vector<std::size_t> probe_of(const std::vector<std::size_t>& proposal) const;
  void seed(const std::vector<WorkerModel>& known);

  std::size_t global_batch_;
  Bounds bounds_;
  AdaptiveTuning tuning_;
  Proposer proposer_;
  Estimator estimator_;
  TrialController control_;
  std::vector<std::size_t> split_;      // the next step's: the trial's, else the incumbent
  std::vector<std::size_t> incumbent_;  // the split kept
  std::vector<std::size_t> issued_;     // split_ as run: each unit's remainder in turn (issue())
  std::vector<std::size_t> previous_;   // the split a move on test replaced (TrialState::kCheck)
  std::vector<std::size_t> last_split_;  // the split of the step observed last
  std::vector<WorkerSample> samples_;    // observe()'s working space
  bool last_full_ = false;               // ... whether it held the whole global batch
  double last_compute_ = 0.0;            // ... its slowest worker's compute seconds
  std::size_t seen_ = 0;
  PolicyStats stats_;
};

// `static` without --shares: adaptive for `profile_steps` steps, then the
// split is frozen for the rest of the run.
class ProfiledStaticPolicy final : public Policy {
 public:
  ProfiledStaticPolicy(std::size_t workers, std::size_t global_batch, Bounds bounds, std::size_t profile_steps,
                       Placement placement = {});
  std::vector<std::size_t> split() const override {
    return remaining_ > 0 ? inner_.split() : inner_.best_split();
  }
  void observe(const Observation& obs) override;
  std::vector<WorkerModel> learned() const override { return inner_.learned(); }
  PolicyStats stats() const override { return inner_.stats(); }

 private:
  AdaptivePolicy inner_;
  std::size_t remaining_;
};

}  // namespace hetrain::alloc

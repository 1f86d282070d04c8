// StepCostModel for independent devices: worker i computes b samples in
// a_i + b c_i seconds whatever the others do (accelerators, machines of their
// own). The step's compute is the slowest worker's.
#pragma once

#include <cstddef>
#include <vector>

#include "hetrain/alloc/policy.h"
#include "hetrain/alloc/solver.h"

namespace hetrain::alloc {

struct DeviceUnit {
  double overhead = 0.0;    // a, seconds per step
  double per_sample = 0.0;  // c, seconds per sample (> 0)
};

class DeviceCostModel final : public StepCostModel {
 public:
  // `unit_of`: each worker's unit; `units`: the line of each unit.
  DeviceCostModel(std::vector<std::size_t> unit_of, std::vector<DeviceUnit> units);
  // Every worker its own unit, from (overhead, speed) models.
  explicit DeviceCostModel(const std::vector<WorkerModel>& models);

  double fill(double t, const RealBounds& r, std::vector<double>& share) const override;
  double upper_time(double total) const override;
  // Exact: with the units pinned at a bound at t fixed, the rest is linear in T.
  double refine(double t, double total, const RealBounds& r) const override;
  double makespan(const std::vector<std::size_t>& split) const override;
  double alone(std::size_t unit, double b) const override;

 private:
  std::vector<DeviceUnit> units_;
};

// Predicted compute makespan of `split`: max_i a_i + b_i / v_i (a worker with
// b_i = 0 takes no time).
double predicted_makespan(const std::vector<WorkerModel>& models, const std::vector<std::size_t>& split);

// solve() over independent (overhead, speed) models: what the planner and the
// pricing of sched/ call.
SolvedSplit solve_split(const std::vector<WorkerModel>& models, std::size_t total, const Bounds& bounds);

}  // namespace hetrain::alloc

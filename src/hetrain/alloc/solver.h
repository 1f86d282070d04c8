// The one split solver (water-filling) and the interface it solves over.
// The adaptive policy, the planner (sim/plan) and the multi-job pricing
// (sched/pricing) all call it.
//
// Terms: a StepCostModel groups workers into units (alike workers, given the
// same real share). For a common finish time T, fill(T) says how many samples
// each unit's members can take and still finish by T; the total grows with T,
// so bisection finds the smallest T that holds the global batch B. The real
// shares are rounded by largest remainder within the bounds (members of a
// unit end at most one sample apart), then, where the model can price one
// worker alone, single samples move from the worker that finishes last to
// one that would still finish earlier with it.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <vector>

#include "hetrain/alloc/split.h"

namespace hetrain::alloc {

struct RealBounds {
  double lo = 0.0;
  double hi = std::numeric_limits<double>::infinity();  // no memory cap
};
RealBounds real_bounds(const Bounds& b);

class StepCostModel {
 public:
  // `unit_of`: each worker's unit, numbered 0..units-1.
  explicit StepCostModel(std::vector<std::size_t> unit_of);
  virtual ~StepCostModel() = default;
  std::size_t workers() const { return unit_of_.size(); }
  std::size_t units() const { return count_.size(); }
  std::size_t unit_of(std::size_t worker) const { return unit_of_[worker]; }
  std::size_t count(std::size_t unit) const { return count_[unit]; }

  // Samples each member of each unit can take by time t (into `share`, per
  // unit); returns the total held (members counted). Non-decreasing in t.
  virtual double fill(double t, const RealBounds& r, std::vector<double>& share) const = 0;
  // A time by which the slowest worker alone could finish `total` samples.
  virtual double upper_time(double total) const = 0;
  // The bisection's time made exact where the model can (t: within 1e-9 of it).
  virtual double refine(double t, double /*total*/, const RealBounds& /*r*/) const { return t; }
  // The predicted compute makespan of an integer split, by worker.
  virtual double makespan(const std::vector<std::size_t>& split) const = 0;
  // The finish time of one member of `unit` given b samples, where that does
  // not depend on the other workers; negative where it does.
  virtual double alone(std::size_t unit, double b) const = 0;
  // Where workers are priced only together (alone() < 0), solve cannot
  // settle the rounded split: this settles the workers the model can still
  // price alone, moving single samples to or from them while that ends the
  // step sooner; only workers `movable` says (empty: all) give or take.
  // Elsewhere it does nothing. Returns the makespan of the split it leaves,
  // or nothing where no sample moved.
  virtual std::optional<double> improve(const Bounds& /*bounds*/, const std::vector<bool>& /*movable*/,
                                        std::vector<std::size_t>& /*split*/) const {
    return std::nullopt;
  }

 private:
  std::vector<std::size_t> unit_of_, count_;
};

// The common finish time T of the real-valued water-filling, with the share
// per member of each unit at T.
struct RealSplit {
  double time = 0.0;
  std::vector<double> share;
};
RealSplit solve_real(const StepCostModel& model, double total, const RealBounds& r);

// The integer split that minimises the model's makespan (to rounding).
SolvedSplit solve(const StepCostModel& model, std::size_t total, const Bounds& bounds);

}  // namespace hetrain::alloc

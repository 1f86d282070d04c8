#include "hetrain/alloc/device_cost.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "hetrain/common/error.h"

namespace hetrain::alloc {
namespace {

std::vector<std::size_t> own_units(std::size_t n) {
  std::vector<std::size_t> u(n);
  std::iota(u.begin(), u.end(), std::size_t{0});
  return u;
}

std::vector<DeviceUnit> lines_of(const std::vector<WorkerModel>& models) {
  std::vector<DeviceUnit> out;
  out.reserve(models.size());
  for (const WorkerModel& m : models) {
    if (!(m.speed > 0.0)) throw UsageError("a worker model needs a positive speed");
    out.push_back({m.overhead, 1.0 / m.speed});
  }
  return out;
}

}  // namespace

DeviceCostModel::DeviceCostModel(std::vector<std::size_t> unit_of, std::vector<DeviceUnit> units)
    : StepCostModel(std::move(unit_of)), units_(std::move(units)) {
  HETRAIN_ENFORCE_EQ(units_.size(), this->units());
}

DeviceCostModel::DeviceCostModel(const std::vector<WorkerModel>& models)
    : DeviceCostModel(own_units(models.size()), lines_of(models)) {}

double DeviceCostModel::fill(double t, const RealBounds& r, std::vector<double>& share) const {
  double held = 0.0;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    share[u] = std::clamp((t - units_[u].overhead) / units_[u].per_sample, r.lo, r.hi);
    held += static_cast<double>(count(u)) * share[u];
  }
  return held;
}

double DeviceCostModel::upper_time(double total) const {
  double t = 0.0;
  for (const DeviceUnit& u : units_) t = std::max(t, u.overhead + total * u.per_sample);
  return t;
}

double DeviceCostModel::refine(double t, double total, const RealBounds& r) const {
  double pinned = 0.0, free_speed = 0.0, free_offset = 0.0;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    const double m = static_cast<double>(count(u)), x = (t - units_[u].overhead) / units_[u].per_sample;
    if (x <= r.lo || x >= r.hi) {
      pinned += m * std::clamp(x, r.lo, r.hi);
    } else {
      free_speed += m / units_[u].per_sample, free_offset += m * units_[u].overhead / units_[u].per_sample;
    }
  }
  if (!(free_speed > 0.0)) return t;
  const double exact = (total - pinned + free_offset) / free_speed;
  // Only if the pinned set is the same there (else the bisection's t stands).
  return std::abs(exact - t) <= 1e-6 * t ? exact : t;
}

double DeviceCostModel::makespan(const std::vector<std::size_t>& split) const {
  double worst = 0.0;
  for (std::size_t i = 0; i < split.size(); ++i) {
    if (split[i] > 0) worst = std::max(worst, alone(unit_of(i), static_cast<double>(split[i])));
  }
  return worst;
}

double DeviceCostModel::alone(std::size_t unit, double b) const {
  return units_[unit].overhead + b * units_[unit].per_sample;
}

double predicted_makespan(const std::vector<WorkerModel>& models, const std::vector<std::size_t>& split) {
  HETRAIN_ENFORCE_EQ(models.size(), split.size());
  return DeviceCostModel(models).makespan(split);
}

SolvedSplit solve_split(const std::vector<WorkerModel>& models, std::size_t total, const Bounds& bounds) {
  check_feasible(models.size(), total, bounds);
  return solve(DeviceCostModel(models), total, bounds);
}

}  // namespace hetrain::alloc

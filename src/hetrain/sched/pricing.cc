#include "hetrain/sched/pricing.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hetrain/alloc/device_cost.h"
#include "hetrain/common/error.h"
#include "hetrain/sim/network_cost.h"

namespace hetrain::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The compute makespan of the real-valued water-filling (alloc/solver.h)
// over the machine types, each a unit of x[t] alike machines holding at
// least one sample (see step_seconds).
double grouped_makespan(const Job& job, const Allocation& x) {
  std::vector<std::size_t> unit_of;
  std::vector<alloc::DeviceUnit> units;
  for (std::size_t t = 0; t < x.size(); ++t) {
    if (x[t] == 0) continue;
    unit_of.insert(unit_of.end(), x[t], units.size());
    units.push_back({job.overhead, 1.0 / job.speed[t]});
  }
  const alloc::DeviceCostModel model(std::move(unit_of), units);
  alloc::RealBounds one;
  one.lo = 1.0;
  const alloc::RealSplit real = alloc::solve_real(model, static_cast<double>(job.global_batch), one);
  double slowest = 0.0;  // a unit pinned at one sample may finish after T
  for (std::size_t u = 0; u < units.size(); ++u) slowest = std::max(slowest, model.alone(u, real.share[u]));
  return slowest;
}

}  // namespace

std::size_t machines_in(const Allocation& x) {
  std::size_t n = 0;
  for (const std::size_t k : x) n += k;
  return n;
}

Pricer::Pricer(const Pool& pool, const std::vector<Job>& jobs) : pool_(pool), jobs_(jobs) {
  allreduce_.resize(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    allreduce_[j].assign(std::min(jobs[j].cap(), pool.machines()) + 1,
                         std::numeric_limits<double>::quiet_NaN());
  }
}

double Pricer::allreduce(std::size_t j, std::size_t n) const {
  std::vector<double>& cache = allreduce_[j];
  if (n >= cache.size()) return sim::allreduce_seconds(pool_.network, n, jobs_[j].gradient_bytes);
  if (std::isnan(cache[n])) cache[n] = sim::allreduce_seconds(pool_.network, n, jobs_[j].gradient_bytes);
  return cache[n];
}

double Pricer::step_seconds(std::size_t j, const Allocation& x) const {
  const Job& job = jobs_[j];
  HETRAIN_ENFORCE_EQ(x.size(), job.speed.size());
  const std::size_t n = machines_in(x);
  if (n == 0 || n > job.global_batch) return kInf;
  for (std::size_t t = 0; t < x.size(); ++t) {
    if (x[t] > 0 && job.speed[t] <= 0.0) return kInf;
  }
  return grouped_makespan(job, x) + allreduce(j, n) + job.step_overhead;
}

double Pricer::throughput(std::size_t j, const Allocation& x) const {
  const double s = step_seconds(j, x);
  return std::isfinite(s) && s > 0.0 ? static_cast<double>(jobs_[j].global_batch) / s : 0.0;
}

double Pricer::exact_step_seconds(std::size_t j, const Allocation& x) const {
  const Job& job = jobs_[j];
  const std::size_t n = machines_in(x);
  if (!std::isfinite(step_seconds(j, x))) return kInf;
  std::vector<alloc::WorkerModel> models;
  models.reserve(n);
  for (std::size_t t = 0; t < x.size(); ++t) {
    for (std::size_t k = 0; k < x[t]; ++k) models.push_back({job.overhead, job.speed[t]});
  }
  alloc::Bounds bounds;
  bounds.min_local = 1;  // the same floor as step_seconds' grouped split, so the two prices compare
  const alloc::SolvedSplit solved = alloc::solve_split(models, job.global_batch, bounds);
  return solved.makespan + allreduce(j, n) + job.step_overhead;
}

double Pricer::fixed_seconds(std::size_t j) const {
  const Job& job = jobs_[j];
  return job.overhead + job.step_overhead + allreduce(j, std::min(job.cap(), pool_.machines()));
}

double Pricer::isolated(std::size_t j) const {
  double v = 0.0;
  for (std::size_t t = 0; t < pool_.types.size(); ++t)
    v += static_cast<double>(pool_.types[t].count) * jobs_[j].speed[t];
  return v;
}

}  // namespace hetrain::sched

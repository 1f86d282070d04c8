#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <tuple>

#include "hetrain/alloc/adaptive.h"
#include "hetrain/alloc/bisection.h"
#include "hetrain/common/error.h"

// The water-filling split of adaptive.h: plain arithmetic on the models,
// shared by the adaptive policy and the simulator.
namespace hetrain::alloc {
namespace {

double capacity(const WorkerModel& m, double t, double lo, double hi) {
  return std::clamp((t - m.overhead) * m.speed, lo, hi);
}

// Rounding can hand a slow worker a sample it cannot afford (a share of 0.6
// rounded up makes it the slowest): while the worker that finishes last can
// give a sample to the one that would still finish earlier with it, move it.
// Two heaps (the last to finish, the earliest with one more sample) whose
// entries carry stamps that mark them stale; ties go by rank, so every worker
// computes the same split.
void settle_rounding(const std::vector<WorkerModel>& ms, const Bounds& bounds,
                     std::vector<std::size_t>& split) {
  using Entry = std::tuple<double, std::size_t, std::size_t>;  // finish time, rank, stamp
  std::priority_queue<Entry> last;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> first;
  std::vector<std::size_t> stamp(split.size(), 0);
  auto finish = [&](std::size_t i, std::size_t b) {
    return b == 0 ? 0.0 : ms[i].overhead + static_cast<double>(b) / ms[i].speed;
  };
  auto push = [&](std::size_t i) {
    if (split[i] > 0) last.emplace(finish(i, split[i]), i, stamp[i]);
    if (split[i] < bounds.max_local) first.emplace(finish(i, split[i] + 1), i, stamp[i]);
  };
  for (std::size_t i = 0; i < split.size(); ++i) push(i);
  auto fresh = [&](const Entry& e) { return std::get<2>(e) == stamp[std::get<1>(e)]; };
  // Each move lowers the sorted finish times; a sample per worker is plenty.
  for (std::size_t moves = 0; moves < 2 * split.size(); ++moves) {
    while (!last.empty() && !fresh(last.top())) last.pop();
    while (!first.empty() && !fresh(first.top())) first.pop();
    if (last.empty() || first.empty()) return;
    const auto [t_give, give, s_give] = last.top();
    const auto [t_take, take, s_take] = first.top();
    if (split[give] <= bounds.min_local || !(t_take < t_give)) return;
    --split[give], ++split[take];
    ++stamp[give], ++stamp[take];
    push(give), push(take);
  }
}

}  // namespace

double predicted_makespan(const std::vector<WorkerModel>& models, const std::vector<std::size_t>& split) {
  HETRAIN_ENFORCE_EQ(models.size(), split.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < split.size(); ++i) {
    if (split[i] == 0) continue;
    worst = std::max(worst, models[i].overhead + static_cast<double>(split[i]) / models[i].speed);
  }
  return worst;
}

SolvedSplit solve_split(const std::vector<WorkerModel>& models, std::size_t total, const Bounds& bounds) {
  const std::size_t n = models.size();
  check_feasible(n, total, bounds);
  const detail::RealBounds range = detail::real_bounds(bounds);
  const double lo = range.lo, hi = range.hi;
  const double b = static_cast<double>(total);
  auto held = [&](double t) {
    double sum = 0.0;
    for (const auto& m : models) sum += capacity(m, t, lo, hi);
    return sum;
  };
  // T_hi: the slowest worker alone could do the whole batch.
  double t_hi = 0.0;
  for (const auto& m : models) t_hi = std::max(t_hi, m.overhead + b / m.speed);
  t_hi = detail::smallest_time(held, b, t_hi);
  std::vector<double> parts(n);
  for (std::size_t i = 0; i < n; ++i)
    parts[i] = std::max(detail::kTinyShare, capacity(models[i], t_hi, lo, hi));
  SolvedSplit out;
  out.split = split_proportional(parts, total, bounds);
  settle_rounding(models, bounds, out.split);
  out.makespan = predicted_makespan(models, out.split);
  return out;
}

}  // namespace hetrain::alloc

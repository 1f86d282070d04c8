#include "hetrain/alloc/solver.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <tuple>

#include "hetrain/common/error.h"

namespace hetrain::alloc {
namespace {

// A worker whose share is (numerically) zero still needs a positive weight
// for the rounding; it then gets 0 or 1 sample.
constexpr double kTinyShare = 1e-9;

// The smallest T in (0, t_hi] whose fill holds `total`, to 1e-9 of T (the
// rounding to whole samples is far coarser). Terms: g(T) = fill(T) - total
// is non-decreasing and piecewise linear in T (a kink where a worker reaches
// a bound or a host's budget passes to the next tier), so the root is
// bracketed [t_lo, t_hi] (g < 0 <= g) and each step tries the secant of the
// ends, which is exact once both lie on the root's piece: a few fills where
// bisection needs about 30. The Illinois rule halves the g of an end that
// stays twice (else it stays for good and the window shrinks slowly); a try
// is kept a quarter of the tolerance inside the window, so an exact root is
// closed from below at the next step; a try outside it is the midpoint.
double smallest_time(const StepCostModel& m, double total, const RealBounds& r, std::vector<double>& share) {
  constexpr double kRelativeTolerance = 1e-9;
  constexpr int kMaxSteps = 200;
  double t_lo = 0.0, t_hi = m.upper_time(total);
  for (int i = 0; i < 64 && m.fill(t_hi, r, share) < total; ++i) t_hi *= 2.0;
  double g_lo = m.fill(t_lo, r, share) - total, g_hi = m.fill(t_hi, r, share) - total;
  if (g_lo >= 0.0) return t_lo;  // every worker at its lower bound holds the batch
  int kept = 0;  // +1: t_hi was the last end moved; -1: t_lo
  for (int i = 0; i < kMaxSteps && t_hi - t_lo > kRelativeTolerance * t_hi; ++i) {
    const double inside = 0.25 * kRelativeTolerance * t_hi;
    double t = g_hi > g_lo ? t_hi - g_hi * (t_hi - t_lo) / (g_hi - g_lo) : 0.5 * (t_lo + t_hi);
    t = std::isfinite(t) ? std::clamp(t, t_lo + inside, t_hi - inside) : 0.5 * (t_lo + t_hi);
    const double g = m.fill(t, r, share) - total;
    if (g >= 0.0) {
      t_hi = t, g_hi = g;
      if (kept == 1) g_lo *= 0.5;
      kept = 1;
    } else {
      t_lo = t, g_lo = g;
      if (kept == -1) g_hi *= 0.5;
      kept = -1;
    }
  }
  return t_hi;
}

// Rounding can hand a slow worker a sample it cannot afford: while the worker
// that finishes last can give one to a worker that would still finish earlier
// with it, move it. Two heaps with stamps that mark stale entries; ties go by
// rank, so every worker computes the same split. O(N log N).
void settle(const StepCostModel& m, const Bounds& bounds, std::vector<std::size_t>& split) {
  using Entry = std::tuple<double, std::size_t, std::size_t>;  // finish time, rank, stamp
  std::priority_queue<Entry> last;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> first;
  std::vector<std::size_t> stamp(split.size(), 0);
  auto finish = [&](std::size_t i, std::size_t b) {
    return b == 0 ? 0.0 : m.alone(m.unit_of(i), static_cast<double>(b));
  };
  auto push = [&](std::size_t i) {
    if (split[i] > 0) last.emplace(finish(i, split[i]), i, stamp[i]);
    if (split[i] < bounds.max_local) first.emplace(finish(i, split[i] + 1), i, stamp[i]);
  };
  for (std::size_t i = 0; i < split.size(); ++i) push(i);
  auto fresh = [&](const Entry& e) { return std::get<2>(e) == stamp[std::get<1>(e)]; };
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

RealBounds real_bounds(const Bounds& b) {
  return {static_cast<double>(b.min_local), b.max_local == std::numeric_limits<std::size_t>::max()
                                                ? std::numeric_limits<double>::infinity()
                                                : static_cast<double>(b.max_local)};
}

StepCostModel::StepCostModel(std::vector<std::size_t> unit_of) : unit_of_(std::move(unit_of)) {
  for (const std::size_t u : unit_of_) {
    if (u >= count_.size()) count_.resize(u + 1, 0);
    ++count_[u];
  }
}

RealSplit solve_real(const StepCostModel& model, double total, const RealBounds& r) {
  RealSplit out;
  out.share.assign(model.units(), 0.0);
  out.time = model.refine(smallest_time(model, total, r, out.share), total, r);
  model.fill(out.time, r, out.share);
  return out;
}

SolvedSplit solve(const StepCostModel& model, std::size_t total, const Bounds& bounds) {
  const std::size_t n = model.workers();
  check_feasible(n, total, bounds);
  const RealSplit real = solve_real(model, static_cast<double>(total), real_bounds(bounds));
  std::vector<double> parts(n);
  for (std::size_t i = 0; i < n; ++i) parts[i] = std::max(kTinyShare, real.share[model.unit_of(i)]);
  SolvedSplit out;
  out.split = split_proportional(parts, total, bounds);
  if (n > 0 && model.alone(0, 1.0) >= 0.0) settle(model, bounds, out.split);
  out.makespan = model.makespan(out.split);
  return out;
}

}  // namespace hetrain::alloc

// Workers alike within noise, treated as one: they share a pooled cost model
// and hold equal shares, so noise cannot split identical workers apart.
// Plain functions, header-only (adaptive.cc alone uses them).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

#include "hetrain/alloc/policy.h"

namespace hetrain::alloc {

// Whether two workers' models are indistinguishable: their predicted times
// at each one's own batch (the typical batch for an idle worker) differ
// (relative) by at most `span` x the larger of `tolerance` and `bands`
// combined standard errors. Predicted times, not (overhead, speed) pairs:
// noise can trade one for the other along the samples of one batch size and
// still predict alike; and only where the samples lie, since such a trade
// extrapolates to other batches with an error the noise bands do not cover.
struct Likeness {
  const std::vector<std::size_t>& batches;  // each worker's current batch
  double typical_batch = 1.0;
  double tolerance = 0.0;
  double bands = 0.0;
  bool operator()(const std::vector<WorkerModel>& ms, const std::vector<double>& errors, std::size_t i,
                  std::size_t j, double span = 1.0) const {
    const double limit = span * std::max(tolerance, bands * std::hypot(errors[i], errors[j]));
    auto own = [&](std::size_t k) {
      return batches[k] > 0 ? static_cast<double>(batches[k]) : typical_batch;
    };
    for (const double b : {own(i), own(j)}) {
      const double ti = ms[i].overhead + b / ms[i].speed, tj = ms[j].overhead + b / ms[j].speed;
      if (std::abs(ti - tj) > limit * std::min(ti, tj)) return false;
    }
    return true;
  }
};

struct Grouping {
  std::vector<WorkerModel> models;  // by rank: the pooled model of the worker's group
  std::vector<std::size_t> group;   // by rank: the group's number
};

namespace detail {

// A group may span at most this many tolerances (from its slowest member to
// its fastest): wider, it is cut at its largest gap.
inline constexpr double kMaxGroupSpan = 2.0;

// Makes order[begin, end) one group: every member gets the mean overhead
// and the mean per-sample cost.
inline void pool(const std::vector<WorkerModel>& ms, const std::vector<std::size_t>& order, std::size_t begin,
                 std::size_t end, Grouping& out) {
  double overhead = 0.0, per_sample = 0.0;
  for (std::size_t k = begin; k < end; ++k) {
    overhead += ms[order[k]].overhead;
    per_sample += 1.0 / ms[order[k]].speed;
  }
  const double size = static_cast<double>(end - begin);
  for (std::size_t k = begin; k < end; ++k) {
    out.models[order[k]] = {overhead / size, size / per_sample};
    out.group[order[k]] = order[begin];
  }
}

// Groups order[begin, end), a chain of workers each alike the next, cut at
// its largest gap in effective speed while it spans more than kMaxGroupSpan.
inline void pool_chain(const std::vector<WorkerModel>& ms, const std::vector<double>& errors,
                       const std::vector<double>& speeds, const std::vector<std::size_t>& order,
                       std::size_t begin, std::size_t end, const Likeness& alike, Grouping& out) {
  if (end - begin < 2 || alike(ms, errors, order[begin], order[end - 1], kMaxGroupSpan)) {
    pool(ms, order, begin, end, out);
    return;
  }
  std::size_t cut = begin + 1;
  double widest = -1.0;
  for (std::size_t k = begin + 1; k < end; ++k) {
    const double gap = speeds[order[k]] / speeds[order[k - 1]];
    if (gap > widest) widest = gap, cut = k;
  }
  pool_chain(ms, errors, speeds, order, begin, cut, alike, out);
  pool_chain(ms, errors, speeds, order, cut, end, alike, out);
}

}  // namespace detail

namespace detail {

// Union-find over ranks: the root of i's set (with path halving), and the
// union of two sets under the lower root (so the result is order-free).
inline std::size_t root(std::vector<std::size_t>& parent, std::size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}
inline void join(std::vector<std::size_t>& parent, std::size_t a, std::size_t b) {
  a = root(parent, a), b = root(parent, b);
  if (a != b) parent[std::max(a, b)] = std::min(a, b);
}

}  // namespace detail

// Terms: workers sorted by effective speed at the typical batch are joined
// to the next when alike (single linkage: identical workers, close to each
// other, are never cut apart by a neighbour between them), and the members
// of a `previous` group stay joined while they remain alike within
// kMaxGroupSpan tolerances (hysteresis: noise near the tolerance does not
// make a group flicker). A set too wide is cut at its largest gaps.
// `errors`: each model's relative standard error. Ties keep rank order, so
// every worker forms the same groups.
inline Grouping pool_alike(const std::vector<WorkerModel>& ms, const std::vector<double>& errors,
                           const Likeness& alike, const std::vector<std::size_t>& previous = {}) {
  const std::size_t n = ms.size();
  std::vector<double> speeds(n);
  for (std::size_t i = 0; i < n; ++i) {
    speeds[i] = alike.typical_batch / (ms[i].overhead + alike.typical_batch / ms[i].speed);
  }
  std::vector<std::size_t> order(n), parent(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return speeds[a] < speeds[b]; });
  for (std::size_t k = 1; k < n; ++k) {
    if (alike(ms, errors, order[k - 1], order[k])) detail::join(parent, order[k - 1], order[k]);
  }
  std::vector<std::vector<std::size_t>> sets(n);  // by label or root, members in speed order
  if (previous.size() == n) {
    for (const std::size_t i : order) sets[previous[i]].push_back(i);
    for (const auto& g : sets) {
      if (g.size() < 2 || !alike(ms, errors, g.front(), g.back(), detail::kMaxGroupSpan)) continue;
      for (const std::size_t i : g) detail::join(parent, g.front(), i);
    }
    for (auto& g : sets) g.clear();
  }
  for (const std::size_t i : order) sets[detail::root(parent, i)].push_back(i);
  Grouping out{ms, std::vector<std::size_t>(n, 0)};
  for (const auto& g : sets) {
    if (!g.empty()) detail::pool_chain(ms, errors, speeds, g, 0, g.size(), alike, out);
  }
  return out;
}

// The grouping of `group` (by rank, any labels), each group's models pooled
// as pool_alike pools them: the mean overhead and the mean per-sample cost.
inline Grouping pool_labelled(const std::vector<WorkerModel>& ms, const std::vector<std::size_t>& group) {
  const std::size_t n = ms.size();
  Grouping out{ms, std::vector<std::size_t>(n, 0)};
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return group[a] < group[b]; });
  for (std::size_t begin = 0; begin < n;) {  // each run of one label, its ranks ascending
    std::size_t end = begin + 1;
    while (end < n && group[order[end]] == group[order[begin]]) ++end;
    detail::pool(ms, order, begin, end, out);
    begin = end;
  }
  return out;
}

// The standard error of a noise estimate from the median absolute
// deviation of n normal samples: about 1.17 sigma / sqrt(n).
inline constexpr double kMadSigmaError = 1.17;

// `label` with each group cut where its members' noise (`sigmas`, relative
// standard deviations) differs by more than the larger of `limit` and
// `bands` standard errors of the difference (`errors`), members in order of
// noise: a quiet worker and a noisy one of the same mean speed are not
// alike, since a synchronous step waits for the noisy one's slow draws (the
// noise margin); estimates of equal noise differ by their own error, which
// must not cut identical workers apart. Each part is labelled by one of its ranks.
inline std::vector<std::size_t> part_by_noise(const std::vector<std::size_t>& label,
                                              const std::vector<double>& sigmas,
                                              const std::vector<double>& errors, double limit, double bands) {
  const std::size_t n = label.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::make_pair(label[a], sigmas[a]) < std::make_pair(label[b], sigmas[b]);
  });
  std::vector<std::size_t> out(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t r = order[k], prev = k > 0 ? order[k - 1] : r;
    const double apart = std::max(limit, bands * std::hypot(errors[r], errors[prev]));
    const bool same = k > 0 && label[prev] == label[r] && sigmas[r] - sigmas[prev] <= apart;
    out[r] = same ? out[prev] : r;
  }
  return out;
}

// `split` with each group's samples spread evenly over its members: identical
// workers hold equal shares. The remainder goes to the quietest members
// (`noise`, by rank; empty: all alike), ties to the lowest ranks: a step
// waits for its slowest draw, so an extra sample costs least where the noise
// is least. A member that holds an extra sample keeps it against one less
// noisy by `hold` or less, so noise estimates drifting within that do not
// move samples between identical workers. The group's total, so the sum and,
// on average, the bounds hold.
inline std::vector<std::size_t> even_out(const std::vector<std::size_t>& split,
                                         const std::vector<std::size_t>& group,
                                         const std::vector<double>& noise = {}, double hold = 0.0) {
  const std::size_t n = split.size();
  std::vector<std::size_t> total(n, 0), members(n, 0), seen(n, 0), order(n);
  for (std::size_t i = 0; i < n; ++i) total[group[i]] += split[i], ++members[group[i]];
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (noise.size() == n) {
    std::vector<double> key(n);
    for (std::size_t i = 0; i < n; ++i)
      key[i] = noise[i] - (split[i] > total[group[i]] / members[group[i]] ? hold : 0.0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return key[a] < key[b]; });
  }
  std::vector<std::size_t> out(n);
  for (const std::size_t i : order) {
    const std::size_t g = group[i];
    out[i] = total[g] / members[g] + (seen[g]++ < total[g] % members[g] ? 1 : 0);
  }
  return out;
}

// Each group's pooled model slowed by `margin` standard deviations of its
// members' mean noise (`sigmas`, relative, by rank): the step waits for the
// slowest draw, not the slowest mean, so a noisy worker should get less.
// The group's mean, so members keep equal models and equal shares.
inline std::vector<WorkerModel> with_noise_margin(const Grouping& groups, const std::vector<double>& sigmas,
                                                  double margin) {
  const std::size_t n = groups.models.size();
  std::vector<double> sum(n, 0.0), members(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) sum[groups.group[i]] += sigmas[i], members[groups.group[i]] += 1.0;
  std::vector<WorkerModel> out = groups.models;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t g = groups.group[i];
    const double slower = 1.0 + margin * sum[g] / members[g];
    out[i].overhead *= slower;
    out[i].speed /= slower;
  }
  return out;
}

}  // namespace hetrain::alloc

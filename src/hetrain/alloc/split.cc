#include "hetrain/alloc/split.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <string>
#include <utility>

#include "hetrain/common/error.h"

namespace hetrain::alloc {

void check_feasible(std::size_t n, std::size_t total, const Bounds& b) {
  if (n == 0) throw UsageError("cannot split a batch between 0 workers");
  if (b.min_local > b.max_local) {
    throw UsageError(fmt::format("min local batch {} exceeds max local batch {}", b.min_local, b.max_local));
  }
  // Compare in long double: n * max may overflow size_t.
  const long double lo = static_cast<long double>(n) * b.min_local;
  const long double hi = static_cast<long double>(n) * b.max_local;
  if (lo > total || hi < total) {
    throw UsageError(fmt::format(
        "bounds cannot sum to the global batch: {} workers x [{}, {}] cannot hold {} samples", n, b.min_local,
        b.max_local == std::numeric_limits<std::size_t>::max() ? std::string("inf")
                                                               : std::to_string(b.max_local),
        total));
  }
}

namespace {

// Water-filling: parts proportional to the weights; parts that leave [lo, hi]
// are pinned to the violated bound and the rest re-shared until nothing moves.
std::vector<double> bounded_parts(std::span<const double> weights, std::size_t total, double lo, double hi) {
  const std::size_t n = weights.size();
  std::vector<double> part(n, 0.0);
  std::vector<bool> pinned(n, false);
  for (std::size_t round = 0; round <= n; ++round) {
    double free_total = static_cast<double>(total), free_weight = 0.0;
    for (std::size_t i = 0; i < n; ++i) (pinned[i] ? free_total -= part[i] : free_weight += weights[i]);
    for (std::size_t i = 0; i < n; ++i) {
      if (!pinned[i]) part[i] = free_weight > 0.0 ? free_total * weights[i] / free_weight : 0.0;
    }
    // Pin the side that is violated most, so one round never pins both ways.
    double over = 0.0, under = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      if (pinned[i]) continue;
      over += std::max(0.0, part[i] - hi);
      under += std::max(0.0, lo - part[i]);
    }
    bool moved = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (pinned[i]) continue;
      if (over >= under && over > 0.0 && part[i] > hi) {
        part[i] = hi, pinned[i] = true, moved = true;
      } else if (under > over && part[i] < lo) {
        part[i] = lo, pinned[i] = true, moved = true;
      }
    }
    if (!moved) break;
  }
  return part;
}

// Largest-remainder rounding within the bounds: floor everything, hand the
// leftover units to the largest fractional parts (ties to the lower rank).
std::vector<std::size_t> round_parts(const std::vector<double>& part, std::size_t total, const Bounds& bounds) {
  const std::size_t n = part.size();
  std::vector<std::size_t> out(n);
  std::size_t assigned = 0;
  std::vector<double> remainder(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = std::clamp(static_cast<std::size_t>(std::floor(part[i])), bounds.min_local, bounds.max_local);
    assigned += out[i];
    remainder[i] = part[i] - std::floor(part[i]);
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  // The feasibility check guarantees these terminate within bounds.
  while (assigned < total) {
    for (std::size_t i : order) {
      if (assigned == total) break;
      if (out[i] < bounds.max_local) ++out[i], ++assigned;
    }
  }
  while (assigned > total) {
    for (auto it = order.rbegin(); it != order.rend() && assigned > total; ++it) {
      if (out[*it] > bounds.min_local) --out[*it], --assigned;
    }
  }
  return out;
}

}  // namespace

std::vector<std::size_t> split_proportional(std::span<const double> weights, std::size_t total,
                                            const Bounds& bounds) {
  check_feasible(weights.size(), total, bounds);
  for (double w : weights) {
    if (!(w > 0.0) || !std::isfinite(w)) {
      throw UsageError(fmt::format("split weights must be positive and finite, got {}", w));
    }
  }
  const double lo = static_cast<double>(bounds.min_local), hi = static_cast<double>(bounds.max_local);
  return round_parts(bounded_parts(weights, total, lo, hi), total, bounds);
}

std::vector<std::size_t> split_equal(std::size_t n, std::size_t total) {
  if (n == 0) throw UsageError("cannot split a batch between 0 workers");
  std::vector<std::size_t> out(n, total / n);
  for (std::size_t i = 0; i < total % n; ++i) ++out[i];
  return out;
}

bool give_one_each(std::vector<std::size_t>& split, const std::vector<std::size_t>& to, std::size_t floor) {
  using Donor = std::pair<std::size_t, std::size_t>;  // (samples, rank)
  auto fewer = [](const Donor& a, const Donor& b) { return a.first != b.first ? a.first < b.first : a.second > b.second; };
  std::priority_queue<Donor, std::vector<Donor>, decltype(fewer)> donors(fewer);
  for (std::size_t i = 0; i < split.size(); ++i)
    if (split[i] > 0) donors.emplace(split[i], i);
  bool moved = false;
  for (const std::size_t i : to) {
    if (donors.empty() || donors.top().first <= floor) break;
    const std::size_t d = donors.top().second;
    donors.pop();
    --split[d], ++split[i], moved = true;
    donors.emplace(split[d], d);
  }
  return moved;
}

}  // namespace hetrain::alloc

// Integer splits of a global batch: the arithmetic every allocation policy
// ends in. Plain C++ (no torch, no network) so the trainer and the simulator
// share it.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

namespace hetrain::alloc {

// Per-worker bounds on the local batch, in samples.
struct Bounds {
  std::size_t min_local = 0;
  std::size_t max_local = std::numeric_limits<std::size_t>::max();
};

// A split with the time a model predicts for it.
struct SolvedSplit {
  std::vector<std::size_t> split;
  double makespan = 0.0;  // predicted seconds of the slowest worker
};

// Throws UsageError unless n workers can hold `total` samples within bounds.
void check_feasible(std::size_t n, std::size_t total, const Bounds& bounds);

// Splits `total` into n = weights.size() integers proportional to the
// weights, with sum exactly `total` and every part within bounds.
//
// Terms: the ideal part of worker i is q_i = total * w_i / sum(w). Bounds are
// met by water-filling: parts whose q_i falls outside [min, max] are pinned to
// the violated bound and the rest is re-shared among the free workers until
// nothing moves. The real parts are then rounded by largest remainder
// (floor everything, hand the leftover units to the largest fractional
// parts, ties to the lower rank), which keeps the sum and is deterministic,
// so every worker computes the same split from the same numbers.
std::vector<std::size_t> split_proportional(std::span<const double> weights, std::size_t total,
                                            const Bounds& bounds = {});

// B/n each, the remainder spread over the first ranks.
std::vector<std::size_t> split_equal(std::size_t n, std::size_t total);

// One sample to each worker of `to` (in order), each taken from the worker
// holding the most (the lowest rank among ties), while that worker keeps
// more than `floor`: how a measurement is bought where it costs least.
// Returns whether any sample moved. O(N + k log N) for k receivers.
bool give_one_each(std::vector<std::size_t>& split, const std::vector<std::size_t>& to, std::size_t floor);

}  // namespace hetrain::alloc

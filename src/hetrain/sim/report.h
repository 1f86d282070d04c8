// What `hetrain sim` prints and writes: per-policy summaries, the split over
// time, the comparison table, and the full trace as JSON.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hetrain/sim/cluster.h"
#include "hetrain/sim/simulator.h"

namespace hetrain::sim {

// One line per policy: workers, steps, total and per-step seconds, mean
// slowest compute, allreduce, balance efficiency, speed-up over the first,
// and the policy's moves and reverts.
std::string comparison_table(const std::vector<SimResult>& results);

// Mean samples per worker of each group at a few steps: the first, each
// event's, the quarters, the last.
std::string split_over_time(const SimResult& result, const Cluster& cluster);

// The full trace: every policy's per-step times, samples per group and, when
// recorded, every split.
std::string trace_json(const Cluster& cluster, const std::vector<SimResult>& results);

}  // namespace hetrain::sim

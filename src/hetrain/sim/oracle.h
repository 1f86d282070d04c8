// The world's own split solver: the ORACLE the allocation property compares
// the adaptive policy with where the world changes. It knows every worker's
// true mean cost (its noise-free cost x its noise's mean multiplier) at every
// step, not the noise itself, and minimises the step's expected compute with
// the world's own physics (world.h). Written for the simulator alone.
#pragma once

#include <cstddef>
#include <vector>

#include "hetrain/sim/cluster.h"

namespace hetrain::sim {

// A world at one step: rank r is a worker of groups[rank_group[r]].
struct WorldView {
  const Cluster* cluster = nullptr;
  const std::vector<WorkerGroup>* groups = nullptr;
  const std::vector<std::size_t>* rank_group = nullptr;
};

// The split of `batch` samples (each worker at most `max_local`, 0: no cap)
// with the smallest expected slowest compute. Exact for independent workers
// (bisection on the makespan over each worker's monotone cost); on shared
// machines that split is then improved one sample at a time while the
// expected makespan (then the sum of squared finish times) falls.
std::vector<std::size_t> oracle_split(const WorldView& w, std::size_t batch, std::size_t max_local);

// The expected compute seconds of each worker under `split`.
std::vector<double> expected_finish(const WorldView& w, const std::vector<std::size_t>& split);

// Each worker's true speed as a profiler would measure it at the start: its
// equal share of the batch over its expected time alone on its machine
// (samples per second). A static split in proportion to these is "static
// with the true initial speeds".
std::vector<double> true_initial_speeds(const Cluster& c);

}  // namespace hetrain::sim

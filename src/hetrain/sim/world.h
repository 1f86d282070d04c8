// The simulated world's physics, written for the simulator alone (it judges
// the allocation policies, so it shares none of their models or solvers):
// what b samples cost a worker, and how workers on one machine share its
// cores while they compute.
#pragma once

#include <cstddef>
#include <vector>

#include "hetrain/sim/cluster.h"

namespace hetrain::sim {

// A worker's noise-free cost of one step: CPU work (seconds for an
// independent device, CPU-seconds on a machine) and then time off the CPU.
struct WorkCost {
  double cpu = 0.0;
  double device = 0.0;
};

// The cost of b samples to a worker of `g` (cluster.h has the formula);
// nothing for b = 0.
WorkCost cost_of(const WorkerGroup& g, std::size_t b);

// CPUs a worker of `g` on a machine can use at once: min(threads, quota).
double cpu_cap(const WorkerGroup& g);

// Processor sharing on a machine of `cores` CPUs: worker i has work[i]
// CPU-seconds to do and may use at most cap[i] CPUs. While k workers are
// runnable the cores are shared max-min fairly (each gets min(cap, an equal
// share of what the capped ones leave); k uncapped workers on c cores get
// min(1, c / k) each); when one finishes, the others' rates are recomputed.
// Returns each worker's finish time (0 for no work).
std::vector<double> processor_sharing(const std::vector<double>& work, const std::vector<double>& cap,
                                      double cores);

// The ranks of each machine (by Cluster::machines index) in a world whose
// rank r is a worker of groups[rank_group[r]].
std::vector<std::vector<std::size_t>> ranks_by_machine(const Cluster& c, const std::vector<WorkerGroup>& groups,
                                                       const std::vector<std::size_t>& rank_group);

// Each worker's compute seconds (CPU work shared on its machine, then its
// device time) for per-rank costs `cost`.
std::vector<double> finish_times(const Cluster& c, const std::vector<WorkerGroup>& groups,
                                 const std::vector<std::size_t>& rank_group,
                                 const std::vector<std::vector<std::size_t>>& machine_ranks,
                                 const std::vector<WorkCost>& cost);

}  // namespace hetrain::sim

// Workers that share a host's cores. A worker given more samples there takes
// CPU from its neighbours, so the split is planned with each host's CPU
// budget and priced by processor sharing, not as if every worker were an
// independent device. Plain C++: the trainer and the simulator share it.
#pragma once

#include <cstddef>
#include <vector>

#include "hetrain/alloc/policy.h"
#include "hetrain/alloc/split.h"

namespace hetrain::alloc {

// One worker's cost on a host, beside its wall-clock model: CPU-seconds
// cpu(b) = cpu_overhead + b cpu_per_sample, and seconds off the CPU
// wait(b) = wait_overhead + b wait_per_sample (a device's kernels, an
// emulated delay), which no neighbour slows.
struct HostCost {
  double cpu_overhead = 0.0;     // CPU-seconds per step
  double cpu_per_sample = 0.0;   // CPU-seconds per sample
  double wait_overhead = 0.0;    // seconds per step
  double wait_per_sample = 0.0;  // seconds per sample
  double cpu_error = 0.0;        // relative standard error of cpu_per_sample (how well it is known)
  double cpu(double b) const { return b > 0.0 ? cpu_overhead + b * cpu_per_sample : 0.0; }
  double wait(double b) const { return b > 0.0 ? wait_overhead + b * wait_per_sample : 0.0; }
};

// Processor sharing on one host of `cores` CPUs. Every worker starts its
// `work` (CPU-seconds) at time 0 and runs at most at `cap` CPUs. While k
// workers compute, the cores are shared max-min fairly: each gets min(cap,
// an equal share of what the capped ones leave); when one finishes the
// others speed up, so rates are piecewise constant between finishes.
// Returns each worker's finish time, seconds (0 for no work).
std::vector<double> share_cores(const std::vector<double>& work, const std::vector<double>& cap,
                                double cores);

// Predicted compute time of each worker under `split`: a worker off any host
// by its wall model; the workers of a host by processor sharing of their CPU
// work, capped at their CPUs, plus their time off the CPU.
std::vector<double> host_finish_times(const Placement& p, const std::vector<WorkerModel>& wall,
                                      const std::vector<HostCost>& cost,
                                      const std::vector<std::size_t>& split);
double host_makespan(const Placement& p, const std::vector<WorkerModel>& wall,
                     const std::vector<HostCost>& cost, const std::vector<std::size_t>& split);

// Groups of workers alike on a host: same host, CPUs within 10%, and
// CPU-seconds plus wait at each one's batch (`batches`; `typical_batch` for
// an idle one) within the larger of 10% and 3 standard errors. On a shared
// host wall-clock times say more about the neighbours than the worker: a
// saturated host makes all its workers look alike. By rank: the group's
// lowest rank (a worker off any host is its own group). A group holds equal
// shares; workers merely tied in cost share the budget in proportion.
// `previous`: the groups of the last call, by rank (empty: none); members of
// one stay together while they are alike within 1.5 times the tolerance.
std::vector<std::size_t> host_groups(const Placement& p, const std::vector<HostCost>& cost,
                                     const std::vector<std::size_t>& batches, double typical_batch,
                                     const std::vector<std::size_t>& previous = {});

// Terms: T is the common finish time. A worker off any host can take
// b_i(T) from its wall model, as in solve_split. A worker on host h alone
// could take o_i(T) = (T - cpu_overhead_i / c_i - wait_overhead_i) /
// (cpu_per_sample_i / c_i + wait_per_sample_i) samples (c_i its CPUs), but
// the host's workers together have C_h T CPU-seconds: they are filled in
// order of CPU cost per sample, cheapest first, each up to o_i(T), until the
// budget is spent. Workers whose costs tie (within 20%, or their errors, up
// to 2x) form a tier filled at once: one the budget cannot fill gets the
// same fraction of each member's o_i(T), so none idles on noise. Members of one group (`group`, by rank;
// identical workers) are filled together and share evenly, so identical workers get identical shares.
// Bisection finds the smallest T whose capacity holds `total`; the parts are rounded by largest remainder.
SolvedSplit solve_on_hosts(const Placement& p, const std::vector<WorkerModel>& wall,
                           const std::vector<HostCost>& cost, const std::vector<std::size_t>& group,
                           std::size_t total, const Bounds& bounds);

}  // namespace hetrain::alloc

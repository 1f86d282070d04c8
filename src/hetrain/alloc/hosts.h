// StepCostModel for workers that share a host's cores (processor sharing).
// A worker given more samples there takes CPU from its neighbours, so each
// worker is described by what it needs, not by its wall-clock time: CPU-seconds
// cpu(b) = k0 + k b at most `cpus` at once, and seconds off the CPU
// wait(b) = w0 + w b (a device's kernels, an emulated delay) that no neighbour
// slows. Workers off any host are independent devices (wall line).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "hetrain/alloc/policy.h"
#include "hetrain/alloc/solver.h"

namespace hetrain::alloc {

struct HostUnit {
  std::size_t host = kNoHost;  // index into the host cores, or kNoHost (an independent device)
  double cpus = 1.0;           // CPUs each member can use at once
  double cpu_overhead = 0.0, cpu_per_sample = 0.0;    // CPU-seconds
  double wait_overhead = 0.0, wait_per_sample = 0.0;  // seconds off the CPU
  double wall_overhead = 0.0, wall_per_sample = 0.0;  // seconds (kNoHost only)
  // Units of one tier on one host have CPU costs the estimates cannot tell
  // apart (the Grouper's alike, on CPU-seconds per sample): filled at equal
  // rates. kOwnTier: a tier of its own.
  std::size_t tier = kOwnTier;
  static constexpr std::size_t kOwnTier = static_cast<std::size_t>(-1);
  double cpu(double b) const { return b > 0.0 ? cpu_overhead + b * cpu_per_sample : 0.0; }
  double wait(double b) const { return b > 0.0 ? wait_overhead + b * wait_per_sample : 0.0; }
  double wall(double b) const { return b > 0.0 ? wall_overhead + b * wall_per_sample : 0.0; }
};

// Working space of share_cores: a decision prices every host several times,
// and fresh vectors for each pricing were a tenth of a 1,024-worker decision.
struct CoreShare {
  struct CapClass {  // workers with one cap: sorted by work, served alike
    double cap = 0.0;
    std::size_t head = 0, end = 0;  // the unfinished members: order[head, end)
    double served = 0.0;            // CPU-seconds each unfinished member has had
    double rate = 0.0;
  };
  std::vector<double> finish;
  std::vector<std::size_t> order;
  std::vector<CapClass> classes;
};
// ... and of pricing one host of a HostCostModel.
struct HostScratch {
  std::vector<double> work, cap;
  CoreShare share;
};

// Terms: by a common finish time T the workers of host h have C_h T
// CPU-seconds together, and each alone could take o_i(T) samples (its CPUs and
// its time off the CPU, within the bounds). The most samples that budget buys
// is a fractional knapsack: tiers are filled cheapest CPU-seconds per sample
// first, each up to its members' o_i(T), until C_h T is spent. The tier the
// budget runs out in gets the same fraction f of each member's o_i(T): equal
// rates, so noise between workers the estimates cannot tell apart does not
// give the batch to whichever looks a little cheaper. Predictions of a split
// are max-min fair processor sharing of each host's cores, plus the time off
// the CPU.
class HostCostModel final : public StepCostModel {
 public:
  HostCostModel(std::vector<std::size_t> unit_of, std::vector<HostUnit> units, std::vector<double> host_cores);

  double fill(double t, const RealBounds& r, std::vector<double>& share) const override;
  double upper_time(double total) const override;
  double makespan(const std::vector<std::size_t>& split) const override;
  double alone(std::size_t, double) const override { return -1.0; }
  // Each worker's predicted finish time under `split`.
  std::vector<double> finish_times(const std::vector<std::size_t>& split) const;
  // The finish times of host h's workers (in rank order) under `split`, in
  // `scratch` (a caller pricing many splits reuses it).
  const std::vector<double>& host_finish_times(std::size_t h, const std::vector<std::size_t>& split,
                                               HostScratch& scratch) const;
  // Settles the devices beside the hosts: single samples move between a
  // device and a host or another device (host_search.cc).
  std::optional<double> improve(const Bounds& bounds, const std::vector<bool>& movable,
                                std::vector<std::size_t>& split) const override;
  // What that search reads.
  struct Parts {
    const HostCostModel& model;
    const std::vector<HostUnit>& units;
    const std::vector<double>& cores;
    const std::vector<std::vector<std::size_t>>& workers_by_host;
  };

 private:
  void order_by_tier(std::vector<std::size_t>& host) const;
  double fill_host(std::size_t h, double t, const RealBounds& r, std::vector<double>& share) const;
  std::vector<HostUnit> units_;
  std::vector<double> cores_;
  std::vector<std::vector<std::size_t>> by_host_;  // each host's units, cheapest tier first
  std::vector<std::size_t> tier_;                  // each unit's tier (kOwnTier resolved)
  std::vector<std::size_t> devices_;               // units off any host
  std::vector<std::vector<std::size_t>> workers_by_host_;  // each host's workers, by rank
};

// Max-min fair processor sharing on one host of `cores` CPUs: every worker
// starts its `work` (CPU-seconds) at time 0 and runs at most at `cap` CPUs;
// when one finishes the others speed up. Returns each worker's finish time
// (0 for no work). O(k log k + k x distinct caps).
std::vector<double> share_cores(const std::vector<double>& work, const std::vector<double>& cap,
                                double cores);
// The same into `scratch` (its finish times, returned), whose memory a caller
// pricing many splits reuses.
const std::vector<double>& share_cores(const std::vector<double>& work, const std::vector<double>& cap, double cores,
                                       CoreShare& scratch);

}  // namespace hetrain::alloc

// Allocation policies: who gets how many samples of the next global batch.
// A policy is plain data in, plain data out: every worker runs its own copy
// on the same observations and so computes the same split, with no
// coordinator.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "hetrain/alloc/split.h"

namespace hetrain::alloc {

// What every worker knows after a step (reduced with the gradients).
struct Observation {
  std::vector<std::size_t> local_batch;  // b_i of the step just done
  std::vector<double> compute_seconds;   // forward+backward only, per worker
  // Wall seconds of the whole synchronous step BEFORE this one (slice, compute, allreduce, apply), the
  // same number on every worker (reduced with the gradients); 0 when unknown (the run's first step).
  double previous_step_seconds = 0.0;
  // Of each worker's compute: CPU-seconds its process used, and seconds it
  // spent off the CPU by design (an emulated device's delay). Empty when not
  // measured; the adaptive policy plans shared hosts' cores with them.
  std::vector<double> cpu_seconds;
  std::vector<double> wait_seconds;
};

// What a policy did, for the metrics.
struct PolicyStats {
  std::size_t moves = 0;    // changes of the split
  std::size_t reverts = 0;  // changes taken back because the step got no faster
};

// What a policy believes about one worker: t(b) = overhead + b / speed.
struct WorkerModel {
  double overhead = 0.0;  // a_i, seconds
  double speed = 1.0;     // v_i, samples per second
};

// Placement::host of a worker that shares its compute with no other worker
// (an accelerator, or a host of its own that was not described).
inline constexpr std::size_t kNoHost = static_cast<std::size_t>(-1);

// Where the workers compute: the same on every worker (exchanged once).
// Empty: every worker is independent. hosts.h plans with it.
struct Placement {
  std::vector<std::size_t> host;   // per worker: index into host_cores, or kNoHost
  std::vector<double> cpus;        // per worker: CPUs it can use at once (its threads, its CPU quota)
  std::vector<double> host_cores;  // per host: CPUs its workers share
  // Per worker: its kind (a hardware model: a device's name, a declared
  // type), numbered from 1; 0, or an empty vector: not said. Workers of
  // different kinds are never one unit nor one tier (grouper.h): what the
  // hardware tells apart, noise cannot lump together.
  std::vector<std::size_t> kind;

  std::size_t kind_of(std::size_t worker) const { return worker < kind.size() ? kind[worker] : 0; }

  // Whether some host has two workers or more (else hosts change nothing).
  bool shared() const;
  // Whether some host's workers can use more CPUs together than it has: then
  // a worker given more samples slows its neighbours.
  bool oversubscribed() const;
  // Throws UsageError unless sizes, indices and CPU counts are consistent with `workers`.
  void check(std::size_t workers) const;
};

// Placement::kind from what each worker said of its kind (`none`: nothing):
// the distinct kinds numbered from 1 in order of first appearance, 0 for none.
template <class Kind>
std::vector<std::size_t> number_kinds(const std::vector<Kind>& said, const Kind& none) {
  std::vector<Kind> seen;
  std::vector<std::size_t> out;
  out.reserve(said.size());
  for (const Kind& k : said) {
    if (k == none) {
      out.push_back(0);
      continue;
    }
    auto it = std::find(seen.begin(), seen.end(), k);
    if (it == seen.end()) it = seen.insert(seen.end(), k);
    out.push_back(static_cast<std::size_t>(it - seen.begin()) + 1);
  }
  return out;
}

// `static` without shares: steps the adaptive estimator measures before the
// split is frozen (the one default; options, sim and cli refer to it).
inline constexpr std::size_t kDefaultProfileSteps = 20;

// The allocation's options: what a user chooses (flags, a cluster file, the
// Python binding). One value type, embedded by value wherever a policy is
// configured, so nothing is copied field by field.
struct AllocOptions {
  std::string name = "equal";  // equal | static | adaptive
  std::vector<double> shares;  // static: relative shares, one per worker; empty = profile
  std::size_t profile_steps = kDefaultProfileSteps;  // static without shares: steps measured before freezing
  Bounds bounds;
  Placement placement;  // adaptive: which workers share a host's cores (empty: none do)
};

// The options plus what the run itself decides: how many workers, the global
// batch, and the models a resumed run starts from.
struct PolicyConfig : AllocOptions {
  std::size_t workers = 1;
  std::size_t global_batch = 1;
  std::vector<WorkerModel> known;  // adaptive: models saved by an earlier run, by rank (resume)
};

class Policy {
 public:
  virtual ~Policy() = default;
  // The split for the next full global batch; sum is the global batch.
  virtual std::vector<std::size_t> split() const = 0;
  // Learns from the step just done (no-op for fixed policies).
  virtual void observe(const Observation& obs) = 0;
  // The per-worker models learned so far, by rank (empty for fixed
  // policies): saved in checkpoints so a resumed run starts from them.
  virtual std::vector<WorkerModel> learned() const { return {}; }
  virtual PolicyStats stats() const { return {}; }
};

// Throws UsageError for an unknown name or inconsistent configuration.
std::unique_ptr<Policy> make_policy(const PolicyConfig& config);

// The split of a short final batch (fewer than B samples left in the epoch),
// in the proportions of the full split; bounds other than the memory cap do
// not apply to it.
std::vector<std::size_t> scale_split(const std::vector<std::size_t>& full, std::size_t total,
                                     std::size_t max_local);

}  // namespace hetrain::alloc

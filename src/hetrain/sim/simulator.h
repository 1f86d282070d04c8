// The simulator: the real allocation policies (alloc/policy.h) driven by a
// world of its own (world.h, noise.h: independent devices, or workers sharing
// a machine's cores),
// and the real ring schedule (comm/ring_plan.h) under an alpha-beta cost
// model. Plain C++, deterministic for a given seed.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "hetrain/alloc/policy.h"
#include "hetrain/sim/cluster.h"

namespace hetrain::sim {

struct SimOptions {
  // The allocation's options, the trainer's own (alloc/policy.h): name is
  // equal | static | adaptive, or oracle here: the world's own solver with
  // every worker's true mean cost (oracle.h). static's shares are one per
  // worker of the starting cluster (a worker that joins later takes its
  // group's first share). Bounds and placement come from the cluster file.
  alloc::AllocOptions alloc = {"adaptive"};
  std::size_t steps = 0;       // stop after this many steps (0: no limit, needs epochs)
  std::size_t epochs = 0;      // 0: `steps` full global batches; else needs dataset_samples
  bool record_splits = false;  // keep every step's per-worker split (workers x steps numbers)
  // oracle: steps it takes to learn of a change of speed (0: at once); a
  // change of membership it always sees at once (its split must fit).
  std::size_t oracle_lag = 0;
  // oracle: steps it runs the equal split at the start, before it knows the
  // speeds (as a policy that has measured nothing; 0: it knows them at once).
  std::size_t oracle_start = 0;
  // Called with every observation the policy gets (tests, tracing).
  std::function<void(const alloc::Observation&)> on_observe;
};

struct StepTrace {
  std::size_t workers = 0;
  std::size_t batch = 0;   // samples in this step's global batch
  double seconds = 0.0;    // slowest compute + allreduce + step overhead
  double compute = 0.0;    // the slowest worker's compute seconds
  double allreduce = 0.0;  // seconds
  double busy = 0.0;       // sum of every worker's compute seconds
};

struct SimResult {
  std::string policy;
  std::vector<std::string> group_names;
  double total_seconds = 0.0;
  double balance_efficiency = 1.0;  // sum busy / sum (N x slowest compute), as in record/metrics.h
  // The policy's own counts (alloc::PolicyStats), summed over the worlds:
  // changes of the split, and changes taken back.
  std::size_t moves = 0;
  std::size_t reverts = 0;
  std::vector<StepTrace> steps;
  std::vector<std::vector<std::size_t>> group_samples;  // per step, samples given to each group
  std::vector<std::vector<std::size_t>> group_workers;  // per step, workers in each group
  std::vector<std::vector<std::size_t>> splits;         // per step and rank, if recorded
  // With the splits: the worlds the steps ran in, each from the step it began
  // (the start, then every event): the groups as the events left them and
  // each rank's group, so that a judge can price any split at the true mean
  // costs (oracle.h, expected_finish).
  struct WorldAt {
    std::size_t step = 0;
    std::vector<WorkerGroup> groups;
    std::vector<std::size_t> rank_group;
  };
  std::vector<WorldAt> worlds;
};

// Runs the loop the trainer runs (train/trainer.cc), with modelled times:
//  1. events due at this step apply (a speed change, workers joining or
//     leaving). A change of world restarts the policy as a run resumed from
//     a checkpoint on the new workers would: the adaptive policy keeps what
//     it learned of the workers that stay (PolicyConfig::known), and the
//     allreduce is re-priced;
//  2. slice: the policy's split, or scale_split of it for a short last batch;
//  3. compute: each worker's cost (world.h) times its noise (noise.h), the
//     workers of a machine sharing its cores by processor sharing (world.h);
//  4. reduce: the allreduce, priced once per world, times its noise;
//  5. observe: the policy sees exactly what the trainer feeds it: the split,
//     every worker's compute seconds, CPU-seconds and seconds off the CPU, and
//     the whole step before this one (0 at a world's first step), rounded to
//     float as they are when they ride in the gradient buffer.
// Nothing of the world (costs, noise, sharing, the oracle) comes from alloc/:
// it judges the policies, so it is built from none of their assumptions.
// A step lasts max compute + allreduce + step_overhead.
// Throws UsageError for options that cannot run (unknown policy, shares of the
// wrong count, B smaller than the workers, an event that empties the cluster).
SimResult simulate(const Cluster& cluster, const SimOptions& options);

}  // namespace hetrain::sim

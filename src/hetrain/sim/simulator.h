// The simulator: the real allocation policies (alloc/) driven by modelled
// compute times, and the real ring schedule (comm/ring_plan.h) under an
// alpha-beta cost model. Plain C++, deterministic for a given seed.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hetrain/sim/cluster.h"

namespace hetrain::sim {

struct SimOptions {
  std::string policy = "adaptive";  // equal | static | adaptive
  // static: relative shares, one per worker of the starting cluster (a worker
  // that joins later takes its group's first share); empty = profile first.
  std::vector<double> shares;
  std::size_t profile_steps = 20;  // static without shares
  std::size_t steps = 0;           // stop after this many steps (0: no limit, needs epochs)
  std::size_t epochs = 0;          // 0: `steps` full global batches; else needs dataset_samples
  bool record_splits = false;      // keep every step's per-worker split (workers x steps numbers)
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
  double balance_efficiency = 1.0;  // sum busy / sum (N x slowest compute), as in train/metrics.h
  std::vector<StepTrace> steps;
  std::vector<std::vector<std::size_t>> group_samples;  // per step, samples given to each group
  std::vector<std::vector<std::size_t>> group_workers;  // per step, workers in each group
  std::vector<std::vector<std::size_t>> splits;         // per step and rank, if recorded
};

// Runs the loop the trainer runs (train/trainer.cc), with modelled times:
//  1. events due at this step apply (a speed change, workers joining or
//     leaving). A change of world restarts the policy as a run resumed from
//     a checkpoint on the new workers would: the adaptive policy keeps what
//     it learned of the workers that stay (PolicyConfig::known), and the
//     allreduce is re-priced;
//  2. the split: the policy's, or scale_split of it for a short last batch;
//  3. each worker's compute time from its group's model (cluster.h);
//  4. the policy observes exactly what the trainer feeds it: the split and
//     every worker's compute seconds, rounded to float as they are when they
//     ride in the gradient buffer;
//  5. the step lasts max compute + allreduce + step_overhead.
// Throws UsageError for options that cannot run (unknown policy, shares of the
// wrong count, B smaller than the workers, an event that empties the cluster).
SimResult simulate(const Cluster& cluster, const SimOptions& options);

}  // namespace hetrain::sim

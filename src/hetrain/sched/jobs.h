// Several jobs, one pool: the inputs of the multi-job planner (hetrain plan
// --jobs, hetrain sim --jobs). A pool is a few machine types with counts and
// prices; a job is a training run with its own speed on each type. Both are
// read from TOML files (docs/scheduling.md describes them). Plain C++.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "hetrain/sim/cluster.h"

namespace hetrain::sched {

// Machines of one kind: any job's speed on them is the job's, per type.
struct MachineType {
  std::string name;
  std::size_t count = 0;
  double price_per_hour = 0.0;  // currency units per machine-hour
};

struct Pool {
  std::vector<MachineType> types;
  sim::Network network;  // every job's allreduce runs over it (sim/network_cost.h)

  std::size_t machines() const;  // sum of the counts
};

// A training job. Its cost model is alloc's t(b) = a + b / v on a machine of
// type t: `overhead` is a (seconds per step, any type), speed[t] is v
// (samples/s of one machine of type t; 0: the job cannot run there).
struct Job {
  std::string name;
  std::vector<double> speed;     // per pool type, samples/s
  double overhead = 0.0;         // seconds per step on every machine
  double gradient_bytes = 0.0;   // bytes reduced per step
  double step_overhead = 0.0;    // seconds per step outside compute and allreduce
  std::size_t global_batch = 0;  // samples per step, fixed
  std::size_t steps = 0;         // steps to train
  double arrival = 0.0;          // seconds after the trace starts
  double weight = 1.0;           // priority: a job of weight 2 is owed twice the share
  std::size_t workers = 1;       // machines it asks for under FCFS
  std::size_t max_workers = 0;   // most machines it may hold (0: global_batch)

  // Most machines the job can use: every one needs a sample (min local batch 1).
  std::size_t cap() const;
};

// Throw DataError "FILE:LINE:COL: key 'K': what is wrong"; a job is checked
// against the pool (its speeds name the pool's types, and at least one type
// it can run on has machines).
Pool parse_pool(std::string_view text, const std::string& file);
Pool load_pool(const std::string& path);
std::vector<Job> parse_jobs(std::string_view text, const std::string& file, const Pool& pool);
std::vector<Job> load_jobs(const std::string& path, const Pool& pool);

}  // namespace hetrain::sched

// Seeded random small pools, jobs and mid-trace states for the planner's
// tests (test_planner.cc, test_optimum.cc, test_traces.cc). Every case comes
// from its own seed, so a failure names the seed that reproduces it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

#include "hetrain/sched/planner.h"
#include "sched_fixtures.h"

namespace hetrain::sched::testing {

struct RandomCase {
  Pool pool;
  std::vector<Job> jobs;
};

// What a random case may hold. The defaults are the linear model (no
// overhead, no allreduce, a global batch far above the machine count).
struct CaseShape {
  std::size_t min_types = 2, max_types = 3;
  std::size_t max_count = 5;   // machines per type, from 1
  std::size_t min_jobs = 2, max_jobs = 3;
  bool jobs_within_machines = false;  // at most as many jobs as machines (a least share above 0 exists)
  std::size_t max_steps = 0;          // steps drawn from 1..max_steps (0: 100 each)
  // Also draw: batches of 64, 512 or 100,000 (the one-sample minimum binds
  // at 64), step overheads and gradients (the step stops being linear in
  // the machines), prices, weights 1 or 2, caps on the machines a job may
  // hold, and types a job cannot run on.
  bool varied = false;
};

// Speeds 1-100 samples/s per machine, drawn per job and type.
inline RandomCase random_case(std::mt19937& rng, const CaseShape& shape) {
  std::uniform_int_distribution<std::size_t> types_n(shape.min_types, shape.max_types), count(1, shape.max_count);
  std::uniform_real_distribution<double> speed(1.0, 100.0), unit(0.0, 1.0), price(0.5, 10.0);
  std::vector<std::size_t> counts(types_n(rng));
  std::size_t machines = 0;
  for (auto& n : counts) machines += (n = count(rng));
  std::vector<double> prices(counts.size(), 0.0);
  if (shape.varied)
    for (auto& q : prices) q = price(rng);
  RandomCase c{pool_of(counts, prices), {}};
  std::size_t max_jobs = shape.max_jobs;
  if (shape.jobs_within_machines) max_jobs = std::min(max_jobs, machines);
  std::size_t jobs = std::uniform_int_distribution<std::size_t>(std::min(shape.min_jobs, max_jobs), max_jobs)(rng);
  const std::size_t batches[] = {64, 512, 100000};
  for (; jobs > 0; --jobs) {
    std::vector<double> v(counts.size());
    for (auto& s : v) s = speed(rng);
    std::size_t steps = 100;
    if (shape.max_steps > 0) steps = std::uniform_int_distribution<std::size_t>(1, shape.max_steps)(rng);
    Job j = job_of(v, steps);
    if (shape.varied) {
      // One type the job cannot run on, now and then (never its only one).
      if (counts.size() > 1 && unit(rng) < 0.2) j.speed[rng() % counts.size()] = 0.0;
      j.global_batch = batches[rng() % 3];
      j.overhead = unit(rng) < 0.5 ? 0.0 : 0.02 * unit(rng);
      j.gradient_bytes = unit(rng) < 0.5 ? 0.0 : 1e8 * unit(rng);
      j.weight = unit(rng) < 0.25 ? 2.0 : 1.0;
      if (unit(rng) < 0.2) j.max_workers = 1 + rng() % 3;
    }
    c.jobs.push_back(std::move(j));
  }
  return c;
}

// Every job waiting at the start of its work (a trace's first plan).
inline std::vector<ActiveJob> all_waiting(const std::vector<Job>& jobs) {
  std::vector<ActiveJob> out;
  for (std::size_t j = 0; j < jobs.size(); ++j) out.push_back({j, static_cast<double>(jobs[j].steps), {}, false});
  return out;
}

// A random held allocation of the pool for some of the jobs (the rest wait),
// with some of each job's work done: a re-plan in the middle of a trace.
inline std::vector<ActiveJob> random_running(const Pool& pool, const std::vector<Job>& jobs, std::mt19937& rng) {
  std::vector<ActiveJob> out = all_waiting(jobs);
  std::uniform_real_distribution<double> share(0.0, 1.0);
  std::vector<std::size_t> left;
  for (const MachineType& t : pool.types) left.push_back(t.count);
  for (auto& a : out) {
    a.remaining_steps = std::max(1.0, share(rng) * static_cast<double>(jobs[a.job].steps));
    a.current.assign(left.size(), 0);
    if (share(rng) < 0.3) continue;  // waiting
    std::size_t held = 0;
    for (std::size_t t = 0; t < left.size(); ++t) {
      if (jobs[a.job].speed[t] <= 0.0) continue;
      std::size_t k = static_cast<std::size_t>(share(rng) * static_cast<double>(left[t] + 1)) % (left[t] + 1);
      k = std::min(k, jobs[a.job].cap() - held);
      a.current[t] = k;
      left[t] -= k;
      held += k;
    }
    a.started = machines_in(a.current) > 0;
  }
  return out;
}

}  // namespace hetrain::sched::testing

namespace hetrain::sched::testing {

// A random job trace on a random pool: 2-4 machine types of 1-8 machines,
// 6-14 jobs arriving over the first hour, 50-2,000 steps each, speeds
// 1-100 samples/s per machine drawn per job and type (some types a job
// cannot run on), batches of 64, 512 or 4,096, step overheads, gradients
// on a 10 Gbit/s network, weights 1 or 2, 1-4 machines asked for under FCFS.
inline RandomCase random_trace(std::mt19937& rng) {
  CaseShape shape;
  shape.max_types = 4;
  shape.max_count = 8;
  shape.min_jobs = 6;
  shape.max_jobs = 14;
  shape.max_steps = 2000;
  shape.varied = true;
  RandomCase c = random_case(rng, shape);
  constexpr double kArrivalWindow = 3600.0;  // seconds
  std::uniform_real_distribution<double> arrival(0.0, kArrivalWindow);
  const std::size_t batches[] = {64, 512, 4096};
  for (Job& j : c.jobs) {
    j.steps = std::max<std::size_t>(j.steps, 50);
    j.global_batch = batches[rng() % 3];
    j.arrival = arrival(rng);
    j.workers = 1 + rng() % 4;
  }
  return c;
}

}  // namespace hetrain::sched::testing

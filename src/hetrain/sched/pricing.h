// What a job's step costs on a mix of machine types: the allocation core's
// cost model and water-filling split (alloc/), the ring allreduce's time on
// the pool's network (sim/network_cost.h) and the job's step overhead.
#pragma once

#include <cstddef>
#include <vector>

#include "hetrain/sched/jobs.h"

namespace hetrain::sched {

// Machines of each pool type held by one job.
using Allocation = std::vector<std::size_t>;

std::size_t machines_in(const Allocation& x);

class Pricer {
 public:
  // Keeps references: both must outlive the pricer.
  Pricer(const Pool& pool, const std::vector<Job>& jobs);

  // Predicted seconds per step of job j on x, +inf when x holds no machine,
  // more machines than global_batch, or one of a type the job cannot run on.
  //
  // Terms: a machine of type t computes b samples in a + b / v_t seconds
  // (a = Job::overhead). The split is the allocation core's one solver
  // (alloc::solve_real, alloc/solver.h) over the real-valued local batches,
  // each type one unit: the common finish time T gives every machine of type
  // t the batch b_t = (T - a) v_t, at least one sample (min local batch 1);
  // bisection finds the smallest T whose batches hold the global batch. The
  // compute makespan is T, or the time of a
  // pinned machine's single sample if that is longer. Then the ring allreduce
  // over all the job's machines and the step overhead are added. The exact
  // integer split differs by at most one sample per machine
  // (exact_step_seconds; tests/sched/test_pricing.cc).
  double step_seconds(std::size_t j, const Allocation& x) const;
  // Samples per second: global_batch / step_seconds (0 for no machine).
  double throughput(std::size_t j, const Allocation& x) const;
  // The same step with alloc::solve_split's integer split over every machine
  // (what hetrain plan reports; O(machines) per call).
  double exact_step_seconds(std::size_t j, const Allocation& x) const;
  // sum_t count_t v_t: the job's linear throughput on the whole pool, the
  // normaliser of fairness (the LP's T_j^isolated).
  double isolated(std::size_t j) const;

  // K_j, seconds of a step that more machines do not shorten: the overhead a,
  // the step overhead and the ring allreduce over as many machines as the
  // job may hold (its largest; a ring's time grows towards 2 x bytes /
  // bandwidth). The LP's concave throughput is B V / (K V + B), V = sum_t
  // x_t v_t (relaxation.cc).
  double fixed_seconds(std::size_t j) const;

  const Pool& pool() const { return pool_; }
  const std::vector<Job>& jobs() const { return jobs_; }

 private:
  double allreduce(std::size_t j, std::size_t n) const;

  const Pool& pool_;
  const std::vector<Job>& jobs_;
  // Per job, the allreduce's seconds by worker count (NaN: not priced yet);
  // a cache, since replaying a ring plan costs O(workers).
  mutable std::vector<std::vector<double>> allreduce_;
};

}  // namespace hetrain::sched

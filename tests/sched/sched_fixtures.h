// Small pools and jobs built in code, for the planner's and the simulator's
// tests: no allreduce, no overhead, and a global batch large enough that a
// job's throughput is exactly sum_t x_t v_t (the LP's linear model).
#pragma once

#include <string>
#include <vector>

#include "hetrain/sched/jobs.h"

namespace hetrain::sched::testing {

inline Pool pool_of(const std::vector<std::size_t>& counts, const std::vector<double>& prices = {}) {
  Pool p;
  for (std::size_t t = 0; t < counts.size(); ++t) {
    p.types.push_back({"t" + std::to_string(t), counts[t], prices.empty() ? 0.0 : prices[t]});
  }
  return p;
}

inline Job job_of(const std::vector<double>& speed, std::size_t steps = 100, double weight = 1.0) {
  Job j;
  j.name = "j";
  j.speed = speed;
  j.global_batch = 100000;  // far more samples than machines: no one-sample minimum binds
  j.steps = steps;
  j.weight = weight;
  return j;
}

}  // namespace hetrain::sched::testing

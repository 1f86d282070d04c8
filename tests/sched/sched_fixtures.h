// Small pools and jobs built in code, for the planner's and the simulator's
// tests: no allreduce, no overhead, and a global batch large enough that a
// job's throughput is exactly sum_t x_t v_t (the LP's linear model). And the
// one guard of the tests that need the LP solver.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "hetrain/sched/jobs.h"
#include "hetrain/sched/lp.h"

// A test that needs the LP solver, in a build without one (configured with
// -DHETRAIN_WITH_GLPK=OFF): fails with the reason under CI (the CI variable
// set and not empty), where every test must run; skips, saying why, elsewhere.
#define HETRAIN_REQUIRE_LP()                                                                          \
  do {                                                                                                \
    if (!::hetrain::sched::lp_solver_available()) {                                                   \
      const char* ci_ = std::getenv("CI");                                                            \
      if (ci_ != nullptr && *ci_ != '\0')                                                             \
        FAIL() << "needs the LP solver, and this build has none (HETRAIN_WITH_GLPK=OFF); CI is set, " \
                  "so the test fails rather than skip: install libglpk-dev (scripts/setup.sh)";       \
      GTEST_SKIP() << "needs the LP solver, and this build has none (HETRAIN_WITH_GLPK=OFF)";         \
    }                                                                                                 \
  } while (false)

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

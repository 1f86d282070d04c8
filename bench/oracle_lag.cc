// What following a change late costs: a cluster file simulated under the
// equal split, the adaptive policy, and the oracle (the world's own solver
// with every worker's true mean cost) learning of each change of speed
// 0..MAX_LAG steps late (and of the speeds at the start as late: until then
// it runs the equal split). A causal policy sees a change only in the times of
// the step it happened in, so lag 1 is the least any can have; one that
// does not move on a single slow sample (a 5-10x spike is one) has lag 2 or
// more. Prints each run's seconds and balance efficiency (sum of busy time
// over N x the slowest worker's, as the trainer's metrics); deterministic.
// Usage: oracle_lag CLUSTER.toml [steps=100] [max_lag=4]
// Plain C++ (no gtest): its figures go to docs/benchmarks.md.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "hetrain/sim/cluster.h"
#include "hetrain/sim/simulator.h"

namespace {

hetrain::sim::SimResult run(const hetrain::sim::Cluster& c, const char* policy, std::size_t steps, std::size_t lag) {
  hetrain::sim::SimOptions o;
  o.alloc.name = policy;
  o.steps = steps;
  o.oracle_lag = lag;
  o.oracle_start = lag;
  return hetrain::sim::simulate(c, o);
}

}  // namespace

int main(int argc, char** argv) {
  const long steps = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 100;
  const long max_lag = argc > 3 ? std::strtol(argv[3], nullptr, 10) : 4;
  if (argc < 2 || steps <= 0 || max_lag < 0) {
    std::fprintf(stderr, "usage: oracle_lag CLUSTER.toml [steps>0] [max_lag>=0]\n");
    return 2;
  }
  try {
    const hetrain::sim::Cluster c = hetrain::sim::load_cluster(argv[1]);
    const auto n = static_cast<std::size_t>(steps);
    fmt::print("{}, {} steps\n{:<14} {:>9} {:>11}\n", argv[1], n, "policy", "seconds", "efficiency");
    for (const char* p : {"equal", "adaptive"}) {
      const auto r = run(c, p, n, 0);
      fmt::print("{:<14} {:>9.3f} {:>11.3f}\n", p, r.total_seconds, r.balance_efficiency);
    }
    for (long lag = 0; lag <= max_lag; ++lag) {
      const auto r = run(c, "oracle", n, static_cast<std::size_t>(lag));
      fmt::print("{:<14} {:>9.3f} {:>11.3f}\n", fmt::format("oracle lag {}", lag), r.total_seconds,
                 r.balance_efficiency);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oracle_lag: %s\n", e.what());
    return 2;
  }
  return 0;
}

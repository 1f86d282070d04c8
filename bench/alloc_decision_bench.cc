// The adaptive policy's cost per decision: N workers in three speed groups
// with log-normal noise (and one mid-run slowdown), independent devices or
// workers sharing hosts, driven for S steps; reports the worst single
// decision (observe + split, in thread CPU time), the 99th percentile, the
// median, and the mean per worker-step.
// Usage: alloc_decision_bench [workers=1024] [steps=1000] [devices|hosts]
// Plain C++ (no gtest): its figures go to docs/benchmarks.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "hetrain/alloc/policy.h"

namespace {

using hetrain::alloc::Observation;

struct World {
  std::vector<double> per_sample;  // seconds
  double overhead = 0.002;
  std::mt19937_64 rng{1};
  double previous = 0.0;
  Observation step(const std::vector<std::size_t>& split) {
    std::normal_distribution<double> z(0.0, 0.05);
    Observation o;
    o.local_batch = split;
    o.previous_step_seconds = previous;
    double slowest = 0.0;
    for (std::size_t i = 0; i < split.size(); ++i) {
      const double t = split[i] == 0 ? 0.0 : (overhead + split[i] * per_sample[i]) * std::exp(z(rng));
      o.compute_seconds.push_back(t);
      o.cpu_seconds.push_back(t);
      o.wait_seconds.push_back(0.0);
      slowest = std::max(slowest, t);
    }
    previous = slowest + 0.01;
    return o;
  }
};

// This thread's CPU time (microseconds): on a shared, loaded machine a wall
// clock would also count the time the scheduler gave other processes.
double thread_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return 1e6 * static_cast<double>(ts.tv_sec) + 1e-3 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1024;
  const std::size_t steps = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1000;
  const std::string kind = argc > 3 ? argv[3] : "devices";
  hetrain::alloc::PolicyConfig c;
  c.name = "adaptive", c.workers = n, c.global_batch = 32 * n;
  if (kind == "hosts") {  // hosts of 8 workers on 4 cores each
    for (std::size_t i = 0; i < n; ++i) c.placement.host.push_back(i / 8), c.placement.cpus.push_back(1.0);
    c.placement.host_cores.assign((n + 7) / 8, 4.0);
  }
  World w;
  for (std::size_t i = 0; i < n; ++i) w.per_sample.push_back(0.001 * (1 + i % 3));
  auto policy = hetrain::alloc::make_policy(c);
  std::vector<double> us;
  std::size_t checksum = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    if (s == steps / 2) w.per_sample[0] *= 4.0;  // a slowdown: change detection and a trial
    const Observation o = w.step(policy->split());
    const double t0 = thread_us();
    policy->observe(o);
    const std::vector<std::size_t> split = policy->split();
    checksum += split[0];
    us.push_back(thread_us() - t0);
  }
  std::vector<double> sorted = us;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0.0;
  for (const double x : us) sum += x;
  std::printf("workers %zu steps %zu %s: worst decision %.1f us (step %zu), 99th percentile %.1f us, median %.1f us, %.3f us per worker-step"
              " (moves %zu, reverts %zu, checksum %zu)\n",
              n, steps, kind.c_str(), sorted.back(),
              static_cast<std::size_t>(std::max_element(us.begin(), us.end()) - us.begin()), sorted[sorted.size() * 99 / 100],
              sorted[sorted.size() / 2],
              sum / static_cast<double>(n * steps), policy->stats().moves, policy->stats().reverts, checksum);
  return 0;
}

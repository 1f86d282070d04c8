// The adaptive policy's cost per decision: N workers in three speed groups
// with log-normal noise (and one mid-run slowdown), independent devices or
// workers sharing hosts (or half of them on hosts, the rest devices beside
// them: mixed), driven for S steps; reports the worst single
// decision (observe + split, in thread CPU time), the 99th percentile, the
// median, and the mean per worker-step.
// The run is deterministic (the same split at every step: the checksum says
// so), so it is repeated R times: a decision's cost is also reported as the
// least of its R runs, which the scheduler's preemptions and interrupts (they
// hit different steps in each run) do not inflate; the single worst raw
// decision is reported beside it.
// Usage: alloc_decision_bench [workers=1024] [steps=1000] [devices|hosts|mixed] [repeats=5]
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
      const double t = split[i] == 0 ? 0.0 : (overhead + static_cast<double>(split[i]) * per_sample[i]) * std::exp(z(rng));
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

struct Run {
  std::vector<double> us;  // each decision's thread CPU time
  std::size_t checksum = 0, moves = 0, reverts = 0;
};

Run run_once(std::size_t n, std::size_t steps, const std::string& kind) {
  hetrain::alloc::PolicyConfig c;
  c.name = "adaptive", c.workers = n, c.global_batch = 32 * n;
  if (kind != "devices") {  // hosts of 8 workers on 4 cores each; mixed: the second half devices
    const std::size_t on_hosts = kind == "mixed" ? n / 2 : n;
    for (std::size_t i = 0; i < n; ++i) {
      c.placement.host.push_back(i < on_hosts ? i / 8 : hetrain::alloc::kNoHost), c.placement.cpus.push_back(1.0);
    }
    c.placement.host_cores.assign((on_hosts + 7) / 8, 4.0);
  }
  World w;
  for (std::size_t i = 0; i < n; ++i) w.per_sample.push_back(0.001 * static_cast<double>(1 + i % 3));
  auto policy = hetrain::alloc::make_policy(c);
  Run r;
  for (std::size_t s = 0; s < steps; ++s) {
    if (s == steps / 2) w.per_sample[0] *= 4.0;  // a slowdown: change detection and a trial
    const Observation o = w.step(policy->split());
    const double t0 = thread_us();
    policy->observe(o);
    const std::vector<std::size_t> split = policy->split();
    r.checksum += split[0];
    r.us.push_back(thread_us() - t0);
  }
  r.moves = policy->stats().moves, r.reverts = policy->stats().reverts;
  return r;
}

struct Summary {
  double worst = 0.0, p99 = 0.0, median = 0.0, mean = 0.0;
  std::size_t worst_step = 0;
};

Summary summarize(const std::vector<double>& us) {
  std::vector<double> sorted = us;
  std::sort(sorted.begin(), sorted.end());
  Summary s;
  s.worst = sorted.back(), s.p99 = sorted[sorted.size() * 99 / 100], s.median = sorted[sorted.size() / 2];
  s.worst_step = static_cast<std::size_t>(std::max_element(us.begin(), us.end()) - us.begin());
  for (const double x : us) s.mean += x / static_cast<double>(us.size());
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1024;
  const std::size_t steps = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1000;
  const std::string kind = argc > 3 ? argv[3] : "devices";
  const std::size_t repeats = argc > 4 ? std::max<std::size_t>(1, std::strtoul(argv[4], nullptr, 10)) : 5;
  if (n == 0 || steps == 0 || (kind != "devices" && kind != "hosts" && kind != "mixed")) {
    std::fprintf(stderr, "usage: alloc_decision_bench [workers>0] [steps>0] [devices|hosts|mixed] [repeats]\n");
    return 2;
  }
  Run first = run_once(n, steps, kind);
  std::vector<double> least = first.us;
  double raw_worst = *std::max_element(first.us.begin(), first.us.end());
  for (std::size_t k = 1; k < repeats; ++k) {
    const Run again = run_once(n, steps, kind);
    if (again.checksum != first.checksum) {
      std::fprintf(stderr, "run %zu took other decisions (checksum %zu, first %zu)\n", k, again.checksum, first.checksum);
      return 1;
    }
    raw_worst = std::max(raw_worst, *std::max_element(again.us.begin(), again.us.end()));
    for (std::size_t s = 0; s < steps; ++s) least[s] = std::min(least[s], again.us[s]);
  }
  const Summary m = summarize(least);
  std::printf("workers %zu steps %zu %s, %zu runs: worst decision %.1f us (step %zu), 99th percentile %.1f us, median %.1f us,"
              " %.3f us per worker-step (each decision the least of its runs); raw worst %.1f us"
              " (moves %zu, reverts %zu, checksum %zu)\n",
              n, steps, kind.c_str(), repeats, m.worst, m.worst_step, m.p99, m.median, m.mean / static_cast<double>(n),
              raw_worst, first.moves, first.reverts, first.checksum);
  return 0;
}

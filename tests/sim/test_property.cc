// The allocation property over 1,000 random simulated clusters (issue 16):
// adaptive never costs more than 3% over the better of the equal split and
// the static split in proportion to the true standalone speeds, and
// identical workers end with the same share. Seeded and deterministic.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "hetrain/sim/cluster.h"
#include "hetrain/sim/network_cost.h"
#include "hetrain/sim/simulator.h"

namespace hetrain::sim {
namespace {

constexpr std::uint64_t kClusters = 1000;
// Steps per run. A policy that measures before it moves runs its first two
// steps at the equal split; with speeds up to 8x apart one such step costs
// up to 7 of static's, 3.5% of a 200-step run: past the tolerance for any
// such policy. 1,000 steps (four epochs of Fashion-MNIST at B = 256) is a
// short training run.
constexpr std::size_t kSteps = 1000;
constexpr double kTolerance = 1.03;             // adaptive / min(equal, static with the true speeds)
constexpr double kIdenticalSpread = 0.05;       // identical workers' shares, relative to the larger
constexpr std::size_t kRoundingSamples = 1;     // a split of whole samples rounds identical shares apart by 1
constexpr std::size_t kDescribedFailures = 20;  // failures printed in full; the rest by seed

constexpr double kBaseSpeed = 1000.0;      // samples per second (per CPU-second on a machine)
constexpr double kMaxSpeedRatio = 8.0;     // independent devices: the fastest / the slowest
constexpr double kMaxCpuSpeedRatio = 2.0;  // groups on machines: per-CPU speeds differ less
constexpr double kMaxNoise = 0.15;         // relative standard deviation, compute and allreduce
constexpr double kBandwidth = 1.25e9;      // bytes/s: 10 Gbit/s
constexpr double kLatency = 50e-6;         // seconds per message
constexpr double kProbeBytes = 1e6;        // allreduce priced at two sizes to aim at a target time

// A uniform draw in [0, 1) from the top 53 bits: the same on every standard
// library, unlike std::uniform_real_distribution.
class Draw {
 public:
  explicit Draw(std::uint64_t seed) : rng_(seed) {}
  double unit() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  double between(double lo, double hi) { return lo + (hi - lo) * unit(); }
  std::size_t between(std::size_t lo, std::size_t hi) {  // inclusive
    return lo + static_cast<std::size_t>(unit() * static_cast<double>(hi - lo + 1));
  }
  bool chance(double p) { return unit() < p; }

 private:
  std::mt19937_64 rng_;
};

// Adds `count` workers as one group (identical workers) on `machine`.
void add_group(Cluster& c, Draw& d, std::size_t machine, std::size_t count, double speed) {
  WorkerGroup g;
  g.name = fmt::format("g{}", c.groups.size());
  g.count = count;
  g.speed = speed;
  g.machine = machine;
  g.noise = d.chance(0.7) ? d.between(0.0, kMaxNoise) : 0.0;
  if (machine != kNoMachine && d.chance(0.3)) g.quota = d.between(0.1, 1.0);
  if (machine != kNoMachine && d.chance(0.2)) g.threads = 2.0;
  c.groups.push_back(g);
}

void add_devices(Cluster& c, Draw& d) {
  const std::size_t groups = d.between(std::size_t{1}, std::size_t{4});
  for (std::size_t k = 0; k < groups; ++k) {
    const double speed = kBaseSpeed / std::pow(kMaxSpeedRatio, d.unit());
    add_group(c, d, kNoMachine, d.chance(0.5) ? 1 : d.between(std::size_t{2}, std::size_t{4}), speed);
  }
}

void add_machines(Cluster& c, Draw& d) {
  const std::size_t machines = d.between(std::size_t{1}, std::size_t{3});
  for (std::size_t m = 0; m < machines; ++m) {
    c.machines.push_back(
        {fmt::format("m{}", m), static_cast<double>(d.between(std::size_t{1}, std::size_t{8}))});
    std::size_t left = d.between(std::size_t{2}, std::size_t{8});
    while (left > 0) {
      const std::size_t count = std::min(left, d.between(std::size_t{1}, std::size_t{4}));
      add_group(c, d, c.machines.size() - 1, count, kBaseSpeed / std::pow(kMaxCpuSpeedRatio, d.unit()));
      left -= count;
    }
  }
}

// Seconds of compute per step if the batch were spread by standalone speed.
double ideal_compute(const Cluster& c) {
  double speed = 0.0;
  for (const auto& g : c.groups) speed += static_cast<double>(g.count) * standalone_speed(c, g);
  return static_cast<double>(c.global_batch) / speed;
}

// Gradient bytes whose allreduce takes about `seconds` (linear in the bytes
// but for the latencies, so two prices fix it).
double gradient_for(const Cluster& c, double seconds) {
  const std::size_t n = c.workers();
  const double at_zero = allreduce_seconds(c.network, n, kBytesPerElement);
  const double slope = (allreduce_seconds(c.network, n, kProbeBytes) - at_zero) / kProbeBytes;
  return std::max(static_cast<double>(kBytesPerElement), (seconds - at_zero) / slope);
}

Cluster random_cluster(std::uint64_t seed) {
  Draw d(seed);
  Cluster c;
  c.seed = seed;
  c.network.bandwidth = c.network.intra_bandwidth = kBandwidth;
  c.network.latency = c.network.intra_latency = kLatency;
  const double kind = d.unit();
  if (kind < 0.35) add_devices(c, d);
  if (kind >= 0.35) add_machines(c, d);
  if (kind >= 0.8) add_devices(c, d);
  if (c.workers() < 2) add_group(c, d, kNoMachine, 1, kBaseSpeed / std::pow(kMaxSpeedRatio, d.unit()));
  c.global_batch = static_cast<std::size_t>(std::round(32.0 * std::pow(2.0, d.between(0.0, 5.0))));
  c.global_batch = std::max(c.global_batch, c.workers());
  const double compute = ideal_compute(c);
  for (auto& g : c.groups) {
    // A fixed cost of up to a fifth of the worker's equal-split step.
    if (d.chance(0.5)) g.overhead = d.between(0.0, 0.2) * compute;
  }
  const bool bound = d.chance(0.3);  // communication-bound: allreduce 1-20x the compute
  c.gradient_bytes = gradient_for(c, compute * (bound ? d.between(1.0, 20.0) : d.between(0.01, 0.5)));
  c.network.noise = d.chance(0.5) ? d.between(0.0, kMaxNoise) : 0.0;
  c.step_overhead = d.between(0.0, 0.05) * compute;
  return c;
}

std::string describe(const Cluster& c) {
  std::string out = fmt::format(
      "B={} gradient {:.3g} B (allreduce {:.3g} s, ideal compute {:.3g} s), "
      "network noise {:.3f}, step overhead {:.3g} s;",
      c.global_batch, c.gradient_bytes, allreduce_seconds(c.network, c.workers(), c.gradient_bytes),
      ideal_compute(c), c.network.noise, c.step_overhead);
  for (const auto& g : c.groups) {
    out += fmt::format(" {}x{} speed {:.1f} overhead {:.3g} noise {:.3f}", g.count, g.name, g.speed,
                       g.overhead, g.noise);
    if (g.machine != kNoMachine) {
      out += fmt::format(" on {} ({} cores) threads {}", c.machines[g.machine].name,
                         c.machines[g.machine].cores, g.threads);
      if (g.quota > 0.0) out += fmt::format(" quota {:.2f}", g.quota);
    }
    out += ";";
  }
  return out;
}

// The cluster as a file for `hetrain sim --cluster`, every number exact.
std::string to_toml(const Cluster& c) {
  std::string out = fmt::format("global_batch = {}\ngradient_bytes = {}\nstep_overhead = {}\nseed = {}\n",
                                c.global_batch, c.gradient_bytes, c.step_overhead, c.seed);
  out += fmt::format("[network]\nbandwidth = {}\nlatency = {}\nnoise = {}\n", c.network.bandwidth,
                     c.network.latency, c.network.noise);
  for (const auto& m : c.machines)
    out += fmt::format("[[machine]]\nname = \"{}\"\ncores = {}\n", m.name, m.cores);
  for (const auto& g : c.groups) {
    out += fmt::format("[[group]]\nname = \"{}\"\ncount = {}\nspeed = {}\noverhead = {}\nnoise = {}\n",
                       g.name, g.count, g.speed, g.overhead, g.noise);
    if (g.machine == kNoMachine) continue;
    out += fmt::format("machine = \"{}\"\nthreads = {}\n", c.machines[g.machine].name, g.threads);
    if (g.quota > 0.0) out += fmt::format("quota = {}\n", g.quota);
  }
  return out;
}

// With HETRAIN_PROPERTY_DUMP=DIR set, a failing cluster is written to
// DIR/cluster_SEED.toml, to replay with hetrain sim; its first line is a
// comment holding the static split's --shares.
void dump(const Cluster& c, std::uint64_t seed, const std::vector<double>& shares) {
  const char* dir = std::getenv("HETRAIN_PROPERTY_DUMP");
  if (dir == nullptr) return;
  std::ofstream(fmt::format("{}/cluster_{}.toml", dir, seed))
      << fmt::format("# --shares {}\n", fmt::join(shares, ",")) << to_toml(c);
}

SimResult run(const Cluster& c, const std::string& policy, std::vector<double> shares = {}) {
  SimOptions o;
  o.policy = policy;
  o.steps = kSteps;
  o.shares = std::move(shares);
  o.record_splits = policy == "adaptive";
  return simulate(c, o);
}

// "" if the workers of every group end within kIdenticalSpread (or one
// sample) of each other; else which group did not.
std::string identical_spread(const Cluster& c, const std::vector<std::size_t>& split) {
  std::size_t rank = 0;
  for (const auto& g : c.groups) {
    const auto first = split.begin() + static_cast<std::ptrdiff_t>(rank);
    const auto [lo, hi] = std::minmax_element(first, first + static_cast<std::ptrdiff_t>(g.count));
    rank += g.count;
    const double allowed = std::max(kIdenticalSpread * static_cast<double>(*hi), double{kRoundingSamples});
    if (static_cast<double>(*hi - *lo) > allowed) {
      return fmt::format("{} identical workers hold {} to {} samples", g.name, *lo, *hi);
    }
  }
  return "";
}

TEST(AllocationProperty, AdaptiveNeverLosesToEqualOrTrueStaticAndIdenticalWorkersMatch) {
  std::size_t slow = 0, spread = 0;
  std::vector<std::uint64_t> failing;
  for (std::uint64_t seed = 1; seed <= kClusters; ++seed) {
    const Cluster c = random_cluster(seed);
    std::vector<double> shares;
    for (const auto& g : c.groups) shares.insert(shares.end(), g.count, standalone_speed(c, g));
    const SimResult equal = run(c, "equal");
    const SimResult fixed = run(c, "static", shares);
    const SimResult adaptive = run(c, "adaptive");
    const double best = std::min(equal.total_seconds, fixed.total_seconds);
    const bool too_slow = adaptive.total_seconds > kTolerance * best;
    const std::string apart = identical_spread(c, adaptive.splits.back());
    slow += too_slow ? 1 : 0;
    spread += apart.empty() ? 0 : 1;
    if (!too_slow && apart.empty()) continue;
    failing.push_back(seed);
    dump(c, seed, shares);
    if (failing.size() > kDescribedFailures) continue;
    ADD_FAILURE() << fmt::format(
        "seed {}: adaptive {:.4f} s, equal {:.4f} s, static-true {:.4f} s (ratio {:.3f}); moves {}, reverts "
        "{}; final split [{}]{}\n  {}",
        seed, adaptive.total_seconds, equal.total_seconds, fixed.total_seconds, adaptive.total_seconds / best,
        adaptive.moves, adaptive.reverts, fmt::join(adaptive.splits.back(), ","),
        apart.empty() ? "" : "; " + apart, describe(c));
  }
  EXPECT_EQ(failing.size(), 0u) << fmt::format(
      "{} of {} clusters fail: {} slower than {}x the better fixed split, {} with identical workers apart; "
      "seeds: {}",
      failing.size(), kClusters, slow, kTolerance, spread, fmt::join(failing, " "));
}

TEST(AllocationProperty, TheRandomClustersAreDeterministicAndMixed) {
  EXPECT_EQ(to_toml(random_cluster(7)), to_toml(random_cluster(7)));
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {  // the file written for a failure replays the cluster
    const Cluster c = random_cluster(seed);
    EXPECT_EQ(to_toml(parse_cluster(to_toml(c), "dump.toml")), to_toml(c)) << seed;
  }
  std::size_t devices_only = 0, shared = 0, quotas = 0, identical = 0;
  for (std::uint64_t seed = 1; seed <= kClusters; ++seed) {
    const Cluster c = random_cluster(seed);
    devices_only += c.machines.empty() ? 1 : 0;
    shared += c.machines.empty() ? 0 : 1;
    bool quota = false, same = false;
    for (const auto& g : c.groups) {
      quota = quota || g.quota > 0.0;
      same = same || g.count > 1;
    }
    quotas += quota ? 1 : 0;
    identical += same ? 1 : 0;
    EXPECT_GE(c.global_batch, c.workers()) << seed;
  }
  EXPECT_GT(devices_only, kClusters / 5);
  EXPECT_GT(shared, kClusters / 2);
  EXPECT_GT(quotas, kClusters / 5);
  EXPECT_GT(identical, kClusters / 2);
}

}  // namespace
}  // namespace hetrain::sim

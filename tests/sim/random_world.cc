#include "random_world.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "hetrain/sim/network_cost.h"
#include "hetrain/sim/noise.h"
#include "hetrain/sim/oracle.h"

namespace hetrain::sim {
namespace {

constexpr double kBaseSpeed = 1000.0;      // samples per second (per CPU-second on a machine)
constexpr double kMaxSpeedRatio = 8.0;     // independent devices: the fastest / the slowest
constexpr double kMaxCpuSpeedRatio = 2.0;  // groups on machines: per-CPU speeds differ less
constexpr double kMaxNormalNoise = 0.15;   // relative sd of the old, normal noise
constexpr double kMaxLogSigma = 0.3;       // sd of the log of log-normal noise (p99 x2 at 0.3)
constexpr double kMaxCorrelation = 0.95;   // AR(1): slow drifts over ~20 steps at 0.95
constexpr double kMaxSpikeChance = 0.02;   // per step: one spike in 50 steps at most
constexpr double kMaxDeviceToCpu = 4.0;    // time off the CPU per sample, x the CPU's
constexpr double kMaxCachePenalty = 2.0;   // marginal cost past the cache cliff
constexpr double kMaxSlowdown = 8.0;       // an event slows a group by up to this
constexpr double kMaxSwitchSlowdown = 4.0; // a heterogeneity switch slows each group by up to this
constexpr std::size_t kMaxChanges = 3;     // events of one cluster (a slowdown and its recovery count as one)
constexpr std::size_t kFirstEventStep = 100, kLastEventStep = 700;  // of a 1,000-step run
constexpr std::size_t kMinTraceBlock = 10, kMaxTraceBlock = 50;     // steps replayed from one offset
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

void add_noise(WorkerGroup& g, Draw& d, const Traces& t) {
  NoiseModel& m = g.noise_model;
  const double kind = d.unit();
  if (kind < 0.25) {  // the old model: independent, normal
    g.noise = d.chance(0.7) ? d.between(0.0, kMaxNormalNoise) : 0.0;
  } else if (kind < 0.6) {  // heavy-tailed, autocorrelated
    m.kind = NoiseKind::kLognormal;
    g.noise = d.between(0.02, kMaxLogSigma);
    m.correlation = d.between(0.0, kMaxCorrelation);
  } else {  // replayed from real runs of the same kind
    m.kind = NoiseKind::kTrace;
    m.trace = g.machine == kNoMachine ? (d.chance(0.5) ? t.devices : t.host) : (d.chance(0.5) ? t.host : t.quota);
    m.block = d.between(kMinTraceBlock, kMaxTraceBlock);
  }
  if (d.chance(0.5)) m.spike_chance = d.between(0.0, kMaxSpikeChance);
}

// Adds `count` workers as one group (identical workers: the same costs and
// the same noise process) on `machine`.
void add_group(Cluster& c, Draw& d, const Traces& t, std::size_t machine, std::size_t count, double speed) {
  WorkerGroup g;
  g.name = fmt::format("g{}", c.groups.size());
  g.count = count;
  g.speed = speed;
  g.machine = machine;
  if (machine != kNoMachine && d.chance(0.3)) g.quota = d.between(0.1, 1.0);
  if (machine != kNoMachine && d.chance(0.2)) g.threads = 2.0;
  add_noise(g, d, t);
  if (d.chance(machine == kNoMachine ? 0.5 : 0.25)) {  // part of the work is off the CPU
    g.device_sample_cost = d.between(0.25, kMaxDeviceToCpu) / speed;
  }
  if (d.chance(0.25)) g.tile = std::size_t{1} << d.between(std::size_t{1}, std::size_t{3});
  c.groups.push_back(g);
}

void add_devices(Cluster& c, Draw& d, const Traces& t) {
  const std::size_t groups = d.between(std::size_t{1}, std::size_t{4});
  for (std::size_t k = 0; k < groups; ++k) {
    const double speed = kBaseSpeed / std::pow(kMaxSpeedRatio, d.unit());
    add_group(c, d, t, kNoMachine, d.chance(0.5) ? 1 : d.between(std::size_t{2}, std::size_t{4}), speed);
  }
}

void add_machines(Cluster& c, Draw& d, const Traces& t) {
  const std::size_t machines = d.between(std::size_t{1}, std::size_t{3});
  for (std::size_t m = 0; m < machines; ++m) {
    c.machines.push_back(
        {fmt::format("m{}", m), static_cast<double>(d.between(std::size_t{1}, std::size_t{8}))});
    std::size_t left = d.between(std::size_t{2}, std::size_t{8});
    while (left > 0) {
      const std::size_t count = std::min(left, d.between(std::size_t{1}, std::size_t{4}));
      add_group(c, d, t, c.machines.size() - 1, count, kBaseSpeed / std::pow(kMaxCpuSpeedRatio, d.unit()));
      left -= count;
    }
  }
}

// Seconds of compute per step if the batch were spread by true speed.
double ideal_compute(const Cluster& c) {
  double speed = 0.0;
  for (const double s : true_initial_speeds(c)) speed += s;
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

Event speed_event(std::size_t step, std::size_t group, double factor) {
  Event e;
  e.step = step;
  e.group = group;
  e.factor = factor;
  return e;
}

// A leave takes a worker only from a group that still has two at its step;
// any other becomes a join. Changes are drawn out of step order, so each
// leave's own check (count > 1) saw the group as the file starts it: two
// leaves could empty a pair, and a cluster of that one group then ran out of
// workers (seed 3454: "no workers left at step 520"). No draw is made here,
// so every other seed's cluster is as it was.
void keep_every_group(Cluster& c) {
  std::vector<std::size_t> count;
  for (const WorkerGroup& g : c.groups) count.push_back(g.count);
  for (Event& e : c.events) {
    if (e.kind == EventKind::kLeave && count[e.group] <= e.count) e.kind = EventKind::kJoin;
    if (e.kind == EventKind::kLeave) count[e.group] -= e.count;
    if (e.kind == EventKind::kJoin) count[e.group] += e.count;
  }
}

// Mid-run changes: slowdowns (some recover), a switch of every group's
// speed, a worker joining or leaving.
void add_events(Cluster& c, Draw& d) {
  const std::size_t changes = d.between(std::size_t{1}, kMaxChanges);
  for (std::size_t k = 0; k < changes; ++k) {
    const std::size_t step = d.between(kFirstEventStep, kLastEventStep);
    const std::size_t group = d.between(std::size_t{0}, c.groups.size() - 1);
    const double kind = d.unit();
    if (kind < 0.5) {  // a slowdown, recovered half the time
      c.events.push_back(speed_event(step, group, 1.0 / d.between(2.0, kMaxSlowdown)));
      if (d.chance(0.5)) c.events.push_back(speed_event(step + d.between(std::size_t{50}, std::size_t{300}), group, 1.0));
    } else if (kind < 0.8) {  // the heterogeneity level switches
      for (std::size_t g = 0; g < c.groups.size(); ++g) {
        c.events.push_back(speed_event(step, g, 1.0 / std::pow(kMaxSwitchSlowdown, d.unit())));
      }
    } else {  // membership
      Event e;
      e.step = step;
      e.group = group;
      e.kind = c.groups[group].count > 1 && d.chance(0.5) ? EventKind::kLeave : EventKind::kJoin;
      c.events.push_back(e);
    }
  }
  std::stable_sort(c.events.begin(), c.events.end(), [](const Event& a, const Event& b) { return a.step < b.step; });
  keep_every_group(c);
}

std::string noise_text(const WorkerGroup& g) {
  const NoiseModel& m = g.noise_model;
  std::string out;
  switch (m.kind) {
    case NoiseKind::kNormal: out = fmt::format("normal {:.3f}", g.noise); break;
    case NoiseKind::kLognormal: out = fmt::format("lognormal {:.3f} ar {:.2f}", g.noise, m.correlation); break;
    case NoiseKind::kTrace: out = fmt::format("trace {} block {}", m.trace->path, m.block); break;
  }
  if (m.spike_chance > 0.0) out += fmt::format(" spikes {:.4f}", m.spike_chance);
  return out;
}

const char* kind_name(NoiseKind k) {
  return k == NoiseKind::kNormal ? "normal" : k == NoiseKind::kLognormal ? "lognormal" : "trace";
}

}  // namespace

Traces load_traces(const std::string& dir) {
  return {load_trace(dir + "/devices.csv"), load_trace(dir + "/host.csv"), load_trace(dir + "/quota.csv")};
}

Cluster random_cluster(std::uint64_t seed, const Traces& traces) {
  Draw d(seed);
  Cluster c;
  c.seed = seed;
  c.network.bandwidth = c.network.intra_bandwidth = kBandwidth;
  c.network.latency = c.network.intra_latency = kLatency;
  const double kind = d.unit();
  if (kind < 0.35) add_devices(c, d, traces);
  if (kind >= 0.35) add_machines(c, d, traces);
  if (kind >= 0.8) add_devices(c, d, traces);
  if (c.workers() < 2) add_group(c, d, traces, kNoMachine, 1, kBaseSpeed / std::pow(kMaxSpeedRatio, d.unit()));
  c.global_batch = static_cast<std::size_t>(std::round(32.0 * std::pow(2.0, d.between(0.0, 5.0))));
  c.global_batch = std::max(c.global_batch, c.workers() + kMaxChanges);  // room for every change to be a join
  const double share = static_cast<double>(c.global_batch) / static_cast<double>(c.workers());
  for (auto& g : c.groups) {
    if (d.chance(0.25)) {  // a cache cliff near the equal share
      g.cache_samples = static_cast<std::size_t>(std::ceil(d.between(0.5, 2.0) * share));
      g.cache_penalty = d.between(1.2, kMaxCachePenalty);
    }
  }
  const double compute = ideal_compute(c);
  for (auto& g : c.groups) {
    // A fixed cost of up to a fifth of the worker's equal-split step.
    if (d.chance(0.5)) g.overhead = d.between(0.0, 0.2) * compute;
  }
  const bool bound = d.chance(0.3);  // communication-bound: allreduce 1-20x the compute
  c.gradient_bytes = gradient_for(c, compute * (bound ? d.between(1.0, 20.0) : d.between(0.01, 0.5)));
  c.network.noise = d.chance(0.5) ? d.between(0.0, kMaxNormalNoise) : 0.0;
  c.step_overhead = d.between(0.0, 0.05) * compute;
  if (d.chance(0.5)) add_events(c, d);
  return c;
}

bool changes(const Cluster& c) { return !c.events.empty(); }

std::string describe(const Cluster& c) {
  std::string out = fmt::format(
      "B={} gradient {:.3g} B (allreduce {:.3g} s, ideal compute {:.3g} s), network noise {:.3f}, "
      "step overhead {:.3g} s;",
      c.global_batch, c.gradient_bytes, allreduce_seconds(c.network, c.workers(), c.gradient_bytes),
      ideal_compute(c), c.network.noise, c.step_overhead);
  for (const auto& g : c.groups) {
    out += fmt::format(" {}x{} speed {:.1f} overhead {:.3g} device {:.3g}/sample tile {} cache {}@{:.2f} noise {}",
                       g.count, g.name, g.speed, g.overhead, g.device_sample_cost, g.tile, g.cache_samples,
                       g.cache_penalty, noise_text(g));
    if (g.machine != kNoMachine) {
      out += fmt::format(" on {} ({} cores) threads {}", c.machines[g.machine].name, c.machines[g.machine].cores,
                         g.threads);
      if (g.quota > 0.0) out += fmt::format(" quota {:.2f}", g.quota);
    }
    out += ";";
  }
  for (const auto& e : c.events) {
    out += e.kind == EventKind::kSpeed
               ? fmt::format(" step {}: {} x{:.3f};", e.step, c.groups[e.group].name, e.factor)
               : fmt::format(" step {}: {} {} {};", e.step, c.groups[e.group].name,
                             e.kind == EventKind::kJoin ? "+" : "-", e.count);
  }
  return out;
}

std::string to_toml(const Cluster& c) {
  std::string out = fmt::format("global_batch = {}\ngradient_bytes = {}\nstep_overhead = {}\nseed = {}\n",
                                c.global_batch, c.gradient_bytes, c.step_overhead, c.seed);
  out += fmt::format("[network]\nbandwidth = {}\nlatency = {}\nnoise = {}\n", c.network.bandwidth,
                     c.network.latency, c.network.noise);
  for (const auto& m : c.machines) out += fmt::format("[[machine]]\nname = \"{}\"\ncores = {}\n", m.name, m.cores);
  for (const auto& g : c.groups) {
    const NoiseModel& m = g.noise_model;
    out += fmt::format(
        "[[group]]\nname = \"{}\"\ncount = {}\nspeed = {}\noverhead = {}\nnoise = {}\nnoise_kind = \"{}\"\n"
        "noise_correlation = {}\nspike_chance = {}\nspike_min = {}\nspike_max = {}\nnoise_block = {}\n"
        "tile = {}\ncache_samples = {}\ncache_penalty = {}\ndevice_overhead = {}\ndevice_sample_cost = {}\n",
        g.name, g.count, g.speed, g.overhead, g.noise, kind_name(m.kind), m.correlation, m.spike_chance,
        m.spike_min, m.spike_max, m.block, g.tile, g.cache_samples, g.cache_penalty, g.device_overhead,
        g.device_sample_cost);
    if (m.kind == NoiseKind::kTrace) out += fmt::format("noise_trace = \"{}\"\n", m.trace->path);
    if (g.kind) out += fmt::format("kind = \"{}\"\n", *g.kind);
    if (g.machine == kNoMachine) continue;
    out += fmt::format("machine = \"{}\"\nthreads = {}\n", c.machines[g.machine].name, g.threads);
    if (g.quota > 0.0) out += fmt::format("quota = {}\n", g.quota);
  }
  for (const auto& e : c.events) {
    out += fmt::format("[[event]]\nstep = {}\ngroup = \"{}\"\n", e.step, c.groups[e.group].name);
    out += e.kind == EventKind::kSpeed ? fmt::format("kind = \"speed\"\nfactor = {}\n", e.factor)
                                       : fmt::format("kind = \"{}\"\ncount = {}\n",
                                                     e.kind == EventKind::kJoin ? "join" : "leave", e.count);
  }
  return out;
}

}  // namespace hetrain::sim

#include "hetrain/sim/cluster.h"

#include <fmt/format.h>

#include <algorithm>

#include "hetrain/common/error.h"
#include "hetrain/sim/noise.h"
#include "hetrain/sim/toml_fields.h"

namespace hetrain::sim {
namespace {

Machine read_machine(const Fields& f) {
  f.only({"name", "cores"});
  Machine m;
  m.name = f.text("name", std::nullopt);
  m.cores = f.number("cores", std::nullopt);
  return m;
}

// Where the group's workers run: on a machine (`machine`, with `threads` and
// `quota`), or, without `machine`, as independent devices.
void read_placement(const Fields& f, const std::vector<Machine>& machines, WorkerGroup& g) {
  if (!f.has("machine")) {
    for (const auto* key : {"threads", "quota"}) {
      if (f.has(key)) f.fail(key, "only workers on a machine (key 'machine') share cores");
    }
    return;
  }
  const std::string name = f.text("machine", std::nullopt);
  const auto it =
      std::find_if(machines.begin(), machines.end(), [&](const auto& m) { return m.name == name; });
  if (it == machines.end()) f.fail("machine", fmt::format("no [[machine]] named '{}'", name));
  g.machine = static_cast<std::size_t>(it - machines.begin());
  g.threads = f.number("threads", 1.0);
  g.quota = f.has("quota") ? f.number("quota", std::nullopt) : 0.0;
}

NoiseKind read_noise_kind(const Fields& f) {
  const std::string kind = f.text("noise_kind", "normal");
  if (kind == "normal") return NoiseKind::kNormal;
  if (kind == "lognormal") return NoiseKind::kLognormal;
  if (kind == "trace") return NoiseKind::kTrace;
  f.fail("noise_kind", fmt::format("unknown noise kind '{}' (expected normal, lognormal or trace)", kind));
}

// The noise process beyond its sigma (`noise`): kind, correlation, spikes, trace.
NoiseModel read_noise(const Fields& f, const std::string& file) {
  NoiseModel n;
  n.kind = read_noise_kind(f);
  n.correlation = f.number("noise_correlation", 0.0, true);
  if (n.correlation >= 1.0) f.fail("noise_correlation", "expected a number in [0, 1)");
  n.spike_chance = f.number("spike_chance", 0.0, true);
  if (n.spike_chance > 1.0) f.fail("spike_chance", "expected a probability in [0, 1]");
  n.spike_min = f.number("spike_min", n.spike_min);
  n.spike_max = f.number("spike_max", std::max(n.spike_max, n.spike_min));
  if (n.spike_max < n.spike_min) f.fail("spike_max", "expected spike_max >= spike_min");
  n.block = f.count("noise_block", n.block, 1);
  if (n.kind == NoiseKind::kTrace) {
    const std::string path = f.text("noise_trace", std::nullopt);
    try {
      n.trace = load_trace(resolve_beside(path, file));
    } catch (const DataError& e) {
      f.fail("noise_trace", e.what());
    }
  } else if (f.has("noise_trace")) {
    f.fail("noise_trace", "a trace needs noise_kind = \"trace\"");
  }
  return n;
}

// The cost model's nonlinear and off-CPU terms (world.h).
void read_costs(const Fields& f, WorkerGroup& g) {
  g.tile = f.count("tile", 1, 1);
  g.cache_samples = f.count("cache_samples", 0);
  g.cache_penalty = f.number("cache_penalty", 1.0);
  g.device_overhead = f.number("device_overhead", 0.0, true);
  g.device_sample_cost = f.number("device_sample_cost", 0.0, true);
}

WorkerGroup read_group(const Fields& f, const std::vector<Machine>& machines, const std::string& file) {
  f.only({"name", "count", "speed", "sample_cost", "overhead", "noise", "max_local_batch", "price_per_hour",
          "machine", "threads", "quota", "noise_kind", "noise_correlation", "spike_chance", "spike_min",
          "spike_max", "noise_trace", "noise_block", "tile", "cache_samples", "cache_penalty",
          "device_overhead", "device_sample_cost", "kind"});
  WorkerGroup g;
  g.name = f.text("name", std::nullopt);
  g.count = f.count("count", 1);
  if (f.has("speed") == f.has("sample_cost")) {
    f.fail(f.has("speed") ? "sample_cost" : "speed",
           "give exactly one of speed (samples/s) and sample_cost (seconds per sample)");
  }
  g.speed = f.has("speed") ? f.number("speed", std::nullopt) : 1.0 / f.number("sample_cost", std::nullopt);
  g.overhead = f.number("overhead", 0.0, true);
  g.noise = f.number("noise", 0.0, true);
  g.noise_model = read_noise(f, file);
  read_costs(f, g);
  g.max_local_batch = f.count("max_local_batch", 0);
  g.price_per_hour = f.number("price_per_hour", 0.0, true);
  read_placement(f, machines, g);
  if (f.has("kind")) g.kind = f.text("kind", std::nullopt);
  return g;
}

Network read_network(const Fields& f) {
  f.only({"bandwidth", "latency", "workers_per_node", "intra_bandwidth", "intra_latency", "bucket_bytes",
          "noise"});
  Network n;
  n.bandwidth = f.number("bandwidth", kDefaultBandwidth);
  n.latency = f.number("latency", kDefaultLatency, true);
  n.workers_per_node = f.count("workers_per_node", 0);
  n.intra_bandwidth = f.number("intra_bandwidth", n.bandwidth);
  n.intra_latency = f.number("intra_latency", n.latency, true);
  n.bucket_bytes = f.count("bucket_bytes", 0);
  n.noise = f.number("noise", 0.0, true);
  return n;
}

Event read_event(const Fields& f, const std::vector<WorkerGroup>& groups) {
  f.only({"step", "kind", "group", "speed", "factor", "count"});
  Event e;
  e.step = f.count("step", std::nullopt);
  const std::string kind = f.text("kind", std::nullopt);
  const std::string group = f.text("group", std::nullopt);
  const auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.name == group; });
  if (it == groups.end()) f.fail("group", fmt::format("no worker group named '{}'", group));
  e.group = static_cast<std::size_t>(it - groups.begin());
  if (kind == "speed") {
    e.kind = EventKind::kSpeed;
    if (f.has("speed") == f.has("factor")) {
      f.fail(f.has("speed") ? "factor" : "speed",
             "give exactly one of speed (samples/s) and factor (x the group's speed in the file)");
    }
    if (f.has("speed")) e.speed = f.number("speed", std::nullopt);
    if (f.has("factor")) e.factor = f.number("factor", std::nullopt);
  } else if (kind == "join" || kind == "leave") {
    e.kind = kind == "join" ? EventKind::kJoin : EventKind::kLeave;
    e.count = f.count("count", 1, 1);
  } else {
    f.fail("kind", fmt::format("unknown event kind '{}' (expected speed, join or leave)", kind));
  }
  return e;
}

}  // namespace

std::size_t Cluster::workers() const {
  std::size_t n = 0;
  for (const auto& g : groups) n += g.count;
  return n;
}

std::string reported_kind(const WorkerGroup& g) {
  if (g.kind) return *g.kind;
  return g.machine == kNoMachine ? g.name : "";
}

double standalone_cpus(const Cluster& c, const WorkerGroup& g) {
  if (g.machine == kNoMachine) return 1.0;
  const double cap = g.quota > 0.0 ? std::min(g.threads, g.quota) : g.threads;
  return std::min(cap, c.machines.at(g.machine).cores);
}

double standalone_speed(const Cluster& c, const WorkerGroup& g) { return g.speed * standalone_cpus(c, g); }

WorkerGroup scaled(const WorkerGroup& g, double factor) {
  WorkerGroup s = g;
  s.speed = g.speed * factor;
  s.overhead = g.overhead / factor;
  s.device_overhead = g.device_overhead / factor;
  s.device_sample_cost = g.device_sample_cost / factor;
  return s;
}

namespace {

Cluster from_toml(const toml::table& doc, const std::string& file) {
  const Fields root(doc, file, "");
  root.only({"global_batch", "gradient_bytes", "step_overhead", "dataset_samples", "seed", "network",
             "machine", "group", "event"});
  Cluster c;
  c.global_batch = root.count("global_batch", std::nullopt, 1);
  c.gradient_bytes = root.number("gradient_bytes", std::nullopt, true);
  c.step_overhead = root.number("step_overhead", 0.0, true);
  c.dataset_samples = root.count("dataset_samples", 0);
  c.seed = root.count("seed", 1);
  if (auto net = root.table("network")) c.network = read_network(*net);
  for (const auto& m : root.tables("machine")) {
    c.machines.push_back(read_machine(m));
    for (std::size_t i = 0; i + 1 < c.machines.size(); ++i) {
      if (c.machines[i].name == c.machines.back().name) m.fail("name", "duplicate machine name");
    }
  }
  for (const auto& g : root.tables("group")) {
    c.groups.push_back(read_group(g, c.machines, file));
    for (std::size_t i = 0; i + 1 < c.groups.size(); ++i) {
      if (c.groups[i].name == c.groups.back().name) g.fail("name", "duplicate group name");
    }
  }
  if (c.groups.empty()) root.fail("group", "at least one [[group]] of workers is needed");
  if (c.workers() == 0) root.fail("group", "the groups hold no workers");
  for (const auto& e : root.tables("event")) c.events.push_back(read_event(e, c.groups));
  std::stable_sort(c.events.begin(), c.events.end(),
                   [](const Event& a, const Event& b) { return a.step < b.step; });
  return c;
}

}  // namespace

Cluster parse_cluster(std::string_view text, const std::string& file) {
  return from_toml(parse_toml(text, file), file);
}

Cluster load_cluster(const std::string& path) { return from_toml(load_toml(path), path); }

}  // namespace hetrain::sim

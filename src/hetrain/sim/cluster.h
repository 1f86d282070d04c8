// A simulated cluster: machines whose cores their workers share, groups of
// identical workers, the network between them, the model's gradient, the
// global batch, and events that change the cluster during the run. Read from
// a TOML file (docs/simulation.md describes it). Plain C++: no torch, no
// network.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hetrain::sim {

// Defaults, with units.
inline constexpr double kDefaultBandwidth = 1.25e9;  // bytes/s per link (10 Gbit/s Ethernet)
inline constexpr double kDefaultLatency = 50e-6;     // seconds per message (one TCP hop in a rack)
inline constexpr std::size_t kBytesPerElement = 4;   // float32 gradients, as the trainer reduces them
// WorkerGroup::machine of a group of independent devices.
inline constexpr std::size_t kNoMachine = static_cast<std::size_t>(-1);

// A host whose CPU cores its workers share while they compute.
struct Machine {
  std::string name;
  double cores = 1.0;  // CPUs
};

// Recorded noise: per-step ratios of a real worker's compute time to its
// median at the same batch, one column per recorded worker (noise.h reads and
// replays them).
struct NoiseTrace {
  std::string path;
  std::vector<std::vector<double>> columns;  // per recorded worker, per step
  double mean = 1.0;                         // of every ratio in the file
};

enum class NoiseKind {
  kNormal,     // multiplier max(0, 1 + sigma x), x the AR(1) process below
  kLognormal,  // multiplier exp(sigma x): heavy right tail, median 1
  kTrace,      // blocks of a recorded trace, from random offsets (block bootstrap)
};

// How a worker's compute time varies from step to step: a multiplier of its
// noise-free time. Every worker draws its own, independently; the workers of
// a group draw from the same process.
struct NoiseModel {
  NoiseKind kind = NoiseKind::kNormal;  // sigma is WorkerGroup::noise
  double correlation = 0.0;  // AR(1) coefficient of x from step to step, in [0, 1)
  double spike_chance = 0.0;  // per step: the multiplier is also scaled by U(spike_min, spike_max)
  double spike_min = 5.0;
  double spike_max = 10.0;
  std::shared_ptr<const NoiseTrace> trace;  // kTrace
  std::size_t block = 20;                   // kTrace: steps replayed from one offset before the next
};

// Workers of one kind. A worker's noise-free cost for b > 0 samples
// (world.h), with t = tile-rounded b = ceil(b / tile) x tile:
//   CPU work    overhead + (t + (cache_penalty - 1) x max(0, b - cache_samples)) / speed
//   device time device_overhead + t x device_sample_cost   (off the CPU, after the CPU work)
// both scaled by the step's noise multiplier; b = 0 costs nothing (the
// trainer skips the forward pass).
//  - An independent device (no machine) does its CPU work at rate 1.
//  - On a machine, the CPU work is CPU-seconds, and the workers computing at
//    the same moment share its cores by processor sharing (world.h): a
//    worker runs at most at min(threads, quota) CPUs.
struct WorkerGroup {
  std::string name;
  std::size_t count = 1;
  double speed = 1.0;                // samples per second (on a machine: per CPU-second)
  double overhead = 0.0;             // seconds (on a machine: CPU-seconds) per step, whatever the batch
  double noise = 0.0;                // sigma of noise_model: relative sd (normal), sd of the log (lognormal)
  NoiseModel noise_model;
  std::size_t tile = 1;              // samples computed together: b costs as ceil(b / tile) x tile
  std::size_t cache_samples = 0;     // past this many samples each costs cache_penalty x (0: no cliff)
  double cache_penalty = 1.0;        // marginal cost past cache_samples, relative
  double device_overhead = 0.0;      // seconds off the CPU per step (an accelerator's launch, a sleep)
  double device_sample_cost = 0.0;   // seconds off the CPU per sample
  std::size_t max_local_batch = 0;   // memory cap, samples (0: none)
  double price_per_hour = 0.0;       // currency units per machine-hour (hetrain plan)
  std::size_t machine = kNoMachine;  // index into Cluster::machines
  double threads = 1.0;              // CPUs one worker can use at once (machine only)
  double quota = 0.0;                // cgroup-style CPU quota per worker, CPUs (0: none; machine only)
  std::optional<std::string> kind;   // what its workers say of their kind ("": none); unset: reported_kind()
};

// What a group's workers tell the policy of their hardware (alloc::Placement::kind):
// `kind` if given ("": none said); else a group off any machine is a device model of its own
// (its name, as a GPU reports its name), and a group on a machine says
// nothing (its CPUs and its machine describe it: alloc/proposer.cc).
std::string reported_kind(const WorkerGroup& g);

// The alpha-beta model: a message of m bytes over a link takes
// latency + m / bandwidth seconds. Ranks are numbered group by group; with
// workers_per_node > 0, ranks [k w, (k+1) w) share node k and talk over the
// intra-node link.
struct Network {
  double bandwidth = kDefaultBandwidth;        // bytes/s, between nodes
  double latency = kDefaultLatency;            // seconds, between nodes
  std::size_t workers_per_node = 0;            // 0: every worker is its own node
  double intra_bandwidth = kDefaultBandwidth;  // bytes/s, inside a node
  double intra_latency = kDefaultLatency;      // seconds, inside a node
  std::size_t bucket_bytes = 0;  // bytes per allreduce call (0: one call for the whole gradient)
  double noise = 0.0;            // relative standard deviation of a step's allreduce time
};

enum class EventKind { kSpeed, kJoin, kLeave };

// At the start of step `step` (0-based): every worker of `group` changes to
// `speed` samples/s (kSpeed), or runs at `factor` x the group's speed in the
// file, every cost of its (CPU and device, per sample and per step) divided
// by `factor` (kSpeed with factor > 0: slowdowns and recoveries); or `count`
// workers of `group` join or leave.
struct Event {
  std::size_t step = 0;
  EventKind kind = EventKind::kSpeed;
  std::size_t group = 0;  // index into Cluster::groups
  double speed = 0.0;     // kSpeed: samples per second, or 0 when `factor` is given
  double factor = 0.0;    // kSpeed: relative to the file's group (0: `speed` is given)
  std::size_t count = 1;
};

struct Cluster {
  std::vector<Machine> machines;  // empty: every worker is an independent device
  std::vector<WorkerGroup> groups;
  Network network;
  double gradient_bytes = 0.0;      // bytes reduced per step
  std::size_t global_batch = 0;     // samples per step, fixed
  double step_overhead = 0.0;       // seconds per step outside compute and allreduce (optimizer, data)
  std::size_t dataset_samples = 0;  // samples per epoch (0: unknown; needed by --epochs and plan)
  std::uint64_t seed = 1;           // of the compute-time noise
  std::vector<Event> events;        // sorted by step

  std::size_t workers() const;
};

// CPUs a worker of `g` computes with when it is alone on its machine:
// min(threads, quota, cores); 1 for an independent device (its speed is
// already per second).
double standalone_cpus(const Cluster& c, const WorkerGroup& g);
// Samples per second of a worker of `g` alone on its machine (its quota
// included): the speed in proportion to which a static split is "true".
double standalone_speed(const Cluster& c, const WorkerGroup& g);

// `g` running at `factor` x its speed: every cost divided by `factor`.
WorkerGroup scaled(const WorkerGroup& g, double factor);

// Throws DataError "FILE:LINE:COL: key 'K': what is wrong" for a malformed
// file, UsageError-free: every check here is about the file.
Cluster parse_cluster(std::string_view text, const std::string& file);
Cluster load_cluster(const std::string& path);

}  // namespace hetrain::sim

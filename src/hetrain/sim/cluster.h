// A simulated cluster: machines whose cores their workers share, groups of
// identical workers, the network between them, the model's gradient, the
// global batch, and events that change the cluster during the run. Read from
// a TOML file (docs/simulation.md describes it). Plain C++: no torch, no
// network.
#pragma once

#include <cstddef>
#include <cstdint>
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

// Workers of one kind. A worker's work for b > 0 samples is
// w = (overhead + b / speed) x (1 + noise x z), z standard normal (seeded),
// clamped at 0; b = 0 costs nothing (the trainer skips the forward pass).
//  - An independent device (no machine) computes w in w seconds.
//  - On a machine, w is CPU-seconds, and the workers computing at the same
//    moment share its cores (share_cores in simulator.h): a worker runs at
//    most at min(threads, quota) CPUs, the rest going to its neighbours.
struct WorkerGroup {
  std::string name;
  std::size_t count = 1;
  double speed = 1.0;                // samples per second (on a machine: per CPU-second)
  double overhead = 0.0;             // seconds (on a machine: CPU-seconds) per step, whatever the batch
  double noise = 0.0;                // relative standard deviation of a step's compute work
  std::size_t max_local_batch = 0;   // memory cap, samples (0: none)
  double price_per_hour = 0.0;       // currency units per machine-hour (hetrain plan)
  std::size_t machine = kNoMachine;  // index into Cluster::machines
  double threads = 1.0;              // CPUs one worker can use at once (machine only)
  double quota = 0.0;                // cgroup-style CPU quota per worker, CPUs (0: none; machine only)
};

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
// `speed` samples/s (kSpeed), or `count` workers of `group` join or leave.
struct Event {
  std::size_t step = 0;
  EventKind kind = EventKind::kSpeed;
  std::size_t group = 0;  // index into Cluster::groups
  double speed = 0.0;
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

// Throws DataError "FILE:LINE:COL: key 'K': what is wrong" for a malformed
// file, UsageError-free: every check here is about the file.
Cluster parse_cluster(std::string_view text, const std::string& file);
Cluster load_cluster(const std::string& path);

}  // namespace hetrain::sim

// Random clusters of the simulated world for the allocation property
// (test_property.cc, docs/simulation.md): devices and shared machines, costs
// with tiles, cache cliffs and time off the CPU, heavy-tailed autocorrelated
// noise or noise replayed from real runs, and mid-run changes. Seeded and
// deterministic; the same on every standard library.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "hetrain/sim/cluster.h"

namespace hetrain::sim {

// The recorded traces the clusters replay (examples/noise/).
struct Traces {
  std::shared_ptr<const NoiseTrace> devices, host, quota;
};
// Reads devices.csv, host.csv and quota.csv from `dir`.
Traces load_traces(const std::string& dir);

Cluster random_cluster(std::uint64_t seed, const Traces& traces);

// Whether the world changes during the run (events).
bool changes(const Cluster& c);

// One line per cluster, for failure messages.
std::string describe(const Cluster& c);

// The cluster as a file for `hetrain sim --cluster`, every number exact
// (traces by absolute path).
std::string to_toml(const Cluster& c);

}  // namespace hetrain::sim

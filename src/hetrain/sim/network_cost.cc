#include "hetrain/sim/network_cost.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "hetrain/comm/ring_plan.h"

namespace hetrain::sim {
namespace {

bool same_node(const Network& net, std::size_t a, std::size_t b) {
  return net.workers_per_node > 0 && a / net.workers_per_node == b / net.workers_per_node;
}

// One ring allreduce of `count` float32 elements.
double ring_call_seconds(const Network& net, std::size_t world, std::size_t count) {
  std::vector<std::size_t> ranks;
  if (world <= kFullReplayRanks) {
    for (std::size_t r = 0; r < world; ++r) ranks.push_back(r);
  } else {
    const std::size_t first_node_last =
        net.workers_per_node > 0 ? std::min(world, net.workers_per_node) - 1 : 0;
    ranks = {0, first_node_last, world - 1};
  }
  std::vector<double> step_seconds;
  for (const std::size_t r : ranks) {
    const auto plan = comm::ring_plan(static_cast<int>(world), static_cast<int>(r), count);
    step_seconds.resize(std::max(step_seconds.size(), plan.size()), 0.0);
    for (std::size_t s = 0; s < plan.size(); ++s) {
      const auto& step = plan[s];
      if (step.send_to == comm::kNoPeer) continue;
      const bool intra = same_node(net, r, static_cast<std::size_t>(step.send_to));
      const double latency = intra ? net.intra_latency : net.latency;        // seconds
      const double bandwidth = intra ? net.intra_bandwidth : net.bandwidth;  // bytes/s
      const double bytes = static_cast<double>(step.send.size() * kBytesPerElement);
      step_seconds[s] = std::max(step_seconds[s], latency + bytes / bandwidth);
    }
  }
  double total = 0.0;
  for (double s : step_seconds) total += s;
  return total;
}

}  // namespace

double allreduce_seconds(const Network& net, std::size_t world, double gradient_bytes) {
  if (world <= 1 || gradient_bytes <= 0.0) return 0.0;
  const auto elements = static_cast<std::size_t>(std::ceil(gradient_bytes / kBytesPerElement));
  const std::size_t per_call =
      net.bucket_bytes == 0 ? elements : std::max<std::size_t>(1, net.bucket_bytes / kBytesPerElement);
  const std::size_t full_calls = elements / per_call;
  const std::size_t rest = elements % per_call;
  double total = 0.0;
  if (full_calls > 0) total += static_cast<double>(full_calls) * ring_call_seconds(net, world, per_call);
  if (rest > 0) total += ring_call_seconds(net, world, rest);
  return total;
}

}  // namespace hetrain::sim

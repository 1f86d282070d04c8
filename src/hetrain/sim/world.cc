#include "hetrain/sim/world.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace hetrain::sim {
namespace {

// A worker whose work left is within this fraction of what it started with
// has finished (the rounding of the rates' arithmetic).
constexpr double kDoneFraction = 1e-12;

// Max-min fair rates of the runnable workers `active` (caps `cap`) on `cores`.
void fair_rates(const std::vector<std::size_t>& active, const std::vector<double>& cap, double cores,
                std::vector<double>& rate) {
  std::vector<std::size_t> order = active;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cap[a] < cap[b]; });
  double left = cores;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const double r = std::min(cap[order[k]], left / static_cast<double>(order.size() - k));
    rate[order[k]] = r;
    left -= r;
  }
}

}  // namespace

WorkCost cost_of(const WorkerGroup& g, std::size_t b) {
  if (b == 0) return {};
  const std::size_t tiles = (b + g.tile - 1) / g.tile;
  const double computed = static_cast<double>(tiles * g.tile);
  const double past_cache =
      g.cache_samples > 0 && b > g.cache_samples ? static_cast<double>(b - g.cache_samples) : 0.0;
  WorkCost w;
  w.cpu = g.overhead + (computed + (g.cache_penalty - 1.0) * past_cache) / g.speed;
  w.device = g.device_overhead + computed * g.device_sample_cost;
  return w;
}

double cpu_cap(const WorkerGroup& g) { return g.quota > 0.0 ? std::min(g.threads, g.quota) : g.threads; }

std::vector<double> processor_sharing(const std::vector<double>& work, const std::vector<double>& cap,
                                      double cores) {
  const std::size_t n = work.size();
  std::vector<double> finish(n, 0.0), left = work, rate(n, 0.0);
  std::vector<std::size_t> active;
  for (std::size_t i = 0; i < n; ++i) {
    if (work[i] > 0.0) active.push_back(i);
  }
  double now = 0.0;
  while (!active.empty()) {
    fair_rates(active, cap, cores, rate);
    double step = std::numeric_limits<double>::infinity();
    for (const std::size_t i : active) step = std::min(step, left[i] / rate[i]);
    now += step;
    std::vector<std::size_t> still;
    for (const std::size_t i : active) {
      left[i] -= rate[i] * step;
      if (left[i] <= kDoneFraction * work[i]) {
        finish[i] = now;
      } else {
        still.push_back(i);
      }
    }
    active.swap(still);
  }
  return finish;
}

std::vector<std::vector<std::size_t>> ranks_by_machine(const Cluster& c, const std::vector<WorkerGroup>& groups,
                                                       const std::vector<std::size_t>& rank_group) {
  std::vector<std::vector<std::size_t>> ranks(c.machines.size());
  for (std::size_t r = 0; r < rank_group.size(); ++r) {
    const std::size_t m = groups[rank_group[r]].machine;
    if (m != kNoMachine) ranks[m].push_back(r);
  }
  return ranks;
}

std::vector<double> finish_times(const Cluster& c, const std::vector<WorkerGroup>& groups,
                                 const std::vector<std::size_t>& rank_group,
                                 const std::vector<std::vector<std::size_t>>& machine_ranks,
                                 const std::vector<WorkCost>& cost) {
  std::vector<double> seconds(cost.size());
  for (std::size_t r = 0; r < cost.size(); ++r) seconds[r] = cost[r].cpu + cost[r].device;
  std::vector<double> work, cap;
  for (std::size_t m = 0; m < machine_ranks.size(); ++m) {
    const auto& ranks = machine_ranks[m];
    if (ranks.empty()) continue;
    work.clear();
    cap.clear();
    for (const std::size_t r : ranks) {
      work.push_back(cost[r].cpu);
      cap.push_back(cpu_cap(groups[rank_group[r]]));
    }
    const std::vector<double> done = processor_sharing(work, cap, c.machines[m].cores);
    for (std::size_t k = 0; k < ranks.size(); ++k) seconds[ranks[k]] = done[k] + cost[ranks[k]].device;
  }
  return seconds;
}

}  // namespace hetrain::sim

#include "hetrain/sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace hetrain::sim {
namespace {

double mean_of(const std::vector<StepTrace>& steps, double StepTrace::*field) {
  if (steps.empty()) return 0.0;
  double sum = 0.0;
  for (const auto& s : steps) sum += s.*field;
  return sum / static_cast<double>(steps.size());
}

}  // namespace

std::string comparison_table(const std::vector<SimResult>& results) {
  std::string out = fmt::format("{:<10} {:>8} {:>7} {:>12} {:>13} {:>12} {:>14} {:>8} {:>8} {:>6} {:>7}\n",
                                "policy", "workers", "steps", "total (s)", "per step (s)", "compute (s)",
                                "allreduce (s)", "balance", "speedup", "moves", "reverts");
  for (const auto& r : results) {
    const std::size_t workers = r.steps.empty() ? 0 : r.steps.back().workers;
    const double per_step = r.steps.empty() ? 0.0 : r.total_seconds / static_cast<double>(r.steps.size());
    const double speedup = r.total_seconds > 0.0 ? results.front().total_seconds / r.total_seconds : 1.0;
    out += fmt::format(
        "{:<10} {:>8} {:>7} {:>12.4f} {:>13.6f} {:>12.6f} {:>14.6f} {:>8.3f} {:>7.2f}x {:>6} {:>7}\n",
        r.policy, workers, r.steps.size(), r.total_seconds, per_step, mean_of(r.steps, &StepTrace::compute),
        mean_of(r.steps, &StepTrace::allreduce), r.balance_efficiency, speedup, r.moves, r.reverts);
  }
  return out;
}

std::string split_over_time(const SimResult& r, const Cluster& c) {
  const std::size_t k = r.steps.size();
  if (k == 0) return {};
  std::set<std::size_t> at{0, k / 4, k / 2, 3 * k / 4, k - 1};
  for (const auto& e : c.events) {
    if (e.step < k) at.insert(e.step);
  }
  std::string out =
      fmt::format("{}: samples per worker of each group (split over time)\n{:>8}", r.policy, "step");
  for (const auto& name : r.group_names) out += fmt::format(" {:>14}", name);
  out += "\n";
  for (const std::size_t s : at) {
    out += fmt::format("{:>8}", s);
    for (std::size_t g = 0; g < r.group_names.size(); ++g) {
      const std::size_t n = r.group_workers[s][g];
      if (n == 0) {
        out += fmt::format(" {:>14}", "-");
      } else {
        out += fmt::format(" {:>14.2f}", static_cast<double>(r.group_samples[s][g]) / static_cast<double>(n));
      }
    }
    if (r.steps[s].batch != c.global_batch)
      out += fmt::format("  (an epoch's short last batch: {})", r.steps[s].batch);
    out += "\n";
  }
  return out;
}

std::string trace_json(const Cluster& c, const std::vector<SimResult>& results) {
  using nlohmann::json;
  json doc;
  doc["global_batch"] = c.global_batch;
  doc["gradient_bytes"] = c.gradient_bytes;
  json groups = json::array();
  for (const auto& g : c.groups) {
    groups.push_back({{"name", g.name},
                      {"count", g.count},
                      {"speed", g.speed},
                      {"overhead", g.overhead},
                      {"noise", g.noise},
                      {"max_local_batch", g.max_local_batch}});
    if (g.machine != kNoMachine) {
      groups.back()["machine"] = c.machines[g.machine].name;
      groups.back()["threads"] = g.threads;
      groups.back()["quota"] = g.quota;
    }
  }
  doc["groups"] = std::move(groups);
  json machines = json::array();
  for (const auto& m : c.machines) machines.push_back({{"name", m.name}, {"cores", m.cores}});
  doc["machines"] = std::move(machines);
  doc["network"] = {{"bandwidth", c.network.bandwidth},
                    {"latency", c.network.latency},
                    {"workers_per_node", c.network.workers_per_node},
                    {"intra_bandwidth", c.network.intra_bandwidth},
                    {"intra_latency", c.network.intra_latency},
                    {"bucket_bytes", c.network.bucket_bytes},
                    {"noise", c.network.noise}};
  json policies = json::array();
  for (const auto& r : results) {
    json seconds = json::array(), compute = json::array(), allreduce = json::array(), workers = json::array();
    for (const auto& s : r.steps) {
      seconds.push_back(s.seconds);
      compute.push_back(s.compute);
      allreduce.push_back(s.allreduce);
      workers.push_back(s.workers);
    }
    json p = {{"policy", r.policy},
              {"total_seconds", r.total_seconds},
              {"balance_efficiency", r.balance_efficiency},
              {"moves", r.moves},
              {"reverts", r.reverts},
              {"steps",
               {{"seconds", seconds},
                {"compute_seconds", compute},
                {"allreduce_seconds", allreduce},
                {"workers", workers}}},
              {"group_samples", r.group_samples},
              {"group_workers", r.group_workers}};
    if (!r.splits.empty()) p["allocation"] = r.splits;
    policies.push_back(std::move(p));
  }
  doc["policies"] = std::move(policies);
  return doc.dump() + "\n";
}

}  // namespace hetrain::sim

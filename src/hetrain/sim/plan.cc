#include "hetrain/sim/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "hetrain/alloc/device_cost.h"
#include "hetrain/common/error.h"
#include "hetrain/data/cursor.h"
#include "hetrain/sim/network_cost.h"

namespace hetrain::sim {
namespace {

constexpr double kSecondsPerHour = 3600.0;

Candidate evaluate(const Cluster& inv, const std::vector<std::size_t>& use, std::size_t steps) {
  Candidate c;
  c.use = use;
  std::vector<alloc::WorkerModel> models;
  alloc::Bounds bounds;
  bounds.min_local = 1;  // as the adaptive policy: every worker keeps a sample
  double price = 0.0;
  for (std::size_t g = 0; g < use.size(); ++g) {
    const WorkerGroup& group = inv.groups[g];
    for (std::size_t k = 0; k < use[g]; ++k) models.push_back({group.overhead, group.speed});
    if (use[g] > 0 && group.max_local_batch > 0)
      bounds.max_local = std::min(bounds.max_local, group.max_local_batch);
    price += static_cast<double>(use[g]) * group.price_per_hour;
  }
  c.workers = models.size();
  try {
    alloc::check_feasible(c.workers, inv.global_batch, bounds);
  } catch (const UsageError&) {
    c.feasible = false;
    c.step_seconds = c.total_seconds = c.cost = std::numeric_limits<double>::infinity();
    return c;
  }
  const alloc::SolvedSplit solved = alloc::solve_split(models, inv.global_batch, bounds);
  c.split = solved.split;
  c.step_seconds =
      solved.makespan + allreduce_seconds(inv.network, c.workers, inv.gradient_bytes) + inv.step_overhead;
  c.total_seconds = static_cast<double>(steps) * c.step_seconds;
  c.cost = c.total_seconds / kSecondsPerHour * price;
  return c;
}

std::string machines(const Cluster& inv, const Candidate& c) {
  std::string out;
  for (std::size_t g = 0; g < c.use.size(); ++g) {
    if (c.use[g] == 0) continue;
    out += fmt::format("{}{}x{}", out.empty() ? "" : " + ", c.use[g], inv.groups[g].name);
  }
  return out;
}

}  // namespace

Objective parse_objective(const std::string& name) {
  if (name == "time") return Objective::kTime;
  if (name == "cost") return Objective::kCost;
  throw UsageError(fmt::format("--objective '{}' (expected time or cost)", name));
}

PlanResult plan(const Cluster& inv, std::size_t epochs, Objective objective) {
  if (inv.dataset_samples == 0) throw UsageError("the inventory needs dataset_samples (samples per epoch)");
  if (epochs == 0) throw UsageError("--epochs must be at least 1");
  // A candidate's step is solve_split over independent models; workers that
  // share cores slow each other down, which that cannot price.
  if (!inv.machines.empty()) {
    throw UsageError(
        "hetrain plan: the inventory's groups are independent machines; [[machine]] (shared "
        "cores) is for hetrain sim");
  }
  PlanResult res;
  res.steps = epochs * data::steps_per_epoch(inv.dataset_samples, inv.global_batch);
  const std::size_t g = inv.groups.size();
  // Per group, the machine counts tried: 0, powers of two below the count,
  // and the count; if their product is too large, 0 or all of each group.
  std::vector<std::vector<std::size_t>> options(g);
  double combinations = 1.0;
  for (std::size_t i = 0; i < g; ++i) {
    options[i].push_back(0);
    for (std::size_t k = 1; k < inv.groups[i].count; k *= 2) options[i].push_back(k);
    if (inv.groups[i].count > 0) options[i].push_back(inv.groups[i].count);
    combinations *= static_cast<double>(options[i].size());
  }
  if (combinations > static_cast<double>(kMaxCandidates)) {
    for (std::size_t i = 0; i < g; ++i) options[i] = {0, inv.groups[i].count};
  }
  std::vector<std::vector<std::size_t>> uses;
  if (g <= kMaxExhaustiveGroups) {
    std::vector<std::size_t> pick(g, 0);  // an odometer over the options
    while (true) {
      std::vector<std::size_t> use(g);
      for (std::size_t i = 0; i < g; ++i) use[i] = options[i][pick[i]];
      uses.push_back(use);
      std::size_t i = 0;
      while (i < g && ++pick[i] == options[i].size()) pick[i++] = 0;
      if (i == g) break;
    }
  } else {
    std::vector<std::size_t> order(g);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return inv.groups[a].speed > inv.groups[b].speed; });
    std::vector<std::size_t> use(g, 0);
    for (const std::size_t i : order) {
      use[i] = inv.groups[i].count;
      uses.push_back(use);
    }
  }
  for (const auto& use : uses) {
    if (std::accumulate(use.begin(), use.end(), std::size_t{0}) > 0)
      res.candidates.push_back(evaluate(inv, use, res.steps));
  }
  const auto key = [objective](const Candidate& c) {
    return objective == Objective::kTime ? std::pair(c.total_seconds, c.cost)
                                         : std::pair(c.cost, c.total_seconds);
  };
  std::stable_sort(res.candidates.begin(), res.candidates.end(),
                   [&](const Candidate& a, const Candidate& b) { return key(a) < key(b); });
  return res;
}

std::string plan_report(const Cluster& inv, const PlanResult& res, Objective objective, bool all) {
  if (res.candidates.empty() || !res.candidates.front().feasible) {
    throw UsageError(
        "no subset of the inventory can split the global batch (check global_batch and memory caps)");
  }
  const Candidate& best = res.candidates.front();
  std::string out = fmt::format("recommended ({}): {}\n",
                                objective == Objective::kTime ? "fastest" : "cheapest", machines(inv, best));
  out += fmt::format("  predicted {:.1f} s ({:.2f} h) for {} steps, {:.4f} s per step, cost {:.2f}\n",
                     best.total_seconds, best.total_seconds / kSecondsPerHour, res.steps, best.step_seconds,
                     best.cost);
  out += "  starting shares (samples per worker):";
  std::size_t rank = 0;
  for (std::size_t g = 0; g < best.use.size(); ++g) {
    if (best.use[g] == 0) continue;
    std::size_t lo = best.split[rank], hi = best.split[rank];
    for (std::size_t k = 0; k < best.use[g]; ++k, ++rank) {
      lo = std::min(lo, best.split[rank]);
      hi = std::max(hi, best.split[rank]);
    }
    out += lo == hi ? fmt::format(" {} {}", inv.groups[g].name, lo)
                    : fmt::format(" {} {}-{}", inv.groups[g].name, lo, hi);
  }
  out += fmt::format("\n  as flags: --policy static --shares {}\n\n", fmt::join(best.split, ","));
  out += fmt::format("{:<4} {:<40} {:>8} {:>13} {:>14} {:>10}\n", "rank", "machines", "workers", "step (s)",
                     "total (s)", "cost");
  const std::size_t rows = all ? res.candidates.size() : std::min(res.candidates.size(), kReportRows);
  for (std::size_t i = 0; i < rows; ++i) {
    const Candidate& c = res.candidates[i];
    if (!c.feasible) {
      out += fmt::format("{:<4} {:<40} {:>8} {:>13} {:>14} {:>10}\n", "-", machines(inv, c), c.workers,
                         "infeasible", "-", "-");
      continue;
    }
    out += fmt::format("{:<4} {:<40} {:>8} {:>13.6f} {:>14.1f} {:>10.2f}{}\n", i + 1, machines(inv, c),
                       c.workers, c.step_seconds, c.total_seconds, c.cost, i == 0 ? "  <- recommended" : "");
  }
  if (rows < res.candidates.size()) {
    out += fmt::format("... and {} more (--all lists every one)\n", res.candidates.size() - rows);
  }
  return out;
}

}  // namespace hetrain::sim

#include "hetrain/alloc/hosts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

#include "hetrain/alloc/bisection.h"
#include "hetrain/alloc/groups.h"
#include "hetrain/common/error.h"

namespace hetrain::alloc {
namespace {

// Workers due to finish within this relative margin of the first one finish
// with it: rounding must not leave a sliver of work for another round.
constexpr double kFinishTolerance = 1e-12;

// Max-min fair rates (CPUs) of workers with caps `cap` on `cores` CPUs.
std::vector<double> fair_rates(const std::vector<double>& cap, double cores) {
  std::vector<std::size_t> order(cap.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cap[a] < cap[b]; });
  std::vector<double> rate(cap.size());
  double left = cores;
  for (std::size_t k = 0; k < order.size(); ++k) {
    rate[order[k]] = std::min(cap[order[k]], left / static_cast<double>(order.size() - k));
    left -= rate[order[k]];
  }
  return rate;
}

// Workers of one host whose CPUs and CPU-seconds at their batches differ by
// less than the larger of kAlikeCost and kAlikeBands standard errors
// (relative) are one group (host_groups).
constexpr double kAlikeCost = 0.1;
constexpr double kAlikeBands = 3.0;
// However uncertain their costs, workers further apart than this are not
// alike: a worker four times slower must not wait for samples to be told apart.
constexpr double kMaxAlikeCost = 0.3;
// A group formed earlier holds while its members stay within this many times
// the tolerance (host_groups' hysteresis).
constexpr double kHoldSpan = 1.5;

// Workers of one group on one host: filled together (solve_on_hosts).
struct Unit {
  std::vector<std::size_t> ranks;
  HostCost cost;      // the members' mean
  double cpus = 1.0;  // the members' mean
};

// The units of each host (workers of one host and one group), cheapest CPU
// per sample first; each unit's cost is its members' mean.
std::vector<std::vector<Unit>> units_by_host(const Placement& p, const std::vector<HostCost>& cost,
                                             const std::vector<std::size_t>& group) {
  std::vector<std::vector<Unit>> hosts(p.host_cores.size());
  for (std::size_t r = 0; r < p.host.size(); ++r) {
    if (p.host[r] == kNoHost) continue;
    auto& units = hosts[p.host[r]];
    auto it = std::find_if(units.begin(), units.end(),
                           [&](const Unit& u) { return group[u.ranks.front()] == group[r]; });
    if (it == units.end()) it = units.insert(units.end(), Unit{{}, {}, 0.0});
    it->ranks.push_back(r);
  }
  for (auto& units : hosts) {
    for (Unit& u : units) {
      const double m = static_cast<double>(u.ranks.size());
      for (const std::size_t r : u.ranks) {
        u.cost.cpu_overhead += cost[r].cpu_overhead / m;
        u.cost.cpu_per_sample += cost[r].cpu_per_sample / m;
        u.cost.wait_overhead += cost[r].wait_overhead / m;
        u.cost.wait_per_sample += cost[r].wait_per_sample / m;
        u.cost.cpu_error += cost[r].cpu_error / m;
        u.cpus += p.cpus[r] / m;
      }
    }
    std::stable_sort(units.begin(), units.end(), [](const Unit& a, const Unit& b) {
      return a.cost.cpu_per_sample < b.cost.cpu_per_sample;
    });
  }
  return hosts;
}

// Samples one member of `u` could take by time t on its own, within [lo, hi].
double own_capacity(const Unit& u, double t, double lo, double hi) {
  const HostCost& c = u.cost;
  const double per_sample = c.cpu_per_sample / u.cpus + c.wait_per_sample;
  const double room = t - c.cpu_overhead / u.cpus - c.wait_overhead;
  if (!(per_sample > 0.0)) return room > 0.0 ? hi : lo;
  return std::clamp(room / per_sample, lo, hi);
}

// Units whose CPU cost per sample is within this share of the cheapest of
// their tier (or kAlikeBands standard errors, at most kMaxTieCost) share
// the budget in proportion to what each could take (fill_host): CPU-seconds
// measured on a busy host differ by this much between identical workers, and
// the fill must not turn such noise into an idle worker.
constexpr double kTieCost = 0.2;
// However uncertain, costs more than this far apart (relative) never tie: a
// core twice as fast is used as such once its samples show it. Wider than
// kMaxAlikeCost: a fill that idles a worker on a few noisy samples costs
// more than a split that keeps it busy a little too long.
constexpr double kMaxTieCost = 1.0;

// Whether unit `b` (the dearer) ties with `a` (the cheapest of a tier).
bool ties(const Unit& a, const Unit& b) {
  const double limit =
      std::clamp(kAlikeBands * std::hypot(a.cost.cpu_error, b.cost.cpu_error), kTieCost, kMaxTieCost);
  return b.cost.cpu_per_sample <= (1.0 + limit) * a.cost.cpu_per_sample;
}

// Fills one host's units by time t (solve_on_hosts' terms) into `parts`;
// returns the samples it holds. Tiers of tied units (cheapest first) are
// filled in turn; a tier the budget cannot fill gets the same fraction of
// each member's own capacity, so its workers run at equal rates.
double fill_host(const std::vector<Unit>& units, double cores, double t, double lo, double hi,
                 std::vector<double>& parts) {
  double budget = cores * t, held = 0.0;
  for (const Unit& u : units) budget -= static_cast<double>(u.ranks.size()) * u.cost.cpu(lo);
  for (std::size_t first = 0; first < units.size();) {
    std::size_t end = first + 1;
    while (end < units.size() && ties(units[first], units[end])) ++end;
    // What each unit of the tier could take, and the CPU-seconds it needs:
    // `start` for a worker given its first sample, `per` per extra sample.
    std::vector<double> extra(end - first);
    double start = 0.0, per = 0.0;
    for (std::size_t k = first; k < end; ++k) {
      const Unit& u = units[k];
      const double m = static_cast<double>(u.ranks.size());
      extra[k - first] = std::max(0.0, own_capacity(u, t, lo, hi) - lo);
      if (extra[k - first] > 0.0 && lo <= 0.0) start += m * u.cost.cpu_overhead;
      per += m * extra[k - first] * u.cost.cpu_per_sample;
    }
    double fraction = 1.0;
    if (start + per > budget) fraction = per > 0.0 ? std::max(0.0, (budget - start) / per) : 0.0;
    if (fraction > 0.0) budget -= start + fraction * per;
    for (std::size_t k = first; k < end; ++k) {
      const double take = lo + fraction * extra[k - first];
      for (const std::size_t r : units[k].ranks) parts[r] = take;
      held += static_cast<double>(units[k].ranks.size()) * take;
    }
    first = end;
  }
  return held;
}

}  // namespace

std::vector<std::size_t> host_groups(const Placement& p, const std::vector<HostCost>& cost,
                                     const std::vector<std::size_t>& batches, double typical_batch,
                                     const std::vector<std::size_t>& previous) {
  const std::size_t n = p.host.size();
  std::vector<std::size_t> parent(n), order(n);
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto own = [&](std::size_t r) { return batches[r] > 0 ? static_cast<double>(batches[r]) : typical_batch; };
  auto per_sample = [&](std::size_t r) { return cost[r].cpu(typical_batch) / typical_batch; };
  auto alike = [&](std::size_t a, std::size_t b, double span) {
    if (p.host[a] == kNoHost || p.host[a] != p.host[b] ||
        std::abs(p.cpus[a] - p.cpus[b]) > kAlikeCost * std::max(p.cpus[a], p.cpus[b])) {
      return false;
    }
    const double limit = span * std::clamp(kAlikeBands * std::hypot(cost[a].cpu_error, cost[b].cpu_error),
                                           kAlikeCost, kMaxAlikeCost);
    // At the batches they run; an idle worker's model is compared at its
    // neighbour's batch only (far from its own samples it extrapolates).
    const bool idle_a = batches[a] == 0, idle_b = batches[b] == 0;
    for (const double x : {own(a), own(b)}) {
      if ((idle_a && !idle_b && x == own(a)) || (idle_b && !idle_a && x == own(b))) continue;
      const double ca = cost[a].cpu(x) + cost[a].wait(x), cb = cost[b].cpu(x) + cost[b].wait(x);
      if (std::abs(ca - cb) > limit * std::max(ca, cb)) return false;
    }
    return true;
  };
  // Chains of neighbours in cost order, host by host and CPUs by CPUs (a
  // worker with other CPUs between two alike ones must not cut them apart).
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::make_tuple(p.host[a], p.cpus[a], per_sample(a)) <
           std::make_tuple(p.host[b], p.cpus[b], per_sample(b));
  });
  for (std::size_t k = 1; k < n; ++k) {
    if (alike(order[k - 1], order[k], 1.0)) detail::join(parent, order[k - 1], order[k]);
  }
  // Hysteresis: members of a previous group stay joined while they remain
  // alike within kHoldSpan tolerances, so noise near the tolerance cannot
  // split identical workers (and leave one idle on a stale model).
  if (previous.size() == n) {
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t b = a + 1; b < n; ++b) {
        if (previous[a] == previous[b] && alike(a, b, kHoldSpan)) detail::join(parent, a, b);
      }
    }
  }
  std::vector<std::size_t> group(n);
  for (std::size_t r = 0; r < n; ++r) group[r] = detail::root(parent, r);  // the lowest rank of each set
  return group;
}

bool Placement::shared() const {
  std::vector<std::size_t> workers(host_cores.size(), 0);
  for (const std::size_t h : host) {
    if (h != kNoHost && ++workers[h] >= 2) return true;
  }
  return false;
}

bool Placement::oversubscribed() const {
  std::vector<double> wanted(host_cores.size(), 0.0);
  for (std::size_t r = 0; r < host.size() && r < cpus.size(); ++r) {
    if (host[r] != kNoHost) wanted[host[r]] += cpus[r];
  }
  for (std::size_t h = 0; h < wanted.size(); ++h) {
    if (wanted[h] > host_cores[h]) return true;
  }
  return false;
}

void Placement::check(std::size_t workers) const {
  if (host.empty() && cpus.empty() && host_cores.empty()) return;  // no placement: all independent
  if (host.size() != workers || cpus.size() != workers) {
    throw UsageError(fmt::format("placement describes {} hosts and {} CPU counts for {} workers", host.size(),
                                 cpus.size(), workers));
  }
  for (std::size_t r = 0; r < workers; ++r) {
    if (host[r] != kNoHost && host[r] >= host_cores.size()) {
      throw UsageError(fmt::format("worker {} is on host {} of {}", r, host[r], host_cores.size()));
    }
    if (!(cpus[r] > 0.0) || !std::isfinite(cpus[r])) {
      throw UsageError(fmt::format("worker {} can use {} CPUs (must be > 0)", r, cpus[r]));
    }
  }
  for (const double c : host_cores) {
    if (!(c > 0.0) || !std::isfinite(c))
      throw UsageError(fmt::format("a host has {} cores (must be > 0)", c));
  }
}

std::vector<double> share_cores(const std::vector<double>& work, const std::vector<double>& cap,
                                double cores) {
  HETRAIN_ENFORCE_EQ(work.size(), cap.size());
  std::vector<double> finish(work.size(), 0.0), left = work;
  std::vector<std::size_t> active;
  active.reserve(work.size());
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (work[i] > 0.0) active.push_back(i);
  }
  double now = 0.0;
  while (!active.empty()) {
    std::vector<double> caps(active.size());
    for (std::size_t k = 0; k < active.size(); ++k) caps[k] = cap[active[k]];
    const std::vector<double> rate = fair_rates(caps, cores);
    double dt = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < active.size(); ++k) dt = std::min(dt, left[active[k]] / rate[k]);
    now += dt;
    std::vector<std::size_t> still;
    for (std::size_t k = 0; k < active.size(); ++k) {
      const std::size_t i = active[k];
      if (left[i] / rate[k] <= dt * (1.0 + kFinishTolerance)) {
        finish[i] = now;
      } else {
        left[i] -= rate[k] * dt;
        still.push_back(i);
      }
    }
    active = std::move(still);
  }
  return finish;
}

std::vector<double> host_finish_times(const Placement& p, const std::vector<WorkerModel>& wall,
                                      const std::vector<HostCost>& cost,
                                      const std::vector<std::size_t>& split) {
  const std::size_t n = split.size();
  HETRAIN_ENFORCE_EQ(wall.size(), n);
  HETRAIN_ENFORCE_EQ(cost.size(), n);
  std::vector<double> finish(n, 0.0);
  std::vector<std::vector<std::size_t>> members(p.host_cores.size());
  for (std::size_t r = 0; r < n; ++r) {
    if (p.host[r] != kNoHost) {
      members[p.host[r]].push_back(r);
    } else if (split[r] > 0) {
      finish[r] = wall[r].overhead + static_cast<double>(split[r]) / wall[r].speed;
    }
  }
  for (std::size_t h = 0; h < members.size(); ++h) {
    std::vector<double> work, cap;
    for (const std::size_t r : members[h]) {
      work.push_back(cost[r].cpu(static_cast<double>(split[r])));
      cap.push_back(p.cpus[r]);
    }
    const std::vector<double> done = share_cores(work, cap, p.host_cores[h]);
    for (std::size_t k = 0; k < members[h].size(); ++k) {
      const std::size_t r = members[h][k];
      finish[r] = split[r] > 0 ? done[k] + cost[r].wait(static_cast<double>(split[r])) : 0.0;
    }
  }
  return finish;
}

double host_makespan(const Placement& p, const std::vector<WorkerModel>& wall,
                     const std::vector<HostCost>& cost, const std::vector<std::size_t>& split) {
  const std::vector<double> t = host_finish_times(p, wall, cost, split);
  return t.empty() ? 0.0 : *std::max_element(t.begin(), t.end());
}

SolvedSplit solve_on_hosts(const Placement& p, const std::vector<WorkerModel>& wall,
                           const std::vector<HostCost>& cost, const std::vector<std::size_t>& group,
                           std::size_t total, const Bounds& bounds) {
  const std::size_t n = wall.size();
  check_feasible(n, total, bounds);
  const detail::RealBounds range = detail::real_bounds(bounds);
  const double lo = range.lo, hi = range.hi;
  const double b = static_cast<double>(total);
  const std::vector<std::vector<Unit>> hosts = units_by_host(p, cost, group);
  std::vector<double> parts(n, 0.0);
  auto held = [&](double t) {
    double sum = 0.0;
    for (std::size_t r = 0; r < n; ++r) {
      if (p.host[r] != kNoHost) continue;
      parts[r] = std::clamp((t - wall[r].overhead) * wall[r].speed, lo, hi);
      sum += parts[r];
    }
    for (std::size_t h = 0; h < hosts.size(); ++h)
      sum += fill_host(hosts[h], p.host_cores[h], t, lo, hi, parts);
    return sum;
  };
  // T_hi: the slowest worker alone could do the whole batch.
  double t_hi = 0.0;
  for (std::size_t r = 0; r < n; ++r) {
    const double alone =
        p.host[r] == kNoHost
            ? wall[r].overhead + b / wall[r].speed
            : cost[r].cpu(b) / std::min(p.cpus[r], p.host_cores[p.host[r]]) + cost[r].wait(b);
    t_hi = std::max(t_hi, alone);
  }
  held(detail::smallest_time(held, b, t_hi));
  for (double& x : parts) x = std::max(detail::kTinyShare, x);
  SolvedSplit out;
  out.split = split_proportional(parts, total, bounds);
  out.makespan = host_makespan(p, wall, cost, out.split);
  return out;
}

}  // namespace hetrain::alloc

#include "hetrain/alloc/hosts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "hetrain/common/error.h"

namespace hetrain::alloc {
namespace {

// Workers due to finish within this relative margin of the next finish finish
// with it: rounding must not leave a sliver of work for another round.
constexpr double kFinishTolerance = 1e-12;

// Samples one member of `u` could take by time t on its own, within [lo, hi].
double own_capacity(const HostUnit& u, double t, const RealBounds& r) {
  const double per = u.cpu_per_sample / u.cpus + u.wait_per_sample;
  const double room = t - u.cpu_overhead / u.cpus - u.wait_overhead;
  if (!(per > 0.0)) return room > 0.0 ? r.hi : r.lo;
  return std::clamp(room / per, r.lo, r.hi);
}

using CapClass = CoreShare::CapClass;

// Max-min fair rates of the classes (ascending cap) on `cores`.
void fair_rates(std::vector<CapClass>& classes, double cores) {
  double left = cores, active = 0.0;
  for (const CapClass& c : classes) active += static_cast<double>(c.end - c.head);
  for (CapClass& c : classes) {
    const double n = static_cast<double>(c.end - c.head);
    if (n == 0.0) continue;
    c.rate = std::min(c.cap, left / active);
    left -= c.rate * n, active -= n;
  }
}

}  // namespace

std::vector<double> share_cores(const std::vector<double>& work, const std::vector<double>& cap,
                                double cores) {
  CoreShare scratch;
  return share_cores(work, cap, cores, scratch);
}

const std::vector<double>& share_cores(const std::vector<double>& work, const std::vector<double>& cap, double cores,
                                       CoreShare& scratch) {
  HETRAIN_ENFORCE_EQ(work.size(), cap.size());
  std::vector<double>& finish = scratch.finish;
  std::vector<std::size_t>& order = scratch.order;
  std::vector<CapClass>& classes = scratch.classes;
  finish.assign(work.size(), 0.0), order.clear(), classes.clear();
  for (std::size_t i = 0; i < work.size(); ++i)
    if (work[i] > 0.0) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return cap[a] != cap[b] ? cap[a] < cap[b] : work[a] < work[b];
  });
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (classes.empty() || cap[order[k]] != classes.back().cap) classes.push_back({cap[order[k]], k, k});
    classes.back().end = k + 1;
  }
  double now = 0.0;
  for (std::size_t done = 0; done < order.size();) {
    fair_rates(classes, cores);
    double dt = std::numeric_limits<double>::infinity();
    for (const CapClass& c : classes)
      if (c.head < c.end) dt = std::min(dt, (work[order[c.head]] - c.served) / c.rate);
    now += dt;
    for (CapClass& c : classes) {
      if (c.head == c.end) continue;
      c.served += c.rate * dt;
      while (c.head < c.end && work[order[c.head]] - c.served <= kFinishTolerance * work[order[c.head]] +
                                                                    kFinishTolerance * c.rate * dt) {
        finish[order[c.head++]] = now, ++done;
      }
    }
  }
  return finish;
}

HostCostModel::HostCostModel(std::vector<std::size_t> unit_of, std::vector<HostUnit> units,
                             std::vector<double> host_cores)
    : StepCostModel(std::move(unit_of)), units_(std::move(units)), cores_(std::move(host_cores)) {
  HETRAIN_ENFORCE_EQ(units_.size(), this->units());
  by_host_.resize(cores_.size());
  tier_.resize(units_.size());
  for (std::size_t u = 0; u < units_.size(); ++u) {
    // A unit of its own tier is numbered past every named tier.
    tier_[u] = units_[u].tier == HostUnit::kOwnTier ? units_.size() + u : units_[u].tier;
    if (units_[u].host == kNoHost) {
      devices_.push_back(u);
    } else {
      HETRAIN_ENFORCE_LT(units_[u].host, cores_.size());
      by_host_[units_[u].host].push_back(u);
    }
  }
  for (auto& host : by_host_) order_by_tier(host);
  workers_by_host_.resize(cores_.size());
  for (std::size_t i = 0; i < workers(); ++i)
    if (const std::size_t h = units_[this->unit_of(i)].host; h != kNoHost) workers_by_host_[h].push_back(i);
}

// Sorts one host's units by their tier's mean CPU-seconds per sample (members
// counted), then by tier, so each tier is contiguous. O(k log k).
void HostCostModel::order_by_tier(std::vector<std::size_t>& host) const {
  std::map<std::size_t, std::pair<double, double>> sum;  // tier: (cost x members, members)
  for (const std::size_t u : host) {
    auto& [cost, members] = sum[tier_[u]];
    cost += static_cast<double>(count(u)) * units_[u].cpu_per_sample;
    members += static_cast<double>(count(u));
  }
  auto mean = [&](std::size_t u) {
    const auto& [cost, members] = sum.at(tier_[u]);
    return cost / members;
  };
  std::sort(host.begin(), host.end(), [&](std::size_t a, std::size_t b) {
    const double ca = mean(a), cb = mean(b);
    if (ca != cb) return ca < cb;
    return tier_[a] != tier_[b] ? tier_[a] < tier_[b] : a < b;
  });
}

// The fractional knapsack of hosts.h's terms: tiers in order, each filled up
// to its members' own capacities while the budget lasts; the tier it runs out
// in gets the same fraction of each member's capacity (equal rates), the
// tiers after it only the lower bound. O(k) per call.
double HostCostModel::fill_host(std::size_t h, double t, const RealBounds& r, std::vector<double>& share) const {
  const std::vector<std::size_t>& host = by_host_[h];
  double budget = cores_[h] * t, held = 0.0;
  for (const std::size_t u : host) budget -= static_cast<double>(count(u)) * units_[u].cpu(r.lo);
  for (std::size_t first = 0; first < host.size();) {
    std::size_t end = first;
    // CPU-seconds the tier needs: `start` for workers given a first sample,
    // `per` for all it could add by t.
    double start = 0.0, per = 0.0;
    for (; end < host.size() && tier_[host[end]] == tier_[host[first]]; ++end) {
      const std::size_t u = host[end];
      const HostUnit& x = units_[u];
      const double m = static_cast<double>(count(u));
      share[u] = std::max(0.0, own_capacity(x, t, r) - r.lo);  // for now: what it alone could add
      if (share[u] > 0.0 && r.lo <= 0.0) start += m * x.cpu_overhead;
      per += m * share[u] * x.cpu_per_sample;
    }
    double fraction = 1.0;
    if (start + per > budget) fraction = per > 0.0 && budget > start ? (budget - start) / per : 0.0;
    if (fraction > 0.0) budget -= start + fraction * per;
    for (std::size_t k = first; k < end; ++k) {
      share[host[k]] = r.lo + fraction * share[host[k]];
      held += static_cast<double>(count(host[k])) * share[host[k]];
    }
    first = end;
  }
  return held;
}

double HostCostModel::fill(double t, const RealBounds& r, std::vector<double>& share) const {
  double held = 0.0;
  for (const std::size_t u : devices_) {
    share[u] = std::clamp((t - units_[u].wall_overhead) / units_[u].wall_per_sample, r.lo, r.hi);
    held += static_cast<double>(count(u)) * share[u];
  }
  for (std::size_t h = 0; h < cores_.size(); ++h) held += fill_host(h, t, r, share);
  return held;
}

double HostCostModel::upper_time(double total) const {
  double t = 0.0;
  for (const HostUnit& u : units_) {
    t = std::max(t, u.host == kNoHost ? u.wall_overhead + total * u.wall_per_sample
                                      : u.cpu(total) / std::min(u.cpus, cores_[u.host]) + u.wait(total));
  }
  return t;
}

const std::vector<double>& HostCostModel::host_finish_times(std::size_t h, const std::vector<std::size_t>& split,
                                                            HostScratch& scratch) const {
  const std::vector<std::size_t>& members = workers_by_host_[h];
  std::vector<double>&work = scratch.work, &cap = scratch.cap;
  work.clear(), cap.clear();
  for (const std::size_t i : members) {
    work.push_back(units_[unit_of(i)].cpu(static_cast<double>(split[i])));
    cap.push_back(units_[unit_of(i)].cpus);
  }
  std::vector<double>& finish = scratch.share.finish;
  share_cores(work, cap, cores_[h], scratch.share);
  for (std::size_t k = 0; k < members.size(); ++k) {
    const auto b = static_cast<double>(split[members[k]]);
    finish[k] = b > 0.0 ? finish[k] + units_[unit_of(members[k])].wait(b) : 0.0;
  }
  return finish;
}

std::vector<double> HostCostModel::finish_times(const std::vector<std::size_t>& split) const {
  std::vector<double> finish(split.size(), 0.0);
  for (std::size_t i = 0; i < split.size(); ++i)
    if (const HostUnit& u = units_[unit_of(i)]; u.host == kNoHost) finish[i] = u.wall(static_cast<double>(split[i]));
  HostScratch scratch;  // one host's, reused: a decision prices splits of every host several times
  for (std::size_t h = 0; h < cores_.size(); ++h) {
    const std::vector<double>& done = host_finish_times(h, split, scratch);
    for (std::size_t k = 0; k < done.size(); ++k) finish[workers_by_host_[h][k]] = done[k];
  }
  return finish;
}

double HostCostModel::makespan(const std::vector<std::size_t>& split) const {
  const std::vector<double> t = finish_times(split);
  return t.empty() ? 0.0 : *std::max_element(t.begin(), t.end());
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
  if (!kind.empty() && kind.size() != workers) {
    throw UsageError(fmt::format("placement gives {} kinds for {} workers", kind.size(), workers));
  }
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
    if (!(c > 0.0) || !std::isfinite(c)) throw UsageError(fmt::format("a host has {} cores (must be > 0)", c));
  }
}

}  // namespace hetrain::alloc

#include "hetrain/alloc/proposer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <utility>

#include "hetrain/alloc/device_cost.h"
#include "hetrain/alloc/hosts.h"

namespace hetrain::alloc {
namespace {

// The fewest seconds a planned time may be scaled to by optimism (a tenth):
// an idle worker is never planned as free.
constexpr double kMinOptimism = 0.1;

HostUnit& operator+=(HostUnit& a, const HostUnit& b) {
  a.cpu_overhead += b.cpu_overhead, a.cpu_per_sample += b.cpu_per_sample;
  a.wait_overhead += b.wait_overhead, a.wait_per_sample += b.wait_per_sample;
  a.wall_overhead += b.wall_overhead, a.wall_per_sample += b.wall_per_sample;
  return a;
}

HostUnit scaled(HostUnit u, double f) {
  u.cpu_overhead *= f, u.cpu_per_sample *= f, u.wait_overhead *= f, u.wait_per_sample *= f;
  u.wall_overhead *= f, u.wall_per_sample *= f;
  return u;
}

}  // namespace

// Blom's approximation below 9, the extreme-value expansion above: a noise
// model's number, not a tuned one.
double expected_max_normal(std::size_t n) {
  static constexpr double kSmall[] = {0.0, 0.0, 0.5642, 0.8463, 1.0294, 1.1630, 1.2672, 1.3522, 1.4236};
  if (n < std::size(kSmall)) return kSmall[n];
  const double l = std::sqrt(2.0 * std::log(static_cast<double>(n)));
  constexpr double kEuler = 0.5772156649;
  return l - (std::log(std::log(static_cast<double>(n))) + std::log(4.0 * M_PI)) / (2.0 * l) + kEuler / l;
}

Proposer::Proposer(std::size_t global_batch, Bounds bounds, Placement placement, AdaptiveTuning tuning)
    : global_batch_(global_batch),
      bounds_(bounds),
      placement_(std::move(placement)),
      tuning_(tuning),
      hosts_(placement_.oversubscribed()),
      kinds_(std::any_of(placement_.kind.begin(), placement_.kind.end(), [](std::size_t k) { return k != 0; })),
      grouper_(tuning),
      tiers_(tuning) {
  for (std::size_t i = 0; hosts_ && i < placement_.host.size(); ++i)
    if (placement_.host[i] != kNoHost) hosted_.push_back(i);
}

bool Proposer::on_cpu(std::size_t i) const { return hosts_ && placement_.host[i] != kNoHost; }

std::vector<bool> Proposer::on_cpu() const {
  std::vector<bool> out(placement_.host.size(), false);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = on_cpu(i);
  return out;
}

struct Proposer::Plan {
  std::vector<HostUnit> line;  // by worker, noise margin and optimism applied
  std::vector<GroupKey> key;
  std::vector<GroupKey> cpu_key;  // CPU-seconds per sample on a host (tiers), by Proposer::hosted_
  double error = 0.0;
};

// The batch each worker is keyed at: where it runs, an idle one at the
// typical batch (away from its samples a line extrapolates with an error
// that makes everyone alike); a member of a unit of the last call at the
// most any member runs, where the unit's step is set. Per sample, a line's
// overhead weighs more at a smaller batch: a member a sample short (the
// remainder of an uneven division, one probed sample of an idle unit) keyed
// at its own batch reads slower than its twins by that alone, however
// alike their lines, and noise then carries it out of the unit.
std::vector<double> Proposer::key_batches(const std::vector<std::size_t>& incumbent, double typical) const {
  const std::size_t n = incumbent.size();
  const std::vector<std::size_t>& unit = grouper_.last();
  std::vector<std::size_t> most(n, 0);
  const bool units = unit.size() == n;
  if (units)
    for (std::size_t i = 0; i < n; ++i) most[unit[i]] = std::max(most[unit[i]], incumbent[i]);
  std::vector<double> at(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t b = units ? most[unit[i]] : incumbent[i];
    at[i] = b > 0 ? static_cast<double>(b) : typical;
  }
  return at;
}

Proposer::Plan Proposer::plan(const Estimator& e, const std::vector<std::size_t>& incumbent) const {
  const std::size_t n = e.workers();
  const double typical = std::max(1.0, static_cast<double>(global_batch_) / static_cast<double>(n));
  const double margin = expected_max_normal(2);
  const std::vector<double> key_at = key_batches(incumbent, typical);
  Plan p;
  p.line.resize(n), p.key.resize(n), p.cpu_key.resize(hosted_.size());
  for (std::size_t i = 0, hosted = 0; i < n; ++i) {
    const LineEstimate& w = e.wall(i);
    const bool cpu = on_cpu(i) && e.cpu(i).known();
    HostUnit& u = p.line[i];
    const LineEstimate& main = cpu ? e.cpu(i) : w;
    if (cpu) {
      u.host = placement_.host[i], u.cpus = placement_.cpus[i];
      u.cpu_overhead = main.overhead(), u.cpu_per_sample = main.per_sample();
      if (e.wait(i).known()) u.wait_overhead = e.wait(i).overhead(), u.wait_per_sample = e.wait(i).per_sample();
    } else {
      u.wall_overhead = w.overhead(), u.wall_per_sample = w.per_sample();
    }
    const double at = key_at[i];
    const double t = cpu ? u.cpu(at) / u.cpus + u.wait(at) : u.wall_overhead + at * u.wall_per_sample;
    // The noise margin and the optimism scale the plan, not the key: noise
    // estimates of identical workers differ, their means do not.
    // A host worker's time is its CPU share plus its time off the CPU: their
    // errors add as absolute ones, so a small, noisy CPU part (an emulated
    // device's few milliseconds beside a 100 ms sleep) moves the whole little.
    const bool waits = cpu && e.wait(i).known();
    const double on = cpu ? u.cpu(at) / u.cpus : t, off = waits ? u.wait(at) : 0.0;
    auto of_time = [&](double on_error, double off_error) {
      return t > 0.0 ? std::sqrt(on * on_error * on * on_error + off * off_error * off * off_error) / t : on_error;
    };
    const double err = of_time(main.error(at), waits ? e.wait(i).error(at) : 0.0);
    double f = (1.0 + margin * w.noise()) * w.mean_factor();
    if (incumbent[i] == 0) {  // optimism for what may have changed unseen (estimator.h)
      const double unseen = of_time(main.unseen_error(), waits ? e.wait(i).unseen_error() : 0.0);
      f *= std::max(kMinOptimism, 1.0 - tuning_.explore_sigmas * unseen);
    }
    u = scaled(u, f);
    const std::size_t klass = klass_of(i, cpu);
    const double reach = of_time(main.reach(tuning_), waits ? e.wait(i).reach(tuning_) : 0.0);
    // A change not yet confirmed does not move a worker's unit: its key is
    // the time it had until the alarm (the plan uses its new line, pooled with its
    // unit's). Identical workers that change together alarm a step or two
    // apart, and a sort by the new level would carry the first past others.
    const double before = std::exp(-main.unconfirmed_shift(tuning_)) * on +
                          (waits ? std::exp(-e.wait(i).unconfirmed_shift(tuning_)) * off : 0.0);
    p.key[i] = {std::max(before / at, 1e-15), err, klass, reach, 1.0 / at};
    // The resource a saturated host rations is its CPU: tiers compare that
    // alone, on the same host whatever the CPUs.
    if (on_cpu(i))  // hosted_[hosted] == i
      p.cpu_key[hosted++] = {cpu ? std::max(u.cpu(at) / (f * at), 1e-15) : 1.0, cpu ? main.error(at) : 0.0,
                             cpu ? u.host + 1 : 0, cpu ? main.reach(tuning_) : 0.0};
    if (incumbent[i] > 0) p.error = std::max(p.error, err);
  }
  with_kinds(p.key);
  if (hosts_) with_kinds(p.cpu_key, hosted_);
  return p;
}

// A worker's class (grouper.h): what its placement says of its hardware.
// Workers given different CPUs (threads, affinity, a CPU quota) or on
// machines of different sizes are different hardware, as different kinds
// are, however noise makes them look (property training seed 82: a worker
// under a quota of 0.78 CPU pooled with the unquoted workers of another
// machine, apart from its two twins). Identical machines stay alike: the
// host itself counts only where its cores are shared out by the plan. A
// worker that says its kind (a GPU's model) is described by it: like GPUs
// in machines of different sizes, with their CPU threads, stay alike.
std::size_t Proposer::klass_of(std::size_t i, bool cpu) const {
  if (i >= placement_.host.size() || placement_.host[i] == kNoHost) return 0;
  if (!cpu && placement_.kind_of(i) != 0) return 0;  // with_kinds tells kinds apart
  // Bit 63: a planned host's class; bits 32-62: CPUs in thousandths; below: the host or its cores.
  constexpr std::size_t kPlannedHost = std::size_t{1} << 63;
  const std::size_t host = placement_.host[i];
  const auto millis = static_cast<std::size_t>(std::llround(placement_.cpus[i] * 1000.0)) << 32;
  if (cpu) return kPlannedHost | millis | (host + 1);
  return millis | static_cast<std::size_t>(std::llround(placement_.host_cores[host]));
}

// Each key's class refined by its worker's kind: equal (class, kind) pairs,
// equal classes; workers of different kinds are never alike. O(N): a hash
// map of the pairs seen (nothing to do where no kind is said).
void Proposer::with_kinds(std::vector<GroupKey>& keys, const std::vector<std::size_t>& ranks) const {
  if (!kinds_) return;
  struct PairHash {
    std::size_t operator()(const std::pair<std::size_t, std::size_t>& p) const {
      return std::hash<std::size_t>{}(p.first) ^ (std::hash<std::size_t>{}(p.second) * 0x9e3779b97f4a7c15ULL);
    }
  };
  std::unordered_map<std::pair<std::size_t, std::size_t>, std::size_t, PairHash> ids;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::size_t rank = ranks.empty() ? i : ranks[i];
    const auto [it, added] = ids.try_emplace({keys[i].klass, placement_.kind_of(rank)}, ids.size());
    keys[i].klass = it->second;
  }
}

std::unique_ptr<StepCostModel> Proposer::model(const Plan& p, const std::vector<std::size_t>& unit_of,
                                               const std::vector<std::size_t>& tier_of) const {
  const std::size_t units = unit_of.empty() ? 0 : *std::max_element(unit_of.begin(), unit_of.end()) + 1;
  std::vector<HostUnit> pooled(units);
  std::vector<double> members(units, 0.0);
  for (std::size_t i = 0; i < unit_of.size(); ++i) {
    HostUnit& u = pooled[unit_of[i]];
    if (members[unit_of[i]] == 0.0) {
      u.host = p.line[i].host, u.cpus = p.line[i].cpus;
      if (!tier_of.empty()) u.tier = tier_of[i];  // the unit's lowest rank's: its members are alike
    }
    u += p.line[i];
    members[unit_of[i]] += 1.0;
  }
  for (std::size_t u = 0; u < units; ++u) {
    const HostUnit one = pooled[u];
    pooled[u] = scaled(one, 1.0 / members[u]);
    pooled[u].host = one.host, pooled[u].cpus = one.cpus, pooled[u].tier = one.tier;
  }
  if (!hosts_) {
    std::vector<DeviceUnit> lines;
    lines.reserve(pooled.size());
    for (const HostUnit& u : pooled) lines.push_back({u.wall_overhead, std::max(u.wall_per_sample, 1e-15)});
    return std::make_unique<DeviceCostModel>(unit_of, std::move(lines));
  }
  return std::make_unique<HostCostModel>(unit_of, std::move(pooled), placement_.host_cores);
}

// A worker whose line is not settled (estimator.h) keeps one sample: idled
// on a first sample that fell in a burst, it would not be measured again
// for hundreds of steps. Each is taken from the worker holding the most, as
// a probe's; kept where that costs less than a move is worth (min_gain of
// the makespan: one sample of a saturated host's shared CPU, not a worker
// too slow for one sample).
void Proposer::keep_in_sight(const Estimator& e, const StepCostModel& m, SolvedSplit& best) const {
  std::vector<std::size_t> split = best.split, kept;
  for (std::size_t i = 0; i < split.size(); ++i)
    if (split[i] == 0 && !e.settled(i)) kept.push_back(i);
  if (kept.empty() || !give_one_each(split, kept, std::max<std::size_t>(bounds_.min_local, 1))) return;
  const double makespan = m.makespan(split);
  if (makespan > (1.0 + tuning_.min_gain) * best.makespan) return;
  best.split = std::move(split), best.makespan = makespan;
}

// Where workers are priced only together (an oversubscribed host), no
// single sample moves after rounding (solve's settle prices each worker
// alone), so a device beside the hosts keeps a sample it cannot afford or
// misses one it could take. The model's own moves for them (improve, from
// the rounded split and from the split running, which stays where it is a
// local best) are kept only where they beat the rounded split by more than
// the error of the workers whose shares they change: over point estimates,
// splits closer than that are told apart by noise, and identical workers of
// different units would be taken to different optima. A worker whose line
// is not settled is known to no error at another batch (one sample cannot
// tell its overhead from its slope), so its share does not move.
void Proposer::settle_beside_hosts(const Estimator& e, const Plan& p, const StepCostModel& m,
                                   const std::vector<std::size_t>& incumbent, double now, SolvedSplit& best) const {
  if (m.workers() == 0 || m.alone(0, 1.0) >= 0.0) return;  // rounding settled every worker (solve)
  std::vector<bool> settled(m.workers());
  for (std::size_t i = 0; i < settled.size(); ++i) settled[i] = e.settled(i);
  SolvedSplit found = best;
  if (const std::optional<double> t = m.improve(bounds_, settled, found.split)) found.makespan = *t;
  std::size_t held = 0;
  bool within = incumbent.size() == m.workers();
  for (const std::size_t b : incumbent) held += b, within = within && b >= bounds_.min_local && b <= bounds_.max_local;
  if (within && held == global_batch_ && incumbent != best.split) {  // else the same end
    std::vector<std::size_t> from = incumbent;
    const double makespan = m.improve(bounds_, settled, from).value_or(now);
    if (!(makespan > found.makespan)) found = {std::move(from), makespan};  // a tie keeps the split running
  }
  double error = 0.0;
  for (std::size_t i = 0; i < found.split.size(); ++i)
    if (found.split[i] != best.split[i]) error = std::max(error, p.key[i].error);
  if (found.makespan < best.makespan * (1.0 - error)) best = std::move(found);
}

Proposal Proposer::propose(const Estimator& e, const std::vector<std::size_t>& incumbent) {
  const Plan p = plan(e, incumbent);
  const std::vector<std::size_t> unit_of = grouper_.group(p.key);
  // Tiers: the same Grouper's alike on CPU cost alone, with its own hysteresis.
  // Off the hosts no worker has a tier.
  std::vector<std::size_t> tier_of;
  if (hosts_) {
    const std::vector<std::size_t> hosted_tier = tiers_.group(p.cpu_key);
    tier_of.assign(e.workers(), HostUnit::kOwnTier);
    for (std::size_t j = 0; j < hosted_.size(); ++j) tier_of[hosted_[j]] = hosted_tier[j];
  }
  const std::unique_ptr<StepCostModel> m = model(p, unit_of, tier_of);
  SolvedSplit best = solve(*m, global_batch_, bounds_);
  const double now = m->makespan(incumbent);
  settle_beside_hosts(e, p, *m, incumbent, now, best);
  keep_in_sight(e, *m, best);
  Proposal out;
  out.split = std::move(best.split);
  out.best = best.makespan;
  out.now = now;
  out.error = p.error;
  return out;
}

}  // namespace hetrain::alloc

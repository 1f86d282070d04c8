#include "hetrain/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <random>

#include "hetrain/alloc/policy.h"
#include "hetrain/common/error.h"
#include "hetrain/data/cursor.h"
#include "hetrain/sim/network_cost.h"
#include "hetrain/sim/noise.h"
#include "hetrain/sim/oracle.h"
#include "hetrain/sim/world.h"

namespace hetrain::sim {
namespace {

// The policy that is no policy: the world's own solver with the true mean
// costs (oracle.h), for comparison.
constexpr const char* kOracle = "oracle";
constexpr std::size_t kNever = static_cast<std::size_t>(-1);

// The cluster as it stands at some step: groups with their current counts
// and speeds; ranks are numbered group by group.
struct World {
  std::vector<WorkerGroup> groups;
  std::vector<double> group_share;  // static shares, per group
  std::vector<std::size_t> rank_group;
  std::vector<std::vector<std::size_t>> machine_ranks;  // per machine, its ranks

  void renumber(const Cluster& c) {
    rank_group.clear();
    for (std::size_t g = 0; g < groups.size(); ++g) rank_group.insert(rank_group.end(), groups[g].count, g);
    machine_ranks = ranks_by_machine(c, groups, rank_group);
  }
};

alloc::Bounds bounds_of(const std::vector<WorkerGroup>& groups) {
  // The allocation core takes one memory cap for all workers (as the
  // trainer's --max-local-batch): the smallest of the groups' caps.
  alloc::Bounds b;
  for (const auto& g : groups) {
    if (g.count > 0 && g.max_local_batch > 0) b.max_local = std::min(b.max_local, g.max_local_batch);
  }
  return b;
}

// What the old world's policy learned, carried to the new world's ranks as a
// resumed run would (alloc::PolicyConfig::known): the j-th worker of group g
// keeps the model of the j-th worker of g before; a worker that joins has
// none (speed 0), and the policy starts it from the median known speed.
std::vector<alloc::WorkerModel> carry_models(const std::vector<alloc::WorkerModel>& learned,
                                             const std::vector<std::size_t>& old_rank_group,
                                             const std::vector<std::size_t>& new_rank_group) {
  if (learned.size() != old_rank_group.size()) return {};
  std::vector<std::vector<alloc::WorkerModel>> by_group;
  for (std::size_t r = 0; r < learned.size(); ++r) {
    if (by_group.size() <= old_rank_group[r]) by_group.resize(old_rank_group[r] + 1);
    by_group[old_rank_group[r]].push_back(learned[r]);
  }
  std::vector<alloc::WorkerModel> known;
  std::vector<std::size_t> next(by_group.size(), 0);
  for (const std::size_t g : new_rank_group) {
    const bool have = g < by_group.size() && next[g] < by_group[g].size();
    known.push_back(have ? by_group[g][next[g]++] : alloc::WorkerModel{0.0, 0.0});
  }
  return known;
}

// Which workers share a machine's cores, and their kinds, as the trainer reports them.
alloc::Placement placement_of(const World& w, const Cluster& c) {
  alloc::Placement p;
  std::vector<std::string> said;  // by group: numbered per group, not per rank (groups are few)
  for (const WorkerGroup& g : w.groups) said.push_back(reported_kind(g));
  const std::vector<std::size_t> group_kind = alloc::number_kinds(said, std::string());
  for (const std::size_t g : w.rank_group) p.kind.push_back(group_kind[g]);
  if (c.machines.empty()) return p;
  for (const auto& m : c.machines) p.host_cores.push_back(m.cores);
  for (const std::size_t g : w.rank_group) {
    const WorkerGroup& group = w.groups[g];
    p.host.push_back(group.machine == kNoMachine ? alloc::kNoHost : group.machine);
    p.cpus.push_back(group.machine == kNoMachine ? 1.0 : cpu_cap(group));
  }
  return p;
}

std::unique_ptr<alloc::Policy> make_world_policy(const World& w, const Cluster& c, const SimOptions& o,
                                                 std::vector<alloc::WorkerModel> known = {}) {
  alloc::PolicyConfig pc;
  static_cast<alloc::AllocOptions&>(pc) = o.alloc;
  pc.known = std::move(known);
  pc.workers = w.rank_group.size();
  pc.global_batch = c.global_batch;
  // The world decides what the options cannot: its bounds and placement, and
  // the shares of the workers present now (by group, as they join and leave).
  pc.bounds = bounds_of(w.groups);
  pc.placement = placement_of(w, c);
  pc.shares.clear();
  if (o.alloc.name == "static" && !o.alloc.shares.empty()) {
    for (const std::size_t g : w.rank_group) pc.shares.push_back(w.group_share[g]);
  }
  return alloc::make_policy(pc);
}

void apply(const Event& e, const Cluster& c, World& w) {
  WorkerGroup& g = w.groups[e.group];
  switch (e.kind) {
    case EventKind::kSpeed:
      if (e.factor > 0.0) {
        const std::size_t count = g.count;
        g = scaled(c.groups[e.group], e.factor);
        g.count = count;
      } else {
        g.speed = e.speed;
      }
      break;
    case EventKind::kJoin:
      g.count += e.count;
      break;
    case EventKind::kLeave:
      if (e.count > g.count) {
        throw UsageError(fmt::format("event at step {}: {} workers of group '{}' leave but it has {}", e.step,
                                     e.count, g.name, g.count));
      }
      g.count -= e.count;
      break;
  }
}

// One simulated run, phase by phase as the trainer's step: slice -> compute
// -> reduce -> observe. Owns the world, the policy and the noise.
class Run {
 public:
  Run(const Cluster& c, const SimOptions& o);
  // One step of `batch` samples (`total` steps done before it).
  void step(std::size_t total, std::size_t batch);
  SimResult finish();

 private:
  void apply_events(std::size_t total);
  void start_world();
  std::vector<std::size_t> slice(std::size_t total, std::size_t batch);
  std::vector<double> compute(const std::vector<std::size_t>& split);
  double reduce();
  void observe(const std::vector<std::size_t>& split, const std::vector<double>& seconds);
  void record(const std::vector<std::size_t>& split, const StepTrace& t);
  void add_stats();

  const Cluster& c_;
  const SimOptions& o_;
  World w_;
  std::unique_ptr<alloc::Policy> policy_;  // null for the oracle
  std::vector<std::size_t> oracle_;        // the oracle's split, for oracle_batch_ samples
  std::size_t oracle_batch_ = 0;           // 0: to be solved (the world changed)
  std::size_t oracle_due_ = kNever;        // step at which a late oracle learns of a change of speed
  double allreduce_ = 0.0;                 // seconds, noise-free, for the current world
  double previous_step_ = 0.0;             // seconds of the step before (0: none in this world)
  NoiseStreams noise_;
  std::vector<WorkCost> cost_;  // the last compute's per-rank costs, noise included
  std::vector<double> cpu_, wait_;
  std::size_t next_event_ = 0;
  double busy_sum_ = 0.0, capacity_sum_ = 0.0;
  SimResult res_;
};

Run::Run(const Cluster& c, const SimOptions& o) : c_(c), o_(o), noise_(c.seed) {
  w_.groups = c.groups;
  w_.renumber(c);
  w_.group_share.assign(w_.groups.size(), 0.0);
  if (!o.alloc.shares.empty()) {
    if (o.alloc.shares.size() != w_.rank_group.size()) {
      throw UsageError(fmt::format("--shares has {} values but the cluster has {} workers", o.alloc.shares.size(),
                                   w_.rank_group.size()));
    }
    for (std::size_t g = 0; g < w_.groups.size(); ++g)
      w_.group_share[g] = w_.groups[g].speed;  // empty groups
    for (std::size_t r = w_.rank_group.size(); r-- > 0;) w_.group_share[w_.rank_group[r]] = o.alloc.shares[r];
  }
  if (o.alloc.name != kOracle) policy_ = make_world_policy(w_, c, o);
  start_world();
  if (o.record_splits) res_.worlds.push_back({0, w_.groups, w_.rank_group});
  res_.policy = o.alloc.name;
  for (const auto& g : c.groups) res_.group_names.push_back(g.name);
}

// What every change of membership resets: the allreduce's price, the noise
// processes (the ranks are renumbered), the oracle's split.
void Run::start_world() {
  allreduce_ = allreduce_seconds(c_.network, w_.rank_group.size(), c_.gradient_bytes);
  noise_.reset(w_.rank_group.size());
  oracle_batch_ = 0;
}

void Run::apply_events(std::size_t total) {
  bool world_changed = false, events = false;
  for (; next_event_ < c_.events.size() && c_.events[next_event_].step <= total; ++next_event_) {
    const Event& e = c_.events[next_event_];
    apply(e, c_, w_);
    events = true;
    world_changed = world_changed || e.kind != EventKind::kSpeed;
  }
  if (!events) return;
  oracle_due_ = total + o_.oracle_lag;  // the true costs changed
  const std::vector<std::size_t> old_rank_group = w_.rank_group;
  if (world_changed) {
    w_.renumber(c_);
    if (w_.rank_group.empty()) throw UsageError(fmt::format("no workers left at step {}", total));
    start_world();
    previous_step_ = 0.0;  // a resumed run has no step before its first
  }
  if (o_.record_splits) res_.worlds.push_back({total, w_.groups, w_.rank_group});
  if (!world_changed || !policy_) return;
  add_stats();
  policy_ = make_world_policy(w_, c_, o_, carry_models(policy_->learned(), old_rank_group, w_.rank_group));
}

std::vector<std::size_t> Run::slice(std::size_t total, std::size_t batch) {
  if (!policy_) {  // the oracle, solved again when the world (or, late, its speeds) or the batch changes
    if (total < o_.oracle_start) {  // equal shares within the world's bounds (split_equal has none)
      return alloc::split_proportional(std::vector<double>(w_.rank_group.size(), 1.0), batch,
                                       bounds_of(w_.groups));
    }
    if (total >= oracle_due_) {
      oracle_batch_ = 0;
      oracle_due_ = kNever;
    }
    if (oracle_batch_ != batch) {
      oracle_ = oracle_split({&c_, &w_.groups, &w_.rank_group}, batch, bounds_of(w_.groups).max_local);
      oracle_batch_ = batch;
    }
    return oracle_;
  }
  std::vector<std::size_t> split = policy_->split();
  if (batch != c_.global_batch) split = alloc::scale_split(split, batch, bounds_of(w_.groups).max_local);
  return split;
}

// Each worker's cost (world.h) times its noise this step, its CPU work shared
// on its machine (processor sharing), then its time off the CPU.
std::vector<double> Run::compute(const std::vector<std::size_t>& split) {
  const std::size_t n = split.size();
  cost_.assign(n, WorkCost{});
  cpu_.resize(n);
  wait_.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    const WorkerGroup& g = w_.groups[w_.rank_group[r]];
    const double m = noise_.draw(r, g);  // every rank's, idle or not: the world's noise runs on
    if (split[r] > 0) {
      cost_[r] = cost_of(g, split[r]);
      cost_[r].cpu *= m;
      cost_[r].device *= m;
    }
    cpu_[r] = cost_[r].cpu;
    wait_[r] = cost_[r].device;
  }
  return finish_times(c_, w_.groups, w_.rank_group, w_.machine_ranks, cost_);
}

double Run::reduce() { return allreduce_ * noise_.independent_normal(c_.network.noise); }

void Run::observe(const std::vector<std::size_t>& split, const std::vector<double>& seconds) {
  // The trainer's telemetry rides in the float32 gradient buffer: the
  // policy sees each time rounded to float, and so it does here.
  auto as_float = [](double x) { return static_cast<double>(static_cast<float>(x)); };
  auto floats = [&](const std::vector<double>& x) {
    std::vector<double> out(x.size());
    std::transform(x.begin(), x.end(), out.begin(), as_float);
    return out;
  };
  alloc::Observation obs;
  obs.local_batch = split;
  obs.compute_seconds = floats(seconds);
  obs.previous_step_seconds = as_float(previous_step_);
  obs.cpu_seconds = floats(cpu_);
  obs.wait_seconds = floats(wait_);
  if (o_.on_observe) o_.on_observe(obs);
  if (policy_) policy_->observe(obs);
}

void Run::record(const std::vector<std::size_t>& split, const StepTrace& t) {
  res_.total_seconds += t.seconds;
  busy_sum_ += t.busy;
  capacity_sum_ += static_cast<double>(t.workers) * t.compute;
  std::vector<std::size_t> counts, samples(w_.groups.size(), 0);
  for (const auto& g : w_.groups) counts.push_back(g.count);
  for (std::size_t r = 0; r < split.size(); ++r) samples[w_.rank_group[r]] += split[r];
  res_.group_workers.push_back(std::move(counts));
  res_.group_samples.push_back(std::move(samples));
  if (o_.record_splits) res_.splits.push_back(split);
  res_.steps.push_back(t);
}

void Run::step(std::size_t total, std::size_t batch) {
  apply_events(total);
  const std::vector<std::size_t> split = slice(total, batch);
  const std::vector<double> seconds = compute(split);
  StepTrace t;
  t.workers = split.size();
  t.batch = batch;
  for (const double s : seconds) {
    t.compute = std::max(t.compute, s);
    t.busy += s;
  }
  t.allreduce = reduce();
  t.seconds = t.compute + t.allreduce + c_.step_overhead;
  observe(split, seconds);
  previous_step_ = t.seconds;
  record(split, t);
}

void Run::add_stats() {
  if (!policy_) return;
  const alloc::PolicyStats s = policy_->stats();
  res_.moves += s.moves;
  res_.reverts += s.reverts;
}

SimResult Run::finish() {
  add_stats();
  res_.balance_efficiency = capacity_sum_ > 0.0 ? busy_sum_ / capacity_sum_ : 1.0;
  return std::move(res_);
}

}  // namespace

SimResult simulate(const Cluster& c, const SimOptions& o) {
  const std::size_t B = c.global_batch;
  if (o.epochs > 0 && c.dataset_samples == 0) {
    throw UsageError("--epochs needs dataset_samples in the cluster file");
  }
  if (o.epochs == 0 && o.steps == 0) throw UsageError("give --steps or --epochs");
  Run run(c, o);
  const std::size_t per_epoch = o.epochs > 0 ? data::steps_per_epoch(c.dataset_samples, B) : o.steps;
  const std::size_t epochs = o.epochs > 0 ? o.epochs : 1;
  const std::size_t limit = o.steps > 0 ? o.steps : std::numeric_limits<std::size_t>::max();
  std::size_t total = 0;
  for (std::size_t epoch = 0; epoch < epochs && total < limit; ++epoch) {
    for (std::size_t step = 0; step < per_epoch && total < limit; ++step, ++total) {
      run.step(total, o.epochs > 0 ? data::step_batch(c.dataset_samples, B, step) : B);
    }
  }
  return run.finish();
}

}  // namespace hetrain::sim

#include "hetrain/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <random>

#include "hetrain/alloc/hosts.h"
#include "hetrain/alloc/policy.h"
#include "hetrain/common/error.h"
#include "hetrain/data/cursor.h"
#include "hetrain/sim/network_cost.h"

namespace hetrain::sim {
namespace {

// The cluster as it stands at some step: groups with their current counts
// and speeds; ranks are numbered group by group.
struct World {
  std::vector<WorkerGroup> groups;
  std::vector<double> group_share;  // static shares, per group
  std::vector<std::size_t> rank_group;

  void renumber() {
    rank_group.clear();
    for (std::size_t g = 0; g < groups.size(); ++g) rank_group.insert(rank_group.end(), groups[g].count, g);
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

// A worker on a machine: the CPUs it can use at once (its threads, its quota).
double cpu_cap(const WorkerGroup& g) { return g.quota > 0.0 ? std::min(g.threads, g.quota) : g.threads; }

// Which workers share a machine's cores, as the trainer reports it.
alloc::Placement placement_of(const World& w, const Cluster& c) {
  alloc::Placement p;
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
  pc.known = std::move(known);
  pc.name = o.policy;
  pc.profile_steps = o.profile_steps;
  pc.workers = w.rank_group.size();
  pc.global_batch = c.global_batch;
  pc.bounds = bounds_of(w.groups);
  pc.placement = placement_of(w, c);
  if (o.policy == "static" && !o.shares.empty()) {
    for (const std::size_t g : w.rank_group) pc.shares.push_back(w.group_share[g]);
  }
  return alloc::make_policy(pc);
}

void apply(const Event& e, World& w) {
  WorkerGroup& g = w.groups[e.group];
  switch (e.kind) {
    case EventKind::kSpeed:
      g.speed = e.speed;
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
  std::vector<std::size_t> slice(std::size_t batch) const;
  std::vector<double> compute(const std::vector<std::size_t>& split);
  std::vector<double> cpu_;  // the last compute's CPU-seconds per rank (its work)
  double reduce();
  void observe(const std::vector<std::size_t>& split, const std::vector<double>& seconds);
  void record(const std::vector<std::size_t>& split, const StepTrace& t);
  void add_stats();

  const Cluster& c_;
  const SimOptions& o_;
  World w_;
  std::unique_ptr<alloc::Policy> policy_;
  double allreduce_ = 0.0;      // seconds, noise-free, for the current world
  double previous_step_ = 0.0;  // seconds of the step before (0: none in this world)
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
  std::size_t next_event_ = 0;
  double busy_sum_ = 0.0, capacity_sum_ = 0.0;
  SimResult res_;
};

Run::Run(const Cluster& c, const SimOptions& o) : c_(c), o_(o), rng_(c.seed) {
  w_.groups = c.groups;
  w_.renumber();
  w_.group_share.assign(w_.groups.size(), 0.0);
  if (!o.shares.empty()) {
    if (o.shares.size() != w_.rank_group.size()) {
      throw UsageError(fmt::format("--shares has {} values but the cluster has {} workers", o.shares.size(),
                                   w_.rank_group.size()));
    }
    for (std::size_t g = 0; g < w_.groups.size(); ++g)
      w_.group_share[g] = w_.groups[g].speed;  // empty groups
    for (std::size_t r = w_.rank_group.size(); r-- > 0;) w_.group_share[w_.rank_group[r]] = o.shares[r];
  }
  policy_ = make_world_policy(w_, c, o);
  allreduce_ = allreduce_seconds(c.network, w_.rank_group.size(), c.gradient_bytes);
  res_.policy = o.policy;
  for (const auto& g : c.groups) res_.group_names.push_back(g.name);
}

void Run::apply_events(std::size_t total) {
  bool world_changed = false;
  for (; next_event_ < c_.events.size() && c_.events[next_event_].step <= total; ++next_event_) {
    const Event& e = c_.events[next_event_];
    apply(e, w_);
    world_changed = world_changed || e.kind != EventKind::kSpeed;
  }
  if (!world_changed) return;
  const std::vector<std::size_t> old_rank_group = w_.rank_group;
  w_.renumber();
  if (w_.rank_group.empty()) throw UsageError(fmt::format("no workers left at step {}", total));
  add_stats();
  policy_ = make_world_policy(w_, c_, o_, carry_models(policy_->learned(), old_rank_group, w_.rank_group));
  allreduce_ = allreduce_seconds(c_.network, w_.rank_group.size(), c_.gradient_bytes);
  previous_step_ = 0.0;  // a resumed run has no step before its first
}

std::vector<std::size_t> Run::slice(std::size_t batch) const {
  std::vector<std::size_t> split = policy_->split();
  if (batch != c_.global_batch) split = alloc::scale_split(split, batch, bounds_of(w_.groups).max_local);
  return split;
}

std::vector<double> Run::compute(const std::vector<std::size_t>& split) {
  const std::size_t n = split.size();
  std::vector<double> seconds(n, 0.0);
  for (std::size_t r = 0; r < n; ++r) {
    const WorkerGroup& g = w_.groups[w_.rank_group[r]];
    if (split[r] == 0) continue;
    seconds[r] = g.overhead + static_cast<double>(split[r]) / g.speed;
    if (g.noise > 0.0) seconds[r] = std::max(0.0, seconds[r] * (1.0 + g.noise * normal_(rng_)));
  }
  cpu_ = seconds;
  // On a machine that work is CPU-seconds, done in the time its share of
  // the cores allows.
  for (std::size_t m = 0; m < c_.machines.size(); ++m) {
    std::vector<std::size_t> ranks;
    std::vector<double> work, cap;
    for (std::size_t r = 0; r < n; ++r) {
      const WorkerGroup& g = w_.groups[w_.rank_group[r]];
      if (g.machine != m) continue;
      ranks.push_back(r);
      work.push_back(seconds[r]);
      cap.push_back(cpu_cap(g));
    }
    const std::vector<double> finish = alloc::share_cores(work, cap, c_.machines[m].cores);
    for (std::size_t k = 0; k < ranks.size(); ++k) seconds[ranks[k]] = finish[k];
  }
  return seconds;
}

double Run::reduce() {
  if (c_.network.noise <= 0.0) return allreduce_;
  return std::max(0.0, allreduce_ * (1.0 + c_.network.noise * normal_(rng_)));
}

void Run::observe(const std::vector<std::size_t>& split, const std::vector<double>& seconds) {
  // The trainer's telemetry rides in the float32 gradient buffer: the
  // policy sees each time rounded to float, and so it does here.
  auto as_float = [](double x) { return static_cast<double>(static_cast<float>(x)); };
  alloc::Observation obs;
  obs.local_batch = split;
  for (const double s : seconds) obs.compute_seconds.push_back(as_float(s));
  obs.previous_step_seconds = as_float(previous_step_);
  for (const double s : cpu_) obs.cpu_seconds.push_back(as_float(s));
  if (o_.on_observe) o_.on_observe(obs);
  policy_->observe(obs);
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
  const std::vector<std::size_t> split = slice(batch);
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

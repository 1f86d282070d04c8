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

std::unique_ptr<alloc::Policy> make_world_policy(const World& w, const Cluster& c, const SimOptions& o,
                                                 std::vector<alloc::WorkerModel> known = {}) {
  alloc::PolicyConfig pc;
  pc.known = std::move(known);
  pc.name = o.policy;
  pc.profile_steps = o.profile_steps;
  pc.workers = w.rank_group.size();
  pc.global_batch = c.global_batch;
  pc.bounds = bounds_of(w.groups);
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

}  // namespace

SimResult simulate(const Cluster& c, const SimOptions& o) {
  const std::size_t B = c.global_batch;
  if (o.epochs > 0 && c.dataset_samples == 0) {
    throw UsageError("--epochs needs dataset_samples in the cluster file");
  }
  if (o.epochs == 0 && o.steps == 0) throw UsageError("give --steps or --epochs");
  World w;
  w.groups = c.groups;
  w.renumber();
  w.group_share.assign(w.groups.size(), 0.0);
  if (!o.shares.empty()) {
    if (o.shares.size() != w.rank_group.size()) {
      throw UsageError(fmt::format("--shares has {} values but the cluster has {} workers", o.shares.size(),
                                   w.rank_group.size()));
    }
    for (std::size_t g = 0; g < w.groups.size(); ++g) w.group_share[g] = w.groups[g].speed;  // empty groups
    for (std::size_t r = w.rank_group.size(); r-- > 0;) w.group_share[w.rank_group[r]] = o.shares[r];
  }
  auto policy = make_world_policy(w, c, o);
  double allreduce = allreduce_seconds(c.network, w.rank_group.size(), c.gradient_bytes);

  SimResult res;
  res.policy = o.policy;
  for (const auto& g : c.groups) res.group_names.push_back(g.name);
  std::mt19937_64 rng(c.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  const std::size_t per_epoch = o.epochs > 0 ? data::steps_per_epoch(c.dataset_samples, B) : o.steps;
  const std::size_t epochs = o.epochs > 0 ? o.epochs : 1;
  const std::size_t limit = o.steps > 0 ? o.steps : std::numeric_limits<std::size_t>::max();
  std::size_t next_event = 0, total = 0;
  alloc::Observation obs;
  double busy_sum = 0.0, capacity_sum = 0.0;
  for (std::size_t epoch = 0; epoch < epochs && total < limit; ++epoch) {
    for (std::size_t step = 0; step < per_epoch && total < limit; ++step, ++total) {
      bool world_changed = false;
      for (; next_event < c.events.size() && c.events[next_event].step <= total; ++next_event) {
        const Event& e = c.events[next_event];
        apply(e, w);
        world_changed = world_changed || e.kind != EventKind::kSpeed;
      }
      if (world_changed) {
        const std::vector<std::size_t> old_rank_group = w.rank_group;
        w.renumber();
        if (w.rank_group.empty()) throw UsageError(fmt::format("no workers left at step {}", total));
        policy = make_world_policy(w, c, o, carry_models(policy->learned(), old_rank_group, w.rank_group));
        allreduce = allreduce_seconds(c.network, w.rank_group.size(), c.gradient_bytes);
      }
      const std::size_t n = w.rank_group.size();
      const std::size_t batch = o.epochs > 0 ? data::step_batch(c.dataset_samples, B, step) : B;
      obs.local_batch = policy->split();
      if (batch != B)
        obs.local_batch = alloc::scale_split(obs.local_batch, batch, bounds_of(w.groups).max_local);
      obs.compute_seconds.resize(n);
      StepTrace t;
      t.workers = n;
      t.batch = batch;
      std::vector<std::size_t> group_samples(w.groups.size(), 0);
      for (std::size_t r = 0; r < n; ++r) {
        const WorkerGroup& g = w.groups[w.rank_group[r]];
        const std::size_t b = obs.local_batch[r];
        group_samples[w.rank_group[r]] += b;
        double seconds = 0.0;
        if (b > 0) {
          seconds = g.overhead + static_cast<double>(b) / g.speed;
          if (g.noise > 0.0) seconds = std::max(0.0, seconds * (1.0 + g.noise * normal(rng)));
        }
        // The trainer's telemetry rides in the float32 gradient buffer: the
        // policy sees each time rounded to float, and so it does here.
        obs.compute_seconds[r] = static_cast<double>(static_cast<float>(seconds));
        t.compute = std::max(t.compute, seconds);
        t.busy += seconds;
      }
      policy->observe(obs);
      t.allreduce = allreduce;
      t.seconds = t.compute + allreduce + c.step_overhead;
      res.total_seconds += t.seconds;
      busy_sum += t.busy;
      capacity_sum += static_cast<double>(n) * t.compute;
      std::vector<std::size_t> counts;
      for (const auto& g : w.groups) counts.push_back(g.count);
      res.group_workers.push_back(std::move(counts));
      res.group_samples.push_back(std::move(group_samples));
      if (o.record_splits) res.splits.push_back(obs.local_batch);
      res.steps.push_back(t);
    }
  }
  res.balance_efficiency = capacity_sum > 0.0 ? busy_sum / capacity_sum : 1.0;
  return res;
}

}  // namespace hetrain::sim

// The greedy planner: no LP, for builds without a solver and --solver
// greedy (docs/scheduling.md, "Greedy fallback").
//
// Terms: a job's preference ranks the types it may use by comparative
// advantage, v_{a,t} / mean_t (mean_t: the mean speed of the active jobs on
// type t), so each job takes the machines it is relatively best on; under
// cost by samples per price, v_{a,t} / price_t. max-min, makespan and cost
// hand out one machine at a time, always to the job of lowest level
// (job_level), of the first type in its preference that is free and
// shortens its step; a job no free machine helps drops out. min-avg-jct
// hands out one machine at a time to the job whose best next machine adds
// the most weighted samples/s per remaining sample (the LP's objective,
// taken greedily). Under one type per job, a job's first machine fixes its
// type.
#include <algorithm>
#include <numeric>
#include <queue>
#include <tuple>

#include "hetrain/sched/plan_steps.h"

namespace hetrain::sched {
namespace {

// A machine must shorten a step by this share to be given.
constexpr double kMinGain = 1e-9;
// The price of a free machine under cost (currency per hour): keeps v / price finite.
constexpr double kTinyPrice = 1e-12;

std::vector<std::vector<std::size_t>> preferences(const Pricer& p, const std::vector<ActiveJob>& active,
                                                  const PlanOptions& o, const Allowed& allowed) {
  const std::size_t types = p.pool().types.size();
  std::vector<double> mean(types, 0.0);
  std::vector<double> users(types, 0.0);
  for (std::size_t a = 0; a < active.size(); ++a) {
    for (std::size_t t = 0; t < types; ++t) {
      if (!allowed[a][t]) continue;
      mean[t] += p.jobs()[active[a].job].speed[t];
      users[t] += 1.0;
    }
  }
  for (std::size_t t = 0; t < types; ++t) mean[t] = users[t] > 0.0 ? mean[t] / users[t] : 1.0;
  std::vector<std::vector<std::size_t>> pref(active.size());
  for (std::size_t a = 0; a < active.size(); ++a) {
    const Job& job = p.jobs()[active[a].job];
    std::vector<double> key(types);
    for (std::size_t t = 0; t < types; ++t) {
      if (!allowed[a][t]) continue;
      pref[a].push_back(t);
      key[t] = o.objective == Objective::kCost
                   ? job.speed[t] / std::max(p.pool().types[t].price_per_hour, kTinyPrice)
                   : job.speed[t] / mean[t];
    }
    std::stable_sort(pref[a].begin(), pref[a].end(),
                     [&key](std::size_t l, std::size_t r) { return key[l] > key[r]; });
  }
  return pref;
}

// One more machine for job a, of its first preferred type that is free and
// helps; false if none does.
bool add_one(const Pricer& p, const ActiveJob& job, const std::vector<std::size_t>& pref, bool one_type,
             Allocation& x, std::vector<std::size_t>& free) {
  if (machines_in(x) >= std::min(p.jobs()[job.job].cap(), p.pool().machines())) return false;
  const double before = p.throughput(job.job, x);
  const bool fixed = one_type && machines_in(x) > 0;
  for (const std::size_t t : pref) {
    if (free[t] == 0 || (fixed && x[t] == 0)) continue;
    ++x[t];
    if (p.throughput(job.job, x) > before + kMinGain * std::max(before, 1.0)) {
      --free[t];
      return true;
    }
    --x[t];
    // Under one type per job, a type that does not help now is no worse for a
    // second machine; the job keeps looking at its other types only when empty.
  }
  return false;
}

// min-avg-jct's worth of job a's best next machine: w gain / R (gain: the
// samples/s it adds), over its free types; 0 if none helps. *type: that type.
double next_worth(const Pricer& p, const ActiveJob& a, const std::vector<std::size_t>& pref, bool one_type,
                  Allocation& x, const std::vector<std::size_t>& free, std::size_t* type) {
  const Job& job = p.jobs()[a.job];
  if (machines_in(x) >= std::min(job.cap(), p.pool().machines())) return 0.0;
  const double before = p.throughput(a.job, x);
  const bool fixed = one_type && machines_in(x) > 0;
  double best = 0.0;
  for (const std::size_t t : pref) {
    if (free[t] == 0 || (fixed && x[t] == 0)) continue;
    ++x[t];
    const double gain = p.throughput(a.job, x) - before;
    --x[t];
    if (gain > best && gain > kMinGain * std::max(before, 1.0)) best = gain, *type = t;
  }
  const double remaining = std::max(a.remaining_steps, 1.0) * static_cast<double>(job.global_batch);
  return job.weight * best / remaining;
}

// min-avg-jct: one machine at a time to the job whose best next machine is
// worth most (next_worth). A job's worth only falls as machines are handed
// out, so a popped job is re-scored and served only if it still leads.
void greedy_by_worth(const Pricer& p, const std::vector<ActiveJob>& active, const PlanOptions& o,
                     const std::vector<std::vector<std::size_t>>& pref, std::vector<std::size_t>& free,
                     std::vector<Allocation>& alloc) {
  using Entry = std::pair<double, std::size_t>;  // (worth, active index), highest first
  std::priority_queue<Entry> queue;
  std::size_t type = 0;
  for (std::size_t a = 0; a < active.size(); ++a)
    queue.emplace(next_worth(p, active[a], pref[a], o.one_type_per_job, alloc[a], free, &type), a);
  while (!queue.empty()) {
    const std::size_t a = queue.top().second;
    queue.pop();
    const double worth = next_worth(p, active[a], pref[a], o.one_type_per_job, alloc[a], free, &type);
    if (worth <= 0.0) continue;
    if (!queue.empty() && worth < queue.top().first) {
      queue.emplace(worth, a);
      continue;
    }
    ++alloc[a][type];
    --free[type];
    queue.emplace(next_worth(p, active[a], pref[a], o.one_type_per_job, alloc[a], free, &type), a);
  }
}

}  // namespace

std::vector<Allocation> greedy_plan(const Pricer& p, const std::vector<ActiveJob>& active,
                                    const PlanOptions& o, const Allowed& allowed, const Capacity& capacity) {
  const std::size_t types = p.pool().types.size();
  std::vector<std::size_t> free = capacity;
  std::vector<Allocation> alloc(active.size(), Allocation(types, 0));
  const auto pref = preferences(p, active, o, allowed);
  if (o.objective == Objective::kMinAvgJct) {
    greedy_by_worth(p, active, o, pref, free, alloc);
    return alloc;
  }
  // (level, machines of the types it may use, active index), lowest first:
  // tied, the job with fewer usable machines goes first, since the other
  // can still be served elsewhere.
  using Entry = std::tuple<double, std::size_t, std::size_t>;
  std::vector<std::size_t> usable(active.size(), 0);
  for (std::size_t a = 0; a < active.size(); ++a) {
    for (std::size_t t = 0; t < types; ++t) usable[a] += allowed[a][t] ? capacity[t] : 0;
  }
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  for (std::size_t a = 0; a < active.size(); ++a)
    queue.emplace(job_level(p, o.objective, active[a], 0.0), usable[a], a);
  while (!queue.empty() && std::accumulate(free.begin(), free.end(), std::size_t{0}) > 0) {
    const std::size_t a = std::get<2>(queue.top());
    queue.pop();
    if (!add_one(p, active[a], pref[a], o.one_type_per_job, alloc[a], free)) continue;
    queue.emplace(job_level(p, o.objective, active[a], p.throughput(active[a].job, alloc[a])), usable[a], a);
  }
  improve_least(p, active, o, allowed, alloc);
  return alloc;
}

}  // namespace hetrain::sched

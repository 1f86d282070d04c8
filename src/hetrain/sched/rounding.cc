// From the LP's fractional machines to whole ones (docs/scheduling.md,
// "Rounding").
//
// Terms: a job's floor is floor(x_{a,t}) machines of each type, the LP's
// fraction what is left of x_{a,t}. Rounding (1) gives every job its floor;
// (2) trims, per job, machines whose removal makes its step faster (the LP's
// linear throughput cannot see the allreduce or the one-sample minimum);
// (3) fills: while a machine is free, it goes to the job that gains from it
// and ranks first for the objective: the lowest level (job_level) for
// max-min, makespan and cost, the largest weighted gain per remaining sample
// for min-avg-jct. Under cost only a job with an LP fraction on that type
// may take it (cost buys no more than the fair level). (4) improves
// (improve_least): while moving one machine from some job to the job of
// lowest level, or swapping one for one of another type, leaves both
// kMinMoveGain above that level, the best such move is made.
// Every step is deterministic: ties go to the lower job and type index.
#include <algorithm>
#include <cmath>
#include <limits>

#include "hetrain/sched/plan_steps.h"

namespace hetrain::sched {
namespace {

// An x within this of an integer counts as that integer (the simplex's
// tolerance is about 1e-7).
constexpr double kIntegerSlack = 1e-6;
// A machine must shorten a step by this share to be kept or given.
constexpr double kMinGain = 1e-9;
// A job that held a machine before counts this much needier for it in the
// fill (the LP's kKeepBonus, for the same reason: a move costs a restart).
constexpr double kKeepShare = 0.05;
// improve_least moves a machine only to raise the least level by this share:
// a smaller gain is not worth the two restarts it may cost.
constexpr double kMinMoveGain = 0.02;
// improve_least stops after this many moves per active job (each raises the
// least level, so it ends anyway; the bound keeps a round's cost linear).
constexpr std::size_t kMaxMovesPerJob = 2;

struct Choice {
  std::size_t a = 0, t = 0;
  double score = -std::numeric_limits<double>::infinity();
  bool found = false;
};

double remaining_samples(const Pricer& p, const ActiveJob& a) {
  return std::max(a.remaining_steps, 1.0) * static_cast<double>(p.jobs()[a.job].global_batch);
}

// Free machines of the types a job may use.
std::size_t usable(const std::vector<bool>& allowed, const std::vector<std::size_t>& free) {
  std::size_t n = 0;
  for (std::size_t t = 0; t < free.size(); ++t) n += allowed[t] ? free[t] : 0;
  return n;
}

// The best (job, type) for the next free machine, or found = false.
Choice best_choice(const Pricer& p, const std::vector<ActiveJob>& active, const PlanOptions& o,
                   const Allowed& allowed, const Fractional& x, std::vector<Allocation>& alloc,
                   const std::vector<std::size_t>& free, const std::vector<double>& rate) {
  Choice best;
  for (std::size_t t = 0; t < free.size(); ++t) {
    if (free[t] == 0) continue;
    for (std::size_t a = 0; a < active.size(); ++a) {
      const Job& job = p.jobs()[active[a].job];
      if (!allowed[a][t] || machines_in(alloc[a]) >= std::min(job.cap(), p.pool().machines())) continue;
      const bool fraction = x[a][t] - std::floor(x[a][t] + kIntegerSlack) > kIntegerSlack;
      if (o.objective == Objective::kCost && machines_in(alloc[a]) > 0 && !fraction) continue;
      // Under one type per job, a job that holds machines takes more of its type only.
      if (o.one_type_per_job && machines_in(alloc[a]) > alloc[a][t]) continue;
      ++alloc[a][t];
      const double gained = p.throughput(active[a].job, alloc[a]) - rate[a];
      --alloc[a][t];
      if (!(gained > kMinGain * std::max(rate[a], 1.0))) continue;
      // A job that held this machine before ranks as if kKeepShare needier
      // (or its gain kKeepShare larger): moving a job costs it a restart.
      const Allocation& held = active[a].current;
      const double keep = !held.empty() && alloc[a][t] < held[t] ? kKeepShare : 0.0;
      const double score = o.objective == Objective::kMinAvgJct
                               ? (1.0 + keep) * job.weight * gained / remaining_samples(p, active[a])
                               : -(1.0 - keep) * job_level(p, o.objective, active[a], rate[a]);
      // Tied, the job with fewer free machines it may use goes first: the
      // other can still be served elsewhere (a job left with nothing while
      // another took its only type is max-min's worst plan).
      if (score > best.score || (score == best.score && usable(allowed[a], free) < usable(allowed[best.a], free)))
        best = {a, t, score, true};
    }
  }
  return best;
}

// One machine of type t from job `from` to the job of lowest level, which
// gives back one of type `back` in exchange when swap is set.
struct Move {
  std::size_t from = 0, t = 0, back = 0;
  bool swap = false;
  double least = 0.0;  // the lower of the two jobs' levels after the move
  bool found = false;
};

double level_of(const Pricer& p, const PlanOptions& o, const ActiveJob& a, const Allocation& x) {
  return job_level(p, o.objective, a, p.throughput(a.job, x));
}

// The level of `to` and of `from` after the move m (the allocations are
// restored before returning).
std::pair<double, double> try_move(const Pricer& p, const std::vector<ActiveJob>& active,
                                   const PlanOptions& o, std::vector<Allocation>& alloc, std::size_t to,
                                   const Move& m) {
  Allocation& x = alloc[to];
  Allocation& y = alloc[m.from];
  ++x[m.t], --y[m.t];
  if (m.swap) --x[m.back], ++y[m.back];
  const std::pair<double, double> out{level_of(p, o, active[to], x), level_of(p, o, active[m.from], y)};
  --x[m.t], ++y[m.t];
  if (m.swap) ++x[m.back], --y[m.back];
  return out;
}

// The move (or swap) of machines to job `to` that leaves the higher least
// level, if any raises it above `level`.
Move best_move(const Pricer& p, const std::vector<ActiveJob>& active, const PlanOptions& o,
               const Allowed& allowed, std::vector<Allocation>& alloc, std::size_t to, double level) {
  Move best;
  best.least = level * (1.0 + kMinMoveGain);
  const std::size_t types = alloc[to].size();
  const bool room = machines_in(alloc[to]) < std::min(p.jobs()[active[to].job].cap(), p.pool().machines());
  for (std::size_t b = 0; b < active.size(); ++b) {
    for (std::size_t t = 0; t < types && b != to; ++t) {
      if (alloc[b][t] == 0 || !allowed[to][t]) continue;
      // back == types: a plain move; else a swap giving one of type `back` to b.
      for (std::size_t back = 0; back <= types; ++back) {
        Move m{b, t, back, back < types, 0.0, true};
        if (m.swap ? back == t || alloc[to][back] == 0 || !allowed[b][back] : !room) continue;
        if (o.one_type_per_job && (m.swap || machines_in(alloc[to]) != alloc[to][t])) continue;
        const auto [gained, left] = try_move(p, active, o, alloc, to, m);
        m.least = std::min(gained, left);
        if (m.least > best.least) best = m;
      }
    }
  }
  return best;
}

}  // namespace

void improve_least(const Pricer& p, const std::vector<ActiveJob>& active, const PlanOptions& o,
                   const Allowed& allowed, std::vector<Allocation>& alloc) {
  if (o.objective == Objective::kMinAvgJct || active.size() < 2) return;
  for (std::size_t moves = 0; moves < kMaxMovesPerJob * active.size(); ++moves) {
    std::size_t to = 0;
    double least = std::numeric_limits<double>::infinity();
    for (std::size_t a = 0; a < active.size(); ++a) {
      const double level = job_level(p, o.objective, active[a], p.throughput(active[a].job, alloc[a]));
      if (level < least) least = level, to = a;
    }
    const Move m = best_move(p, active, o, allowed, alloc, to, least);
    if (!m.found) return;
    --alloc[m.from][m.t];
    ++alloc[to][m.t];
    if (m.swap) ++alloc[m.from][m.back], --alloc[to][m.back];
  }
}

void trim_useless(const Pricer& p, std::size_t job, Allocation& x) {
  double best = p.step_seconds(job, x);
  const auto better = [&](double s) { return machines_in(x) > 0 && s < best * (1.0 - kMinGain); };
  // Whole types first: machines pinned at one sample slow the step only together.
  for (std::size_t t = 0; t < x.size(); ++t) {
    if (x[t] == 0) continue;
    const std::size_t had = x[t];
    x[t] = 0;
    const double s = p.step_seconds(job, x);
    if (better(s))
      best = s;
    else
      x[t] = had;
  }
  for (bool moved = true; moved;) {
    moved = false;
    for (std::size_t t = 0; t < x.size(); ++t) {
      if (x[t] == 0) continue;
      --x[t];
      const double s = p.step_seconds(job, x);
      if (better(s))
        best = s, moved = true;
      else
        ++x[t];
    }
  }
}

std::vector<Allocation> round_relaxation(const Pricer& p, const std::vector<ActiveJob>& active,
                                         const PlanOptions& o, const Allowed& allowed, const Fractional& x,
                                         const Capacity& capacity) {
  const std::size_t types = p.pool().types.size();
  std::vector<std::size_t> free = capacity;
  std::vector<Allocation> alloc(active.size(), Allocation(types, 0));
  for (std::size_t a = 0; a < active.size(); ++a) {
    for (std::size_t t = 0; t < types; ++t) {
      const auto whole = static_cast<std::size_t>(std::max(0.0, std::floor(x[a][t] + kIntegerSlack)));
      alloc[a][t] = std::min(whole, free[t]);
      free[t] -= alloc[a][t];
    }
    const Allocation before = alloc[a];
    trim_useless(p, active[a].job, alloc[a]);
    for (std::size_t t = 0; t < types; ++t) free[t] += before[t] - alloc[a][t];
  }
  fill_free(p, active, o, allowed, x, capacity, alloc);
  return alloc;
}

void fill_free(const Pricer& p, const std::vector<ActiveJob>& active, const PlanOptions& o,
               const Allowed& allowed, const Fractional& x, const Capacity& capacity,
               std::vector<Allocation>& alloc) {
  std::vector<std::size_t> free = capacity;
  for (std::size_t t = 0; t < free.size(); ++t) {
    for (const auto& held : alloc) free[t] -= held[t];
  }
  std::vector<double> rate(active.size());
  for (std::size_t a = 0; a < active.size(); ++a) rate[a] = p.throughput(active[a].job, alloc[a]);
  while (true) {
    const Choice c = best_choice(p, active, o, allowed, x, alloc, free, rate);
    if (!c.found) break;
    ++alloc[c.a][c.t];
    --free[c.t];
    rate[c.a] = p.throughput(active[c.a].job, alloc[c.a]);
  }
  improve_least(p, active, o, allowed, alloc);
}

}  // namespace hetrain::sched

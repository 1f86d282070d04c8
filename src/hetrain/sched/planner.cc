#include "hetrain/sched/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "hetrain/common/error.h"
#include "hetrain/sched/lp.h"
#include "hetrain/sched/plan_steps.h"

namespace hetrain::sched {

Objective parse_objective(const std::string& name) {
  if (name == "max-min-fair") return Objective::kMaxMinFair;
  if (name == "min-avg-jct") return Objective::kMinAvgJct;
  if (name == "makespan") return Objective::kMakespan;
  if (name == "cost") return Objective::kCost;
  throw UsageError(fmt::format(
      "--objective '{}' (expected max-min-fair, min-avg-jct, makespan or cost with --jobs)", name));
}

std::string objective_name(Objective o) {
  switch (o) {
    case Objective::kMinAvgJct:
      return "min-avg-jct";
    case Objective::kMakespan:
      return "makespan";
    case Objective::kCost:
      return "cost";
    case Objective::kMaxMinFair:
      break;
  }
  return "max-min-fair";
}

Solver parse_solver(const std::string& name) {
  if (name == "auto") return Solver::kAuto;
  if (name == "lp") return Solver::kLp;
  if (name == "greedy") return Solver::kGreedy;
  throw UsageError(fmt::format("--solver '{}' (expected auto, lp or greedy)", name));
}

double job_level(const Pricer& p, Objective o, const ActiveJob& a, double throughput) {
  const Job& job = p.jobs()[a.job];
  const double remaining = std::max(a.remaining_steps, 1.0) * static_cast<double>(job.global_batch);
  switch (o) {
    case Objective::kMakespan:
      return throughput / remaining;
    case Objective::kMinAvgJct:
      return remaining / job.weight;
    case Objective::kMaxMinFair:
    case Objective::kCost:
      break;
  }
  return throughput / (job.weight * p.isolated(a.job));
}

namespace {

// Two plan values whose parts differ by less than this share count as equal
// in that part (the pricing's floating-point noise).
constexpr double kValueTolerance = 1e-9;

double remaining_samples(const Pricer& p, const ActiveJob& a) {
  return std::max(a.remaining_steps, 1.0) * static_cast<double>(p.jobs()[a.job].global_batch);
}

// The plan gives a started job other machines than it holds: a restart.
bool moves(const ActiveJob& a, const Allocation& x) {
  return machines_in(x) > 0 && (a.started || machines_in(a.current) > 0) && x != a.current;
}

// Samples/s over the job's remaining work if x held until it ends (plan_value).
double effective_rate(const Pricer& p, const PlanOptions& o, const ActiveJob& a, const Allocation& x) {
  const double t = p.throughput(a.job, x);
  if (t <= 0.0 || !moves(a, x)) return t;
  const double r = remaining_samples(p, a);
  return r / (r / t + o.restart_seconds);
}

bool use_lp(const PlanOptions& o) { return o.solver != Solver::kGreedy && lp_solver_available(); }

// One plan of `active` on `capacity` under o's restriction: the LP relaxation
// rounded, or the greedy heuristic. `mixed`: the unrestricted relaxation of
// the same jobs and capacity if solved already (nullptr: solved here).
RoundPlan plan_once(const Pricer& p, const std::vector<ActiveJob>& active, const PlanOptions& o,
                    const Capacity& capacity, const Relaxation* mixed) {
  RoundPlan out;
  const Allowed all = allowed_types(p, active, capacity);
  if (!use_lp(o)) {
    out.allocation = greedy_plan(p, active, o, all, capacity);
    return out;
  }
  Relaxation r = mixed != nullptr ? *mixed : solve_relaxation(p, active, o.objective, all, capacity);
  Allowed allowed = all;
  if (r.optimal && o.one_type_per_job) {
    // The relaxation picks each job's type; a second one plans within them.
    allowed = one_type_each(p, active, r.x, all, capacity);
    r = solve_relaxation(p, active, o.objective, allowed, capacity);
  }
  if (!r.optimal) {  // only a solver failure: every program here is feasible (x = 0)
    out.allocation = greedy_plan(p, active, o, all, capacity);
    return out;
  }
  out.used_lp = true;
  out.relaxation = r.value;
  out.allocation = round_relaxation(p, active, o, allowed, r.x, capacity);
  if (o.one_type_per_job) {
    // A job the rounding left without machines may still take a type of its
    // own that others left free.
    for (std::size_t a = 0; a < active.size(); ++a) {
      if (machines_in(out.allocation[a]) == 0) allowed[a] = all[a];
    }
    fill_free(p, active, o, allowed, r.x, capacity, out.allocation);
  }
  // The greedy plan is a candidate too: rounding can leave a job below the
  // level the greedy reaches (tests/sched/test_optimum.cc measures both).
  std::vector<Allocation> greedy = greedy_plan(p, active, o, all, capacity);
  if (better_plan(plan_value(p, active, o, greedy), plan_value(p, active, o, out.allocation))) {
    out.allocation = std::move(greedy);
    out.used_lp = false;
  }
  return out;
}

struct Candidate {
  RoundPlan plan;
  PlanValue value;
};

// The plan in which the jobs marked `keep` hold on to their machines and the
// rest are planned on what is left; nullopt if the kept machines do not fit.
std::optional<Candidate> with_kept(const Pricer& p, const std::vector<ActiveJob>& active,
                                   const PlanOptions& o, const Capacity& capacity,
                                   const std::vector<bool>& keep) {
  Capacity left = capacity;
  std::vector<ActiveJob> rest;
  std::vector<std::size_t> index;  // rest[i] is active[index[i]]
  for (std::size_t a = 0; a < active.size(); ++a) {
    if (!keep[a]) {
      rest.push_back(active[a]);
      index.push_back(a);
      continue;
    }
    for (std::size_t t = 0; t < left.size(); ++t) {
      if (active[a].current[t] > left[t]) return std::nullopt;
      left[t] -= active[a].current[t];
    }
  }
  Candidate c;
  c.plan.used_lp = use_lp(o);
  c.plan.allocation.assign(active.size(), Allocation(capacity.size(), 0));
  for (std::size_t a = 0; a < active.size(); ++a) {
    if (keep[a]) c.plan.allocation[a] = active[a].current;
  }
  if (!rest.empty()) {
    RoundPlan sub = plan_once(p, rest, o, left, nullptr);
    for (std::size_t i = 0; i < rest.size(); ++i) c.plan.allocation[index[i]] = std::move(sub.allocation[i]);
    c.plan.used_lp = sub.used_lp;
    c.plan.relaxation = sub.relaxation;
  }
  c.value = plan_value(p, active, o, c.plan.allocation);
  return c;
}

// A job may keep what it holds (under one type per job: if that is one type).
bool keepable(const ActiveJob& a, const PlanOptions& o) {
  std::size_t types = 0;
  for (const std::size_t k : a.current) types += k > 0 ? 1 : 0;
  return types > 0 && (!o.one_type_per_job || types == 1);
}

// The jobs x moves (or stops) although the move does not pay for itself:
// its predicted time left on x plus the restart is no shorter than on what
// it holds.
std::vector<bool> not_worth_moving(const Pricer& p, const std::vector<ActiveJob>& active,
                                   const PlanOptions& o, const std::vector<Allocation>& x) {
  std::vector<bool> keep(active.size(), false);
  for (std::size_t a = 0; a < active.size(); ++a) {
    if (!keepable(active[a], o) || x[a] == active[a].current) continue;
    const double r = remaining_samples(p, active[a]);
    const double now = p.throughput(active[a].job, active[a].current);
    const double next = p.throughput(active[a].job, x[a]);
    keep[a] = next <= 0.0 || r / next + o.restart_seconds >= r / now;
  }
  return keep;
}

// Hysteresis: the plan under o's restriction, against the same plan with
// the jobs a move would not pay for kept where they are, and with every
// job that holds machines kept; the best by plan_value.
Candidate settle(const Pricer& p, const std::vector<ActiveJob>& active, const PlanOptions& o,
                 const Capacity& capacity, const Relaxation* mixed) {
  Candidate best;
  best.plan = plan_once(p, active, o, capacity, mixed);
  best.value = plan_value(p, active, o, best.plan.allocation);
  const std::vector<bool> some = not_worth_moving(p, active, o, best.plan.allocation);
  const std::vector<bool> every = [&] {
    std::vector<bool> out(active.size());
    for (std::size_t a = 0; a < active.size(); ++a) out[a] = keepable(active[a], o);
    return out;
  }();
  for (const std::vector<bool>* keep : {&some, &every}) {
    if (std::none_of(keep->begin(), keep->end(), [](bool k) { return k; })) continue;
    if (keep == &every && every == some) continue;
    const std::optional<Candidate> c = with_kept(p, active, o, capacity, *keep);
    if (c && better_plan(c->value, best.value)) best = *c;
  }
  return best;
}

}  // namespace

PlanValue plan_value(const Pricer& p, const std::vector<ActiveJob>& active, const PlanOptions& o,
                     const std::vector<Allocation>& x) {
  double least = std::numeric_limits<double>::infinity(), sum = 0.0, shares = 0.0, money = 0.0;
  for (std::size_t a = 0; a < active.size(); ++a) {
    const Job& job = p.jobs()[active[a].job];
    const double rate = effective_rate(p, o, active[a], x[a]);
    const double per_remaining = job.weight * rate / remaining_samples(p, active[a]);
    sum += per_remaining;
    shares += rate / p.isolated(active[a].job);
    least = std::min(least, o.objective == Objective::kMakespan
                                ? rate / remaining_samples(p, active[a])
                                : rate / (job.weight * p.isolated(active[a].job)));
    for (std::size_t t = 0; t < x[a].size(); ++t)
      money += static_cast<double>(x[a][t]) * p.pool().types[t].price_per_hour;
  }
  if (active.empty()) least = 0.0;
  switch (o.objective) {
    case Objective::kMinAvgJct:
      return {sum, 0.0};
    case Objective::kMakespan:
      return {least, shares};
    case Objective::kCost:
      return {least, -money};
    case Objective::kMaxMinFair:
      break;
  }
  return {least, shares};
}

bool better_plan(const PlanValue& a, const PlanValue& b) {
  const auto above = [](double l, double r) {
    return l > r + kValueTolerance * std::max(std::abs(l), std::abs(r));
  };
  if (above(a.primary, b.primary)) return true;
  if (above(b.primary, a.primary)) return false;
  return above(a.secondary, b.secondary);
}

RoundPlan plan_round(const Pricer& p, const std::vector<ActiveJob>& active, const PlanOptions& o) {
  if (active.empty()) return {};
  if (o.solver == Solver::kLp && !lp_solver_available()) solve_lp({});  // throws the one-line reason
  const Capacity capacity = pool_capacity(p);
  std::optional<Relaxation> mixed;
  if (use_lp(o))
    mixed = solve_relaxation(p, active, o.objective, allowed_types(p, active, capacity), capacity);
  const Relaxation* shared = mixed ? &*mixed : nullptr;
  PlanOptions restricted = o;
  restricted.one_type_per_job = true;
  Candidate best = settle(p, active, restricted, capacity, shared);
  if (!o.one_type_per_job) {
    PlanOptions free = o;
    free.one_type_per_job = false;
    Candidate c = settle(p, active, free, capacity, shared);
    // Ties go to the mixed plan.
    if (!better_plan(best.value, c.value)) best = std::move(c);
  }
  return best.plan;
}

}  // namespace hetrain::sched

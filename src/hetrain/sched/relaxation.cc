// The LP relaxation of one round (docs/scheduling.md, "Formulation").
//
// Terms: x_{a,t} >= 0 is the (fractional) number of machines of type t given
// to active job a, v_{a,t} the job's samples/s on one of them, and
// V_a = sum_t x_{a,t} v_{a,t} its compute speed under hetrain's proportional
// split. Its throughput T_a (samples/s) is a variable held under the concave
// curve B V / (K V + B) (B: global batch, K: Pricer::fixed_seconds, the part
// of a step more machines do not shorten) by kTangents tangent lines
//   T_a <= T(V_k) + T'(V_k) (V_a - V_k),  V_k = 0, then geometric from one machine to the pool,
// so the LP sees returns diminish as a job spreads. Every program has
//   capacity: sum_a x_{a,t} <= count_t          for every type t
//   cap:      sum_t x_{a,t} <= cap_a             (global batch, max_workers)
// and x_{a,t} = 0 where the job may not use type t (Allowed).
// A fairness program adds z and rows  e_a T_a - z >= 0  with
//   max-min fair, cost:  e_a = 1 / (w_a iso_a)   (iso_a = sum_t count_t v_{a,t})
//   makespan:            e_a = 1 / R_a           (R_a: remaining samples)
// and maximises z (phase 1). Phase 2 keeps z >= z* (1 - kPhaseTolerance) and
// then maximises the total normalised throughput sum_a T_a / iso_a
// (max-min, makespan: leftover capacity is not wasted) or minimises the money
// rate sum_t price_t sum_a x_{a,t} (cost). min-avg-jct is one program:
// maximise sum_a (w_a / R_a) T_a, which gives machines to the jobs with the
// least remaining work first, each on the types it is relatively fastest on.
// Keeping: the last program also credits k_{a,t} <= min(x_{a,t}, held_{a,t})
// (held: the machines the job holds now) at kKeepBonus times the machine's
// own worth, so among (nearly) equal plans the one that moves fewer jobs
// wins: a move costs the job a restart.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "hetrain/common/error.h"
#include "hetrain/sched/lp.h"
#include "hetrain/sched/plan_steps.h"

namespace hetrain::sched {
namespace {

// Phase 2 may lose this share of phase 1's optimum (the simplex's own
// tolerance is about 1e-7 relative).
constexpr double kPhaseTolerance = 1e-6;
// A machine a job already holds counts this much more in the last program's
// objective (a restart costs about half a minute of a job's progress; a
// plan that loses less than this share of the objective keeps the job).
constexpr double kKeepBonus = 0.05;
// Tangent lines under each job's concave throughput curve.
constexpr std::size_t kTangents = 8;

struct Program {
  LinearProgram lp;
  std::vector<std::pair<std::size_t, std::size_t>> cell;  // per x variable: (active job, type)
  std::vector<std::size_t> x_column;                      // per x variable: its column
  std::vector<std::size_t> throughput;                    // T_a's column, per active job
  std::size_t z = 0;
};

double remaining_samples(const Pricer& p, const ActiveJob& a) {
  return std::max(a.remaining_steps, 1.0) * static_cast<double>(p.jobs()[a.job].global_batch);
}

// T_a under the tangents of B V / (K V + B) (see the top of this file).
void add_concave_rows(Program& prog, const Pricer& p, std::size_t a, std::size_t job,
                      const std::vector<std::pair<std::size_t, double>>& speed_terms) {
  const auto b = static_cast<double>(p.jobs()[job].global_batch);
  const double k = p.fixed_seconds(job);
  double lo = kUnbounded;
  for (const auto& term : speed_terms) lo = std::min(lo, term.second);
  const double hi = std::max(p.isolated(job), lo);
  const double ratio = std::pow(hi / lo, 1.0 / static_cast<double>(kTangents - 1));
  // The tangent at V = 0 (slope 1) first: without it a job with no machine
  // would get the other lines' positive intercepts for free.
  for (std::size_t i = 0; i <= kTangents; ++i) {
    const double v = i == 0 ? 0.0 : lo * std::pow(ratio, static_cast<double>(i - 1));
    const double t = b * v / (k * v + b);                      // samples/s at V = v
    const double slope = b * b / ((k * v + b) * (k * v + b));  // dT/dV there
    LinearProgram::Row row;                                    // T_a - slope V_a <= t - slope v
    row.terms.emplace_back(prog.throughput[a], 1.0);
    for (const auto& [col, speed] : speed_terms) row.terms.emplace_back(col, -slope * speed);
    row.upper = t - slope * v;
    prog.lp.rows.push_back(std::move(row));
  }
}

// Columns x and T, rows capacity, cap and the concave curve.
Program base_program(const Pricer& p, const std::vector<ActiveJob>& active, const Allowed& allowed,
                     const Capacity& machines) {
  Program prog;
  const std::size_t types = p.pool().types.size();
  std::vector<LinearProgram::Row> capacity(types);
  for (std::size_t a = 0; a < active.size(); ++a) {
    const Job& job = p.jobs()[active[a].job];
    LinearProgram::Row cap;
    std::vector<std::pair<std::size_t, double>> speed_terms;
    for (std::size_t t = 0; t < types; ++t) {
      if (!allowed[a][t]) continue;
      const std::size_t c = prog.lp.add_column(0.0, 0.0, kUnbounded);
      prog.cell.emplace_back(a, t);
      prog.x_column.push_back(c);
      capacity[t].terms.emplace_back(c, 1.0);
      cap.terms.emplace_back(c, 1.0);
      speed_terms.emplace_back(c, job.speed[t]);
    }
    // A job with no allowed type keeps T = 0.
    prog.throughput.push_back(prog.lp.add_column(0.0, 0.0, speed_terms.empty() ? 0.0 : kUnbounded));
    if (speed_terms.empty()) continue;
    cap.upper = static_cast<double>(std::min(job.cap(), p.pool().machines()));
    prog.lp.rows.push_back(std::move(cap));
    add_concave_rows(prog, p, a, active[a].job, speed_terms);
  }
  for (std::size_t t = 0; t < types; ++t) {
    capacity[t].upper = static_cast<double>(machines[t]);
    if (!capacity[t].terms.empty()) prog.lp.rows.push_back(std::move(capacity[t]));
  }
  return prog;
}

// e_a of the fairness rows, scaled so a typical one is near 1 (GLPK's
// tolerances are absolute).
double fairness_coefficient(const Pricer& p, const ActiveJob& a, Objective o, double scale) {
  const Job& job = p.jobs()[a.job];
  if (o == Objective::kMakespan) return scale / remaining_samples(p, a);
  return 1.0 / (job.weight * p.isolated(a.job));
}

double mean_remaining(const Pricer& p, const std::vector<ActiveJob>& active) {
  double sum = 0.0;
  for (const auto& a : active) sum += remaining_samples(p, a);
  return sum / static_cast<double>(active.size());
}

void add_fairness_rows(Program& prog, const Pricer& p, const std::vector<ActiveJob>& active, Objective o) {
  const double scale = mean_remaining(p, active);
  prog.z = prog.lp.add_column(1.0, 0.0, kUnbounded);
  for (std::size_t a = 0; a < active.size(); ++a) {
    if (prog.lp.column_upper[prog.throughput[a]] == 0.0) continue;  // no allowed type: left out
    LinearProgram::Row row;
    row.terms = {{prog.throughput[a], fairness_coefficient(p, active[a], o, scale)}, {prog.z, -1.0}};
    row.lower = 0.0;
    prog.lp.rows.push_back(std::move(row));
  }
}

// Phase 2's objective over the same rows, z held near its optimum.
void second_phase(Program& prog, const Pricer& p, const std::vector<ActiveJob>& active, Objective o,
                  double z_star) {
  prog.lp.column_lower[prog.z] = z_star * (1.0 - kPhaseTolerance);
  prog.lp.objective[prog.z] = 0.0;
  prog.lp.maximize = o != Objective::kCost;
  if (o == Objective::kCost) {
    for (std::size_t i = 0; i < prog.cell.size(); ++i)
      prog.lp.objective[prog.x_column[i]] = p.pool().types[prog.cell[i].second].price_per_hour;
    return;
  }
  for (std::size_t a = 0; a < active.size(); ++a)
    prog.lp.objective[prog.throughput[a]] = 1.0 / p.isolated(active[a].job);
}

// The keeping columns k_{a,t} (see the top of this file), after the final
// objective is set: a held machine is worth kKeepBonus of its linear share
// of T_a's coefficient (of its price under cost).
void add_keep_columns(Program& prog, const Pricer& p, const std::vector<ActiveJob>& active) {
  for (std::size_t i = 0; i < prog.cell.size(); ++i) {
    const auto [a, t] = prog.cell[i];
    const std::size_t c = prog.x_column[i];
    const Allocation& held = active[a].current;
    if (held.empty() || held[t] == 0) continue;
    const double worth = prog.lp.maximize
                             ? prog.lp.objective[prog.throughput[a]] * p.jobs()[active[a].job].speed[t]
                             : -prog.lp.objective[c];
    if (worth == 0.0) continue;
    const std::size_t k = prog.lp.add_column(kKeepBonus * worth, 0.0, static_cast<double>(held[t]));
    LinearProgram::Row row;
    row.terms = {{k, 1.0}, {c, -1.0}};
    row.upper = 0.0;
    prog.lp.rows.push_back(std::move(row));
  }
}

Fractional unpack(const Program& prog, const LpSolution& s, std::size_t jobs, std::size_t types) {
  Fractional x(jobs, std::vector<double>(types, 0.0));
  for (std::size_t i = 0; i < prog.cell.size(); ++i)
    x[prog.cell[i].first][prog.cell[i].second] = s.x[prog.x_column[i]];
  return x;
}

}  // namespace

Relaxation solve_relaxation(const Pricer& p, const std::vector<ActiveJob>& active, Objective o,
                            const Allowed& allowed, const Capacity& capacity) {
  Relaxation out;
  const std::size_t types = p.pool().types.size();
  Program prog = base_program(p, active, allowed, capacity);
  if (o == Objective::kMinAvgJct) {
    const double scale = mean_remaining(p, active);
    for (std::size_t a = 0; a < active.size(); ++a) {
      prog.lp.objective[prog.throughput[a]] =
          p.jobs()[active[a].job].weight * scale / remaining_samples(p, active[a]);
    }
    add_keep_columns(prog, p, active);
    const LpSolution s = solve_lp(prog.lp);
    out.optimal = s.optimal;
    out.value = s.value;
    if (s.optimal) out.x = unpack(prog, s, active.size(), types);
    return out;
  }
  add_fairness_rows(prog, p, active, o);
  const LpSolution first = solve_lp(prog.lp);
  if (!first.optimal) return out;
  out.value = first.value;
  second_phase(prog, p, active, o, first.value);
  add_keep_columns(prog, p, active);
  const LpSolution second = solve_lp(prog.lp);
  // Phase 2 only adds: if the solver refuses it, phase 1's point stands.
  const LpSolution& best = second.optimal ? second : first;
  out.optimal = true;
  out.x = unpack(prog, best, active.size(), types);
  return out;
}

Capacity pool_capacity(const Pricer& p) {
  Capacity out;
  for (const MachineType& type : p.pool().types) out.push_back(type.count);
  return out;
}

Allowed allowed_types(const Pricer& p, const std::vector<ActiveJob>& active, const Capacity& capacity) {
  Allowed allowed(active.size(), std::vector<bool>(p.pool().types.size(), false));
  for (std::size_t a = 0; a < active.size(); ++a) {
    for (std::size_t t = 0; t < p.pool().types.size(); ++t)
      allowed[a][t] = p.jobs()[active[a].job].speed[t] > 0.0 && capacity[t] > 0;
  }
  return allowed;
}

Allowed one_type_each(const Pricer& p, const std::vector<ActiveJob>& active, const Fractional& x,
                      const Allowed& allowed, const Capacity& capacity) {
  const std::size_t types = p.pool().types.size();
  // Per job, its types best first: by the throughput the relaxation gave it
  // there, then by speed.
  std::vector<std::vector<std::size_t>> ranked(active.size());
  std::vector<double> top(active.size(), 0.0);
  for (std::size_t a = 0; a < active.size(); ++a) {
    const Job& job = p.jobs()[active[a].job];
    const auto key = [&](std::size_t t) { return std::pair(x[a][t] * job.speed[t], job.speed[t]); };
    for (std::size_t t = 0; t < types; ++t) {
      if (allowed[a][t]) ranked[a].push_back(t);
    }
    std::stable_sort(ranked[a].begin(), ranked[a].end(),
                     [&](std::size_t l, std::size_t r) { return key(l) > key(r); });
    if (!ranked[a].empty()) top[a] = key(ranked[a].front()).first / p.isolated(active[a].job);
  }
  // Jobs whose first choice carries most of their share choose first, each
  // its best type with a machine not yet promised (every job needs one).
  std::vector<std::size_t> order(active.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&top](std::size_t l, std::size_t r) { return top[l] > top[r]; });
  std::vector<std::size_t> slots = capacity;
  Allowed out(active.size(), std::vector<bool>(types, false));
  for (const std::size_t a : order) {
    if (ranked[a].empty()) continue;
    const auto it =
        std::find_if(ranked[a].begin(), ranked[a].end(), [&slots](std::size_t t) { return slots[t] > 0; });
    const std::size_t t = it == ranked[a].end() ? ranked[a].front() : *it;
    out[a][t] = true;
    if (slots[t] > 0) --slots[t];
  }
  return out;
}

}  // namespace hetrain::sched

#include "hetrain/sched/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "hetrain/sched/lp.h"

namespace hetrain::sched {
namespace {

using nlohmann::json;

constexpr double kSecondsPerHour = 3600.0;

std::string solver_text(const PlanOptions& o) {
  const bool lp = o.solver != Solver::kGreedy && lp_solver_available();
  return lp ? lp_solver_name() + " LP, rounded" : std::string("greedy");
}

json allocation_json(const Pool& pool, const Allocation& x) {
  json out = json::object();
  for (std::size_t t = 0; t < x.size(); ++t) {
    if (x[t] > 0) out[pool.types[t].name] = x[t];
  }
  return out;
}

double finite_or(double v, double fallback) { return std::isfinite(v) ? v : fallback; }

}  // namespace

std::string allocation_text(const Pool& pool, const Allocation& x) {
  std::string out;
  for (std::size_t t = 0; t < x.size(); ++t) {
    if (x[t] == 0) continue;
    out += fmt::format("{}{}x{}", out.empty() ? "" : " + ", x[t], pool.types[t].name);
  }
  return out.empty() ? "-" : out;
}

PlanSummary summarize_plan(const Pricer& p, const std::string& name, const RoundPlan& plan) {
  PlanSummary s;
  s.name = name;
  s.allocation = plan.allocation;
  s.used_lp = plan.used_lp;
  s.min_normalized = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < plan.allocation.size(); ++j) {
    const Allocation& x = plan.allocation[j];
    const Job& job = p.jobs()[j];
    const double step =
        machines_in(x) > 0 ? p.exact_step_seconds(j, x) : std::numeric_limits<double>::infinity();
    const double rate = std::isfinite(step) ? static_cast<double>(job.global_batch) / step : 0.0;
    s.step_seconds.push_back(step);
    s.normalized.push_back(rate / (job.weight * p.isolated(j)));
    s.min_normalized = std::min(s.min_normalized, s.normalized.back());
    s.sum_normalized += s.normalized.back();
    s.machines_used += machines_in(x);
    for (std::size_t t = 0; t < x.size(); ++t)
      s.cost_per_hour += static_cast<double>(x[t]) * p.pool().types[t].price_per_hour;
  }
  return s;
}

std::string plan_text(const Pricer& p, const PlanOptions& o, const std::vector<PlanSummary>& plans) {
  std::string out = fmt::format("{} jobs on {} machines (", p.jobs().size(), p.pool().machines());
  for (std::size_t t = 0; t < p.pool().types.size(); ++t)
    out += fmt::format("{}{} {}", t == 0 ? "" : ", ", p.pool().types[t].count, p.pool().types[t].name);
  out += fmt::format("), objective {}, solver {}\n", objective_name(o.objective), solver_text(o));
  // The first plan in full, then every plan's summary, side by side.
  if (!plans.empty()) {
    const PlanSummary& s = plans.front();
    out += fmt::format("\n{}:\n{:<16} {:<36} {:>10} {:>12} {:>10} {:>12}\n", s.name, "job", "machines",
                       "step (s)", "samples/s", "share", "hours left");
    for (std::size_t j = 0; j < s.allocation.size(); ++j) {
      const Job& job = p.jobs()[j];
      const bool runs = std::isfinite(s.step_seconds[j]);
      const double rate = runs ? static_cast<double>(job.global_batch) / s.step_seconds[j] : 0.0;
      out += fmt::format(
          "{:<16} {:<36} {:>10} {:>12.1f} {:>10.4f} {:>12}\n", job.name,
          allocation_text(p.pool(), s.allocation[j]),
          runs ? fmt::format("{:.4f}", s.step_seconds[j]) : "waits", rate, s.normalized[j],
          runs ? fmt::format("{:.2f}", static_cast<double>(job.steps) * s.step_seconds[j] / kSecondsPerHour)
               : "-");
    }
  }
  out += fmt::format("\n{:<12} {:>14} {:>14} {:>14} {:>12}\n", "plan", "least share", "sum of shares",
                     "machines used", "cost/hour");
  for (const PlanSummary& s : plans) {
    out += fmt::format("{:<12} {:>14.4f} {:>14.4f} {:>14} {:>12.2f}\n", s.name, s.min_normalized,
                       s.sum_normalized, s.machines_used, s.cost_per_hour);
  }
  out += "(share: the job's samples/s over weight x its samples/s on the whole pool, linear)\n";
  return out;
}

std::string plan_json(const Pricer& p, const PlanOptions& o, const std::vector<PlanSummary>& plans) {
  json doc{{"objective", objective_name(o.objective)}, {"solver", solver_text(o)}};
  json list = json::array();
  for (const PlanSummary& s : plans) {
    json jobs = json::array();
    for (std::size_t j = 0; j < s.allocation.size(); ++j) {
      jobs.push_back({{"name", p.jobs()[j].name},
                      {"machines", allocation_json(p.pool(), s.allocation[j])},
                      {"step_seconds", finite_or(s.step_seconds[j], 0.0)},
                      {"share", s.normalized[j]}});
    }
    list.push_back({{"name", s.name},
                    {"used_lp", s.used_lp},
                    {"least_share", s.min_normalized},
                    {"sum_of_shares", s.sum_normalized},
                    {"machines_used", s.machines_used},
                    {"cost_per_hour", s.cost_per_hour},
                    {"jobs", jobs}});
  }
  doc["plans"] = list;
  return doc.dump(2) + "\n";
}

std::string schedule_text(const Pricer& p, const PlanOptions& o, const std::vector<NamedResult>& runs) {
  std::string out = fmt::format("{} jobs on {} machines, objective {}, solver {}\n", p.jobs().size(),
                                p.pool().machines(), objective_name(o.objective), solver_text(o));
  out +=
      fmt::format("{:<10} {:>12} {:>12} {:>12} {:>12} {:>8} {:>10} {:>8} {:>8}\n", "scheduler", "avg JCT (h)",
                  "p90 JCT (h)", "makespan (h)", "utilization", "Jain", "cost", "plans", "moves");
  for (const auto& [name, r] : runs) {
    out += fmt::format("{:<10} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>8.3f} {:>10.1f} {:>8} {:>8}\n",
                       name, r.avg_jct / kSecondsPerHour, r.p90_jct / kSecondsPerHour,
                       r.makespan / kSecondsPerHour, r.utilization, r.jain, r.cost, r.rounds, r.moves);
  }
  return out;
}

std::string schedule_json(const Pricer& p, const PlanOptions& o, const std::vector<NamedResult>& runs) {
  json doc{{"objective", objective_name(o.objective)}, {"solver", solver_text(o)}};
  json list = json::array();
  for (const auto& [name, r] : runs) {
    json jobs = json::array();
    for (std::size_t j = 0; j < r.jobs.size(); ++j) {
      const JobOutcome& out = r.jobs[j];
      jobs.push_back({{"name", p.jobs()[j].name},
                      {"start", out.start},
                      {"finish", out.finish},
                      {"jct", out.jct},
                      {"moves", out.moves},
                      {"machine_seconds", out.machine_seconds},
                      {"cost", out.cost}});
    }
    list.push_back({{"name", name},
                    {"avg_jct", r.avg_jct},
                    {"p90_jct", r.p90_jct},
                    {"makespan", r.makespan},
                    {"utilization", r.utilization},
                    {"jain", r.jain},
                    {"cost", r.cost},
                    {"plans", r.rounds},
                    {"moves", r.moves},
                    {"jobs", jobs}});
  }
  doc["schedulers"] = list;
  return doc.dump(2) + "\n";
}

}  // namespace hetrain::sched

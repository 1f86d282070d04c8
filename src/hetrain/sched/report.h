// What hetrain plan --jobs and hetrain sim --jobs print: tables for people,
// JSON for scripts (docs/scheduling.md lists the fields).
#pragma once

#include <string>
#include <vector>

#include "hetrain/sched/planner.h"
#include "hetrain/sched/simulate.h"

namespace hetrain::sched {

// One round's plan of every job, priced with the allocation core's integer
// split (Pricer::exact_step_seconds).
struct PlanSummary {
  std::string name;  // "mixed", "one-type"
  std::vector<Allocation> allocation;
  std::vector<double> step_seconds;  // +inf: no machines
  std::vector<double> normalized;    // throughput / (weight x isolated)
  double min_normalized = 0.0;
  double sum_normalized = 0.0;
  double cost_per_hour = 0.0;
  std::size_t machines_used = 0;
  bool used_lp = false;
};
PlanSummary summarize_plan(const Pricer& pricer, const std::string& name, const RoundPlan& plan);

std::string plan_text(const Pricer& pricer, const PlanOptions& options,
                      const std::vector<PlanSummary>& plans);
std::string plan_json(const Pricer& pricer, const PlanOptions& options,
                      const std::vector<PlanSummary>& plans);

struct NamedResult {
  std::string name;  // "mixed", "one-type", "fcfs"
  ScheduleResult result;
};
std::string schedule_text(const Pricer& pricer, const PlanOptions& options,
                          const std::vector<NamedResult>& runs);
std::string schedule_json(const Pricer& pricer, const PlanOptions& options,
                          const std::vector<NamedResult>& runs);

// "2xa100 + 3xt4" ("-" for none).
std::string allocation_text(const Pool& pool, const Allocation& x);

}  // namespace hetrain::sched

// hetrain sim --jobs: jobs arrive, run on the machines a scheduler gives
// them, and finish; an event-driven simulation of a trace over a pool, with
// every step priced by Pricer (the allocation core and the ring's cost).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "hetrain/sched/planner.h"

namespace hetrain::sched {

enum class Scheduler {
  kPlanner,  // plan_round at every arrival, completion and round
  kFcfs,     // arrival order, each job its `workers` machines of one type, never moved
};

struct SimJobsOptions {
  Scheduler scheduler = Scheduler::kPlanner;
  PlanOptions plan;
  double round_seconds = 0.0;  // also re-plan this long after the last plan (0: on events only)
  // Lost per move; the planner prices the same (plan.restart_seconds is set to it).
  double restart_seconds = kDefaultRestartSeconds;
  // Called after every plan (FCFS: every start) with the jobs present, as
  // the planner saw them, and the machines each holds from then on (tests
  // check every plan with it; empty: not called).
  std::function<void(const std::vector<ActiveJob>&, const std::vector<Allocation>&)> on_plan;
};

struct JobOutcome {
  double start = 0.0;            // first second it held machines
  double finish = 0.0;           // seconds since the trace started
  double jct = 0.0;              // finish - arrival
  std::size_t moves = 0;         // allocation changes after it started (each cost a restart)
  double machine_seconds = 0.0;  // machines held x seconds
  double cost = 0.0;             // price of the machines held
};

struct ScheduleResult {
  std::vector<JobOutcome> jobs;  // in the jobs file's order
  double avg_jct = 0.0;          // seconds
  double p90_jct = 0.0;          // seconds, nearest rank
  double makespan = 0.0;         // seconds from 0 to the last completion
  double utilization = 0.0;      // machine-seconds held / (machines x makespan)
  double jain = 0.0;             // Jain's index of each job's weighted speed (jain_index)
  double cost = 0.0;             // currency units
  std::size_t rounds = 0;        // plans made
  std::size_t moves = 0;         // restarts paid, all jobs
};

ScheduleResult simulate_jobs(const Pricer& pricer, const SimJobsOptions& options);

// (sum x)^2 / (n sum x^2): 1 when all x are equal, 1/n when one job has it all.
// Here x_j = (ideal_j / jct_j) / weight_j, ideal_j = steps_j x global_batch_j
// / isolated_j: how fast the job ran against the whole pool's linear speed.
double jain_index(const std::vector<double>& x);

}  // namespace hetrain::sched

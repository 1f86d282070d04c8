// `hetrain pool`: the multi-job planner (sched/) driving a real Slurm. At
// every arrival (a job file in the spool), every end and every round it
// re-plans with sched::plan_round and acts through Slurm's commands: submits
// each placed job on nodes of its machine types (features), and moves a job
// whose machines change by stopping it (scancel --signal=TERM: a checkpoint,
// exit code 6) and submitting it again, resuming, on the new ones. A job
// that is not gone within Slurm's KillWait of the request is cancelled.
//
// Never lost, never twice: every action is written to the state file before
// it is taken (submitting G, stopping), and Slurm jobs are named by job and
// generation, so a restarted controller finds in squeue what it submitted
// before dying, and learns how a job that left squeue ended from the exit
// file its script wrote (pool/job_script.h).
#pragma once

#include <map>
#include <set>
#include <string>

#include "hetrain/pool/slurm.h"
#include "hetrain/pool/spool.h"
#include "hetrain/pool/state.h"
#include "hetrain/sched/planner.h"

namespace hetrain::pool {

struct ControllerOptions {
  std::string spool;              // folder of job files; state and logs under SPOOL/.pool/
  std::string hetrain;            // the binary the jobs run, on a path every node sees
  double round_seconds = 60.0;    // re-plan at least this often
  double poll_seconds = 1.0;      // between looks at squeue and the spool
  double command_timeout = 30.0;  // seconds any Slurm command may take
  sched::PlanOptions plan;
  // (testing) exit with kCrashExitCode right after this command, before the
  // state records it: "sbatch" or "scancel".
  std::string crash_after;
};
inline constexpr int kCrashExitCode = 70;

class Controller {
 public:
  Controller(const sched::Pool& pool, ControllerOptions options);
  // One look: reconcile with the spool and Slurm, re-plan on an arrival, an
  // end or a round, act. Returns the number of jobs not yet done or failed.
  std::size_t poll();
  const PoolState& state() const { return state_; }

 private:
  bool read_spool(double now);
  bool reconcile(const std::vector<QueuedJob>& queue, double now);
  void replan(double now);
  void act(const std::vector<QueuedJob>& queue);
  void submit(const std::string& name, JobState& js);
  void stop(const std::string& name, const JobState& js, const QueuedJob& q);
  void save() const;
  void say(const std::string& line) const;
  double now() const;

  const sched::Pool& pool_;
  ControllerOptions o_;
  Slurm slurm_;
  std::string state_path_, log_dir_;
  PoolState state_;
  std::map<std::string, SpoolJob> jobs_;             // by name, from the spool
  std::map<std::string, sched::Allocation> target_;  // the last plan's, by name
  std::set<std::string> refused_;                    // spool files with errors (reported once)
  std::map<std::string, double> signalled_;          // when each stopping job was last signalled
  std::map<std::string, double> stop_since_;         // when it was first (by this controller)
  std::set<std::string> cancelled_;                  // Slurm ids cancelled past the stop deadline
  double last_plan_ = -1.0;
};

}  // namespace hetrain::pool

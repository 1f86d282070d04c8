// The controller's hands on Slurm: its own commands (sbatch, squeue,
// scancel), each with a timeout. sacct is not used (it needs accounting
// storage): a job's end is its leaving squeue, its outcome the exit code its
// batch script writes next to its checkpoint (pool/job_script.h).
#pragma once

#include <string>
#include <vector>

namespace hetrain::pool {

struct QueuedJob {
  std::string id;
  std::string name;
  std::string state;  // PENDING, RUNNING, COMPLETING, ...
};

class Slurm {
 public:
  explicit Slurm(double timeout_seconds) : timeout_(timeout_seconds) {}
  // sbatch --parsable ARGS SCRIPT: the job id. Throws Error when sbatch fails.
  std::string submit(const std::vector<std::string>& sbatch_args, const std::string& script) const;
  // The jobs in squeue whose name starts with `prefix`.
  std::vector<QueuedJob> queue(const std::string& prefix) const;
  // scancel --signal=TERM: the job's tasks stop after a step, with a
  // checkpoint; a job still pending is cancelled (nothing ran to save).
  void stop(const QueuedJob& job) const;
  // scancel: SIGTERM to the batch script and every task, SIGKILL after KillWait.
  void cancel(const QueuedJob& job) const;

 private:
  double timeout_;
};

}  // namespace hetrain::pool

// What the controller remembers between rounds and across its own restart
// (SPOOL/.pool/state.json, written atomically before every action it
// records). The spool files and Slurm's queue are the rest of the truth: a
// restarted controller reads all three (pool/controller.h).
#pragma once

#include <map>
#include <string>

#include "hetrain/sched/pricing.h"

namespace hetrain::pool {

enum class Status {
  kWaiting,     // no Slurm job: new, or stopped with a checkpoint
  kSubmitting,  // generation G is being submitted (written before sbatch)
  kRunning,     // Slurm job `slurm_id` (pending or running)
  kStopping,    // signalled to stop (written before scancel)
  kDone,        // finished: exit code 0
  kFailed,      // exit code other than 0 and 6; left alone
};
std::string status_name(Status s);

struct JobState {
  Status status = Status::kWaiting;
  int generation = 0;  // Slurm submissions so far (the name of the latest: hp-NAME-G)
  std::string slurm_id;
  sched::Allocation allocation;  // machines per pool type it holds (or was submitted with)
  bool started = false;          // has run before: a new placement costs it a restart
  double arrived = 0.0;          // seconds since the controller's first start
  double ended = 0.0;            // done: seconds since the controller's first start
  int exit_code = 0;
};

struct PoolState {
  std::map<std::string, JobState> jobs;  // by job name
  double clock_origin = 0.0;             // the first start, seconds since the epoch
};

// What a job's Slurm run ending with `exit_code` (what its script recorded;
// -1: none) makes of it. 0: done. 6, or none (cancelled, lost with its node):
// waiting, to resume from its checkpoint. While the controller is stopping it
// (`stopping`), an end the stop caused is one too: 4 (a peer left for the
// stop), 5, or 128 + N (a task killed by signal N, e.g. by the escalation);
// checkpoints are written atomically, so the last one stands. Anything else
// (1, 2, 3: errors that would happen again): failed.
Status after_exit(int exit_code, bool stopping);

PoolState load_state(const std::string& path);  // an empty state when there is no file
void save_state(const std::string& path, const PoolState& s);

}  // namespace hetrain::pool

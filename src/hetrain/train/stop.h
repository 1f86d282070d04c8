// Stop on request: a signal (Slurm's preemption SIGTERM, `scancel --signal
// USR1`, Ctrl-C) asks the run to stop at the next step boundary with a
// checkpoint. The request is only noted here; the step carries each rank's
// vote in its one allreduce (train/telemetry.h), so every rank stops after
// the same step, a rank that got the signal never leaves the others waiting,
// and rank 0 then writes the checkpoint (docs/errors.md: exit code 6).
#pragma once

#include <signal.h>

#include <array>

namespace hetrain::train {

// While one exists, SIGTERM, SIGINT and SIGUSR1 are noted instead of
// killing the process (SA_RESTART: blocking calls are not interrupted), but
// a second SIGINT kills it as usual (Ctrl-C twice); the
// previous handlers come back when it is destroyed. Creating it unblocks the
// three: a request held blocked since before exec (how launchers start
// workers) is noted then. One per process at a
// time (the CLI's worker and launcher make one each).
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  std::array<struct sigaction, 3> previous_{};  // SIGTERM, SIGINT, SIGUSR1's handlers before
};

// The signal that asked this process to stop (0: none yet).
int stop_signal();

// SIGTERM, SIGINT and SIGUSR1: what a launcher blocks while it starts a
// worker, so that a request cannot kill it before it listens.
sigset_t stop_signal_set();

// True once a stop was requested.
inline bool stop_requested() { return stop_signal() != 0; }

}  // namespace hetrain::train

// `hetrain run -n N`: starts N local worker processes of this very binary
// with torchrun's environment variables, waits for all of them, and stops
// the rest as soon as one fails; with max_restarts, starts them all again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hetrain::cli {

struct LaunchPlan {
  int nproc = 1;
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 0;         // 0: ask the OS for a free one
  std::vector<std::string> worker_args;  // argv after the program name
  // A stop request (SIGTERM, SIGINT to the launcher) -> SIGKILL for workers
  // still running: under Slurm's default KillWait (30 s), so the launcher is
  // never killed before its workers.
  double grace_seconds = 25.0;
  // After a worker fails, stop the rest and start them all again this many
  // times (as torchrun --max_restarts); each restart resumes from the
  // checkpoint (TORCHELASTIC_RESTART_COUNT tells the workers).
  int max_restarts = 0;
};

// Returns 0 when every worker exits 0; otherwise the exit code of the
// worker that failed first (and prints which one, unless that worker already
// reported a usage or data error itself).
int launch(const LaunchPlan& plan);

// A TCP port on 127.0.0.1 that was free a moment ago.
std::uint16_t free_port();

}  // namespace hetrain::cli

// Running another program (sbatch, squeue, scancel) and reading what it
// prints, with a timeout: fork and exec, no shell, no popen.
#pragma once

#include <string>
#include <vector>

namespace hetrain::pool {

struct CommandResult {
  int exit_code = 0;
  std::string output;  // stdout and stderr together
};

// Runs argv[0] (found on PATH) with argv. Throws Error when it cannot start
// or has not ended within `timeout_seconds` (it is then killed).
CommandResult run_command(const std::vector<std::string>& argv, double timeout_seconds);

}  // namespace hetrain::pool

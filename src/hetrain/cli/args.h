// The command line: one parser for every subcommand, and the entry point
// that turns exceptions into exit codes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hetrain/train/options.h"

namespace hetrain::cli {

// Launcher flags, accepted by `run` (which uses them) and by `worker` (which
// checks them against its environment), so `run` can pass its own argument
// list on to the workers unchanged.
struct LaunchOptions {
  int nproc = 0;                  // 0: not given
  std::string master_addr;        // empty: from the environment / 127.0.0.1
  std::uint16_t master_port = 0;  // 0: from the environment / a free port
  int max_restarts = 0;           // run: restarts of the whole group after a failure
};

// The single place where errors become a one-line message and an exit code.
int main_entry(int argc, char** argv);

}  // namespace hetrain::cli

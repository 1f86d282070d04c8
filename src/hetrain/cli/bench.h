// `hetrain bench allreduce`: time each allreduce algorithm over message sizes
// on N local processes, in the layout of nccl-tests, with this machine's
// physical limits (memcpy and single-stream loopback TCP) as a reference.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hetrain/comm/env.h"

namespace CLI {
class App;
}

namespace hetrain::cli {

struct BenchOptions {
  std::vector<std::string> algorithms{"gloo", "ring", "halving-doubling"};
  std::vector<std::string> sizes{"1K", "64K", "1M", "16M", "64M", "256M"};  // bytes, K/M/G suffixes
  int iterations = 5;                                                       // timed, after one warm-up
  double timeout_seconds = 300.0;
};

// The subcommand's flags. The launcher starts `nproc` copies of the same
// command line with --as-worker added.
struct BenchCommand {
  BenchOptions options;
  int nproc = 4;
  bool as_worker = false;
  CLI::App* allreduce_app = nullptr;
};

// Registers `bench allreduce` on `app`, binding its flags to `out`.
void add_bench_command(CLI::App& app, BenchCommand& out);

// Runs the benchmark if it was parsed (as the launcher or as one of its
// workers) and returns its exit code; nullopt if it was not.
std::optional<int> run_bench_command(const BenchCommand& c, int argc, char** argv);

// Parses "64K", "1M", "2G" or plain bytes (powers of 1024); throws UsageError.
std::size_t parse_bytes(const std::string& text);

// Checks the options before any process starts: --iters, the algorithms, and
// each size (whole float32 values; one buffer per process must fit in
// `memory_bytes` on `nproc` processes). Returns the sizes in bytes; throws
// UsageError.
std::vector<std::size_t> check_bench_options(const BenchOptions& options, int nproc,
                                             std::size_t memory_bytes);

// This machine's physical memory (the largest size_t if unknown).
std::size_t physical_memory_bytes();

// Runs on every rank of `world`; rank 0 prints the table. Returns 0.
int bench_allreduce_worker(const BenchOptions& options, const comm::WorldInfo& world);

}  // namespace hetrain::cli

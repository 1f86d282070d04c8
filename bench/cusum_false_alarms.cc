// How often a steady worker's change detector raises a false alarm when its
// noise is replayed from a recorded trace (examples/noise/*.csv: per step,
// each rank's time over its median): 200 lines of 1,000 steps, each replaying
// one column of the trace from a random offset (cyclically) around a
// constant 0.32 s at 32 samples; nothing changes, so every alarm is false.
// Prints the alarms per 10^3 steps (the design: about one, docs/allocation.md).
// Usage: cusum_false_alarms TRACE.csv [lines=200] [steps=1000]
// Plain C++ (no gtest): its figures go to docs/allocation.md.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "hetrain/alloc/estimator.h"

namespace {

// The trace's columns; empty on a file that cannot be read or parsed.
std::vector<std::vector<double>> read_trace(const char* path) {
  std::ifstream f(path);
  std::vector<std::vector<double>> cols;
  std::string line;
  bool header = false;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (!header) {  // rank0,rank1,...
      header = true;
      continue;
    }
    std::stringstream cells(line);
    std::string cell;
    for (std::size_t c = 0; std::getline(cells, cell, ','); ++c) {
      if (cols.size() <= c) cols.resize(c + 1);
      char* end = nullptr;
      const double v = std::strtod(cell.c_str(), &end);
      if (end == cell.c_str() || !(v > 0.0)) return {};
      cols[c].push_back(v);
    }
  }
  for (const auto& c : cols)
    if (c.empty() || c.size() != cols[0].size()) return {};
  return cols;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cusum_false_alarms TRACE.csv [lines>0] [steps>0]\n");
    return 2;
  }
  const std::vector<std::vector<double>> cols = read_trace(argv[1]);
  const long lines = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 200;
  const long steps = argc > 3 ? std::strtol(argv[3], nullptr, 10) : 1000;
  if (cols.empty() || lines <= 0 || steps <= 0) {
    std::fprintf(stderr, "cusum_false_alarms: %s is not a noise trace, or lines/steps are not positive\n", argv[1]);
    return 2;
  }
  const hetrain::alloc::AdaptiveTuning t;
  std::mt19937_64 rng(1);
  std::size_t alarms = 0;
  for (long r = 0; r < lines; ++r) {
    const std::vector<double>& col = cols[rng() % cols.size()];
    const std::size_t offset = rng() % col.size();
    hetrain::alloc::LineEstimate l;
    for (long k = 0; k < steps; ++k) {
      l.drift(t);
      l.observe(32.0, 0.32 * col[(offset + static_cast<std::size_t>(k)) % col.size()], t);
    }
    alarms += l.changes();
  }
  std::printf("%s: %.2f false alarms per 10^3 steps (%zu in %ld lines of %ld steps)\n", argv[1],
              1000.0 * static_cast<double>(alarms) / static_cast<double>(lines * steps), alarms, lines, steps);
  return 0;
}

#include "hetrain/sim/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "hetrain/common/error.h"
#include "hetrain/common/median.h"
#include "hetrain/record/run.h"

namespace hetrain::sim {
namespace {

// A normal distribution's standard deviation is 1.4826 times its median
// absolute deviation.
constexpr double kMadToStandardDeviation = 1.4826;

}  // namespace

MeasuredRun parse_run(std::string_view json_text, const std::string& file) {
  // The run record's own parser checks the schema; calibration adds what it
  // alone needs: per-step times, and more steps than the warm-up.
  const record::Run run = record::parse_run(std::string(json_text), file);
  MeasuredRun r;
  r.policy = run.policy;
  r.world_size = static_cast<std::size_t>(run.world_size);
  r.global_batch = run.global_batch;
  r.train_seconds = run.train_seconds();
  r.allocation = run.allocation;
  r.compute_seconds = run.step_compute;
  r.wait_seconds = run.step_wait;
  if (r.allocation.size() != r.compute_seconds.size() || r.allocation.size() != r.wait_seconds.size()) {
    throw DataError(fmt::format("{}: allocation and steps disagree on the number of steps", file));
  }
  if (r.allocation.size() <= kCalibrationWarmupSteps) {
    throw DataError(fmt::format("{}: {} steps, too few to calibrate", file, r.allocation.size()));
  }
  return r;
}

MeasuredRun load_run(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(fmt::format("cannot read {}", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_run(text.str(), path);
}

Cluster calibrate(const MeasuredRun& run, const Cluster& base) {
  const std::size_t n = run.world_size, steps = run.allocation.size();
  Cluster c;
  c.network = base.network;
  c.gradient_bytes = base.gradient_bytes;
  c.global_batch = run.global_batch;
  c.seed = base.seed;
  for (std::size_t i = 0; i < n; ++i) {
    double sb = 0, st = 0, sbb = 0, sbt = 0, m = 0, lo = 1e300, hi = 0;
    for (std::size_t k = kCalibrationWarmupSteps; k < steps; ++k) {
      const double b = static_cast<double>(run.allocation[k][i]), t = run.compute_seconds[k][i];
      if (b <= 0) continue;
      sb += b, st += t, sbb += b * b, sbt += b * t, m += 1;
      lo = std::min(lo, b), hi = std::max(hi, b);
    }
    if (m == 0) throw DataError(fmt::format("rank {} never computed a sample: nothing to calibrate", i));
    WorkerGroup g;
    g.name = fmt::format("rank{}", i);
    g.kind = std::string();  // as the real run's workers: none said
    g.speed = sb / st;  // no slope: the whole time is per-sample cost
    if ((hi - lo) / hi >= kMinCalibrationSpread) {
      const double slope = (m * sbt - sb * st) / (m * sbb - sb * sb);  // seconds per sample
      const double overhead = (st - slope * sb) / m;
      if (slope > 0 && overhead >= 0) g.speed = 1.0 / slope, g.overhead = overhead;
    }
    std::vector<double> deviation;  // |c / t(b) - 1| per step
    for (std::size_t k = kCalibrationWarmupSteps; k < steps; ++k) {
      const double b = static_cast<double>(run.allocation[k][i]);
      if (b <= 0) continue;
      deviation.push_back(std::abs(run.compute_seconds[k][i] / (g.overhead + b / g.speed) - 1.0));
    }
    g.noise = kMadToStandardDeviation * upper_median(deviation);
    c.groups.push_back(g);
  }
  double explained = 0.0, comm = 0.0;
  for (std::size_t k = 0; k < steps; ++k) {
    const double wait = *std::min_element(run.wait_seconds[k].begin(), run.wait_seconds[k].end());
    explained += *std::max_element(run.compute_seconds[k].begin(), run.compute_seconds[k].end()) + wait;
    if (k >= kCalibrationWarmupSteps) comm += wait;
  }
  comm /= static_cast<double>(steps - kCalibrationWarmupSteps);
  c.step_overhead = std::max(0.0, (run.train_seconds - explained) / static_cast<double>(steps));
  if (n > 1) {
    const double ring_steps = 2.0 * static_cast<double>(n - 1);
    const double transfer = ring_steps / static_cast<double>(n) * c.gradient_bytes / c.network.bandwidth;
    c.network.latency = std::max(0.0, (comm - transfer) / ring_steps);
    c.network.intra_latency = c.network.latency;
    c.network.intra_bandwidth = c.network.bandwidth;
    c.network.workers_per_node = 0;
    c.network.bucket_bytes = 0;
  }
  return c;
}

}  // namespace hetrain::sim

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "hetrain/common/error.h"
#include "hetrain/sim/calibrate.h"
#include "hetrain/sim/simulator.h"
#include "hetrain/record/metrics.h"

namespace hetrain::sim {
namespace {

// A run measured on workers of 100, 200, 300 samples/s with 10 ms overhead,
// an allreduce of 8 ms and 2 ms of optimizer per step; the first step pays
// 1 s of lazy initialisation on rank 0.
record::RunMetrics measured_run() {
  record::RunMetrics m;
  m.world_size = 3;
  m.policy = "adaptive";
  m.global_batch = 60;
  const double speed[] = {100, 200, 300};
  const std::vector<std::vector<std::size_t>> splits = {
      {20, 20, 20}, {10, 20, 30}, {12, 18, 30}, {8, 22, 30}};
  double total = 0.0;
  for (std::size_t k = 0; k < 40; ++k) {
    record::StepRecord s;
    s.local_batch = splits[k % splits.size()];
    for (std::size_t i = 0; i < 3; ++i) {
      s.compute_seconds.push_back(0.01 + static_cast<double>(s.local_batch[i]) / speed[i]);
    }
    if (k == 0) s.compute_seconds[0] += 1.0;
    const double slowest = *std::max_element(s.compute_seconds.begin(), s.compute_seconds.end());
    for (double c : s.compute_seconds) s.wait_seconds.push_back(slowest - c + 0.008);
    total += slowest + 0.008 + 0.002;
    m.steps.push_back(s);
  }
  record::EpochRecord e;
  e.epoch = 1;
  e.train_seconds = total;
  m.epochs.push_back(e);
  return m;
}

TEST(Calibrate, RecoversSpeedsOverheadsAndTheNetwork) {
  const MeasuredRun run = parse_run(record::to_json(measured_run()), "run.json");
  ASSERT_EQ(run.allocation.size(), 40u);
  Cluster base;
  base.gradient_bytes = 3000;
  base.network.bandwidth = 1e6;
  const Cluster c = calibrate(run, base);
  ASSERT_EQ(c.groups.size(), 3u);
  const double speed[] = {100, 200, 300};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(c.groups[i].speed, speed[i], 1e-6) << i;
    EXPECT_NEAR(c.groups[i].overhead, 0.01, 1e-9) << i;
    EXPECT_NEAR(c.groups[i].noise, 0.0, 1e-9) << i;
  }
  // 8 ms = 4 ring steps x latency + 4/3 x 3000 B / 1e6 B/s.
  EXPECT_NEAR(c.network.latency, 0.001, 1e-12);
  // What the steps leave unexplained, spread over them: the optimizer's 2 ms.
  EXPECT_NEAR(c.step_overhead, 0.002, 1e-12);
  EXPECT_EQ(c.global_batch, 60u);
}

TEST(Calibrate, PredictsTheStaticSplitOfTheFittedWorkers) {
  Cluster base;
  base.gradient_bytes = 3000;
  base.network.bandwidth = 1e6;
  const Cluster c = calibrate(parse_run(record::to_json(measured_run()), "run.json"), base);
  SimOptions o;
  o.alloc.name = "static";
  o.alloc.shares = {1, 2, 3};
  o.steps = 10;
  // 0.11 s compute, 8 ms allreduce, 2 ms overhead per step.
  EXPECT_NEAR(simulate(c, o).total_seconds, 10 * 0.12, 1e-9);
}

TEST(Calibrate, EqualBatchesGiveNoOverheadAndAMeanSpeed) {
  record::RunMetrics m = measured_run();
  for (auto& s : m.steps) s.local_batch = {20, 20, 20};
  const Cluster c = calibrate(parse_run(record::to_json(m), "run.json"), Cluster{});
  EXPECT_EQ(c.groups[0].overhead, 0.0);
  EXPECT_GT(c.groups[0].speed, 0.0);
}

TEST(Calibrate, NotAMetricsFileIsADataErrorNamingIt) {
  try {
    parse_run(R"({"world_size": 2, "policy": "equal", "global_batch": 8, "epochs": []})", "x.json");
    FAIL();
  } catch (const DataError& e) {
    // The run record's parser (record/run.h) names the file and the field.
    EXPECT_NE(std::string(e.what()).find("x.json is not a hetrain metrics file: no 'wall_seconds'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_run("{", "x.json"), DataError);
  EXPECT_THROW(load_run("/nonexistent/run.json"), DataError);
}

}  // namespace
}  // namespace hetrain::sim

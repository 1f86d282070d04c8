#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hetrain/common/error.h"
#include "hetrain/common/file_io.h"
#include "hetrain/record/metrics.h"
#include "hetrain/record/run.h"

namespace hetrain::record {
namespace {

StepRecord step(std::vector<double> compute) {
  StepRecord s;
  s.local_batch.assign(compute.size(), 16);
  s.wait_seconds.assign(compute.size(), 0.0);
  s.compute_seconds = std::move(compute);
  return s;
}

TEST(BalanceEfficiency, IsOneWhenBalancedAndLowWithAStraggler) {
  EXPECT_DOUBLE_EQ(balance_efficiency({step({1, 1, 1, 1}), step({2, 2, 2, 2})}), 1.0);
  // Three workers at 1 s, one at 4 s: (1+1+1+4) / (4 x 4).
  EXPECT_DOUBLE_EQ(balance_efficiency({step({1, 1, 1, 4})}), 7.0 / 16.0);
  EXPECT_DOUBLE_EQ(balance_efficiency({}), 1.0);
}

TEST(MetricsJson, HasTheDocumentedFieldsAndPerWorkerTotals) {
  RunMetrics m;
  m.world_size = 2;
  m.wall_seconds = 3.5;
  EpochRecord e;
  e.epoch = 1;
  e.seconds = 3.0;
  e.train_seconds = 2.5;
  e.train_loss = 0.7;
  e.test_accuracy = 0.85;
  e.test_metric = 0.85;  // written under test_<metric>: test_accuracy by default
  m.epochs.push_back(e);
  auto s = step({0.5, 1.5});
  s.local_batch = {40, 24};
  s.wait_seconds = {1.0, 0.0};
  m.steps = {s, s};
  const auto doc = nlohmann::json::parse(to_json(m));
  EXPECT_DOUBLE_EQ(doc["wall_seconds"].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(doc["epochs"][0]["test_accuracy"].get<double>(), 0.85);
  EXPECT_DOUBLE_EQ(doc["epochs"][0]["train_loss"].get<double>(), 0.7);
  EXPECT_DOUBLE_EQ(doc["epochs"][0]["train_seconds"].get<double>(), 2.5);
  EXPECT_EQ(doc["workers"][0]["samples"].get<std::size_t>(), 80u);
  EXPECT_DOUBLE_EQ(doc["workers"][0]["wait_seconds"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(doc["workers"][1]["compute_seconds"].get<double>(), 3.0);
  EXPECT_EQ(doc["allocation"][1][1].get<std::size_t>(), 24u);
  EXPECT_DOUBLE_EQ(doc["balance_efficiency"].get<double>(), 2.0 / 3.0);
}

// A regression run: the metric under a key that names it, the evaluations,
// the per-step loss, end time and input wait; read back by the report's parser.
TEST(MetricsJson, NamesTheMetricAndKeepsWallClockCurves) {
  RunMetrics m;
  m.world_size = 2;
  m.loss = "mse";
  m.metric = "rmse";
  EpochRecord e;
  e.epoch = 1;
  e.test_metric = 0.25;
  m.epochs.push_back(e);
  m.evals = {{10, 1.5, 0.9, 0.5}, {20, 3.0, 0.4, 0.25}};
  auto s = step({0.5, 1.5});
  s.local_batch = {40, 24};
  s.wait_seconds = {1.0, 0.0};
  s.input_seconds = {0.01, 0.02};
  s.loss = 0.75;
  s.end_seconds = 2.0;
  m.steps = {s};
  const std::string text = to_json(m);
  const auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["metric"], "rmse");
  EXPECT_EQ(doc["loss"], "mse");
  EXPECT_DOUBLE_EQ(doc["epochs"][0]["test_rmse"].get<double>(), 0.25);
  EXPECT_FALSE(doc["epochs"][0].contains("test_accuracy"));
  EXPECT_DOUBLE_EQ(doc["evals"][1]["test_rmse"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(doc["workers"][1]["input_wait_seconds"].get<double>(), 0.02);
  const record::Run r = parse_run(text, "reg.json");
  EXPECT_EQ(r.metric, "rmse");
  ASSERT_EQ(r.evals.size(), 2u);
  EXPECT_EQ(r.evals[1].step, 20u);
  EXPECT_DOUBLE_EQ(r.evals[0].test_metric, 0.5);
  EXPECT_DOUBLE_EQ(r.final_accuracy(), 0.25);
  EXPECT_EQ(r.step_loss, std::vector<double>{0.75});
  EXPECT_EQ(r.step_end, std::vector<double>{2.0});
}

TEST(WriteFileAtomic, WritesAllOrReportsAndLeavesNoTemporary) {
  const auto dir = std::filesystem::temp_directory_path() / ("hetrain_metrics_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "m.json").string();
  write_file_atomic(path, "{\"a\": 1}\n");
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "{\"a\": 1}\n");
  EXPECT_THROW(write_file_atomic((dir / "missing" / "m.json").string(), "x"), DataError);
  std::size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) (void)e, ++files;
  EXPECT_EQ(files, 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetrain::record

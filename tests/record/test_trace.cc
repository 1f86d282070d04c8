#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hetrain/common/error.h"
#include "hetrain/record/trace.h"

namespace hetrain::record {
namespace {

namespace fs = std::filesystem;

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hetrain_trace_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Rank 0 computes 1 s and waits for rank 1, which computes 3 s; the
// allreduce ends at 3.5 s for both.
std::vector<std::vector<StepTimes>> one_step() {
  return {{{0.0, 1.0, 3.5, 3.6, 3.7, 48.0}, {0.0, 3.0, 3.5, 3.6, 3.65, 16.0}}};
}

TEST_F(TraceTest, WritesSpansForEveryWorkerInChromeTraceFormat) {
  const auto path = (dir_ / "trace.json").string();
  TraceWriter w(path, 2);
  w.add_epoch(1, 0, one_step());
  w.add_epoch(2, 1, one_step());
  w.close();
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  const auto doc = nlohmann::json::parse(ss.str());
  std::map<std::pair<int, std::string>, std::vector<nlohmann::json>> spans;
  std::map<int, std::string> names;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") spans[{e["tid"].get<int>(), e["name"].get<std::string>()}].push_back(e);
    if (e["ph"] == "M" && e["name"] == "thread_name") names[e["tid"].get<int>()] = e["args"]["name"];
  }
  auto of = [&](int tid, const char* name) -> std::vector<nlohmann::json>& {
    return spans[std::make_pair(tid, std::string(name))];
  };
  EXPECT_EQ(names, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}}));
  for (int rank : {0, 1}) {
    for (const char* name : {"compute", "allreduce", "optimizer", "allocation"}) {
      EXPECT_EQ(of(rank, name).size(), 2u) << rank << " " << name;
    }
  }
  // Rank 0 waits from its arrival (1 s) to rank 1's (3 s), then transfers.
  ASSERT_EQ(of(0, "wait").size(), 2u);
  EXPECT_DOUBLE_EQ(of(0, "wait")[0]["ts"].get<double>(), 1e6);
  EXPECT_DOUBLE_EQ(of(0, "wait")[0]["dur"].get<double>(), 2e6);
  EXPECT_DOUBLE_EQ(of(0, "allreduce")[0]["ts"].get<double>(), 3e6);
  EXPECT_DOUBLE_EQ(of(0, "allreduce")[0]["dur"].get<double>(), 0.5e6);
  EXPECT_TRUE(of(1, "wait").empty());  // the last to arrive waits for nobody
  EXPECT_DOUBLE_EQ(of(1, "compute")[1]["dur"].get<double>(), 3e6);
  EXPECT_EQ(of(1, "compute")[1]["args"]["step"].get<int>(), 1);
  EXPECT_EQ(of(1, "compute")[1]["args"]["epoch"].get<int>(), 2);
  EXPECT_EQ(of(0, "compute")[0]["args"]["local_batch"].get<int>(), 48);
  EXPECT_FALSE(fs::exists(path + ".tmp." + std::to_string(::getpid())));
}

TEST_F(TraceTest, AlignsEachRanksClockToRankZerosAtTheAllreduceEnds) {
  auto times = one_step();
  times.push_back(one_step()[0]);
  for (auto& step : times) {  // rank 1's clock runs 10 s ahead
    for (double* t : {&step[1].compute_begin, &step[1].allreduce_begin, &step[1].allreduce_end,
                      &step[1].decide_begin, &step[1].decide_end}) {
      *t += 10.0;
    }
  }
  const auto path = (dir_ / "trace.json").string();
  TraceWriter w(path, 2);
  w.add_epoch(1, 0, times);
  w.close();
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  const auto doc = nlohmann::json::parse(ss.str());
  std::size_t checked = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] != 1) continue;
    EXPECT_LT(e["ts"].get<double>(), 4e6) << e.dump();
    if (e["name"] == "allreduce") {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>() + e["dur"].get<double>(), 3.5e6);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2u);
}

TEST_F(TraceTest, WithoutCloseNothingIsLeftBehind) {
  const auto path = (dir_ / "trace.json").string();
  {
    TraceWriter w(path, 2);
    w.add_epoch(1, 0, one_step());
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(TraceTest, AnUnwritablePathIsADataErrorAtOnce) {
  EXPECT_THROW(TraceWriter((dir_ / "missing" / "t.json").string(), 1), DataError);
}

TEST(StepTimesAsDoubles, RoundTripsFieldByField) {
  const std::vector<StepTimes> steps = {{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}};
  const auto flat = flatten(steps);
  ASSERT_EQ(flat.size(), 2 * kStepTimesFields);
  EXPECT_DOUBLE_EQ(flat[kStepTimesFields], 7);
  const auto back = unflatten(flat.data(), steps.size());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_DOUBLE_EQ(back[1].compute_begin, 7);
  EXPECT_DOUBLE_EQ(back[1].decide_end, 11);
  EXPECT_DOUBLE_EQ(back[1].local_batch, 12);
  EXPECT_DOUBLE_EQ(back[0].allreduce_end, 3);
}

}  // namespace
}  // namespace hetrain::record

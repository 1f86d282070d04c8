#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "hetrain/common/error.h"
#include "hetrain/report/html.h"
#include "hetrain/record/run.h"
#include "hetrain/record/metrics.h"

namespace hetrain::report {
namespace {

namespace fs = std::filesystem;

// A metrics document as the trainer writes it.
std::string metrics_text(const std::string& policy, std::size_t steps, double slow_compute) {
  record::RunMetrics m;
  m.world_size = 2;
  m.policy = policy;
  m.model = "mlp";
  m.global_batch = 64;
  m.speeds = {1.0, 0.25};
  m.wall_seconds = 3.0;
  for (std::size_t e = 1; e <= 2; ++e) {
    const double acc = 0.7 + 0.1 * static_cast<double>(e);
    m.epochs.push_back(
        {e, 1.5, static_cast<double>(steps) * slow_compute / 2, 1.0 / static_cast<double>(e), acc, acc});
  }
  for (std::size_t s = 0; s < steps; ++s) {
    record::StepRecord r;
    r.local_batch = {32 + s % 8, 32 - s % 8};
    r.compute_seconds = {0.01, slow_compute};
    r.wait_seconds = {slow_compute - 0.01, 0.001};
    r.loss = 2.0 / static_cast<double>(s + 1);
    r.end_seconds = static_cast<double>(s + 1) * slow_compute;
    m.steps.push_back(r);
  }
  // An evaluation every 5 steps: accuracy climbing by 0.1 from 0.5.
  for (std::size_t s = 5; s <= steps; s += 5)
    m.evals.push_back({s, static_cast<double>(s) * slow_compute, 1.0, 0.4 + 0.02 * static_cast<double>(s)});
  return record::to_json(m);
}

std::string error_of(const std::string& text) {
  try {
    record::parse_run(text, "runs/x.json");
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no error)";
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

TEST(ParseRun, ReadsWhatTheTrainerWrites) {
  const record::Run r = record::parse_run(metrics_text("adaptive", 10, 0.04), "runs/demo-adaptive.json");
  EXPECT_EQ(r.label, "demo-adaptive");
  EXPECT_EQ(r.policy, "adaptive");
  EXPECT_EQ(r.world_size, 2);
  ASSERT_EQ(r.allocation.size(), 10u);
  EXPECT_EQ(r.allocation[3], (std::vector<std::size_t>{35, 29}));
  ASSERT_EQ(r.epochs.size(), 2u);
  EXPECT_NEAR(r.train_seconds(), 0.4, 1e-12);
  EXPECT_DOUBLE_EQ(r.final_accuracy(), 0.9);
  EXPECT_NEAR(r.worker_compute[1], 0.4, 1e-12);
  EXPECT_NEAR(r.balance_efficiency, 0.05 / 0.08, 1e-9);
}

TEST(ParseRun, RejectsBadInputInOneLineNamingTheFile) {
  const std::string not_json = error_of("hello");
  EXPECT_EQ(not_json.rfind("runs/x.json is not JSON: ", 0), 0u) << not_json;
  EXPECT_EQ(error_of("[1, 2]"), "runs/x.json is not a hetrain metrics file: not a JSON object");
  EXPECT_EQ(error_of("{\"world_size\": 2}"), "runs/x.json is not a hetrain metrics file: no 'wall_seconds'");
  auto text = metrics_text("equal", 3, 0.04);
  const auto wrong_type =
      error_of(std::string(text).replace(text.find("\"world_size\":2"), 14, "\"world_size\":\"2\""));
  EXPECT_NE(wrong_type.find("not a hetrain metrics file"), std::string::npos) << wrong_type;
  const auto narrow = error_of(std::string(text).replace(text.find("[33,31]"), 7, "[64]"));
  EXPECT_EQ(narrow, "runs/x.json is not a hetrain metrics file: step 1 of 'allocation' has 1 workers, not 2");
  auto steps_short = text;
  steps_short.replace(steps_short.find("\"compute_seconds\":[["), 20, "\"compute_seconds\":[[0.1,0.1],[");
  const auto extra_step = error_of(steps_short);
  EXPECT_EQ(extra_step,
            "runs/x.json is not a hetrain metrics file: 'steps.compute_seconds' has 4 steps, 'allocation' 3");
  for (const auto& msg : {not_json, wrong_type, narrow}) EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(LoadRun, MissingFileIsADataError) {
  try {
    record::load_run("/nonexistent/run.json");
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot read /nonexistent/run.json: No such file or directory");
  }
  EXPECT_THROW(record::load_run(fs::temp_directory_path().string()), DataError);
}

TEST(RenderHtml, HoldsEveryPlotWithDrawnElementsAndTheComparison) {
  const std::vector<record::Run> runs = {record::parse_run(metrics_text("equal", 20, 0.04), "equal.json"),
                                         record::parse_run(metrics_text("adaptive", 20, 0.02), "adaptive.json")};
  const std::string html = render_html(runs);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  const auto ids = plot_ids(runs.size());
  ASSERT_EQ(ids.size(), 3u + 2u + 2u * 5u);
  for (const auto& id : ids) {
    const auto at = html.find("<svg id=\"" + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    const auto end = html.find("</svg>", at);
    EXPECT_GT(count(html.substr(at, end - at), "class=\"data"), 0u) << id;
  }
  EXPECT_NE(html.find("<table id=\"compare-table\">"), std::string::npos);
  EXPECT_NE(html.find("<td>0.50x</td>"), std::string::npos);
  // The timeline of the equal run shows rank 0 waiting for the slow rank 1 on every step drawn.
  const auto tl = html.find("<svg id=\"timeline-0\"");
  const auto tl_end = html.find("</svg>", tl);
  EXPECT_EQ(count(html.substr(tl, tl_end - tl), ": wait 30.0 ms"),
            12u);  // adaptive trained in half equal's time
  // Self-contained: nothing to fetch, nothing to run.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
}

TEST(RenderHtml, OneRunHasNoComparisonAndLabelsAreEscaped) {
  record::Run r = record::parse_run(metrics_text("equal", 5, 0.04), "a<b>.json");
  const std::string html = render_html({r});
  EXPECT_EQ(html.find("compare-"), std::string::npos);
  EXPECT_NE(html.find("a&lt;b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("a<b>"), std::string::npos);
}

TEST(RenderHtml, LongRunsAreAveragedToABoundedNumberOfPoints) {
  const std::string html = render_html({record::parse_run(metrics_text("equal", 5000, 0.04), "long.json")});
  const auto at = html.find("<svg id=\"split-0\"");
  const auto path = html.find("<path class=\"data line\"", at);
  const auto end = html.find('"', html.find("d=\"", path) + 3);
  const std::size_t points = count(html.substr(path, end - path), " L") + 1;
  EXPECT_LE(points, kMaxLinePoints);
  EXPECT_GE(points, kMaxLinePoints / 2);
}

// The wall-clock section: each run's curve, when it first reached the
// target, and the sentence comparing them (fastest first).
TEST(TimeToTarget, MarksWhenEachRunReachedItAndSaysHowMuchSooner) {
  const std::vector<record::Run> runs = {record::parse_run(metrics_text("equal", 20, 0.04), "equal.json"),
                                         record::parse_run(metrics_text("adaptive", 20, 0.02), "adaptive.json")};
  // Accuracy 0.6 first at step 10: 0.4 s for equal, 0.2 s for adaptive.
  EXPECT_DOUBLE_EQ(*time_to_reach(metric_curve(runs[0]), 0.6, false), 0.4);
  EXPECT_FALSE(time_to_reach(metric_curve(runs[0]), 0.99, false).has_value());
  EXPECT_DOUBLE_EQ(*time_to_reach({{1.0, 2.0}, {0.5, 0.2}}, 0.3, true), 2.0);
  const std::string html = render_html(runs, {.metric = 0.6, .loss = std::nullopt});
  EXPECT_NE(html.find("adaptive reached 0.6 test accuracy in 0.2 s, equal in 0.4 s (2.00x as long)"),
            std::string::npos);
  EXPECT_NE(html.find("equal reaches it"), std::string::npos);
  // Unset, the loss target is the lowest (20-step mean) loss both runs reached.
  EXPECT_NE(html.find("id=\"wallclock-loss-target\">adaptive reached"), std::string::npos);
  const std::string never = render_html(runs, {.metric = 0.99, .loss = 0.0});
  EXPECT_NE(never.find("did not reach it in 0.8 s"), std::string::npos);
  // The moving mean starts with the first step alone.
  EXPECT_DOUBLE_EQ(loss_curve(runs[0]).values.front(), 2.0);
}

class WriteReport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hetrain_report_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string put(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(WriteReport, WritesThePageAndNothingOnBadInput) {
  const auto good = put("equal.json", metrics_text("equal", 4, 0.04));
  const auto out = (dir_ / "report.html").string();
  write_report({good}, out);
  std::stringstream ss;
  ss << std::ifstream(out).rdbuf();
  EXPECT_NE(ss.str().find("<svg id=\"split-0\""), std::string::npos);

  const auto bad = put("bad.json", "{\"not\": \"metrics\"}");
  const auto out2 = (dir_ / "report2.html").string();
  EXPECT_THROW(write_report({good, bad}, out2), DataError);
  EXPECT_FALSE(fs::exists(out2));
  EXPECT_THROW(write_report({}, out2), UsageError);
  EXPECT_THROW(write_report({good}, (dir_ / "no-such-dir" / "r.html").string()), DataError);
}

}  // namespace
}  // namespace hetrain::report

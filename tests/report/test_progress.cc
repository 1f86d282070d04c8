#include <gtest/gtest.h>

#include <sstream>

#include "hetrain/common/error.h"
#include "hetrain/report/progress.h"

namespace hetrain::report {
namespace {

StepProgress at(std::size_t step) {
  StepProgress p;
  p.step = step;
  p.planned_steps = 100;
  p.epoch = 1;
  p.epochs = 2;
  p.samples = 256;
  p.loss = 0.41234;
  p.split = {96, 96, 64};
  return p;
}

std::size_t count(const std::string& s, char c) {
  std::size_t n = 0;
  for (char x : s) n += x == c;
  return n;
}

TEST(Progress, DescribesStepRateEtaLossAndSharesInPercent) {
  const auto text = Progress::describe(at(25), 1534.4, 45.2, true);
  EXPECT_EQ(
      text,
      "epoch 1/2  step 25/100  [######..................]   25%  1534 samples/s  ETA 0:45  loss 0.4123  "
      "split 38/38/25%");
  EXPECT_EQ(Progress::describe(at(25), 1.0, 3725.0, false).find('['), std::string::npos);
  EXPECT_NE(Progress::describe(at(25), 1.0, 3725.0, false).find("ETA 1:02:05"), std::string::npos);
}

TEST(Progress, OnATerminalRedrawsOneLineAtMostTenTimesASecond) {
  std::ostringstream out;
  Progress p(out, true, LogLevel::kInfo);
  for (std::size_t s = 1; s <= 50; ++s) p.step(at(s), 0.01 * static_cast<double>(s));  // 0.5 s of steps
  EXPECT_EQ(count(out.str(), '\n'), 0u);
  const auto redraws = count(out.str(), '\r');
  EXPECT_GE(redraws, 4u);
  EXPECT_LE(redraws, 6u);
  p.break_line();
  p.break_line();  // only once
  EXPECT_EQ(count(out.str(), '\n'), 1u);
}

TEST(Progress, ElsewherePrintsPlainLinesEveryTenSecondsAndTheLastStep) {
  std::ostringstream out;
  Progress p(out, false, LogLevel::kInfo);
  for (std::size_t s = 1; s <= 100; ++s) p.step(at(s), 0.5 * static_cast<double>(s));  // 50 s
  const std::string text = out.str();
  EXPECT_EQ(count(text, '\r'), 0u);
  // Steps 1, 21, 41, 61, 81 (every 10 s) and 100 (the last).
  EXPECT_EQ(count(text, '\n'), 6u) << text;
  EXPECT_NE(text.find("step 100/100"), std::string::npos);
  EXPECT_NE(text.find("512 samples/s"), std::string::npos);  // 256 samples every 0.5 s
}

TEST(Progress, DebugPrintsEveryStepAndWarnNothing) {
  std::ostringstream debug, warn;
  Progress d(debug, false, LogLevel::kDebug), w(warn, false, LogLevel::kWarn);
  for (std::size_t s = 1; s <= 10; ++s) {
    d.step(at(s), 0.01 * static_cast<double>(s));
    w.step(at(s), 0.01 * static_cast<double>(s));
  }
  EXPECT_EQ(count(debug.str(), '\n'), 10u);
  EXPECT_TRUE(warn.str().empty());
}

TEST(LogLevel, ParsesTheFourNamesAndRejectsOthers) {
  EXPECT_EQ(parse_log_level("error"), LogLevel::kError);
  EXPECT_EQ(parse_log_level("warn"), LogLevel::kWarn);
  EXPECT_EQ(parse_log_level("info"), LogLevel::kInfo);
  EXPECT_EQ(parse_log_level("debug"), LogLevel::kDebug);
  EXPECT_THROW(parse_log_level("loud"), UsageError);
}

}  // namespace
}  // namespace hetrain::report

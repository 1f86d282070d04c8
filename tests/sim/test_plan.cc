#include <gtest/gtest.h>

#include <string>

#include "hetrain/common/error.h"
#include "hetrain/sim/cluster.h"
#include "hetrain/sim/plan.h"

namespace hetrain::sim {
namespace {

// Two fast cheap machines, one slow dear one; a gradient small enough that the
// ring costs little. 60000 samples of B = 600: 100 steps per epoch.
constexpr const char* kInventory = R"(global_batch = 600
gradient_bytes = 4000
dataset_samples = 60000
[network]
bandwidth = 1e9
latency = 0.0
[[group]]
name = "fast"
count = 2
speed = 100
price_per_hour = 1.0
[[group]]
name = "slow"
count = 1
speed = 10
price_per_hour = 10.0
)";

TEST(Plan, FastestUsesEveryMachineThatAddsSpeed) {
  const Cluster inv = parse_cluster(kInventory, "inv.toml");
  const PlanResult r = plan(inv, 1, Objective::kTime);
  ASSERT_EQ(r.steps, 100u);
  // 0, 1 or 2 fast x 0 or 1 slow, less the empty set.
  ASSERT_EQ(r.candidates.size(), 5u);
  const Candidate& best = r.candidates.front();
  EXPECT_EQ(best.use, (std::vector<std::size_t>{2, 1}));
  // 210 samples/s in all: 285.7, 285.7, 28.6 of 600, by largest remainder.
  EXPECT_EQ(best.split, (std::vector<std::size_t>{286, 286, 28}));
  EXPECT_NEAR(best.step_seconds, 2.86 + 4 * 1336.0 / 1e9, 1e-12);  // chunks of 333 or 334 floats
  EXPECT_LT(best.total_seconds, r.candidates[1].total_seconds);
}

TEST(Plan, CheapestDropsTheDearSlowMachine) {
  const Cluster inv = parse_cluster(kInventory, "inv.toml");
  const PlanResult r = plan(inv, 2, Objective::kCost);
  const Candidate& best = r.candidates.front();
  // One fast machine: 6 s a step at 1 per hour. Two cost as much in compute
  // (half the time, twice the price) plus their ring; the slow one is dear.
  EXPECT_EQ(best.use, (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(best.split, (std::vector<std::size_t>{600}));
  EXPECT_NEAR(best.step_seconds, 6.0, 1e-12);
  EXPECT_NEAR(best.cost, 200 * 6.0 / 3600.0 * 1.0, 1e-12);
  EXPECT_EQ(r.candidates[1].use, (std::vector<std::size_t>{2, 0}));
  const std::string report = plan_report(inv, r, Objective::kCost);
  EXPECT_NE(report.find("recommended (cheapest): 1xfast"), std::string::npos) << report;
  EXPECT_NE(report.find("2xfast + 1xslow"), std::string::npos) << report;  // a rejected alternative
}

TEST(Plan, ASlowLinkMakesFewerMachinesFaster) {
  std::string text = kInventory;
  text.replace(text.find("latency = 0.0"), 13, "latency = 2.0");  // 2 s a ring step
  const PlanResult r = plan(parse_cluster(text, "inv.toml"), 1, Objective::kTime);
  // One fast machine alone needs no allreduce: 6 s a step beats 3 + 2 x 2.
  EXPECT_EQ(r.candidates.front().use, (std::vector<std::size_t>{1, 0}));
  EXPECT_NEAR(r.candidates.front().step_seconds, 6.0, 1e-12);
}

TEST(Plan, MissingDatasetOrBadObjectiveAreUsageErrors) {
  std::string text = kInventory;
  text.replace(text.find("dataset_samples = 60000"), 23, "");
  EXPECT_THROW(plan(parse_cluster(text, "inv.toml"), 1, Objective::kTime), UsageError);
  EXPECT_THROW(parse_objective("speed"), UsageError);
}

}  // namespace
}  // namespace hetrain::sim

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hetrain/common/error.h"
#include "hetrain/train/options.h"

#include <functional>
#include <vector>

namespace hetrain::train {
namespace {

// Expects a UsageError whose message mentions `needle`.
template <typename Fn>
void expect_usage(Fn&& mutate, int world, const std::string& needle) {
  TrainOptions o;
  mutate(o);
  try {
    validate(o, world);
    ADD_FAILURE() << "expected a UsageError mentioning '" << needle << "'";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
  }
}

TEST(Validate, DefaultsAreValid) {
  EXPECT_NO_THROW(validate(TrainOptions{}, 1));
  EXPECT_NO_THROW(validate(TrainOptions{}, 4));
}

TEST(Validate, RejectsInconsistentFlags) {
  expect_usage([](TrainOptions& o) { o.speeds = {1, 1, 0.25}; }, 4, "--speeds has 3 values");
  expect_usage([](TrainOptions& o) { o.speeds = {1, 1, 1, 0}; }, 4, "(0, 1]");
  expect_usage([](TrainOptions& o) { o.speeds = {1, 1, 1, 2}; }, 4, "(0, 1]");
  expect_usage([](TrainOptions& o) { o.global_batch = 3; }, 4, "smaller than the number of workers");
  expect_usage([](TrainOptions& o) { o.model = "resnet9000"; }, 1, "unknown model");
  expect_usage([](TrainOptions& o) { o.alloc.name = "magic"; }, 1, "unknown policy");
  expect_usage(
      [](TrainOptions& o) {
        o.alloc.name = "static";
        o.alloc.shares = {1, 2, 3};
      },
      2, "--shares");
  expect_usage([](TrainOptions& o) { o.slowdowns = {{4, 10, 0.5}}; }, 4, "rank 4");
  expect_usage([](TrainOptions& o) { o.slowdowns = {{1, 10, 1.5}}; }, 4, "(0, 1]");
  expect_usage([](TrainOptions& o) { o.alloc.shares = {1, 2}; }, 2, "only to --policy static");
  expect_usage(
      [](TrainOptions& o) {
        o.alloc.name = "static";
        o.alloc.shares = {1, -2};
      },
      2, "> 0");
  expect_usage([](TrainOptions& o) { o.alloc.bounds.max_local = 10; }, 4, "cannot hold");
  expect_usage([](TrainOptions& o) { o.alloc.bounds.min_local = 20; }, 4, "exceed the global batch");
  expect_usage([](TrainOptions& o) { o.train_images = "x"; }, 1, "all four");
  expect_usage([](TrainOptions& o) { o.epochs = 0; }, 1, "--epochs");
  expect_usage([](TrainOptions& o) { o.timeout_seconds = 0; }, 1, "--timeout");
  expect_usage([](TrainOptions& o) { o.optimizer = "lbfgs"; }, 1, "unknown optimizer");
  expect_usage([](TrainOptions& o) { o.allreduce = "tree"; }, 1, "unknown allreduce");
  expect_usage([](TrainOptions& o) { o.bucket_mb = 0; }, 1, "--bucket-mb");
}

TEST(Slowdown, ParsesAndAppliesFromItsStepOn) {
  TrainOptions o;
  o.speeds = {1, 1, 0.5};
  o.slowdowns = parse_slowdowns("2@200:0.25,1@10:0.5,2@300:1");
  ASSERT_EQ(o.slowdowns.size(), 3u);
  EXPECT_NO_THROW(validate(o, 3));
  EXPECT_DOUBLE_EQ(emulated_speed(o, 2, 199), 0.5);
  EXPECT_DOUBLE_EQ(emulated_speed(o, 2, 200), 0.25);
  EXPECT_DOUBLE_EQ(emulated_speed(o, 2, 300), 1.0);
  EXPECT_DOUBLE_EQ(emulated_speed(o, 1, 9), 1.0);
  EXPECT_DOUBLE_EQ(emulated_speed(o, 1, 10), 0.5);
  EXPECT_DOUBLE_EQ(emulated_speed(o, 0, 1000), 1.0);
  for (const char* bad : {"2@200", "x@1:0.5", "1@2:0.5x", "@1:0.5", "1@:0.5", "1@1:"}) {
    EXPECT_THROW(parse_slowdowns(bad), UsageError) << bad;
  }
}

TEST(EffectiveLr, DefaultsDependOnTheOptimizer) {
  TrainOptions o;
  EXPECT_DOUBLE_EQ(effective_lr(o), 2e-3);
  o.optimizer = "sgd";
  EXPECT_DOUBLE_EQ(effective_lr(o), 0.05);
  o.lr = 0.2;
  EXPECT_DOUBLE_EQ(effective_lr(o), 0.2);
}

TEST(ScheduledLr, CosineFallsFromTheBaseToZeroAndConstantStays) {
  TrainOptions o;
  o.lr = 0.1;
  EXPECT_DOUBLE_EQ(scheduled_lr(o, 0, 100), 0.1);
  EXPECT_NEAR(scheduled_lr(o, 50, 100), 0.05, 1e-12);
  EXPECT_NEAR(scheduled_lr(o, 100, 100), 0.0, 1e-12);
  EXPECT_LT(scheduled_lr(o, 60, 100), scheduled_lr(o, 40, 100));
  o.lr_schedule = "constant";
  EXPECT_DOUBLE_EQ(scheduled_lr(o, 60, 100), 0.1);
  o.lr_schedule = "step";
  EXPECT_THROW(validate(o, 1), UsageError);
}

TEST(Validate, ATorchScriptModelIsAFileEndingInPt) {
  EXPECT_TRUE(is_script_model("models/net.pt"));
  EXPECT_FALSE(is_script_model(".pt"));
  EXPECT_FALSE(is_script_model("cnn"));
  EXPECT_FALSE(is_script_model("net.pth"));
  TrainOptions o;
  o.model = "/nonexistent/net.pt";
  EXPECT_THROW(validate(o, 1), DataError);
}

TEST(ConfigChecksum, ChangesWithEverySharedOptionTried) {
  const TrainOptions base;
  const auto sum = config_checksum(base);
  std::vector<std::function<void(TrainOptions&)>> changes = {
      [](TrainOptions& o) { o.model = "mlp"; },       [](TrainOptions& o) { o.lr = 0.1; },
      [](TrainOptions& o) { o.seed = 7; },            [](TrainOptions& o) { o.alloc.name = "adaptive"; },
      [](TrainOptions& o) { o.alloc.shares = {1, 2}; },     [](TrainOptions& o) { o.speeds = {1, 0.5}; },
      [](TrainOptions& o) { o.slowdowns = {{1, 5, 0.5}}; },
      [](TrainOptions& o) { o.sample_cost_ms = 1; }, [](TrainOptions& o) { o.overlap = false; },
      [](TrainOptions& o) { o.bucket_mb = 1; },       [](TrainOptions& o) { o.resume_dir = "x"; },
      [](TrainOptions& o) { o.alloc.bounds.max_local = 9; }};
  for (std::size_t k = 0; k < changes.size(); ++k) {
    TrainOptions o;
    changes[k](o);
    EXPECT_NE(config_checksum(o), sum) << "change " << k;
  }
}

TEST(ConfigChecksum, IgnoresWhatEachProcessDecidesForItself) {
  TrainOptions o;
  o.metrics_path = "m.json";
  o.trace_path = "t.json";
  o.threads = 3;
  o.timeout_seconds = 5;
  o.quiet = true;
  o.log_level = "debug";
  o.sample_log = "s";
  EXPECT_EQ(config_checksum(o), config_checksum(TrainOptions{}));
}

TEST(SerializeSharedOptions, NamesEveryField) {
  const auto doc = nlohmann::json::parse(serialize(TrainOptions{}));
  // Thirty-two fields: options.cc's compile-time count of SharedOptions agrees.
  EXPECT_EQ(doc.size(), 32u);
  EXPECT_EQ(doc.at("loss"), "");
  EXPECT_EQ(doc.at("eval_every"), 0u);
  EXPECT_EQ(doc.at("model"), "cnn");
  EXPECT_EQ(doc.at("global_batch"), kDefaultGlobalBatch);
}

}  // namespace
}  // namespace hetrain::train

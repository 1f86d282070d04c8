#include <gtest/gtest.h>

#include <vector>

#include "hetrain/train/telemetry.h"

namespace hetrain::train {
namespace {

// Three ranks' blocks, summed as the SUM allreduce would.
std::vector<float> reduce(const Telemetry& t, const std::vector<Telemetry::Mine>& ranks) {
  std::vector<float> sum(t.size(), 0.0f);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::vector<float> block(t.size(), 0.0f);
    t.write(block, r, ranks[r]);
    for (std::size_t k = 0; k < sum.size(); ++k) sum[k] += block[k];
  }
  return sum;
}

TEST(Telemetry, EveryRankLearnsEveryRanksComputeTimeAndTheGlobalLoss) {
  const Telemetry t(3);
  EXPECT_EQ(t.size(), 5u * 3u + 2u);
  const float f = split_fingerprint({10, 20, 34});
  const auto block = reduce(t, {{0.5, 0.25, 1.0, f}, {0.75, 0.5, 1.5, f}, {2.0, 0.125, 1.25, f}});
  const Telemetry::All all = t.read(block);
  EXPECT_EQ(all.compute_seconds, (std::vector<double>{0.5, 0.75, 2.0}));
  EXPECT_DOUBLE_EQ(all.loss, 0.875);
  // The slowest rank's view of the last step: one number for all.
  EXPECT_DOUBLE_EQ(all.previous_step_seconds, 1.5);
  EXPECT_TRUE(t.same_split(all, f));
}

TEST(Telemetry, EveryRankLearnsEveryRanksCpuAndSleptSeconds) {
  const Telemetry t(2);
  const auto block = reduce(t, {{0.5, 0, 0, 0, 0.25, 0.0}, {2.0, 0, 0, 0, 0.5, 1.5}});
  const Telemetry::All all = t.read(block);
  EXPECT_EQ(all.cpu_seconds, (std::vector<double>{0.25, 0.5}));
  EXPECT_EQ(all.off_cpu_seconds, (std::vector<double>{0.0, 1.5}));
}

TEST(Telemetry, ARankThatCutTheBatchDifferentlyIsCaught) {
  const Telemetry t(2);
  const float mine = split_fingerprint({32, 32});
  const float other = split_fingerprint({31, 33});
  ASSERT_NE(mine, other);
  const auto block = reduce(t, {{1, 0, 0, mine}, {1, 0, 0, other}});
  EXPECT_FALSE(t.same_split(t.read(block), mine));
}

TEST(Telemetry, OneRankAskedToStopStopsEveryRank) {
  const Telemetry t(3);
  Telemetry::Mine asked;
  asked.stop = true;
  EXPECT_FALSE(t.read(reduce(t, {{}, {}, {}})).stop);
  EXPECT_TRUE(t.read(reduce(t, {{}, asked, {}})).stop);
  EXPECT_TRUE(t.read(reduce(t, {asked, asked, asked})).stop);
}

TEST(SplitFingerprint, TellsApartSplitsThatMoveOneSample) {
  EXPECT_NE(split_fingerprint({16, 16, 16, 16}), split_fingerprint({17, 15, 16, 16}));
  EXPECT_NE(split_fingerprint({16, 16, 16, 16}), split_fingerprint({16, 16, 15, 17}));
  EXPECT_EQ(split_fingerprint({16, 16, 16, 16}), split_fingerprint({16, 16, 16, 16}));
}

}  // namespace
}  // namespace hetrain::train

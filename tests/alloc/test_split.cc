#include <gtest/gtest.h>

#include <numeric>

#include "hetrain/alloc/policy.h"
#include "hetrain/alloc/split.h"
#include "hetrain/common/error.h"

namespace hetrain::alloc {
namespace {

std::size_t sum(const std::vector<std::size_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::size_t{0});
}

TEST(SplitEqual, SpreadsTheRemainderOverTheFirstRanks) {
  EXPECT_EQ(split_equal(4, 64), (std::vector<std::size_t>{16, 16, 16, 16}));
  EXPECT_EQ(split_equal(3, 64), (std::vector<std::size_t>{22, 21, 21}));
  EXPECT_EQ(split_equal(5, 3), (std::vector<std::size_t>{1, 1, 1, 0, 0}));
}

TEST(SplitProportional, MatchesGivenSharesExactlyWhenTheyDivide) {
  const std::vector<double> w{4, 4, 4, 1};
  EXPECT_EQ(split_proportional(w, 130), (std::vector<std::size_t>{40, 40, 40, 10}));
  const std::vector<double> uneven{5, 17, 42};
  EXPECT_EQ(split_proportional(uneven, 64), (std::vector<std::size_t>{5, 17, 42}));
}

TEST(SplitProportional, SumIsAlwaysTheTotalAndPartsAreNearTheIdeal) {
  for (std::size_t n = 1; n <= 9; ++n) {
    for (std::size_t total : {n, n + 1, std::size_t{64}, std::size_t{1000}, std::size_t{12345}}) {
      std::vector<double> w(n);
      for (std::size_t i = 0; i < n; ++i) w[i] = 1.0 + static_cast<double>((i * 7) % 5);
      const auto s = split_proportional(w, total);
      ASSERT_EQ(sum(s), total) << "n=" << n << " total=" << total;
      const double wsum = std::accumulate(w.begin(), w.end(), 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        EXPECT_LT(std::abs(static_cast<double>(s[i]) - total * w[i] / wsum), 1.0);
      }
    }
  }
}

TEST(SplitProportional, RespectsBoundsByWaterFilling) {
  const std::vector<double> w{10, 1, 1, 1};
  Bounds b;
  b.max_local = 30;
  const auto s = split_proportional(w, 64, b);
  EXPECT_EQ(sum(s), 64u);
  EXPECT_EQ(s[0], 30u);  // capped; the rest shared equally by the others
  for (std::size_t i = 1; i < 4; ++i) EXPECT_NEAR(static_cast<double>(s[i]), 34.0 / 3.0, 1.0);

  Bounds lo;
  lo.min_local = 8;
  const auto t = split_proportional(std::vector<double>{100, 1, 1}, 64, lo);
  EXPECT_EQ(sum(t), 64u);
  EXPECT_EQ(t[1], 8u);
  EXPECT_EQ(t[2], 8u);
  EXPECT_EQ(t[0], 48u);
}

TEST(SplitProportional, InfeasibleBoundsAndBadWeightsAreUsageErrors) {
  Bounds b;
  b.max_local = 10;
  EXPECT_THROW(split_proportional(std::vector<double>{1, 1, 1}, 64, b), UsageError);
  Bounds lo;
  lo.min_local = 30;
  EXPECT_THROW(split_proportional(std::vector<double>{1, 1, 1}, 64, lo), UsageError);
  EXPECT_THROW(split_proportional(std::vector<double>{1, 0}, 64), UsageError);
  EXPECT_THROW(split_proportional(std::vector<double>{}, 64), UsageError);
}

TEST(Policy, EqualAndStaticGiveTheExpectedSplits) {
  PolicyConfig c;
  c.workers = 3;
  c.global_batch = 64;
  EXPECT_EQ(make_policy(c)->split(), (std::vector<std::size_t>{22, 21, 21}));
  c.name = "static";
  c.shares = {5, 17, 42};
  auto p = make_policy(c);
  EXPECT_EQ(p->split(), (std::vector<std::size_t>{5, 17, 42}));
  p->observe({{5, 17, 42}, {1.0, 2.0, 3.0}});  // fixed: learns nothing
  EXPECT_EQ(p->split(), (std::vector<std::size_t>{5, 17, 42}));
  c.shares = {1, 1};
  EXPECT_THROW(make_policy(c), UsageError);
  c.name = "nonsense";
  EXPECT_THROW(make_policy(c), UsageError);
}

TEST(Policy, ShortLastBatchKeepsTheProportions) {
  const auto s = scale_split({16, 16, 16, 16}, 32, 1000);
  EXPECT_EQ(s, (std::vector<std::size_t>{8, 8, 8, 8}));
  const auto t = scale_split({5, 17, 42}, 3, 1000);
  EXPECT_EQ(sum(t), 3u);
}

TEST(GiveOneEach, TakesFromWhoeverHoldsTheMostLowestRankFirstAndStopsAtTheFloor) {
  std::vector<std::size_t> s{5, 7, 7, 0, 0, 0};
  EXPECT_TRUE(give_one_each(s, {3, 4, 5}, 1));
  // Rank 1 (7, the lowest of the two), rank 2 (7), rank 1 (6, tied with rank 2).
  EXPECT_EQ(s, (std::vector<std::size_t>{5, 5, 6, 1, 1, 1}));
  std::vector<std::size_t> t{2, 2, 0, 0, 0};
  EXPECT_TRUE(give_one_each(t, {2, 3, 4}, 1));
  EXPECT_EQ(t, (std::vector<std::size_t>{1, 1, 1, 1, 0}));  // no donor may fall below the floor
  std::vector<std::size_t> u{1, 1, 0};
  EXPECT_FALSE(give_one_each(u, {2}, 1));
  EXPECT_EQ(u, (std::vector<std::size_t>{1, 1, 0}));
}

}  // namespace
}  // namespace hetrain::alloc

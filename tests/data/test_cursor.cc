#include <gtest/gtest.h>

#include <algorithm>

#include "hetrain/alloc/split.h"
#include "hetrain/data/cursor.h"

namespace hetrain::data {
namespace {

TEST(EpochPermutation, IsAPermutationThatDependsOnSeedAndEpoch) {
  const auto a = epoch_permutation(1000, 7, 0);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (std::uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_EQ(a, epoch_permutation(1000, 7, 0));
  EXPECT_NE(a, epoch_permutation(1000, 7, 1));
  EXPECT_NE(a, epoch_permutation(1000, 8, 0));
}

TEST(GlobalCursor, EverySampleExactlyOncePerEpochUnderAnySplit) {
  const std::size_t n = 1003, B = 64;  // 1003 = 15 x 64 + 43: a short last batch
  const auto perm = epoch_permutation(n, 1, 0);
  ASSERT_EQ(steps_per_epoch(n, B), 16u);
  EXPECT_EQ(step_batch(n, B, 15), 43u);
  for (const std::vector<double>& shares :
       {std::vector<double>{1, 1, 1, 1}, std::vector<double>{5, 17, 42}, std::vector<double>{1}}) {
    std::vector<int> seen(n, 0);
    for (std::size_t step = 0; step < steps_per_epoch(n, B); ++step) {
      const std::size_t batch = step_batch(n, B, step);
      const auto split = alloc::split_proportional(shares, batch);
      std::size_t covered = 0;
      for (std::size_t r = 0; r < split.size(); ++r) {
        const Slice s = slice_of(split, r);
        EXPECT_EQ(s.begin, covered);  // contiguous, in rank order
        covered += s.count;
        for (std::size_t k = 0; k < s.count; ++k) ++seen[perm[step * B + s.begin + k]];
      }
      EXPECT_EQ(covered, batch);
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  }
}

}  // namespace
}  // namespace hetrain::data

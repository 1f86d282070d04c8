#include <gtest/gtest.h>

#include <vector>

#include "hetrain/comm/ring_plan.h"

namespace hetrain::comm {
namespace {

// Replays every rank's plan on plain vectors, step by step in lockstep, as
// the network would: the result must be the elementwise sum on every rank.
TEST(RingPlan, ReplayedInMemoryGivesTheSumOnEveryRank) {
  for (int n = 1; n <= 8; ++n) {
    for (std::size_t count :
         {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{1031}}) {
      std::vector<std::vector<double>> data(static_cast<std::size_t>(n), std::vector<double>(count));
      std::vector<double> expected(count, 0.0);
      for (int r = 0; r < n; ++r) {
        for (std::size_t i = 0; i < count; ++i) {
          data[r][i] = r * 1000.0 + static_cast<double>(i);
          expected[i] += data[r][i];
        }
      }
      std::vector<std::vector<RingStep>> plans;
      for (int r = 0; r < n; ++r) plans.push_back(ring_plan(n, r, count));
      for (int r = 0; r < n; ++r) ASSERT_EQ(plans[r].size(), static_cast<std::size_t>(2 * (n - 1)));
      for (std::size_t s = 0; s < plans[0].size(); ++s) {
        // Every send of this step reads the buffers as they were before it.
        const auto before = data;
        for (int r = 0; r < n; ++r) {
          const RingStep& st = plans[r][s];
          const RingStep& sender = plans[st.recv_from][s];
          ASSERT_EQ(sender.send_to, r);
          ASSERT_EQ(sender.send.begin, st.recv.begin);
          ASSERT_EQ(sender.send.end, st.recv.end);
          for (std::size_t i = st.recv.begin; i < st.recv.end; ++i) {
            const double in = before[st.recv_from][i];
            data[r][i] = st.reduce ? data[r][i] + in : in;
          }
        }
      }
      for (int r = 0; r < n; ++r)
        EXPECT_EQ(data[r], expected) << "n=" << n << " count=" << count << " rank=" << r;
    }
  }
}

TEST(RingPlan, EachStepMovesOneChunkOfAboutCountOverN) {
  const auto plan = ring_plan(4, 1, 1000);
  for (const auto& st : plan) {
    EXPECT_EQ(st.send.size(), 250u);
    EXPECT_EQ(st.send_to, 2);
    EXPECT_EQ(st.recv_from, 0);
  }
  EXPECT_TRUE(plan[0].reduce);
  EXPECT_FALSE(plan[3].reduce);
  // Rank 1 ends reduce-scatter owning chunk 2: the first allgather sends it.
  EXPECT_EQ(plan[3].send.begin, ring_chunk(1000, 4, 2).begin);
}

}  // namespace
}  // namespace hetrain::comm

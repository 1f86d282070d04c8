#include <gtest/gtest.h>

#include <deque>
#include <vector>

#include "hetrain/comm/ring_plan.h"

namespace hetrain::comm {
namespace {

using Planner = std::vector<Step> (*)(int, int, std::size_t);

// Replays every rank's plan on plain vectors as the network would: a send
// posts a copy of its range (taken when its step starts), a receive waits for
// the matching message from its peer. Every rank must end with the sum, and
// nothing may be left unmatched or deadlock.
void replay(Planner plan, int n, std::size_t count) {
  std::vector<std::vector<double>> data(static_cast<std::size_t>(n), std::vector<double>(count));
  std::vector<double> expected(count, 0.0);
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      data[r][i] = r * 1000.0 + static_cast<double>(i);
      expected[i] += data[r][i];
    }
  }
  struct Message {
    Range range;
    int tag;
    std::vector<double> values;
  };
  // mailbox[dst][src]: messages in flight, in order
  std::vector<std::vector<std::deque<Message>>> mailbox(n, std::vector<std::deque<Message>>(n));
  std::vector<std::vector<Step>> plans;
  for (int r = 0; r < n; ++r) plans.push_back(plan(n, r, count));
  std::vector<std::size_t> at(n, 0);
  std::vector<bool> sent(n, false);  // the current step's send is posted
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < n; ++r) {
      if (at[r] == plans[r].size()) continue;
      const Step& st = plans[r][at[r]];
      if (!sent[r] && st.send_to != kNoPeer) {
        mailbox[st.send_to][r].push_back(
            {st.send, st.tag,
             std::vector<double>(data[r].begin() + st.send.begin, data[r].begin() + st.send.end)});
      }
      sent[r] = true;
      if (st.recv_from != kNoPeer) {
        auto& q = mailbox[r][st.recv_from];
        if (q.empty()) continue;  // wait for the peer
        const Message m = q.front();
        q.pop_front();
        ASSERT_EQ(m.tag, st.tag) << "n=" << n << " rank " << r << " from " << st.recv_from;
        ASSERT_EQ(m.range.begin, st.recv.begin);
        ASSERT_EQ(m.range.end, st.recv.end);
        for (std::size_t i = 0; i < m.values.size(); ++i) {
          double& x = data[r][st.recv.begin + i];
          x = st.reduce ? x + m.values[i] : m.values[i];
        }
      }
      ++at[r];
      sent[r] = false;
      progress = true;
    }
  }
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(at[r], plans[r].size()) << "deadlock: n=" << n << " rank " << r;
    EXPECT_EQ(data[r], expected) << "n=" << n << " count=" << count << " rank=" << r;
    for (int s = 0; s < n; ++s) EXPECT_TRUE(mailbox[r][s].empty());
  }
}

TEST(Plans, RingAndHalvingDoublingReplayedInMemoryGiveTheSumOnEveryRank) {
  for (Planner plan : {Planner(&ring_plan), Planner(&halving_doubling_plan)}) {
    for (int n = 1; n <= 9; ++n) {
      for (std::size_t count : {0, 1, 7, 1000, 1031}) replay(plan, n, count);
    }
  }
}

TEST(Plans, HalvingDoublingTakesLogSteps) {
  EXPECT_EQ(halving_doubling_plan(8, 3, 1000).size(), 6u);  // 2 log2 8
  EXPECT_EQ(halving_doubling_plan(6, 1, 1000).size(), 6u);  // folds rank 5 in: 2 + 2 log2 4
  EXPECT_EQ(halving_doubling_plan(6, 5, 1000).size(), 2u);  // the extra rank: send, then receive
  EXPECT_EQ(halving_doubling_plan(6, 3, 1000).size(), 4u);
  EXPECT_EQ(ring_plan(8, 3, 1000).size(), 14u);  // 2(N-1)
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

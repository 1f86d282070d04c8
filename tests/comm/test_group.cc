#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "hetrain/comm/group.h"

namespace hetrain::comm {
namespace {

// Rank 1 of 2, alone: its SUM leaves rank 0's block zero, so what this sees
// is the layout of the gathered buffer.
class LoneRank : public GroupImpl {
 public:
  int rank() const override { return 1; }
  int size() const override { return 2; }
  void allreduce_sum(std::span<float>) override {}
  void allreduce_sum(std::span<double>) override {}
  void broadcast(std::span<float>, int) override {}
  void barrier() override {}
  std::unique_ptr<Request> isend(Buffer, int, int) override { return nullptr; }
  std::unique_ptr<Request> irecv(Buffer, int, int) override { return nullptr; }
};

TEST(GroupAllgather, PutsEachRanksValuesInItsOwnBlock) {
  Group group(std::make_shared<LoneRank>());
  const std::vector<double> mine = {7.5, -1.0, 3.0};
  const auto all = group.allgather(std::span<const double>(mine));
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0], 0.0);
  EXPECT_EQ(all[2], 0.0);
  EXPECT_EQ(all[3], 7.5);
  EXPECT_EQ(all[4], -1.0);
  EXPECT_EQ(all[5], 3.0);
}

TEST(GroupAllgather, WorksForFloatsAndEmptyInput) {
  Group group(std::make_shared<LoneRank>());
  const float one = 2.0f;
  EXPECT_EQ(group.allgather(std::span<const float>(&one, 1)), (std::vector<float>{0.0f, 2.0f}));
  EXPECT_TRUE(group.allgather(std::span<const double>()).empty());
}

}  // namespace
}  // namespace hetrain::comm

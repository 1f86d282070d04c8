// Correctness sweep in the style of Gloo's tests: N threads as N ranks over
// real Gloo (in-memory store, TCP on loopback), world sizes 1..8, element
// counts not divisible by N, every algorithm, float and double, against the
// closed-form sum.
#include <gtest/gtest.h>

#include <exception>
#include <thread>
#include <vector>

#include "hetrain/comm/allreduce.h"
#include "hetrain/comm/gloo/gloo_group.h"
#include "hetrain/common/error.h"

namespace hetrain::comm {
namespace {

constexpr auto kTimeout = std::chrono::seconds(60);
const std::vector<std::size_t> kCounts{0, 1, 7, 1000, (std::size_t{1} << 20) + 3};

// Rank r holds (r + 1) + (i % 97) / 4 at i: small multiples of 1/4, so every
// partial sum is exact in float and the comparison can be exact.
template <typename T>
T value(int rank, std::size_t i) {
  return static_cast<T>(rank + 1) + static_cast<T>(i % 97) / T(4);
}
template <typename T>
T expected(int n, std::size_t i) {
  return static_cast<T>(n * (n + 1) / 2) + static_cast<T>(n) * static_cast<T>(i % 97) / T(4);
}

template <typename T>
void sweep_rank(Group& g, Algorithm algo) {
  for (std::size_t count : kCounts) {
    std::vector<T> data(count);
    for (std::size_t i = 0; i < count; ++i) data[i] = value<T>(g.rank(), i);
    // Small counts also in buckets (with a remainder bucket); the big one in
    // one call, as thousands of tiny calls would only measure latency.
    const std::size_t bucket = count == 1000 ? 300 : count == 7 ? 3 : 0;
    allreduce(g, AllreduceOptions<T>{std::span<T>(data), algo, bucket});
    for (std::size_t i = 0; i < count; ++i) {
      if (data[i] != expected<T>(g.size(), i)) {
        ADD_FAILURE() << algorithm_name(algo) << " n=" << g.size() << " count=" << count << " rank "
                      << g.rank() << " element " << i << ": " << data[i]
                      << " != " << expected<T>(g.size(), i);
        return;
      }
    }
  }
}

class AllreduceSweep : public ::testing::TestWithParam<int> {};

TEST_P(AllreduceSweep, EveryAlgorithmEverySizeBothTypesGiveTheExactSum) {
  const int n = GetParam();
  InProcessRendezvous rendezvous;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        Group g = connect_gloo(rendezvous, r, n, kTimeout);
        for (Algorithm algo : {Algorithm::kGloo, Algorithm::kRing, Algorithm::kHalvingDoubling}) {
          sweep_rank<float>(g, algo);
          sweep_rank<double>(g, algo);
        }
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, AllreduceSweep, ::testing::Range(1, 9));

TEST(Allreduce, UnknownAlgorithmIsAUsageError) {
  EXPECT_EQ(parse_algorithm("ring"), Algorithm::kRing);
  EXPECT_EQ(parse_algorithm("gloo"), Algorithm::kGloo);
  EXPECT_EQ(parse_algorithm("halving-doubling"), Algorithm::kHalvingDoubling);
  EXPECT_EQ(parse_algorithm("auto"), Algorithm::kAuto);
  EXPECT_THROW(parse_algorithm("tree"), UsageError);
}

TEST(Allreduce, AutoPicksHalvingDoublingForSmallMessagesTheRingForLargeAndGlooForTheLargest) {
  EXPECT_EQ(choose_algorithm(0), Algorithm::kHalvingDoubling);
  EXPECT_EQ(choose_algorithm(kAutoRingFromBytes - 1), Algorithm::kHalvingDoubling);
  EXPECT_EQ(choose_algorithm(kAutoRingFromBytes), Algorithm::kRing);
  EXPECT_EQ(choose_algorithm(kAutoGlooFromBytes - 1), Algorithm::kRing);
  EXPECT_EQ(choose_algorithm(kAutoGlooFromBytes), Algorithm::kGloo);
  EXPECT_EQ(choose_algorithm(std::size_t{1} << 30), Algorithm::kGloo);
}

}  // namespace
}  // namespace hetrain::comm

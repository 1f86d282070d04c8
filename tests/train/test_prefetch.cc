// The prefetcher on a data set that counts what it is asked to read: steps
// read ahead are taken without a read, the same samples whatever was
// predicted, at most Prefetcher::kDepth steps held, a covered step never
// read twice, the step after hinted, and read errors reach the step.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "hetrain/common/error.h"
#include "hetrain/train/prefetch.h"

namespace hetrain::train {
namespace {

constexpr std::size_t kSamples = 100;
constexpr double kTimeoutSeconds = 60.0;
// How long a test waits for the thread's hint before it fails (not a timing
// threshold: the hint normally lands within microseconds).
constexpr auto kHintDeadline = std::chrono::seconds(30);

// Sample i is x = [i, 2i], y = i; ids >= kSamples fail as a bad file would.
class CountingExamples final : public Examples {
 public:
  std::size_t size() const override { return kSamples; }
  Batch gather(std::span<const std::uint32_t> ids) const override {
    gathered += ids.size();
    std::vector<float> x;
    std::vector<std::int64_t> y;
    for (const std::uint32_t id : ids) {
      if (id >= kSamples) throw DataError("sample out of range");
      x.insert(x.end(), {static_cast<float>(id), static_cast<float>(2 * id)});
      y.push_back(id);
    }
    const auto n = static_cast<std::int64_t>(ids.size());
    return {torch::tensor(x).reshape({n, 2}), torch::tensor(y)};
  }
  Batch range(std::size_t begin, std::size_t count) const override {
    std::vector<std::uint32_t> ids(count);
    std::iota(ids.begin(), ids.end(), static_cast<std::uint32_t>(begin));
    return gather(ids);
  }
  void will_need(std::span<const std::uint32_t> ids) const override { hinted += ids.size(); }

  mutable std::atomic<std::size_t> gathered{0}, hinted{0};
};

// The epoch's order: samples backwards.
std::vector<std::uint32_t> permutation() {
  std::vector<std::uint32_t> p(kSamples);
  std::iota(p.rbegin(), p.rend(), 0u);
  return p;
}

// The samples at positions [begin, begin + count) must be exactly these ids.
void expect_samples(const Batch& b, const std::vector<std::uint32_t>& perm, std::size_t begin, std::size_t count) {
  ASSERT_EQ(b.y.size(0), static_cast<std::int64_t>(count));
  for (std::size_t i = 0; i < count; ++i) {
    const auto id = static_cast<std::int64_t>(perm[begin + i]);
    EXPECT_EQ(b.y[static_cast<std::int64_t>(i)].item<std::int64_t>(), id);
    EXPECT_EQ(b.x[static_cast<std::int64_t>(i)][1].item<float>(), static_cast<float>(2 * id));
  }
}

TEST(Prefetcher, StepsReadAheadAreTakenWithoutAReadAndTheStepAfterIsHinted) {
  const CountingExamples ex;
  const auto perm = permutation();
  Prefetcher p(ex, kTimeoutSeconds);
  const std::vector<Prefetcher::Range> steps{{1, 10, 20}, {2, 20, 30}};
  p.ahead(perm, steps, {30, 40});
  expect_samples(p.take(1, perm, 12, 5), perm, 12, 5);  // a part of what was read: a split within the margin
  expect_samples(p.take(2, perm, 20, 10), perm, 20, 10);
  EXPECT_EQ(p.hits(), 2u);
  EXPECT_EQ(p.misses(), 0u);
  EXPECT_EQ(ex.gathered.load(), 20u);
  const auto deadline = std::chrono::steady_clock::now() + kHintDeadline;
  while (ex.hinted.load() < 10 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(ex.hinted.load(), 10u);
}

TEST(Prefetcher, AStepTheReadDoesNotCoverIsReadOnTheSpotWithTheSameSamples) {
  const CountingExamples ex;
  const auto perm = permutation();
  Prefetcher p(ex, kTimeoutSeconds);
  const std::vector<Prefetcher::Range> steps{{1, 10, 20}};
  p.ahead(perm, steps);
  expect_samples(p.take(1, perm, 15, 10), perm, 15, 10);  // the split moved past the margin
  expect_samples(p.take(2, perm, 25, 5), perm, 25, 5);    // never predicted
  EXPECT_EQ(p.hits(), 0u);
  EXPECT_EQ(p.misses(), 2u);
}

TEST(Prefetcher, AStepAlreadyReadOverACoveringRangeIsKeptNotReadAgain) {
  const CountingExamples ex;
  const auto perm = permutation();
  Prefetcher p(ex, kTimeoutSeconds);
  const std::vector<Prefetcher::Range> first{{1, 10, 20}, {2, 20, 30}};
  p.ahead(perm, first);
  expect_samples(p.take(1, perm, 10, 10), perm, 10, 10);
  // Step 2 asked again (narrower), step 3 for the first time.
  const std::vector<Prefetcher::Range> second{{2, 22, 28}, {3, 30, 40}};
  p.ahead(perm, second);
  expect_samples(p.take(2, perm, 22, 6), perm, 22, 6);
  expect_samples(p.take(3, perm, 30, 10), perm, 30, 10);
  EXPECT_EQ(p.hits(), 3u);
  EXPECT_EQ(ex.gathered.load(), 30u);  // 10 rows for each step: step 2 was not read twice
}

TEST(Prefetcher, HoldsAtMostDepthSteps) {
  const CountingExamples ex;
  const auto perm = permutation();
  Prefetcher p(ex, kTimeoutSeconds);
  std::vector<Prefetcher::Range> steps;
  for (std::size_t k = 1; k <= Prefetcher::kDepth + 1; ++k) steps.push_back({k, 10 * k, 10 * k + 10});
  p.ahead(perm, steps);
  for (std::size_t k = 1; k <= Prefetcher::kDepth + 1; ++k) {
    expect_samples(p.take(k, perm, 10 * k, 10), perm, 10 * k, 10);
  }
  EXPECT_EQ(p.hits(), Prefetcher::kDepth);
  EXPECT_EQ(p.misses(), 1u);
}

TEST(Prefetcher, AReadErrorReachesTheStepThatNeedsIt) {
  const CountingExamples ex;
  std::vector<std::uint32_t> perm = permutation();
  perm[15] = kSamples + 1;  // a row the file does not have
  Prefetcher p(ex, kTimeoutSeconds);
  const std::vector<Prefetcher::Range> steps{{1, 10, 20}};
  p.ahead(perm, steps);
  EXPECT_THROW(p.take(1, perm, 10, 10), DataError);
}

}  // namespace
}  // namespace hetrain::train

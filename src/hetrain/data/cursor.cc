#include "hetrain/data/cursor.h"

#include <numeric>
#include <random>

#include "hetrain/common/error.h"

namespace hetrain::data {

std::vector<std::uint32_t> epoch_permutation(std::size_t n, std::uint64_t seed, std::size_t epoch) {
  std::vector<std::uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  // Mix the epoch into the seed so epochs differ but stay reproducible.
  constexpr std::uint64_t kEpochMix = 0x9E3779B97F4A7C15ull;
  std::mt19937_64 rng(seed ^ (kEpochMix * (epoch + 1)));
  // Fisher-Yates with our own bounded draw: std::uniform_int_distribution
  // is implementation-defined, which would break cross-machine equality.
  for (std::size_t i = n; i > 1; --i) {
    const std::uint64_t j = rng() % i;  // bias < i / 2^64, negligible
    std::swap(perm[i - 1], perm[j]);
  }
  return perm;
}

std::size_t steps_per_epoch(std::size_t n, std::size_t global_batch) {
  HETRAIN_ENFORCE_LT(std::size_t{0}, global_batch);
  return (n + global_batch - 1) / global_batch;
}

std::size_t step_batch(std::size_t n, std::size_t global_batch, std::size_t step) {
  HETRAIN_ENFORCE_LT(step, steps_per_epoch(n, global_batch));
  const std::size_t begin = step * global_batch;
  return std::min(global_batch, n - begin);
}

Slice slice_of(std::span<const std::size_t> split, std::size_t rank) {
  HETRAIN_ENFORCE_LT(rank, split.size());
  Slice s;
  for (std::size_t i = 0; i < rank; ++i) s.begin += split[i];
  s.count = split[rank];
  return s;
}

}  // namespace hetrain::data

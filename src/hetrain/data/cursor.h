// The global cursor: each epoch is a seeded permutation of the training set,
// consumed B samples per step. Every worker derives the same permutation, so
// a step's global batch is the same whatever the split; the split only cuts
// it into contiguous slices, one per rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace hetrain::data {

// A seeded permutation of 0..n-1 for `epoch` (std::mt19937_64 + Fisher-Yates,
// written out so every platform and library version gives the same order).
std::vector<std::uint32_t> epoch_permutation(std::size_t n, std::uint64_t seed, std::size_t epoch);

// Steps per epoch: every sample once; the last batch may be short.
std::size_t steps_per_epoch(std::size_t n, std::size_t global_batch);

// Samples in step `step` of an epoch (B, or the remainder for the last).
std::size_t step_batch(std::size_t n, std::size_t global_batch, std::size_t step);

// Rank `rank`'s slice of a global batch cut by `split`: [begin, begin+count).
struct Slice {
  std::size_t begin = 0;
  std::size_t count = 0;
};
Slice slice_of(std::span<const std::size_t> split, std::size_t rank);

}  // namespace hetrain::data

// A deterministic, learnable synthetic image set for tests and benchmarks
// that must not depend on a downloaded dataset.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hetrain/data/idx.h"

namespace hetrain::data {

// Noise added to every pixel is uniform in [-kSyntheticNoiseLevels, +kSyntheticNoiseLevels]
// (pixel levels), small against the spread between class prototypes, so a
// model can learn the classes but each sample still differs.
inline constexpr int kSyntheticNoiseLevels = 48;

// Upper bound on the pixels of one generated set (1 GiB), to turn a typo in
// a sample count into a UsageError instead of an out-of-memory kill.
inline constexpr std::size_t kMaxSyntheticPixelBytes = std::size_t{1} << 30;

// num_classes random prototype images drawn from seed (std::mt19937_64);
// each sample is its class prototype plus bounded noise, clipped to 0..255.
// Labels are balanced (i % num_classes) and then shuffled from the seed.
// Train and test share the prototypes; the train set does not depend on
// test_n. Same arguments -> byte-identical output on every platform (no
// std:: distributions, whose algorithms are implementation-defined).
// Throws UsageError if train_n, test_n, rows or cols is 0, num_classes is
// not in 1..256, or a set would exceed kMaxSyntheticPixelBytes.
DataSplit make_synthetic(std::size_t train_n, std::size_t test_n, std::uint64_t seed, std::size_t rows = 28,
                         std::size_t cols = 28, std::size_t num_classes = 10);

}  // namespace hetrain::data

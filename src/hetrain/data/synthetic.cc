#include "hetrain/data/synthetic.h"

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "hetrain/common/error.h"

namespace hetrain::data {
namespace {

constexpr std::size_t kMaxLabelClasses = 256;  // labels are stored as bytes
constexpr int kMaxPixel = 255;
constexpr std::uint64_t kNoiseSpan = 2 * kSyntheticNoiseLevels + 1;  // values in the noise range
constexpr unsigned kNoiseBits = 16;  // each 64-bit draw yields four 16-bit noise samples
constexpr std::uint64_t kNoiseMask = (std::uint64_t{1} << kNoiseBits) - 1;
constexpr unsigned kDrawsPerWord = 64 / kNoiseBits;

// Uniform in [0, bound) by rejection: exact and identical on every platform.
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t bound) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;  // largest multiple of bound
  std::uint64_t v;
  do {
    v = rng();
  } while (v >= limit);
  return v % bound;
}

// Generates one set: balanced shuffled labels, then noisy prototype copies.
ImageSet make_set(std::mt19937_64& rng, std::size_t n, const std::vector<std::uint8_t>& prototypes,
                  std::size_t rows, std::size_t cols, std::size_t num_classes) {
  ImageSet set;
  set.rows = rows;
  set.cols = cols;
  set.num_classes = num_classes;
  set.labels.resize(n);
  for (std::size_t i = 0; i < n; ++i) set.labels[i] = static_cast<std::uint8_t>(i % num_classes);
  for (std::size_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    std::swap(set.labels[i], set.labels[uniform_below(rng, i + 1)]);
  }

  const std::size_t image_bytes = rows * cols;
  set.pixels.resize(n * image_bytes);
  std::uint64_t word = 0;
  unsigned left = 0;  // noise samples still unused in word
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* proto = prototypes.data() + set.labels[i] * image_bytes;
    std::uint8_t* out = set.pixels.data() + i * image_bytes;
    for (std::size_t p = 0; p < image_bytes; ++p) {
      if (left == 0) {
        word = rng();
        left = kDrawsPerWord;
      }
      // Multiply-shift maps 16 random bits onto the noise range; its bias
      // (< span / 2^16) is irrelevant for noise and keeps generation fast.
      const int noise =
          static_cast<int>(((word & kNoiseMask) * kNoiseSpan) >> kNoiseBits) - kSyntheticNoiseLevels;
      word >>= kNoiseBits;
      --left;
      out[p] = static_cast<std::uint8_t>(std::clamp(int{proto[p]} + noise, 0, kMaxPixel));
    }
  }
  return set;
}

void check_count(const char* name, std::size_t n, std::size_t image_bytes) {
  if (n == 0) throw UsageError(std::string("synthetic data: ") + name + " must be at least 1");
  if (n > kMaxSyntheticPixelBytes / image_bytes) {
    throw UsageError(std::string("synthetic data: ") + name + " = " + std::to_string(n) +
                     " would need more than " + std::to_string(kMaxSyntheticPixelBytes) + " pixel bytes");
  }
}

}  // namespace

DataSplit make_synthetic(std::size_t train_n, std::size_t test_n, std::uint64_t seed, std::size_t rows,
                         std::size_t cols, std::size_t num_classes) {
  if (rows == 0 || cols == 0) {
    throw UsageError("synthetic data: image size must be at least 1x1, got " + std::to_string(rows) + "x" +
                     std::to_string(cols));
  }
  if (num_classes == 0 || num_classes > kMaxLabelClasses) {
    throw UsageError("synthetic data: num_classes must be in 1.." + std::to_string(kMaxLabelClasses) +
                     ", got " + std::to_string(num_classes));
  }
  if (rows > kMaxSyntheticPixelBytes / cols) {
    throw UsageError("synthetic data: image size " + std::to_string(rows) + "x" + std::to_string(cols) +
                     " is too large");
  }
  const std::size_t image_bytes = rows * cols;
  check_count("train_n", train_n, image_bytes);
  check_count("test_n", test_n, image_bytes);
  if (num_classes > kMaxSyntheticPixelBytes / image_bytes) {
    throw UsageError("synthetic data: " + std::to_string(num_classes) + " prototypes would be too large");
  }

  std::mt19937_64 rng(seed);
  // Prototypes use the full 0..255 range so classes sit far apart relative
  // to the noise; one byte of each 64-bit draw per pixel keeps this exact.
  std::vector<std::uint8_t> prototypes(num_classes * image_bytes);
  for (auto& px : prototypes) px = static_cast<std::uint8_t>(rng() >> 56);

  DataSplit split;
  split.train = make_set(rng, train_n, prototypes, rows, cols, num_classes);
  split.test = make_set(rng, test_n, prototypes, rows, cols, num_classes);
  return split;
}

}  // namespace hetrain::data

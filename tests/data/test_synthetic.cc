#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "hetrain/common/error.h"
#include "hetrain/data/synthetic.h"

namespace hetrain::data {
namespace {

// Per-class mean image of a set, as doubles (class-major).
std::vector<double> class_means(const ImageSet& set) {
  const std::size_t image = set.rows * set.cols;
  std::vector<double> sum(set.num_classes * image, 0.0);
  std::vector<std::size_t> count(set.num_classes, 0);
  for (std::size_t i = 0; i < set.size(); ++i) {
    ++count[set.labels[i]];
    for (std::size_t p = 0; p < image; ++p) sum[set.labels[i] * image + p] += set.pixels[i * image + p];
  }
  for (std::size_t c = 0; c < set.num_classes; ++c) {
    for (std::size_t p = 0; p < image; ++p) sum[c * image + p] /= static_cast<double>(count[c]);
  }
  return sum;
}

TEST(Synthetic, SameSeedIsByteIdentical) {
  const DataSplit a = make_synthetic(500, 100, 42);
  const DataSplit b = make_synthetic(500, 100, 42);
  EXPECT_EQ(a.train.pixels, b.train.pixels);
  EXPECT_EQ(a.train.labels, b.train.labels);
  EXPECT_EQ(a.test.pixels, b.test.pixels);
  EXPECT_EQ(a.test.labels, b.test.labels);
}

TEST(Synthetic, DifferentSeedsDiffer) {
  const DataSplit a = make_synthetic(200, 50, 1);
  const DataSplit b = make_synthetic(200, 50, 2);
  EXPECT_NE(a.train.pixels, b.train.pixels);
  EXPECT_NE(a.train.labels, b.train.labels);
  EXPECT_NE(a.test.pixels, b.test.pixels);
}

TEST(Synthetic, TrainSetDoesNotDependOnTestSize) {
  const DataSplit a = make_synthetic(300, 10, 7);
  const DataSplit b = make_synthetic(300, 90, 7);
  EXPECT_EQ(a.train.pixels, b.train.pixels);
  EXPECT_EQ(a.train.labels, b.train.labels);
}

TEST(Synthetic, SizesAndShape) {
  const DataSplit s = make_synthetic(123, 45, 3, 5, 7, 4);
  for (const auto& [set, n] : {std::pair{&s.train, 123u}, std::pair{&s.test, 45u}}) {
    EXPECT_EQ(set->size(), n);
    EXPECT_EQ(set->rows, 5u);
    EXPECT_EQ(set->cols, 7u);
    EXPECT_EQ(set->num_classes, 4u);
    EXPECT_EQ(set->pixels.size(), n * 5 * 7);
  }
  const DataSplit d = make_synthetic(10, 10, 3);  // defaults: 28x28, 10 classes
  EXPECT_EQ(d.train.rows, 28u);
  EXPECT_EQ(d.train.cols, 28u);
  EXPECT_EQ(d.train.num_classes, 10u);
}

TEST(Synthetic, LabelsInRangeBalancedAndShuffled) {
  const std::size_t n = 1000, classes = 10;
  const DataSplit s = make_synthetic(n, n, 11, 4, 4, classes);
  std::vector<std::size_t> count(classes, 0);
  bool cycles_in_order = true;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t label = s.train.labels[i];
    ASSERT_LT(label, classes);
    ++count[label];
    cycles_in_order = cycles_in_order && label == i % classes;
  }
  for (std::size_t c = 0; c < classes; ++c) EXPECT_EQ(count[c], n / classes) << "class " << c;
  EXPECT_FALSE(cycles_in_order) << "labels should be shuffled, not 0,1,2,...";
  for (std::uint8_t label : s.test.labels) EXPECT_LT(label, classes);
}

TEST(Synthetic, NoiseIsPresentButBounded) {
  const DataSplit s = make_synthetic(400, 10, 5, 8, 8, 4);
  const std::size_t image = 64;
  // Two samples of one class differ per pixel by at most twice the noise.
  std::vector<std::size_t> first(4, std::numeric_limits<std::size_t>::max());
  bool any_difference = false;
  for (std::size_t i = 0; i < s.train.size(); ++i) {
    const std::uint8_t c = s.train.labels[i];
    if (first[c] == std::numeric_limits<std::size_t>::max()) {
      first[c] = i;
      continue;
    }
    for (std::size_t p = 0; p < image; ++p) {
      const int diff =
          std::abs(int{s.train.pixels[i * image + p]} - int{s.train.pixels[first[c] * image + p]});
      ASSERT_LE(diff, 2 * kSyntheticNoiseLevels) << "sample " << i << " pixel " << p;
      any_difference = any_difference || diff != 0;
    }
  }
  EXPECT_TRUE(any_difference);
}

TEST(Synthetic, ClassPrototypesDifferAndAreLearnable) {
  const std::size_t classes = 10;
  const DataSplit s = make_synthetic(2000, 500, 9, 28, 28, classes);
  const std::size_t image = 28 * 28;
  const std::vector<double> means = class_means(s.train);
  // Prototypes are independent uniform images: mean |difference| ~85 levels.
  for (std::size_t a = 0; a < classes; ++a) {
    for (std::size_t b = a + 1; b < classes; ++b) {
      double l1 = 0;
      for (std::size_t p = 0; p < image; ++p) l1 += std::abs(means[a * image + p] - means[b * image + p]);
      EXPECT_GT(l1 / image, 40.0) << "classes " << a << " and " << b;
    }
  }
  // A nearest-class-mean classifier fit on train must get test nearly right.
  std::size_t correct = 0;
  for (std::size_t i = 0; i < s.test.size(); ++i) {
    std::size_t best = 0;
    double best_d = std::numeric_limits<double>::max();
    for (std::size_t c = 0; c < classes; ++c) {
      double d = 0;
      for (std::size_t p = 0; p < image; ++p) {
        const double diff = s.test.pixels[i * image + p] - means[c * image + p];
        d += diff * diff;
      }
      if (d < best_d) best_d = d, best = c;
    }
    correct += best == s.test.labels[i];
  }
  EXPECT_GE(correct, s.test.size() * 99 / 100);
}

TEST(Synthetic, BadArgumentsAreUsageErrors) {
  EXPECT_THROW(make_synthetic(0, 10, 1), UsageError);
  EXPECT_THROW(make_synthetic(10, 0, 1), UsageError);
  EXPECT_THROW(make_synthetic(10, 10, 1, 0, 28), UsageError);
  EXPECT_THROW(make_synthetic(10, 10, 1, 28, 0), UsageError);
  EXPECT_THROW(make_synthetic(10, 10, 1, 28, 28, 0), UsageError);
  EXPECT_THROW(make_synthetic(10, 10, 1, 28, 28, 257), UsageError);
  EXPECT_THROW(make_synthetic(std::size_t{1} << 40, 10, 1), UsageError);
  EXPECT_THROW(make_synthetic(10, 10, 1, std::size_t{1} << 40, std::size_t{1} << 40), UsageError);
  EXPECT_NO_THROW(make_synthetic(1, 1, 1, 1, 1, 256));
}

}  // namespace
}  // namespace hetrain::data

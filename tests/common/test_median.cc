#include "hetrain/common/median.h"

#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <vector>

namespace hetrain {
namespace {

TEST(UpperMedian, IsTheMiddleValueOrTheUpperOfTheTwoMiddleOnes) {
  std::vector<double> odd{5.0, 1.0, 3.0};
  EXPECT_EQ(upper_median(odd), 3.0);
  std::vector<double> even{4.0, 1.0, 3.0, 2.0};
  EXPECT_EQ(upper_median(even), 3.0);
  std::array<double, 8> ring{9.0, 7.0, 8.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  EXPECT_EQ(upper_median(ring.begin(), ring.begin() + 3), 8.0);  // of the first three only
}

TEST(UpperMedian, OfNoValuesIsAnError) {
  std::vector<double> none;
  EXPECT_THROW(upper_median(none), std::invalid_argument);
}

}  // namespace
}  // namespace hetrain

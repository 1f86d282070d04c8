// The one median: the upper median of [first, last) (the middle element, or
// the upper of the two middle ones), reordering the range. O(n).
#pragma once

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace hetrain {

template <class It>
auto upper_median(It first, It last) {
  if (first == last) throw std::invalid_argument("the median of no values");
  const It mid = first + (std::distance(first, last) / 2);
  std::nth_element(first, mid, last);
  return *mid;
}

template <class Container>
auto upper_median(Container& values) {
  return upper_median(values.begin(), values.end());
}

}  // namespace hetrain

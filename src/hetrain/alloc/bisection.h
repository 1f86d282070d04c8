// What the two water-filling solvers (water_filling.cc, hosts.cc) share: the
// bounds as reals, the bisection on the common finish time, and the floor
// that keeps an idle worker's weight valid for the rounding. Header-only.
#pragma once

#include <limits>

#include "hetrain/alloc/split.h"

namespace hetrain::alloc::detail {

// A worker whose share is (numerically) zero still needs a positive weight
// for the rounding; it then gets 0 or 1 sample.
inline constexpr double kTinyShare = 1e-9;

struct RealBounds {
  double lo = 0.0;
  double hi = std::numeric_limits<double>::infinity();  // no memory cap
};

inline RealBounds real_bounds(const Bounds& b) {
  return {static_cast<double>(b.min_local), b.max_local == std::numeric_limits<std::size_t>::max()
                                                ? std::numeric_limits<double>::infinity()
                                                : static_cast<double>(b.max_local)};
}

// The smallest T in (0, t_hi] whose capacity held(T) holds `total` samples
// (held grows with T): bisection until the window is 1e-9 of T.
template <typename Held>
double smallest_time(const Held& held, double total, double t_hi) {
  constexpr double kRelativeTolerance = 1e-9;
  constexpr int kMaxBisections = 200;
  double t_lo = 0.0;
  for (int i = 0; i < kMaxBisections && t_hi - t_lo > kRelativeTolerance * t_hi; ++i) {
    const double mid = 0.5 * (t_lo + t_hi);
    (held(mid) >= total ? t_hi : t_lo) = mid;
  }
  return t_hi;
}

}  // namespace hetrain::alloc::detail

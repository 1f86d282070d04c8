// The Grouper: workers alike within what the estimates can tell are one
// unit, given the same share, so noise cannot split identical workers apart.
// One notion of alike: the same class (host and CPUs, where those matter) and
// planned times at the typical batch within the larger of
// AdaptiveTuning::alike and clip_sigmas combined standard errors. One
// hysteresis: workers grouped at the last call stay together up to twice
// `alike` (a statistically clear difference cuts them at once).
// O(N log N): a sort and a sweep.
#pragma once

#include <cstddef>
#include <vector>

#include "hetrain/alloc/tuning.h"

namespace hetrain::alloc {

struct GroupKey {
  double time = 0.0;       // planned seconds at the typical batch (> 0)
  double error = 0.0;      // its relative standard error
  std::size_t klass = 0;   // workers of different classes are never alike
};

class Grouper {
 public:
  explicit Grouper(AdaptiveTuning tuning) : tuning_(tuning) {}
  // Each worker's unit, numbered 0.. in the order of their lowest ranks.
  std::vector<std::size_t> group(const std::vector<GroupKey>& keys);
  const std::vector<std::size_t>& last() const { return previous_; }

 private:
  double tolerance(const GroupKey& a, const GroupKey& b, double span) const;
  AdaptiveTuning tuning_;
  std::vector<std::size_t> previous_;  // the last call's units (empty: none)
};

}  // namespace hetrain::alloc

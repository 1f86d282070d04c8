#include "hetrain/alloc/grouper.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hetrain::alloc {

// The hysteresis (`span` 2) widens the floor, not the statistical part: a
// difference of clip_sigmas standard errors is a difference, held or not.
double Grouper::tolerance(const GroupKey& a, const GroupKey& b, double span) const {
  return std::max(span * tuning_.alike, tuning_.clip_sigmas * std::hypot(a.error, b.error));
}

std::vector<std::size_t> Grouper::group(const std::vector<GroupKey>& keys) {
  const std::size_t n = keys.size();
  const bool held = previous_.size() == n;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (keys[a].klass != keys[b].klass) return keys[a].klass < keys[b].klass;
    return keys[a].time != keys[b].time ? keys[a].time < keys[b].time : a < b;
  });
  // Sweep in time order: a worker joins its predecessor's group when their
  // gap is within the tolerance (its floor doubled if they were together) and
  // the group stays within the doubled tolerance from its first member, so a
  // continuous spread of speeds is never chained into one group.
  std::vector<std::size_t> label(n);  // by rank: the sweep's group number
  std::size_t first = 0, current = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[k];
    bool join = false;
    if (k > 0) {
      const std::size_t p = order[k - 1], f = order[first];
      const double span = held && previous_[i] == previous_[p] ? 2.0 : 1.0;
      join = keys[i].klass == keys[p].klass &&
             std::log(keys[i].time / keys[p].time) <= tolerance(keys[i], keys[p], span) &&
             std::log(keys[i].time / keys[f].time) <= tolerance(keys[i], keys[f], 2.0);
    }
    if (k > 0 && !join) ++current, first = k;
    label[i] = current;
  }
  // Renumber by lowest rank, so the units do not depend on the sort.
  std::vector<std::size_t> renamed(current + 1, n), unit(n);
  std::size_t next = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (renamed[label[i]] == n) renamed[label[i]] = next++;
    unit[i] = renamed[label[i]];
  }
  previous_ = unit;
  return unit;
}

}  // namespace hetrain::alloc

#include "hetrain/alloc/grouper.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>

namespace hetrain::alloc {
namespace {

// The smallest relative error a key is weighted by: an exactly known time
// (a test's, a seeded model's) must not outweigh the rest infinitely.
constexpr double kMinError = 1e-9;

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

}  // namespace

// A run [first, last] of positions in the sorted order.
struct Grouper::Segment {
  std::size_t first = 0, last = 0;
  std::size_t prev = kNone, next = kNone;
  double weight = 0.0, weighted_log = 0.0;  // sum of 1/e^2, and of log t / e^2
  std::size_t version = 0;                  // bumped at every merge: stale heap entries are skipped
  double level() const { return weighted_log / weight; }
  double error() const { return 1.0 / std::sqrt(weight); }
};

// The gap between segment `left` and its right neighbour as a share of their
// tolerance; infinite across classes.
double Grouper::share(const std::vector<Segment>& s, std::size_t left, const std::vector<GroupKey>& keys,
                      const std::vector<std::size_t>& order) const {
  const Segment& a = s[left];
  const Segment& b = s[a.next];
  const std::size_t i = order[a.last], j = order[b.first];
  if (keys[i].klass != keys[j].klass) return std::numeric_limits<double>::infinity();
  const bool held = previous_.size() == keys.size() && previous_[i] == previous_[j];
  const double tolerance = (held ? 2.0 : 1.0) *
                           std::max(tuning_.alike, tuning_.clip_sigmas * std::hypot(a.error(), b.error()));
  return (b.level() - a.level()) / tolerance;
}

std::vector<std::size_t> Grouper::group(const std::vector<GroupKey>& keys) {
  const std::size_t n = keys.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(keys[a].klass, keys[a].time, a) < std::tie(keys[b].klass, keys[b].time, b);
  });
  std::vector<Segment> seg(n);
  for (std::size_t k = 0; k < n; ++k) {
    const GroupKey& key = keys[order[k]];
    const double w = 1.0 / std::pow(std::max(key.error, kMinError), 2);
    seg[k] = {k, k, k == 0 ? kNone : k - 1, k + 1 < n ? k + 1 : kNone, w, w * std::log(key.time), 0};
  }
  // (share, left segment, its version, the right one's version): smallest first.
  using Entry = std::tuple<double, std::size_t, std::size_t, std::size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  auto push = [&](std::size_t left) {
    if (left == kNone || seg[left].next == kNone) return;
    const double r = share(seg, left, keys, order);
    if (r <= 1.0) heap.emplace(r, left, seg[left].version, seg[seg[left].next].version);
  };
  for (std::size_t k = 0; k + 1 < n; ++k) push(k);
  while (!heap.empty()) {
    const auto [r, left, lv, rv] = heap.top();
    heap.pop();
    Segment& a = seg[left];
    if (a.version != lv || a.next == kNone || seg[a.next].version != rv) continue;
    Segment& b = seg[a.next];
    a.last = b.last, a.weight += b.weight, a.weighted_log += b.weighted_log;
    a.next = b.next, ++a.version, ++b.version;
    if (a.next != kNone) seg[a.next].prev = left;
    push(a.prev), push(left);
  }
  // Units by lowest rank, so they do not depend on the sort.
  std::vector<std::size_t> unit(n, kNone), label(n);
  for (std::size_t k = 0; k < n;) {
    const std::size_t last = seg[k].last;
    for (std::size_t m = k; m <= last; ++m) label[order[m]] = k;
    k = last + 1;
  }
  std::size_t next = 0;
  std::vector<std::size_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (unit[label[i]] == kNone) unit[label[i]] = next++;
    out[i] = unit[label[i]];
  }
  previous_ = out;
  return out;
}

}  // namespace hetrain::alloc

#include "hetrain/alloc/grouper.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace hetrain::alloc {
namespace {

// The smallest relative error a key is weighted by: an exactly known time
// (a test's, a seeded model's) must not outweigh the rest infinitely.
constexpr double kMinError = 1e-9;

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// Merges are taken smallest share first to this resolution (a share is a gap
// over its tolerance): far finer than estimates tell gaps apart.
constexpr std::size_t kBuckets = 256;

}  // namespace

// The gap between segment `left` and its right neighbour as a share of their
// tolerance; infinite across classes.
double Grouper::share(const std::vector<Segment>& s, std::size_t left,
                      const std::vector<std::size_t>& klass_at) const {
  const Segment& a = s[left];
  const Segment& b = s[a.next];
  if (klass_at[a.last] != klass_at[b.first]) return std::numeric_limits<double>::infinity();
  const bool held = held_[a.last];
  // Errors add in quadrature; relative errors never near overflow, so no
  // std::hypot (a tenth of a large cluster's decision time).
  const double combined2 = 1.0 / a.weight + 1.0 / b.weight;
  // Below a sample's share of the larger batch no split can tell them apart.
  const double floor = std::max(tuning_.alike, std::min(a.grain, b.grain));
  const double tolerance =
      held ? 2.0 * std::max(floor, tuning_.clip_sigmas *
                                               std::sqrt(combined2 + a.reach * a.reach + b.reach * b.reach))
           : std::max(floor, tuning_.clip_sigmas * std::sqrt(combined2));
  return (b.level() - a.level()) / tolerance;
}

// held_[k]: some unit of the last call has members on both sides of the
// boundary after sorted position k within its class, so that boundary is
// within a unit (a worker of another unit sorting between two members does
// not cut it). Spans are taken class by class: a unit whose members now
// sort in two classes (a worker whose class changed) holds no boundary of
// a class between them.
void Grouper::mark_held(const std::vector<std::size_t>& order, const std::vector<std::size_t>& klass_at) {
  const std::size_t n = order.size();
  held_.assign(n, false);
  if (previous_.size() != n) return;
  std::vector<std::size_t> first(n, kNone), last(n, 0);
  std::vector<int> open(n + 1, 0);  // units spanning each boundary, as differences
  for (std::size_t start = 0; start < n;) {
    std::size_t end = start;
    while (end < n && klass_at[end] == klass_at[start]) ++end;
    for (std::size_t k = start; k < end; ++k) {
      const std::size_t u = previous_[order[k]];
      if (first[u] == kNone) first[u] = k;
      last[u] = k;
    }
    for (std::size_t k = start; k < end; ++k) {  // each unit of this class once, then forgotten
      const std::size_t u = previous_[order[k]];
      if (first[u] == kNone) continue;
      if (first[u] != last[u]) ++open[first[u]], --open[last[u]];
      first[u] = kNone;
    }
    start = end;
  }
  int spanning = 0;
  for (std::size_t k = 0; k + 1 < n; ++k) held_[k] = (spanning += open[k]) > 0;
}

// order_: the ranks sorted by (class, time, rank), the keys copied beside
// the ranks so the sort reads memory in order; klass_at_: each sorted
// position's class (read there, in order, by every boundary's share: read
// through the ranks they missed the cache).
void Grouper::sort_keys(const std::vector<GroupKey>& keys) {
  const std::size_t n = keys.size();
  sorted_.resize(n);
  for (std::size_t i = 0; i < n; ++i) sorted_[i] = {keys[i].klass, keys[i].time, i};
  std::sort(sorted_.begin(), sorted_.end());
  order_.resize(n), klass_at_.resize(n);
  for (std::size_t k = 0; k < n; ++k)
    order_[k] = std::get<2>(sorted_[k]), klass_at_[k] = std::get<0>(sorted_[k]);
}

std::vector<std::size_t> Grouper::group(const std::vector<GroupKey>& keys) {
  const std::size_t n = keys.size();
  sort_keys(keys);
  const std::vector<std::size_t>& order = order_;  // by sorted position: the rank
  const std::vector<std::size_t>& klass_at = klass_at_;  // ... and its class
  mark_held(order, klass_at);
  auto& seg = seg_;
  seg.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    const GroupKey& key = keys[order[k]];
    const double e = std::max(key.error, kMinError), w = 1.0 / (e * e);
    seg[k] = {k, k, k == 0 ? kNone : k - 1, k + 1 < n ? k + 1 : kNone, w, w * std::log(key.time), key.reach, key.grain, 0};
  }
  // Boundaries by share, smallest first to a resolution of 1/kBuckets of the
  // tolerance (a bucket queue: O(N + kBuckets) where a heap was O(N log N));
  // an entry (left segment, its version, the right one's) whose segments have
  // merged since (a version moved on) is stale.
  auto bucket_of = [](double r) { return std::min(kBuckets, static_cast<std::size_t>(r * kBuckets)); };
  for (auto& b : buckets_) b.clear();
  buckets_.resize(kBuckets + 1);
  auto push = [&](std::size_t left, std::size_t at_least) {
    if (left == kNone || seg[left].next == kNone) return;
    const double r = share(seg, left, klass_at);
    if (r <= 1.0) buckets_[std::max(at_least, bucket_of(r))].push_back({left, seg[left].version, seg[seg[left].next].version});
  };
  for (std::size_t k = 0; k + 1 < n; ++k) push(k, 0);
  for (std::size_t b = 0; b <= kBuckets; ++b) {
    for (std::size_t q = 0; q < buckets_[b].size(); ++q) {
      const auto [left, lv, rv] = buckets_[b][q];
      Segment& a = seg[left];
      if (a.version != lv || a.next == kNone || seg[a.next].version != rv) continue;
      Segment& c = seg[a.next];
      a.last = c.last, a.weight += c.weight, a.weighted_log += c.weighted_log;
      a.reach = std::max(a.reach, c.reach), a.grain = std::min(a.grain, c.grain);
      a.next = c.next, ++a.version, ++c.version;
      if (a.next != kNone) seg[a.next].prev = left;
      push(a.prev, b), push(left, b);
    }
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

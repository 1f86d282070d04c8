// HostCostModel::improve: the rounding's settle (solver.cc) for the workers
// beside the hosts, the ones the model can price alone (see hosts.h).
#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>

#include "hetrain/alloc/hosts.h"
#include "hetrain/common/error.h"

namespace hetrain::alloc {
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

// Terms: a *segment* is one host (a sample more or less for one member moves
// every member's finish: processor sharing) or one *device* (a worker off
// any host, priced alone); a segment's finish is its latest member's. Settle's
// rule over segments: while the segment that finishes last can give one
// sample so that it then finishes earlier, to a worker that would still
// finish earlier than it does now, the sample moves, and a device gives or
// takes it. A device gives its own; a host gives from the fullest member of
// the unit whose loss most lowers its finish. The taker is the one that
// would finish earliest with it: a device, or a host with one more sample
// for the emptiest member of one of its units (the unit that raises the
// host's finish least), so a unit's members stay within one sample. Moves
// between hosts are not made: their gains are mostly the knapsack's order
// against processor sharing, within the estimates' error, and a search over
// them parts identical workers of different units and cost a 1,024-worker
// decision several milliseconds (docs/allocation.md). Every move lowers the
// sorted segment finishes lexicographically, so settling ends. Heaps with
// stamps that mark stale entries, as settle's: a move reprices two segments
// and costs O(log N + u k log k) for u units on a host of k workers. A host
// taker is priced lazily: its finish now bounds its finish with a sample
// more from below (sharing is monotone in the work), so only hosts whose
// bound beats the best taker priced so far are priced (a decision priced
// every host's taker at the first device that finished last).
class Settle {
 public:
  Settle(const HostCostModel::Parts& parts, const Bounds& bounds, const std::vector<bool>& movable,
         std::vector<std::size_t>& split);
  // Makes one move; false when none is left.
  bool step();
  // The latest segment's finish: the split's makespan.
  double makespan() { return top(last_) ? std::get<0>(last_.top()) : 0.0; }

 private:
  using Entry = std::tuple<double, std::size_t, std::size_t>;  // finish, segment, stamp
  // A host taker: its finish with a sample more, or (not priced) its finish now.
  using HostEntry = std::tuple<double, std::size_t, std::size_t, bool>;  // ..., priced
  std::size_t unit_of(std::size_t worker) const { return p_.model.unit_of(worker); }
  bool device(std::size_t s) const { return s >= hosts_; }
  const std::vector<std::size_t>& members(std::size_t host) const { return p_.workers_by_host[host]; }
  double finish(std::size_t segment) const;
  double finish_with(std::size_t segment, std::size_t worker, int samples);
  std::size_t edge(std::size_t host, bool fullest);
  void push(std::size_t segment);
  void price_taker(std::size_t host);
  bool movable(std::size_t worker) const { return movable_.empty() || movable_[worker]; }
  template <class Queue>
  bool top(Queue& q) const;
  std::size_t taker(std::size_t critical, double t_give);

  const HostCostModel::Parts& p_;
  const Bounds bounds_;
  const std::vector<bool>& movable_;  // by worker; empty: every worker
  std::vector<std::size_t>& split_;
  std::size_t hosts_ = 0;
  std::vector<std::size_t> segment_of_, stamp_;  // by worker; stamps by segment
  std::vector<double> finish_;                   // by segment: its finish now
  std::vector<std::size_t> taker_;               // by host: its best taker, or kNone
  bool hosts_take_ = false;  // hosts are takers (only once a device is the last to finish)
  using Earliest = std::priority_queue<Entry, std::vector<Entry>, std::greater<>>;
  std::priority_queue<Entry> last_;  // segments by finish
  Earliest devices_;                 // device takers by their finish with one sample more
  std::priority_queue<HostEntry, std::vector<HostEntry>, std::greater<>> hosts_first_;  // ... host takers
  mutable HostScratch scratch_;      // one host's pricing, reused
  std::vector<std::size_t> edge_;    // by unit
};

Settle::Settle(const HostCostModel::Parts& parts, const Bounds& bounds, const std::vector<bool>& movable,
               std::vector<std::size_t>& split)
    : p_(parts), bounds_(bounds), movable_(movable), split_(split), hosts_(parts.cores.size()) {
  const std::size_t n = split.size();
  segment_of_.resize(n), stamp_.assign(hosts_ + n, 0), finish_.assign(hosts_ + n, 0.0);
  taker_.assign(hosts_, kNone), edge_.assign(parts.units.size(), kNone);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t h = parts.units[unit_of(i)].host;
    segment_of_[i] = h == kNoHost ? hosts_ + i : h;
  }
  // Every segment's entries at once, heaped in O(N): a decision may build this twice.
  std::vector<Entry> last, devices;
  for (std::size_t s = 0; s < hosts_ + n; ++s) {
    if (device(s) && segment_of_[s - hosts_] != s) continue;  // a host's worker
    finish_[s] = finish(s);
    last.emplace_back(finish_[s], s, 0);
    const std::size_t i = s - hosts_;
    if (device(s) && this->movable(i) && split_[i] < bounds_.max_local) devices.emplace_back(finish_with(s, i, 1), s, 0);
  }
  last_ = std::priority_queue<Entry>(std::less<Entry>(), std::move(last));
  devices_ = Earliest(std::greater<>(), std::move(devices));
}

double Settle::finish(std::size_t s) const {
  if (device(s)) return p_.units[unit_of(s - hosts_)].wall(static_cast<double>(split_[s - hosts_]));
  const std::vector<double>& done = p_.model.host_finish_times(s, split_, scratch_);
  return done.empty() ? 0.0 : *std::max_element(done.begin(), done.end());
}

// The segment's finish with `samples` more (or fewer) for one worker.
double Settle::finish_with(std::size_t s, std::size_t i, int samples) {
  split_[i] = static_cast<std::size_t>(static_cast<long long>(split_[i]) + samples);
  const double t = finish(s);
  split_[i] = static_cast<std::size_t>(static_cast<long long>(split_[i]) - samples);
  return t;
}

// On one host, the member of a unit that may give (its unit's fullest, above
// the lower bound) or take (its unit's emptiest, below the upper bound) whose
// move leaves the host finishing earliest: ties to the lower rank.
std::size_t Settle::edge(std::size_t h, bool fullest) {
  std::vector<std::size_t> candidates;
  for (const std::size_t i : members(h)) {
    if (!movable(i)) continue;
    std::size_t& e = edge_[unit_of(i)];
    if (e == kNone) candidates.push_back(unit_of(i)), e = i;
    if (fullest ? split_[i] > split_[e] : split_[i] < split_[e]) e = i;
  }
  std::size_t best = kNone;
  double best_t = std::numeric_limits<double>::infinity();
  for (const std::size_t u : candidates) {
    const std::size_t i = edge_[u];
    edge_[u] = kNone;
    if (fullest ? split_[i] <= bounds_.min_local : split_[i] >= bounds_.max_local) continue;
    const double t = finish_with(h, i, fullest ? -1 : 1);
    if (t < best_t) best = i, best_t = t;
  }
  return best;
}

void Settle::push(std::size_t s) {
  ++stamp_[s];
  finish_[s] = finish(s);
  last_.emplace(finish_[s], s, stamp_[s]);
  if (device(s)) {
    const std::size_t i = s - hosts_;
    if (movable(i) && split_[i] < bounds_.max_local) devices_.emplace(finish_with(s, i, 1), s, stamp_[s]);
    return;
  }
  if (hosts_take_) hosts_first_.emplace(finish_[s], s, stamp_[s], false);
}

void Settle::price_taker(std::size_t h) {
  taker_[h] = edge(h, false);
  if (taker_[h] != kNone) hosts_first_.emplace(finish_with(h, taker_[h], 1), h, stamp_[h], true);
}

template <class Queue>
bool Settle::top(Queue& q) const {
  while (!q.empty() && std::get<2>(q.top()) != stamp_[std::get<1>(q.top())]) q.pop();
  return !q.empty();
}

// The taker that would finish earliest with the sample, and before t_give:
// a device, or, where the giver is a device, a host.
std::size_t Settle::taker(std::size_t c, double t_give) {
  double best = t_give;
  std::size_t to = kNone;
  if (top(devices_) && std::get<0>(devices_.top()) < best && std::get<1>(devices_.top()) != c)
    best = std::get<0>(devices_.top()), to = std::get<1>(devices_.top()) - hosts_;
  if (!device(c)) return to;
  if (!hosts_take_) {
    hosts_take_ = true;
    for (std::size_t h = 0; h < hosts_; ++h) hosts_first_.emplace(finish_[h], h, stamp_[h], false);
  }
  // Price the hosts whose bound is below the best so far, earliest first.
  while (top(hosts_first_) && std::get<0>(hosts_first_.top()) < best && !std::get<3>(hosts_first_.top())) {
    const std::size_t h = std::get<1>(hosts_first_.top());
    hosts_first_.pop();
    price_taker(h);
  }
  if (top(hosts_first_) && std::get<0>(hosts_first_.top()) < best) to = taker_[std::get<1>(hosts_first_.top())];
  return to;
}

bool Settle::step() {
  if (!top(last_)) return false;
  const auto [t_give, c, c_stamp] = last_.top();
  const std::size_t give = device(c) ? c - hosts_ : edge(c, true);
  if (give == kNone || !movable(give) || split_[give] <= bounds_.min_local || !(finish_with(c, give, -1) < t_give)) return false;
  const std::size_t to = taker(c, t_give);
  if (to == kNone) return false;
  --split_[give], ++split_[to];
  push(c), push(segment_of_[to]);
  return true;
}

}  // namespace

std::optional<double> HostCostModel::improve(const Bounds& bounds, const std::vector<bool>& movable,
                                             std::vector<std::size_t>& split) const {
  HETRAIN_ENFORCE_EQ(split.size(), workers());
  if (!movable.empty()) HETRAIN_ENFORCE_EQ(movable.size(), workers());
  if (devices_.empty()) return std::nullopt;  // every move involves a device
  const Parts parts{*this, units_, cores_, workers_by_host_};
  Settle settle(parts, bounds, movable, split);
  // The cap only guards against a loop of rounding error: two passes over
  // every sample and worker.
  std::size_t samples = 0, moves = 0;
  for (const std::size_t b : split) samples += b;
  while (moves < 2 * (samples + split.size()) && settle.step()) ++moves;
  return moves > 0 ? std::optional<double>(settle.makespan()) : std::nullopt;
}

}  // namespace hetrain::alloc

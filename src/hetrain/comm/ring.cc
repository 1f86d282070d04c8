// Executes an allreduce schedule of ring_plan.h (the ring, halving-doubling)
// over the group's point-to-point transfers.
//
// Terms: a step moves one chunk (about count/N elements) to a peer and takes
// one from a peer. A chunk travels as segments of at most kSegmentBytes; up to
// kInFlight segments are received at once, so while one segment is being
// added into the buffer the next ones are on the wire. Reduced segments land
// in a small ring of kInFlight + 1 segment buffers (reused, never the whole
// chunk: no per-call allocation of count/N elements).
//
// Pipelining across steps: when a step sends exactly the range the previous
// step received (every step of the ring after the first), segment k of the
// next step's send is posted as soon as segment k of this step is in the
// buffer, not after the whole chunk: the ring then streams segments through
// all ranks at once instead of stopping at every step boundary, where every
// rank would wait for a whole chunk before passing any of it on.
//
// Every other send of a step is posted at its start: the sent chunk is never
// the received one within a step, so sending and receiving never touch the
// same elements. Tags: one per step of one call (the call's sequence number x
// kMaxSteps + the plan's step tag); segments of a step share it, relying on
// the group's per-peer, per-tag ordering.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <vector>

#include "hetrain/comm/allreduce.h"
#include "hetrain/comm/ring_plan.h"
#include "hetrain/common/error.h"

namespace hetrain::comm {
namespace {

// One transfer on the wire. Smaller segments (256 KiB) are clearly slower and
// larger ones no faster in bench/allreduce_compare.py (docs/benchmarks.md).
constexpr std::size_t kSegmentBytes = std::size_t{1024} * 1024;
constexpr std::size_t kInFlight = 4;      // receives posted ahead
constexpr unsigned kTagSpace = 1u << 30;  // tags stay positive ints
constexpr unsigned kMaxSteps = 2 * 4096;  // >= steps of any plan (2(N-1) for N <= 4096)

// Waits for one transfer; a failure names the peer and the step, since the
// transport's own message only names a socket address.
void wait_for(Request& r, const char* dir, int peer, std::size_t step) {
  try {
    r.wait();
  } catch (const CommError& e) {
    throw CommError(fmt::format("allreduce step {}: {} rank {} failed: {}", step, dir, peer, e.what()));
  }
}

// Posts one transfer; a transport that already knows the peer is gone fails
// here rather than in wait(), and the error names the peer all the same.
template <typename Post>
std::unique_ptr<Request> post_named(Post&& post, const char* dir, int peer, std::size_t step) {
  try {
    return post();
  } catch (const CommError& e) {
    throw CommError(fmt::format("allreduce step {}: {} rank {} failed: {}", step, dir, peer, e.what()));
  }
}

bool same(const Range& a, const Range& b) { return a.begin == b.begin && a.end == b.end; }

template <typename T>
void add_into(T* __restrict out, const T* __restrict in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] += in[i];
}

// The receives of one step: posted ahead (at most kInFlight), consumed in order.
template <typename T>
struct Receiving {
  struct Pending {
    std::size_t begin, len, slot;
    std::unique_ptr<Request> request;
  };
  const Step* step = nullptr;
  std::size_t index = 0;  // the step's number in the plan
  int tag = 0;
  std::size_t cursor = 0;  // next element to post a receive for
  std::size_t posted = 0;  // receives posted so far (slot = set + posted mod (kInFlight + 1))
  std::size_t set = 0;     // first landing slot of this step's set
  std::deque<Pending> pending;

  void start(const Step& st, std::size_t number, int t, std::size_t slot_set) {
    step = &st;
    index = number;
    tag = t;
    cursor = st.recv_from == kNoPeer ? st.recv.end : st.recv.begin;
    posted = 0;
    set = slot_set;
    pending.clear();
  }
  bool can_post() const { return cursor < step->recv.end && pending.size() < kInFlight; }
  void post(Group& group, std::span<T> data, std::span<T> slots, std::size_t seg) {
    const std::size_t len = std::min(seg, step->recv.end - cursor);
    const std::size_t slot = set + posted++ % (kInFlight + 1);
    std::span<T> into = step->reduce ? slots.subspan(slot * seg, len) : data.subspan(cursor, len);
    const int from = step->recv_from;
    pending.push_back(
        {cursor, len, slot,
         post_named([&] { return group.irecv(into, from, tag); }, "receiving from", from, index)});
    cursor += len;
  }
};

bool disjoint(const Range& a, const Range& b) { return a.end <= b.begin || b.end <= a.begin; }

template <typename T>
void execute_plan(Group& group, std::span<T> data, const std::vector<Step>& steps, unsigned sequence) {
  // A segment is at most kSegmentBytes and at most the largest range a step
  // receives: small messages must not pay for megabytes of landing space.
  std::size_t largest = 1;
  for (const Step& st : steps) largest = std::max(largest, st.recv.size());
  const std::size_t seg = std::min(std::max<std::size_t>(1, kSegmentBytes / sizeof(T)), largest);
  // Landing buffers of reduce steps: two sets of kInFlight + 1 segments, so
  // the next step's receives can be posted while this step's are consumed.
  // Left uninitialised: every element is received before it is read.
  const std::size_t slot_count = 2 * (kInFlight + 1) * seg;
  const auto slot_memory = std::make_unique_for_overwrite<T[]>(slot_count);
  const std::span<T> slots(slot_memory.get(), slot_count);
  auto tag_of = [&](const Step& st) {
    return static_cast<int>((sequence * kMaxSteps + static_cast<unsigned>(st.tag)) % kTagSpace);
  };
  std::vector<std::unique_ptr<Request>> sends;       // this step's
  std::vector<std::unique_ptr<Request>> next_sends;  // the next step's, posted early
  Receiving<T> now, ahead;
  if (!steps.empty()) ahead.start(steps[0], 0, tag_of(steps[0]), 0);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const Step& st = steps[s];
    const int tag = tag_of(st);
    sends = std::move(next_sends);
    next_sends.clear();
    if (sends.empty()) {
      for (std::size_t b = st.send.begin; st.send_to != kNoPeer && b < st.send.end; b += seg) {
        auto chunk = data.subspan(b, std::min(seg, st.send.end - b));
        sends.push_back(
            post_named([&] { return group.isend(chunk, st.send_to, tag); }, "sending to", st.send_to, s));
      }
    }
    std::swap(now, ahead);  // what was posted ahead for this step
    const Step* next = s + 1 < steps.size() ? &steps[s + 1] : nullptr;
    if (next != nullptr) ahead.start(*next, s + 1, tag_of(*next), ((s + 1) % 2) * (kInFlight + 1));
    // Does the next step send exactly what this one receives? Then forward segment by segment.
    const bool forward = next != nullptr && st.recv_from != kNoPeer && next->send_to != kNoPeer &&
                         same(next->send, st.recv) && st.recv.size() > 0;
    // May the next step's receives be posted now? Into slots, always; in place,
    // only where this step neither sends nor receives.
    const bool early = next != nullptr && next->recv_from != kNoPeer &&
                       (next->reduce || (disjoint(next->recv, st.send) && disjoint(next->recv, st.recv)));
    while (now.can_post()) now.post(group, data, slots, seg);
    // And the next step's, now: Gloo's transport sends a payload only once
    // the receiver has posted its receive, so posting one step ahead takes
    // that round trip off every step boundary. It matters most at 1-4 MiB,
    // where a step is one or two segments (hetrain bench allreduce).
    while (early && ahead.can_post()) ahead.post(group, data, slots, seg);
    while (!now.pending.empty()) {
      auto p = std::move(now.pending.front());
      now.pending.pop_front();
      wait_for(*p.request, "receiving from", st.recv_from, s);
      if (now.can_post()) {
        now.post(group, data, slots, seg);  // into another slot: kInFlight + 1 per set
      } else if (early && ahead.can_post()) {
        ahead.post(group, data, slots, seg);
      }
      if (st.reduce) add_into(data.data() + p.begin, slots.data() + p.slot * seg, p.len);
      if (forward) {
        auto chunk = data.subspan(p.begin, p.len);
        next_sends.push_back(post_named([&] { return group.isend(chunk, next->send_to, tag_of(*next)); },
                                        "sending to", next->send_to, s + 1));
      }
    }
    for (auto& r : sends) wait_for(*r, "sending to", st.send_to, s);
  }
}

}  // namespace

template <typename T>
void ring_allreduce(Group& group, std::span<T> data) {
  const unsigned sequence = group.next_sequence();
  if (group.size() == 1 || data.empty()) return;
  execute_plan(group, data, ring_plan(group.size(), group.rank(), data.size()), sequence);
}

template <typename T>
void halving_doubling_allreduce(Group& group, std::span<T> data) {
  const unsigned sequence = group.next_sequence();
  if (group.size() == 1 || data.empty()) return;
  execute_plan(group, data, halving_doubling_plan(group.size(), group.rank(), data.size()), sequence);
}

template void ring_allreduce<float>(Group&, std::span<float>);
template void ring_allreduce<double>(Group&, std::span<double>);
template void halving_doubling_allreduce<float>(Group&, std::span<float>);
template void halving_doubling_allreduce<double>(Group&, std::span<double>);

}  // namespace hetrain::comm

// Executes an allreduce schedule of ring_plan.h (the ring, halving-doubling)
// over the group's point-to-point transfers.
//
// Terms: a step moves one chunk (about count/N elements) to the next rank and
// takes one from the previous rank. A chunk travels as segments of at most
// kSegmentBytes; up to kInFlight segments are received at once, so while one
// segment is being added into the buffer the next ones are on the wire.
// Every send of a step is posted at its start: the sent chunk is never the
// received one within a step, so sending and receiving never touch the same
// elements. Tags: one per step of one call (a call's sequence number x
// 2(N-1) + step), and segments of a step share it, relying on the group's
// per-peer, per-tag ordering.
#include <algorithm>
#include <deque>
#include <vector>

#include "hetrain/comm/allreduce.h"
#include "hetrain/comm/ring_plan.h"
#include "hetrain/common/error.h"

namespace hetrain::comm {
namespace {

constexpr std::size_t kSegmentBytes = 1024 * 1024;  // one transfer on the wire (1 MiB beat 256 KiB here)
constexpr std::size_t kInFlight = 4;                // receives posted ahead
constexpr unsigned kTagSpace = 1u << 30;            // tags stay positive ints
constexpr unsigned kMaxSteps = 2 * 4096;            // >= steps of any plan (2(N-1) for N <= 4096)

template <typename T>
void execute_plan(Group& group, std::span<T> data, const std::vector<Step>& steps, unsigned sequence) {
  const std::size_t seg = std::max<std::size_t>(1, kSegmentBytes / sizeof(T));
  std::vector<T> scratch;
  for (const Step& st : steps) {
    const int tag = static_cast<int>((sequence * kMaxSteps + static_cast<unsigned>(st.tag)) % kTagSpace);
    std::vector<std::unique_ptr<Request>> sends;
    for (std::size_t b = st.send.begin; st.send_to != kNoPeer && b < st.send.end; b += seg) {
      const std::size_t len = std::min(seg, st.send.end - b);
      sends.push_back(group.isend(data.subspan(b, len), st.send_to, tag));
    }
    // Reduce steps receive into scratch and add; allgather steps receive in place.
    scratch.resize(st.reduce ? st.recv.size() : 0);
    struct Pending {
      std::size_t begin, len;
      std::unique_ptr<Request> request;
    };
    std::deque<Pending> pending;
    std::size_t next = st.recv.begin;
    auto post = [&] {
      const std::size_t len = std::min(seg, st.recv.end - next);
      std::span<T> into =
          st.reduce ? std::span<T>(scratch).subspan(next - st.recv.begin, len) : data.subspan(next, len);
      pending.push_back({next, len, group.irecv(into, st.recv_from, tag)});
      next += len;
    };
    if (st.recv_from == kNoPeer) next = st.recv.end;
    while (next < st.recv.end && pending.size() < kInFlight) post();
    while (!pending.empty()) {
      Pending p = std::move(pending.front());
      pending.pop_front();
      p.request->wait();
      if (next < st.recv.end) post();
      if (st.reduce) {
        const T* in = scratch.data() + (p.begin - st.recv.begin);
        T* out = data.data() + p.begin;
        for (std::size_t i = 0; i < p.len; ++i) out[i] += in[i];
      }
    }
    for (auto& r : sends) r->wait();
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

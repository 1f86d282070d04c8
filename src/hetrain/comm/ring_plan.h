// Allreduce schedules as plain data: who sends which element range to whom
// at every step. Planned first and executed after (comm/ring.cc), so tests
// check the schedules without a network and the simulator replays them.
#pragma once

#include <cstddef>
#include <vector>

namespace hetrain::comm {

// Terms: the buffer of `count` elements is cut into N chunks, chunk c being
// [c*count/N, (c+1)*count/N). Each of the 2(N-1) steps moves one chunk to the
// next rank on the ring and takes one from the previous rank:
//  - reduce-scatter, steps 0..N-2: rank r sends chunk (r - s) mod N and adds
//    the received chunk (r - s - 1) mod N into its own; after it, rank r holds
//    the full sum of chunk (r + 1) mod N;
//  - allgather, steps N-1..2N-3: rank r sends the finished chunk
//    (r + 1 - s') mod N (s' = s - (N-1)) and copies in (r - s') mod N.
// Every step moves count/N elements each way, 2(N-1)/N x count in all: the
// bandwidth-optimal amount.
struct Range {
  std::size_t begin = 0;
  std::size_t end = 0;  // exclusive
  std::size_t size() const { return end - begin; }
};

inline constexpr int kNoPeer = -1;

struct RingStep {
  int send_to = 0;  // kNoPeer: this step sends nothing
  Range send;
  int recv_from = 0;  // kNoPeer: this step receives nothing
  Range recv;
  bool reduce = true;  // add the received range in (reduce-scatter) or copy it (allgather)
  int tag = 0;         // the plan's logical step: a send and its receive carry the same one
};
using Step = RingStep;

Range ring_chunk(std::size_t count, int size, int chunk);

// The 2(N-1) steps of `rank` in a ring of `size`; empty for size 1.
std::vector<RingStep> ring_plan(int size, int rank, std::size_t count);

// Halving-doubling (Rabenseifner): log2 steps, good for small messages.
// Terms: p is the largest power of two <= N. The N - p extra ranks first fold
// their whole buffer into rank r - p and take the result back at the end.
// Among the p ranks, reduce-scatter by recursive halving: at the step with
// distance d (p/2, p/4, ..., 1) rank v and v^d split their current range in
// two, each keeps one half and adds the partner's copy of it; after log2(p)
// steps each holds the sum of 1/p of the buffer. Allgather by recursive
// doubling replays the levels in reverse, copying the partner's half.
// 2 log2(p) steps (+2 with folding), each moving half the previous amount.
std::vector<Step> halving_doubling_plan(int size, int rank, std::size_t count);

}  // namespace hetrain::comm

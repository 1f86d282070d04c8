// The allreduce's time on a simulated network: the real ring schedule of
// comm/ring_plan.h, replayed under the alpha-beta model of cluster.h.
#pragma once

#include <cstddef>

#include "hetrain/sim/cluster.h"

namespace hetrain::sim {

// Up to this many ranks every rank's plan is replayed; above it, only the
// ranks whose outgoing link differs (see allreduce_seconds).
inline constexpr std::size_t kFullReplayRanks = 64;

// Seconds for one allreduce of `gradient_bytes` over `world` ranks, as the
// trainer runs it: the gradient cut into calls of at most bucket_bytes, each
// a ring allreduce of float32 elements.
//
// Terms: a plan step is one logical step of ring_plan (its tag): every rank
// sends one chunk to its successor. The ring is synchronous, since a rank's
// step s+1 sends what it received at step s, so a step lasts as long as its
// slowest transfer: max over ranks r of latency(r) + bytes(r, s) / bandwidth(r),
// latency and bandwidth those of the link r -> r+1 (intra-node when both
// share a node). The call's time is the sum over its steps.
//
// Approximation above kFullReplayRanks ranks: only the plans of rank 0, of
// the last rank of the first node (whose link leaves the node) and of the last
// rank are replayed. Every link is of one of their kinds, and chunks differ by
// at most one element, so a step's time can be off by at most
// kBytesPerElement / bandwidth (3.2 ns at 1.25 GB/s).
double allreduce_seconds(const Network& net, std::size_t world, double gradient_bytes);

}  // namespace hetrain::sim

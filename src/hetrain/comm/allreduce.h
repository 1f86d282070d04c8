// Allreduce behind one seam: an options object and a free function (the
// shape of gloo::allreduce(AllreduceOptions)). Every allocation policy runs
// over any algorithm here; the reduction is a sum.
#pragma once

#include <span>
#include <string>

#include "hetrain/comm/group.h"

namespace hetrain::comm {

enum class Algorithm {
  kGloo,             // the engine's own: c10d ProcessGroupGloo::allreduce
  kRing,             // hetrain's Ring AllReduce over the group's send/recv (ring.cc)
  kHalvingDoubling,  // recursive halving + doubling, log2 N steps (small messages)
  kAuto,             // per call, the fastest of the above for the message size (choose_algorithm)
};

// "gloo" | "ring" | "halving-doubling" | "auto"; throws UsageError otherwise.
Algorithm parse_algorithm(const std::string& name);
const char* algorithm_name(Algorithm a);

template <typename T>
struct AllreduceOptions {
  std::span<T> data;  // reduced in place: every rank ends with the sum
  Algorithm algorithm = Algorithm::kGloo;
  // Reduce the buffer in consecutive buckets of at most this many elements,
  // one call each, in order (0: the whole buffer in one call). Gradients are
  // fused into one flat buffer, so this is the number of calls, not the
  // number of parameters.
  std::size_t bucket_elements = 0;
};

// What `auto` runs for a message of `bytes`: halving-doubling below
// kAutoRingFromBytes (fewer steps: latency dominates), the ring from there
// (bandwidth-optimal), and Gloo's own ring from kAutoGlooFromBytes, where
// bench/allreduce_compare.py finds it ahead of hetrain's. The thresholds
// follow that benchmark (docs/benchmarks.md, "Allreduce", names the machine).
// Every rank reduces the same count, so every rank picks the same algorithm.
inline constexpr std::size_t kAutoRingFromBytes = std::size_t{4} << 20;
inline constexpr std::size_t kAutoGlooFromBytes = std::size_t{64} << 20;
Algorithm choose_algorithm(std::size_t bytes);

// Blocks until the sum is in `data` on this rank; throws CommError when a
// peer is gone or the group's timeout passes.
void allreduce(Group& group, const AllreduceOptions<float>& options);
void allreduce(Group& group, const AllreduceOptions<double>& options);

// The algorithms alone (exposed for tests and the benchmark).
template <typename T>
void ring_allreduce(Group& group, std::span<T> data);
template <typename T>
void halving_doubling_allreduce(Group& group, std::span<T> data);

}  // namespace hetrain::comm

#include "hetrain/comm/allreduce.h"

#include <fmt/format.h>

#include <algorithm>

#include "hetrain/common/error.h"

namespace hetrain::comm {
namespace {

template <typename T>
void reduce_one(Group& group, Algorithm algorithm, std::span<T> data) {
  switch (algorithm) {
    case Algorithm::kGloo:
      group.allreduce_sum(data);
      return;
    case Algorithm::kRing:
      ring_allreduce(group, data);
      return;
    case Algorithm::kHalvingDoubling:
      halving_doubling_allreduce(group, data);
      return;
    case Algorithm::kAuto:
      return reduce_one(group, choose_algorithm(data.size() * sizeof(T)), data);
  }
  throw Error("unhandled allreduce algorithm");
}

template <typename T>
void dispatch(Group& group, const AllreduceOptions<T>& o) {
  const std::size_t bucket = o.bucket_elements == 0 ? o.data.size() : o.bucket_elements;
  if (o.data.empty()) return reduce_one(group, o.algorithm, o.data);
  for (std::size_t begin = 0; begin < o.data.size(); begin += bucket) {
    reduce_one(group, o.algorithm, o.data.subspan(begin, std::min(bucket, o.data.size() - begin)));
  }
}

}  // namespace

Algorithm parse_algorithm(const std::string& name) {
  if (name == "gloo") return Algorithm::kGloo;
  if (name == "ring") return Algorithm::kRing;
  if (name == "halving-doubling") return Algorithm::kHalvingDoubling;
  if (name == "auto") return Algorithm::kAuto;
  throw UsageError(
      fmt::format("unknown allreduce algorithm '{}' (expected auto, gloo, ring or halving-doubling)", name));
}

Algorithm choose_algorithm(std::size_t bytes) {
  if (bytes < kAutoRingFromBytes) return Algorithm::kHalvingDoubling;
  return bytes < kAutoGlooFromBytes ? Algorithm::kRing : Algorithm::kGloo;
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kHalvingDoubling:
      return "halving-doubling";
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kGloo:
      break;
  }
  return "gloo";
}

void allreduce(Group& group, const AllreduceOptions<float>& o) { dispatch(group, o); }
void allreduce(Group& group, const AllreduceOptions<double>& o) { dispatch(group, o); }

}  // namespace hetrain::comm

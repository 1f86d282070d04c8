#include "hetrain/comm/allreduce.h"

#include <fmt/format.h>

#include "hetrain/common/error.h"

namespace hetrain::comm {
namespace {

template <typename T>
void dispatch(Group& group, const AllreduceOptions<T>& o) {
  switch (o.algorithm) {
    case Algorithm::kGloo:
      group.allreduce_sum(o.data);
      return;
    case Algorithm::kRing:
      ring_allreduce(group, o.data);
      return;
  }
  throw Error("unhandled allreduce algorithm");
}

}  // namespace

Algorithm parse_algorithm(const std::string& name) {
  if (name == "gloo") return Algorithm::kGloo;
  if (name == "ring") return Algorithm::kRing;
  throw UsageError(fmt::format("unknown allreduce algorithm '{}' (expected gloo or ring)", name));
}

const char* algorithm_name(Algorithm a) { return a == Algorithm::kRing ? "ring" : "gloo"; }

void allreduce(Group& group, const AllreduceOptions<float>& o) { dispatch(group, o); }
void allreduce(Group& group, const AllreduceOptions<double>& o) { dispatch(group, o); }

}  // namespace hetrain::comm

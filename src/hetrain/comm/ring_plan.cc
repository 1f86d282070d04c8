#include "hetrain/comm/ring_plan.h"

#include "hetrain/common/error.h"

namespace hetrain::comm {
namespace {
int mod(int a, int n) { return ((a % n) + n) % n; }
}  // namespace

Range ring_chunk(std::size_t count, int size, int chunk) {
  HETRAIN_ENFORCE_LT(0, size);
  const auto n = static_cast<std::size_t>(size);
  const auto c = static_cast<std::size_t>(chunk);
  return {c * count / n, (c + 1) * count / n};
}

std::vector<RingStep> ring_plan(int size, int rank, std::size_t count) {
  HETRAIN_ENFORCE_LT(0, size);
  HETRAIN_ENFORCE_LT(rank, size);
  std::vector<RingStep> steps;
  const int next = mod(rank + 1, size), prev = mod(rank - 1, size);
  for (int s = 0; s + 1 < size; ++s) {
    steps.push_back({next, ring_chunk(count, size, mod(rank - s, size)), prev,
                     ring_chunk(count, size, mod(rank - s - 1, size)), true});
  }
  for (int s = 0; s + 1 < size; ++s) {
    steps.push_back({next, ring_chunk(count, size, mod(rank + 1 - s, size)), prev,
                     ring_chunk(count, size, mod(rank - s, size)), false});
  }
  return steps;
}

}  // namespace hetrain::comm

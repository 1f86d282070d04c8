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
  int tag = 0;
  for (int s = 0; s + 1 < size; ++s) {
    steps.push_back({next, ring_chunk(count, size, mod(rank - s, size)), prev,
                     ring_chunk(count, size, mod(rank - s - 1, size)), true, tag++});
  }
  for (int s = 0; s + 1 < size; ++s) {
    steps.push_back({next, ring_chunk(count, size, mod(rank + 1 - s, size)), prev,
                     ring_chunk(count, size, mod(rank - s, size)), false, tag++});
  }
  return steps;
}

std::vector<Step> halving_doubling_plan(int size, int rank, std::size_t count) {
  HETRAIN_ENFORCE_LT(0, size);
  HETRAIN_ENFORCE_LT(rank, size);
  int p = 1, levels = 0;
  while (p * 2 <= size) p *= 2, ++levels;
  // Tags: 0 fold-in, 1..levels halving, levels+1..2 levels doubling, then fold-out.
  const int fold_out_tag = 2 * levels + 1;
  const Range all{0, count};
  std::vector<Step> steps;
  if (rank >= p) {  // an extra rank: fold in, take the result back
    steps.push_back({rank - p, all, kNoPeer, {}, true, 0});
    steps.push_back({kNoPeer, {}, rank - p, all, false, fold_out_tag});
    return steps;
  }
  const bool folds = rank < size - p;
  if (folds) steps.push_back({kNoPeer, {}, rank + p, all, true, 0});
  struct Level {
    int partner;
    Range mine, theirs;
  };
  std::vector<Level> halves;
  Range current = all;
  int tag = 1;
  for (int d = p / 2; d >= 1; d /= 2) {
    const std::size_t mid = current.begin + current.size() / 2;
    const Range lower{current.begin, mid}, upper{mid, current.end};
    const bool keep_lower = (rank & d) == 0;
    const Level level{rank ^ d, keep_lower ? lower : upper, keep_lower ? upper : lower};
    steps.push_back({level.partner, level.theirs, level.partner, level.mine, true, tag++});
    halves.push_back(level);
    current = level.mine;
  }
  for (auto it = halves.rbegin(); it != halves.rend(); ++it) {
    steps.push_back({it->partner, it->mine, it->partner, it->theirs, false, tag++});
  }
  if (folds) steps.push_back({rank + p, all, kNoPeer, {}, false, fold_out_tag});
  return steps;
}

}  // namespace hetrain::comm

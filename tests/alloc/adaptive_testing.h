// What the adaptive policy's closed-loop tests share: a split, the policy
// under test built as the trainer builds it, and the loop that runs it.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "hetrain/alloc/policy.h"

namespace hetrain::alloc::adaptive_test {

using Split = std::vector<std::size_t>;

inline std::unique_ptr<Policy> adaptive(std::size_t n, std::size_t batch, Placement placement = {}) {
  PolicyConfig c;
  c.name = "adaptive", c.workers = n, c.global_batch = batch, c.placement = std::move(placement);
  return make_policy(c);
}

// Runs `p` on `world` (its step(split) gives the observation and sets
// `modeled`, the step's noise-free time) for `steps` steps; returns the mean
// modelled step after the first `skip`.
template <class World>
double run(Policy& p, World& world, std::size_t steps, std::size_t skip = 0) {
  double sum = 0.0;
  for (std::size_t s = 0; s < steps; ++s) {
    p.observe(world.step(p.split()));
    if (s >= skip) sum += world.modeled;
  }
  return sum / static_cast<double>(steps - skip);
}

}  // namespace hetrain::alloc::adaptive_test

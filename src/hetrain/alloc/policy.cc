#include "hetrain/alloc/policy.h"

#include <fmt/format.h>

#include "hetrain/alloc/adaptive.h"
#include "hetrain/common/error.h"

namespace hetrain::alloc {
namespace {

// A split fixed at construction: equal, or in given proportions.
class FixedPolicy final : public Policy {
 public:
  explicit FixedPolicy(std::vector<std::size_t> split) : split_(std::move(split)) {}
  std::vector<std::size_t> split() const override { return split_; }
  void observe(const Observation&) override {}

 private:
  std::vector<std::size_t> split_;
};

}  // namespace

std::unique_ptr<Policy> make_policy(const PolicyConfig& c) {
  check_feasible(c.workers, c.global_batch, c.bounds);
  if (c.name == "equal") {
    const std::vector<double> ones(c.workers, 1.0);
    return std::make_unique<FixedPolicy>(split_proportional(ones, c.global_batch, c.bounds));
  }
  if (c.name == "adaptive") {
    return std::make_unique<AdaptivePolicy>(c.workers, c.global_batch, c.bounds, AdaptiveTuning{}, c.known,
                                            c.placement);
  }
  if (c.name == "static" && c.shares.empty()) {
    return std::make_unique<ProfiledStaticPolicy>(c.workers, c.global_batch, c.bounds, c.profile_steps,
                                                  c.placement);
  }
  if (c.name == "static") {
    if (c.shares.size() != c.workers) {
      throw UsageError(
          fmt::format("--shares has {} values but there are {} workers", c.shares.size(), c.workers));
    }
    return std::make_unique<FixedPolicy>(split_proportional(c.shares, c.global_batch, c.bounds));
  }
  throw UsageError(fmt::format("unknown policy '{}' (expected equal, static or adaptive)", c.name));
}

std::vector<std::size_t> scale_split(const std::vector<std::size_t>& full, std::size_t total,
                                     std::size_t max_local) {
  std::vector<double> weights(full.size());
  // A worker with share 0 keeps ~0; the tiny weight keeps the weights valid.
  constexpr double kZeroShareWeight = 1e-9;
  for (std::size_t i = 0; i < full.size(); ++i) {
    weights[i] = full[i] > 0 ? static_cast<double>(full[i]) : kZeroShareWeight;
  }
  Bounds b;
  b.max_local = max_local;
  return split_proportional(weights, total, b);
}

}  // namespace hetrain::alloc

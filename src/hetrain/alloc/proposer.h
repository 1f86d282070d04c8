// The Proposer: from the estimates to the split that minimises the expected
// step time, with the gain it predicts over the split now running.
// - Each worker is planned at its estimated time times (1 + m sigma): sigma its
//   relative noise, m the expected maximum of two standard normals (its noise
//   costs the step when its draw is the later of its own and the slowest
//   other's), so noisier workers get a little less. A worker the split leaves idle is planned optimistically,
//   explore_sigmas standard errors faster: as its uncertainty grows while it
//   is not measured, it is given a sample again (a probe).
// - The Grouper makes alike workers one unit, with their mean line; on a
//   host, a second Grouper on CPU cost alone makes the tiers (hosts.h).
// - Workers that share an oversubscribed host (placement) are planned by
//   processor sharing of its cores (hosts.h), the others as independent
//   devices (device_cost.h), over the one solver (solver.h). Beside such
//   hosts, the devices' rounded shares are settled by the model's own moves
//   of single samples, kept only beyond the estimates' error.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "hetrain/alloc/estimator.h"
#include "hetrain/alloc/grouper.h"
#include "hetrain/alloc/policy.h"
#include "hetrain/alloc/solver.h"

namespace hetrain::alloc {

struct Proposal {
  std::vector<std::size_t> split;
  double best = 0.0;   // predicted compute makespan of `split`, seconds
  double now = 0.0;    // ... of the split now running
  double error = 0.0;  // relative standard error of those predictions (the least known worker's)
  // Predicted gain as a share of the whole step (`rest` seconds beyond compute).
  double gain(double rest) const { return now > 0.0 ? (now - best) / (now + rest) : 0.0; }
};

// E[max of n independent standard normals] (0 for n <= 1).
double expected_max_normal(std::size_t n);

class Proposer {
 public:
  Proposer(std::size_t global_batch, Bounds bounds, Placement placement, AdaptiveTuning tuning);
  // Whether workers are planned by their CPU use (an oversubscribed host).
  bool on_cpu(std::size_t worker) const;
  std::vector<bool> on_cpu() const;
  Proposal propose(const Estimator& e, const std::vector<std::size_t>& incumbent);
  const std::vector<std::size_t>& units() const { return grouper_.last(); }

 private:
  struct Plan;
  Plan plan(const Estimator& e, const std::vector<std::size_t>& incumbent) const;
  std::vector<double> key_batches(const std::vector<std::size_t>& incumbent, double typical) const;
  std::size_t klass_of(std::size_t worker, bool cpu) const;
  // keys[j] is worker ranks[j]'s (ranks empty: worker j's).
  void with_kinds(std::vector<GroupKey>& keys, const std::vector<std::size_t>& ranks = {}) const;
  void settle_beside_hosts(const Estimator& e, const Plan& p, const StepCostModel& m,
                           const std::vector<std::size_t>& incumbent, double now, SolvedSplit& best) const;
  void keep_in_sight(const Estimator& e, const StepCostModel& m, SolvedSplit& best) const;
  std::unique_ptr<StepCostModel> model(const Plan& p, const std::vector<std::size_t>& unit_of,
                                       const std::vector<std::size_t>& tier_of) const;
  std::size_t global_batch_;
  Bounds bounds_;
  Placement placement_;
  AdaptiveTuning tuning_;
  bool hosts_ = false;  // some host is oversubscribed
  bool kinds_ = false;  // some worker said its kind (fixed for the run, as the placement)
  Grouper grouper_;
  Grouper tiers_;  // hosts' tiers: workers whose CPU costs are alike (hosts.h)
  std::vector<std::size_t> hosted_;  // the workers tiers are for, by rank: those on a host (where hosts_)
};

}  // namespace hetrain::alloc

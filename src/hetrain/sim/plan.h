// hetrain plan: which of the available machines to use, and with which
// starting shares, to finish a number of epochs fastest or cheapest.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hetrain/sim/cluster.h"

namespace hetrain::sim {

enum class Objective { kTime, kCost };
Objective parse_objective(const std::string& name);  // UsageError unless time | cost

// Candidates tried at most: per group 0, 1, 2, 4, ... machines and all of
// them, every combination; when that makes more than kMaxCandidates, each
// group is used wholly or not at all; with more than kMaxExhaustiveGroups
// groups, only the fastest-first prefixes of whole groups.
inline constexpr std::size_t kMaxCandidates = 4096;
inline constexpr std::size_t kMaxExhaustiveGroups = 12;

struct Candidate {
  std::vector<std::size_t> use;  // per inventory group: machines used (0 or all)
  std::size_t workers = 0;
  std::vector<std::size_t> split;  // starting local batches, rank by rank (group order)
  double step_seconds = 0.0;       // predicted: compute makespan + allreduce + step overhead
  double total_seconds = 0.0;      // for all the epochs
  double cost = 0.0;               // total_seconds / 3600 x sum of prices per hour
  bool feasible = true;            // false: the global batch cannot be split over these workers
};

struct PlanResult {
  std::size_t steps = 0;              // epochs x steps per epoch
  std::vector<Candidate> candidates;  // best first for the objective; infeasible ones last
};

// The inventory is a cluster file whose groups are the machines available
// (count, speed, overhead, max_local_batch, price_per_hour); dataset_samples
// is required. Terms: a candidate uses some machines of each group (see
// kMaxCandidates). Its
// step time is the steady state of the adaptive policy: the makespan of
// solve_split (the policy's own water-filling, alloc/solver.h) over the
// machines' true models, plus the ring allreduce of network_cost.h for its
// worker count, plus the step overhead. Time = steps x step time, the short
// last batch of each epoch counted as a full one; cost = time x the
// candidate's price per hour. Events in the inventory are ignored; an
// inventory with [[machine]] tables (shared cores) is a UsageError.
PlanResult plan(const Cluster& inventory, std::size_t epochs, Objective objective);

// Alternatives listed by the report unless `all`.
inline constexpr std::size_t kReportRows = 20;

// The report: the recommendation with its shares, then the alternatives, best
// first (the first kReportRows, or every one).
std::string plan_report(const Cluster& inventory, const PlanResult& result, Objective objective,
                        bool all = false);

}  // namespace hetrain::sim

// Shared hosts (alloc/hosts.h): the host-aware fill against hand-computed
// splits, processor sharing as the prediction, and groups by CPU cost.
#include <gtest/gtest.h>

#include <vector>

#include "hetrain/alloc/adaptive.h"
#include "hetrain/alloc/hosts.h"
#include "hetrain/common/error.h"

namespace hetrain::alloc {
namespace {

constexpr double kMs = 1e-3;

// n workers on one host of `cores` CPUs, one CPU each.
Placement one_host(std::size_t n, double cores) {
  return Placement{std::vector<std::size_t>(n, 0), std::vector<double>(n, 1.0), {cores}};
}

HostCost cpu_only(double seconds_per_sample) {
  HostCost c;
  c.cpu_per_sample = seconds_per_sample;
  return c;
}

TEST(HostFill, OneCoreGoesToTheCheapestWorker) {
  // A needs 1 ms of CPU per sample, B 2 ms; one core: every sample B takes
  // costs twice the core time, so A takes all 100 (T = 0.1 s) and B none.
  const Placement p = one_host(2, 1.0);
  const std::vector<WorkerModel> wall(2, WorkerModel{0.0, 100.0});  // contended: they look alike
  const SolvedSplit s = solve_on_hosts(p, wall, {cpu_only(kMs), cpu_only(2 * kMs)}, {0, 1}, 100, {});
  EXPECT_EQ(s.split, (std::vector<std::size_t>{100, 0}));
  EXPECT_NEAR(s.makespan, 0.1, 1e-9);
}

TEST(HostFill, TwoCoresLetEachWorkerRunAtItsOwnSpeed) {
  // Two cores: A alone holds 1000 T samples, B then 500 T with the second
  // core, so T = 100 / 1500 s and the split is 2:1.
  const Placement p = one_host(2, 2.0);
  const std::vector<WorkerModel> wall(2, WorkerModel{0.0, 100.0});
  const SolvedSplit s = solve_on_hosts(p, wall, {cpu_only(kMs), cpu_only(2 * kMs)}, {0, 1}, 99, {});
  EXPECT_EQ(s.split, (std::vector<std::size_t>{66, 33}));
  EXPECT_NEAR(s.makespan, 0.066, 1e-9);
}

TEST(HostFill, AGroupSharesTheBudgetEvenly) {
  // Three identical workers in one group on one core, and a device beside
  // them as fast as the core: the host's group holds half, evenly.
  Placement p = one_host(3, 1.0);
  p.host.push_back(kNoHost);
  p.cpus.push_back(1.0);
  const std::vector<WorkerModel> wall{{0.0, 1.0}, {0.0, 1.0}, {0.0, 1.0}, {0.0, 1000.0}};
  const std::vector<HostCost> cost{cpu_only(kMs), cpu_only(kMs), cpu_only(kMs), HostCost{}};
  const SolvedSplit s = solve_on_hosts(p, wall, cost, {0, 0, 0, 3}, 120, {});
  EXPECT_EQ(s.split, (std::vector<std::size_t>{20, 20, 20, 60}));
}

TEST(HostFill, WorkersWhoseCostsTieShareTheBudgetInsteadOfLeavingOneIdle) {
  // Three workers 5% apart in CPU per sample, not grouped, on two cores.
  // Cheapest first would give the two cheapest a core each and the third
  // nothing; tied costs share the cores at equal rates instead, each taking
  // in proportion to its speed: 1/1.00 : 1/1.05 : 1/1.10.
  const Placement p = one_host(3, 2.0);
  const std::vector<WorkerModel> wall(3, WorkerModel{0.0, 100.0});
  const std::vector<HostCost> cost{cpu_only(kMs), cpu_only(1.05 * kMs), cpu_only(1.1 * kMs)};
  const SolvedSplit s = solve_on_hosts(p, wall, cost, {0, 1, 2}, 300, {});
  // 300 x (1, 0.952, 0.909) / 2.861 = 104.9, 99.9, 95.3, by largest remainder:
  EXPECT_EQ(s.split, (std::vector<std::size_t>{105, 100, 95}));
}

TEST(HostFill, PredictionsAreProcessorSharingPlusTimeOffTheCpu) {
  const Placement p = one_host(2, 1.0);
  HostCost waits = cpu_only(kMs);
  waits.wait_per_sample = kMs;
  const std::vector<WorkerModel> wall(2, WorkerModel{0.0, 1.0});
  // Both start sharing the core: 10 ms of work each at half a core ends at
  // 20 ms; the second then waits 10 ms more off the CPU.
  const auto t = host_finish_times(p, wall, {cpu_only(kMs), waits}, {10, 10});
  EXPECT_NEAR(t[0], 0.02, 1e-12);
  EXPECT_NEAR(t[1], 0.03, 1e-12);
}

TEST(HostGroups, AlikeWorkersOnOneHostAreOneGroupAndOthersAreNot) {
  Placement p = one_host(4, 2.0);
  p.cpus[3] = 2.0;  // as cheap, but it can use two CPUs
  std::vector<HostCost> cost{cpu_only(kMs), cpu_only(1.02 * kMs), cpu_only(2 * kMs), cpu_only(kMs)};
  for (auto& c : cost) c.cpu_error = 0.001;
  EXPECT_EQ(host_groups(p, cost, {10, 10, 10, 10}, 10.0), (std::vector<std::size_t>{0, 0, 2, 3}));
  // Uncertain costs keep workers 25% apart together until they are known,
  // but never workers twice as costly.
  cost[1] = cpu_only(1.25 * kMs);
  for (auto& c : cost) c.cpu_error = 0.5;
  EXPECT_EQ(host_groups(p, cost, {10, 10, 10, 10}, 10.0), (std::vector<std::size_t>{0, 0, 2, 3}));
  for (auto& c : cost) c.cpu_error = 0.001;
  EXPECT_EQ(host_groups(p, cost, {10, 10, 10, 10}, 10.0), (std::vector<std::size_t>{0, 1, 2, 3}));
}

TEST(HostGroups, AGroupHoldsWhileItsMembersStayWithinOneAndAHalfTolerances) {
  const Placement p = one_host(2, 2.0);
  std::vector<HostCost> cost{cpu_only(kMs), cpu_only(1.12 * kMs)};  // 12% apart: over the 10% tolerance
  for (auto& c : cost) c.cpu_error = 0.001;
  EXPECT_EQ(host_groups(p, cost, {10, 10}, 10.0), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(host_groups(p, cost, {10, 10}, 10.0, {0, 0}), (std::vector<std::size_t>{0, 0}));
  cost[1] = cpu_only(1.2 * kMs);  // 20% apart: the group breaks
  cost[1].cpu_error = 0.001;
  EXPECT_EQ(host_groups(p, cost, {10, 10}, 10.0, {0, 0}), (std::vector<std::size_t>{0, 1}));
}

TEST(Placement, InconsistentPlacementsAreUsageErrors) {
  Placement p = one_host(2, 1.0);
  EXPECT_NO_THROW(p.check(2));
  EXPECT_THROW(p.check(3), UsageError);
  p.host[1] = 5;
  EXPECT_THROW(p.check(2), UsageError);
  p = one_host(2, 0.0);
  EXPECT_THROW(p.check(2), UsageError);
  EXPECT_NO_THROW(Placement{}.check(7));  // none: every worker independent
}

// A saturated host of one core: on the wall clock both workers look alike
// (each finishes when the core has done both), so a model of independent
// devices keeps the equal split. With CPU-seconds, the policy moves the
// batch to the worker that needs half the CPU per sample.
TEST(AdaptiveOnHosts, ASaturatedHostMovesSamplesToTheCheaperWorker) {
  const Placement p = one_host(2, 1.0);
  AdaptivePolicy policy(2, 100, {}, AdaptiveConfig{}, {}, p);
  double previous = 0.0;
  for (int step = 0; step < 60; ++step) {
    const std::vector<std::size_t> split = policy.split();
    const std::vector<double> work{kMs * static_cast<double>(split[0]),
                                   2 * kMs * static_cast<double>(split[1])};
    Observation obs;
    obs.local_batch = split;
    obs.compute_seconds = share_cores(work, {1.0, 1.0}, 1.0);
    obs.cpu_seconds = work;
    obs.previous_step_seconds = previous;
    previous = std::max(obs.compute_seconds[0], obs.compute_seconds[1]);
    policy.observe(obs);
  }
  EXPECT_GE(policy.best_split()[0], 90u);  // equal: 0.15 s a step; all to the cheaper one: 0.1 s
}

}  // namespace
}  // namespace hetrain::alloc

#include <gtest/gtest.h>

#include <string>

#include "hetrain/common/error.h"
#include "hetrain/sim/cluster.h"
#include "hetrain/sim/network_cost.h"
#include "hetrain/sim/simulator.h"
#include "hetrain/sim/world.h"

namespace hetrain::sim {
namespace {

// Three workers of 100, 200 and 300 samples/s with 10 ms overhead, B = 60;
// 3000 gradient bytes = 750 floats in 3 chunks of 1000 bytes; links of
// 1 ms latency and 1 MB/s.
constexpr const char* kThree = R"(global_batch = 60
gradient_bytes = 3000
[network]
bandwidth = 1e6
latency = 0.001
[[group]]
name = "a"
speed = 100
overhead = 0.01
[[group]]
name = "b"
speed = 200
overhead = 0.01
[[group]]
name = "c"
speed = 300
overhead = 0.01
)";

SimOptions options(const std::string& policy, std::size_t steps, std::vector<double> shares = {}) {
  SimOptions o;
  o.alloc.name = policy;
  o.steps = steps;
  o.alloc.shares = std::move(shares);
  return o;
}

TEST(AllreduceCost, RingOfThreeByHand) {
  const Cluster c = parse_cluster(kThree, "three.toml");
  // 2(N-1) = 4 steps, each 1 ms + 1000 B / 1e6 B/s.
  EXPECT_DOUBLE_EQ(allreduce_seconds(c.network, 3, 3000.0), 4 * (0.001 + 0.001));
  EXPECT_EQ(allreduce_seconds(c.network, 1, 3000.0), 0.0);
  // Four ranks: chunks of 187 or 188 floats; every step waits for a 188.
  EXPECT_DOUBLE_EQ(allreduce_seconds(c.network, 4, 3000.0), 6 * (0.001 + 752.0 / 1e6));
}

TEST(AllreduceCost, BucketsPayTheLatencyPerCall) {
  Network net;
  net.bandwidth = 1e6;
  net.latency = 0.001;
  net.bucket_bytes = 1200;  // 3000 B: calls of 300, 300 and 150 floats
  EXPECT_DOUBLE_EQ(allreduce_seconds(net, 3, 3000.0),
                   2 * 4 * (0.001 + 400.0 / 1e6) + 4 * (0.001 + 200.0 / 1e6));
}

TEST(AllreduceCost, AStepWaitsForTheSlowestLinkAcrossNodes) {
  Network net;
  net.bandwidth = 1e6;
  net.latency = 0.001;
  net.workers_per_node = 2;
  net.intra_bandwidth = 1e9;
  net.intra_latency = 0.0;
  // 4 ranks, 2 nodes: links 1->2 and 3->0 leave their node, so every step
  // costs the inter-node price.
  EXPECT_DOUBLE_EQ(allreduce_seconds(net, 4, 4000.0), 6 * (0.001 + 1000.0 / 1e6));
  // One node: only the fast links.
  net.workers_per_node = 4;
  EXPECT_DOUBLE_EQ(allreduce_seconds(net, 4, 4000.0), 6 * (1000.0 / 1e9));
}

TEST(AllreduceCost, LargeRingsReplayRepresentativeRanksWithinOneElement) {
  Network net;
  net.bandwidth = 1e6;
  net.latency = 0.001;
  const std::size_t n = 1000;
  const double bytes = 4.0 * 1'000'003;  // chunks of 1000 or 1001 floats
  const double upper = 2 * (n - 1) * (0.001 + 4.0 * 1001 / 1e6);
  const double lower = 2 * (n - 1) * (0.001 + 4.0 * 1000 / 1e6);
  const double t = allreduce_seconds(net, n, bytes);
  EXPECT_LE(t, upper * (1 + 1e-12));
  EXPECT_GE(t, lower * (1 - 1e-12));
}

TEST(Simulator, EqualSplitReproducesHandComputedTimes) {
  const Cluster c = parse_cluster(kThree, "three.toml");
  const SimResult r = simulate(c, options("equal", 10));
  ASSERT_EQ(r.steps.size(), 10u);
  // 20 samples each: 0.01 + 20/100 = 0.21 s is the slowest; + 8 ms allreduce.
  for (const auto& s : r.steps) {
    EXPECT_DOUBLE_EQ(s.compute, 0.21);
    EXPECT_DOUBLE_EQ(s.allreduce, 0.008);
    EXPECT_DOUBLE_EQ(s.seconds, 0.218);
    EXPECT_DOUBLE_EQ(s.busy, 0.21 + 0.11 + (0.01 + 20.0 / 300.0));
  }
  EXPECT_NEAR(r.total_seconds, 2.18, 1e-12);
  EXPECT_NEAR(r.balance_efficiency, (0.21 + 0.11 + 0.01 + 20.0 / 300.0) / (3 * 0.21), 1e-12);
  EXPECT_EQ(r.group_samples[0], (std::vector<std::size_t>{20, 20, 20}));
}

TEST(Simulator, StaticSharesInProportionToSpeedBalanceExactly) {
  const Cluster c = parse_cluster(kThree, "three.toml");
  const SimResult r = simulate(c, options("static", 5, {1, 2, 3}));
  // 10, 20, 30 samples: every worker takes 0.01 + 0.1 s.
  for (const auto& s : r.steps) EXPECT_DOUBLE_EQ(s.seconds, 0.11 + 0.008);
  EXPECT_NEAR(r.total_seconds, 5 * 0.118, 1e-12);
  EXPECT_NEAR(r.balance_efficiency, 1.0, 1e-12);
}

TEST(Simulator, StepOverheadIsAddedToEveryStep) {
  Cluster c = parse_cluster(kThree, "three.toml");
  c.step_overhead = 0.5;
  const SimResult r = simulate(c, options("equal", 2));
  EXPECT_DOUBLE_EQ(r.steps[1].seconds, 0.718);
}

TEST(Simulator, EventsTakeEffectAtTheirStep) {
  std::string text = kThree;
  text += "[[event]]\nstep = 4\nkind = \"speed\"\ngroup = \"c\"\nspeed = 100\n";
  text += "[[event]]\nstep = 6\nkind = \"join\"\ngroup = \"a\"\n";
  text += "[[event]]\nstep = 8\nkind = \"leave\"\ngroup = \"b\"\n";
  const Cluster c = parse_cluster(text, "events.toml");
  const SimResult r = simulate(c, options("static", 10, {1, 2, 3}));
  ASSERT_EQ(r.steps.size(), 10u);
  for (std::size_t k = 0; k < 4; ++k) EXPECT_DOUBLE_EQ(r.steps[k].compute, 0.11) << k;
  // From step 4, c takes its 30 samples at 100/s.
  for (std::size_t k = 4; k < 6; ++k) EXPECT_DOUBLE_EQ(r.steps[k].compute, 0.01 + 0.3) << k;
  for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(r.steps[k].workers, 3u) << k;
  // From step 6 a second "a" (share 1) joins: shares 1,1,2,3 of 60 are
  // 9,8,17,26 by largest remainder, c takes 0.27 s, and the ring of 4 costs
  // 6 steps of 188 floats.
  for (std::size_t k = 6; k < 8; ++k) {
    EXPECT_EQ(r.steps[k].workers, 4u) << k;
    EXPECT_EQ(r.group_samples[k], (std::vector<std::size_t>{17, 17, 26})) << k;
    EXPECT_DOUBLE_EQ(r.steps[k].compute, 0.01 + 26.0 / 100.0) << k;
    EXPECT_DOUBLE_EQ(r.steps[k].allreduce, 6 * (0.001 + 752.0 / 1e6)) << k;
  }
  // From step 8 "b" has left: shares 1,1,3 of 60 are 12,12,36.
  for (std::size_t k = 8; k < 10; ++k) {
    EXPECT_EQ(r.group_workers[k], (std::vector<std::size_t>{2, 0, 1})) << k;
    EXPECT_EQ(r.group_samples[k], (std::vector<std::size_t>{24, 0, 36})) << k;
    EXPECT_DOUBLE_EQ(r.steps[k].compute, 0.01 + 36.0 / 100.0) << k;
  }
}

TEST(Simulator, AdaptiveLearnsTheSpeedsAndBeatsEqual) {
  const Cluster c = parse_cluster(kThree, "three.toml");
  SimOptions o = options("adaptive", 40);
  o.record_splits = true;
  const SimResult adaptive = simulate(c, o);
  const SimResult equal = simulate(c, options("equal", 40));
  // It ignores the first step (lazy initialisation), then moves to the split
  // in proportion to speed, where every worker takes 0.11 s, after one
  // sample: the predicted gain (50%) is far beyond the estimates' error.
  const std::size_t first_move = 2;
  for (std::size_t k = 0; k < first_move; ++k) {
    EXPECT_EQ(adaptive.splits[k], (std::vector<std::size_t>{20, 20, 20})) << k;
  }
  EXPECT_NE(adaptive.splits[first_move], (std::vector<std::size_t>{20, 20, 20}));
  EXPECT_EQ(adaptive.splits.back(), (std::vector<std::size_t>{10, 20, 30}));
  EXPECT_DOUBLE_EQ(adaptive.steps.back().compute, 0.11);
  EXPECT_LT(adaptive.steps.back().compute, 0.9 * equal.steps.back().compute);
  EXPECT_LT(adaptive.total_seconds, equal.total_seconds);
}

TEST(Simulator, AJoinKeepsWhatTheAdaptivePolicyLearnt) {
  std::string text = kThree;
  text += "[[event]]\nstep = 20\nkind = \"join\"\ngroup = \"c\"\n";
  SimOptions o = options("adaptive", 21);
  o.record_splits = true;
  const SimResult r = simulate(parse_cluster(text, "join.toml"), o);
  ASSERT_EQ(r.splits[20].size(), 4u);
  // Not a restart from the equal split (15 each): the workers that stay keep
  // their models, so the slow "a" still gets the least.
  EXPECT_NE(r.splits[20], (std::vector<std::size_t>{15, 15, 15, 15}));
  EXPECT_LT(r.splits[20][0], r.splits[20][1]);
  EXPECT_LT(r.splits[20][1], r.splits[20][2]);
}

TEST(Simulator, NoiseIsSeededAndDeterministic) {
  std::string text = kThree;
  text.replace(text.find("overhead = 0.01\n[[group]]\nname = \"b\""), 15, "overhead = 0.01\nnoise = 0.1");
  const Cluster c = parse_cluster(text, "noisy.toml");
  const SimResult r1 = simulate(c, options("adaptive", 30));
  const SimResult r2 = simulate(c, options("adaptive", 30));
  EXPECT_EQ(r1.total_seconds, r2.total_seconds);
  Cluster other = c;
  other.seed = 2;
  EXPECT_NE(simulate(other, options("adaptive", 30)).total_seconds, r1.total_seconds);
}

TEST(Simulator, EpochsEndWithAShortBatchLikeTheTrainer) {
  Cluster c = parse_cluster(kThree, "three.toml");
  c.dataset_samples = 150;  // 60 + 60 + 30
  SimOptions o = options("static", 0, {1, 2, 3});
  o.epochs = 2;
  const SimResult r = simulate(c, o);
  ASSERT_EQ(r.steps.size(), 6u);
  EXPECT_EQ(r.steps[2].batch, 30u);
  EXPECT_EQ(r.group_samples[2], (std::vector<std::size_t>{5, 10, 15}));
  EXPECT_DOUBLE_EQ(r.steps[2].compute, 0.06);
}

TEST(ProcessorSharing, FinishersLeaveTheirCoresToTheOthers) {
  // Two cores, three workers of 1, 2 and 3 CPU-seconds, one thread each:
  // 2/3 CPU each until the first is done at 1.5 s (1 left for the second,
  // 2 for the third); then one CPU each: 2.5 s and 3.5 s.
  const auto t = processor_sharing({1.0, 2.0, 3.0}, {1.0, 1.0, 1.0}, 2.0);
  EXPECT_DOUBLE_EQ(t[0], 1.5);
  EXPECT_DOUBLE_EQ(t[1], 2.5);
  EXPECT_DOUBLE_EQ(t[2], 3.5);
  // No contention: each at its one CPU.
  EXPECT_EQ(processor_sharing({1.0, 2.0}, {1.0, 1.0}, 4.0), (std::vector<double>{1.0, 2.0}));
  // No work, no time.
  EXPECT_EQ(processor_sharing({0.0, 1.0}, {1.0, 1.0}, 1.0), (std::vector<double>{0.0, 1.0}));
}

TEST(ProcessorSharing, AQuotaCapsAWorkerAndItsNeighboursTakeTheRest) {
  // One core, a worker held to 0.25 CPU and one free worker: 0.25 and 0.75.
  // The held one's 0.5 CPU-seconds take 2 s; the other's 1.5 take 2 s too.
  auto t = processor_sharing({0.5, 1.5}, {0.25, 1.0}, 1.0);
  EXPECT_DOUBLE_EQ(t[0], 2.0);
  EXPECT_DOUBLE_EQ(t[1], 2.0);
  // The free one done at 0.75 / 0.75 = 1 s; the held one stays at 0.25 CPU.
  t = processor_sharing({0.5, 0.75}, {0.25, 1.0}, 1.0);
  EXPECT_DOUBLE_EQ(t[1], 1.0);
  EXPECT_DOUBLE_EQ(t[0], 2.0);
}

// Four workers of 100 samples per CPU-second on one 2-core machine, the last
// held to 0.25 CPU; 16 kB of gradient over the default network.
constexpr const char* kBox = R"(global_batch = 64
gradient_bytes = 16000
[[machine]]
name = "box"
cores = 2
[[group]]
name = "free"
count = 3
machine = "box"
speed = 100
[[group]]
name = "held"
machine = "box"
speed = 100
quota = 0.25
)";

TEST(Simulator, WorkersOnAMachineShareItsCores) {
  const Cluster c = parse_cluster(kBox, "box.toml");
  const SimResult r = simulate(c, options("equal", 3));
  // 16 samples = 0.16 CPU-s each. The held one runs at 0.25 CPU, the other
  // three share 1.75: 0.16 / (1.75 / 3) = 0.2743 s; then it goes on alone at
  // 0.25 CPU: 0.16 / 0.25 = 0.64 s in all.
  EXPECT_NEAR(r.steps[0].compute, 0.64, 1e-12);
  EXPECT_NEAR(r.steps[0].busy, 3 * 0.16 * 3 / 1.75 + 0.64, 1e-12);
  // In proportion to the standalone speeds 100, 100, 100, 25: 20, 20, 19, 5
  // by largest remainder. The held worker's 0.05 CPU-s at 0.25 CPU end at
  // 0.2 s, the free ones at 1.75 / 3 CPU have done 0.1167 by then; at 2 / 3
  // CPU the 19 finishes at 0.31 s, the two 20s at 1 CPU at 0.32 s. Speeds
  // measured alone are not the speeds under contention.
  const SimResult s = simulate(c, options("static", 3, {100, 100, 100, 25}));
  EXPECT_EQ(s.group_samples[0], (std::vector<std::size_t>{59, 5}));
  EXPECT_NEAR(s.steps[0].compute, 0.32, 1e-12);
  EXPECT_LT(s.total_seconds, r.total_seconds);
}

TEST(Simulator, ThePolicySeesEachWorkersCpuSecondsOnAMachine) {
  const Cluster c = parse_cluster(kBox, "box.toml");
  std::vector<alloc::Observation> seen;
  SimOptions o = options("equal", 2);
  o.on_observe = [&](const alloc::Observation& obs) { seen.push_back(obs); };
  simulate(c, o);
  ASSERT_EQ(seen.size(), 2u);
  // 16 samples at 100 per CPU-second: 0.16 CPU-s each, however long the
  // worker waited for a core (the held one took 0.64 s of wall time).
  ASSERT_EQ(seen[0].cpu_seconds.size(), 4u);
  for (const double cpu : seen[0].cpu_seconds) EXPECT_NEAR(cpu, 0.16, 1e-6);
  EXPECT_NEAR(seen[0].compute_seconds[3], 0.64, 1e-6);
}

TEST(Simulator, AdaptiveOnASaturatedMachineBeatsTheSplitByStandaloneSpeeds) {
  // One core, two workers: one needs 1 ms of CPU per sample, the other 2 ms
  // (both standalone-capable of a whole core). Static in proportion to the
  // standalone speeds gives the costly one a third; planning the core as a
  // budget gives the batch to the cheap one.
  const Cluster c = parse_cluster(R"(
global_batch = 90
gradient_bytes = 4
[[machine]]
name = "one"
cores = 1
[[group]]
name = "cheap"
speed = 1000
machine = "one"
[[group]]
name = "costly"
speed = 500
machine = "one"
)",
                                  "saturated.toml");
  const SimResult fixed = simulate(c, options("static", 60, {1000, 500}));
  const SimResult adaptive = simulate(c, options("adaptive", 60));
  EXPECT_LT(adaptive.total_seconds, 0.9 * fixed.total_seconds);
  EXPECT_GT(adaptive.group_samples.back()[0], 80u);
}

TEST(Simulator, ALargeGradientOnASlowLinkMakesTheAllreduceDominate) {
  Cluster c = parse_cluster(kThree, "three.toml");
  c.gradient_bytes = 300'000;  // 100 kB chunks on 1 MB/s links: 4 x 0.101 s
  const SimResult r = simulate(c, options("static", 2, {1, 2, 3}));
  EXPECT_DOUBLE_EQ(r.steps[0].allreduce, 4 * (0.001 + 0.1));
  EXPECT_GT(r.steps[0].allreduce, 3 * r.steps[0].compute);
}

TEST(Simulator, ThePolicySeesThePreviousStepAndTheAllreduceNoise) {
  Cluster c = parse_cluster(kThree, "three.toml");
  c.network.noise = 0.1;
  std::vector<alloc::Observation> seen;
  SimOptions o = options("equal", 4);
  o.on_observe = [&](const alloc::Observation& obs) { seen.push_back(obs); };
  const SimResult r = simulate(c, o);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].previous_step_seconds, 0.0);  // nothing before the first step
  for (std::size_t k = 1; k < 4; ++k) {
    EXPECT_EQ(seen[k].previous_step_seconds, static_cast<double>(static_cast<float>(r.steps[k - 1].seconds)));
    EXPECT_EQ(seen[k].local_batch, (std::vector<std::size_t>{20, 20, 20}));
  }
  // The allreduce varies around its noise-free 8 ms; compute does not.
  EXPECT_NE(r.steps[1].allreduce, r.steps[2].allreduce);
  EXPECT_NEAR(r.steps[1].allreduce, 0.008, 0.008 * 5 * 0.1);
  EXPECT_DOUBLE_EQ(r.steps[1].compute, 0.21);
}

TEST(Simulator, AChangeOfWorldStartsWithNoPreviousStep) {
  std::string text = kThree;
  text += "[[event]]\nstep = 2\nkind = \"join\"\ngroup = \"a\"\n";
  std::vector<double> previous;
  SimOptions o = options("adaptive", 4);
  o.on_observe = [&](const alloc::Observation& obs) { previous.push_back(obs.previous_step_seconds); };
  simulate(parse_cluster(text, "join.toml"), o);
  ASSERT_EQ(previous.size(), 4u);
  EXPECT_GT(previous[1], 0.0);
  EXPECT_EQ(previous[2], 0.0);
  EXPECT_GT(previous[3], 0.0);
}

TEST(Simulator, BadOptionsAreUsageErrors) {
  const Cluster c = parse_cluster(kThree, "three.toml");
  EXPECT_THROW(simulate(c, options("fastest", 3)), UsageError);
  EXPECT_THROW(simulate(c, options("static", 3, {1, 2})), UsageError);
  EXPECT_THROW(simulate(c, options("equal", 0)), UsageError);
}

}  // namespace
}  // namespace hetrain::sim

// The simulated world's own physics: costs, noise, replay, events and the
// oracle (world.h, noise.h, oracle.h), each against numbers worked by hand
// or against the statistics the model states.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "hetrain/common/error.h"
#include "hetrain/sim/cluster.h"
#include "hetrain/sim/noise.h"
#include "hetrain/sim/oracle.h"
#include "hetrain/sim/simulator.h"
#include "hetrain/sim/world.h"

namespace hetrain::sim {
namespace {

constexpr std::size_t kDraws = 200000;  // statistics of a noise process: standard errors ~0.2%

WorkerGroup group(double speed) {
  WorkerGroup g;
  g.speed = speed;
  return g;
}

TEST(Costs, TilesCacheCliffOverheadAndDeviceTime) {
  WorkerGroup g = group(100.0);  // 10 ms per sample
  g.overhead = 0.02;
  g.tile = 4;
  g.cache_samples = 6;
  g.cache_penalty = 3.0;
  g.device_overhead = 0.001;
  g.device_sample_cost = 0.002;
  EXPECT_EQ(cost_of(g, 0).cpu, 0.0);  // no samples, no cost
  EXPECT_EQ(cost_of(g, 0).device, 0.0);
  // 5 samples: 2 tiles = 8 computed; none past the cliff.
  EXPECT_DOUBLE_EQ(cost_of(g, 5).cpu, 0.02 + 8 * 0.01);
  EXPECT_DOUBLE_EQ(cost_of(g, 5).device, 0.001 + 8 * 0.002);
  // 8 samples: still 8 computed (the step function), 2 past the cliff at 2 extra each.
  EXPECT_DOUBLE_EQ(cost_of(g, 8).cpu, 0.02 + (8 + 2 * 2) * 0.01);
  EXPECT_DOUBLE_EQ(cost_of(g, 9).cpu, 0.02 + (12 + 2 * 3) * 0.01);
}

TEST(Costs, AFactorScalesEveryCost) {
  WorkerGroup g = group(100.0);
  g.overhead = 0.02;
  g.device_sample_cost = 0.002;
  const WorkerGroup slow = scaled(g, 0.25);
  EXPECT_DOUBLE_EQ(cost_of(slow, 10).cpu, 4 * cost_of(g, 10).cpu);
  EXPECT_DOUBLE_EQ(cost_of(slow, 10).device, 4 * cost_of(g, 10).device);
}

TEST(ProcessorSharing, KWorkersOnCCoresGetMinOfOneAndCOverK) {
  // Three uncapped workers of 1 CPU-second each on 2 cores: 2/3 CPU each.
  for (const double t : processor_sharing({1.0, 1.0, 1.0}, {1.0, 1.0, 1.0}, 2.0)) EXPECT_NEAR(t, 1.5, 1e-12);
  // Two on 4 cores: one CPU each (a thread uses one).
  for (const double t : processor_sharing({1.0, 1.0}, {1.0, 1.0}, 4.0)) EXPECT_NEAR(t, 1.0, 1e-12);
  // Two threads each, 3 cores: 1.5 CPUs each.
  for (const double t : processor_sharing({3.0, 3.0}, {2.0, 2.0}, 3.0)) EXPECT_NEAR(t, 2.0, 1e-12);
}

// Mean, standard deviation and lag-1 autocorrelation of f(m) over kDraws
// draws of rank 0's multiplier m.
struct Moments {
  double mean = 0.0, sd = 0.0, lag1 = 0.0;
};
template <typename F>
Moments moments(NoiseStreams& s, const WorkerGroup& g, F f) {
  std::vector<double> x;
  for (std::size_t k = 0; k < kDraws; ++k) x.push_back(f(s.draw(0, g)));
  Moments m;
  m.mean = std::accumulate(x.begin(), x.end(), 0.0) / kDraws;
  double var = 0.0, lag = 0.0;
  for (std::size_t k = 0; k < kDraws; ++k) {
    var += (x[k] - m.mean) * (x[k] - m.mean);
    if (k > 0) lag += (x[k] - m.mean) * (x[k - 1] - m.mean);
  }
  m.sd = std::sqrt(var / kDraws), m.lag1 = lag / var;
  return m;
}

TEST(Noise, LognormalAr1HasMedianOneItsSigmaAndItsCorrelation) {
  WorkerGroup g = group(1.0);
  g.noise = 0.2;
  g.noise_model.kind = NoiseKind::kLognormal;
  g.noise_model.correlation = 0.8;
  NoiseStreams s(3);
  s.reset(1);
  const Moments m = moments(s, g, [](double x) { return std::log(x); });
  EXPECT_NEAR(m.mean, 0.0, 0.01);
  EXPECT_NEAR(m.sd, 0.2, 0.01);
  EXPECT_NEAR(m.lag1, 0.8, 0.02);
  EXPECT_NEAR(mean_multiplier(g), std::exp(0.02), 1e-12);
}

TEST(Noise, SpikesComeAtTheirRateAndSize) {
  WorkerGroup g = group(1.0);
  g.noise_model.spike_chance = 0.01;
  NoiseStreams s(5);
  s.reset(1);
  std::size_t spikes = 0;
  for (std::size_t k = 0; k < kDraws; ++k) {
    const double m = s.draw(0, g);
    if (m == 1.0) continue;
    ++spikes;
    EXPECT_GE(m, 5.0);
    EXPECT_LE(m, 10.0);
  }
  EXPECT_NEAR(static_cast<double>(spikes) / kDraws, 0.01, 0.001);
  EXPECT_NEAR(mean_multiplier(g), 1.0 + 0.01 * 6.5, 1e-12);
}

TEST(Noise, TheWorkersOfAGroupDrawIndependently) {
  WorkerGroup g = group(1.0);
  g.noise = 0.1;
  g.noise_model.kind = NoiseKind::kLognormal;
  g.noise_model.correlation = 0.9;
  NoiseStreams s(9);
  s.reset(2);
  std::size_t same = 0;
  for (std::size_t k = 0; k < 100; ++k) same += s.draw(0, g) == s.draw(1, g) ? 1 : 0;
  EXPECT_EQ(same, 0u);
}

std::string write_trace(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Noise, ATraceIsReplayedInBlocksFromItsOwnValues) {
  const std::string path = write_trace("trace.csv", "# a comment\nrank0,rank1\n1,10\n2,20\n3,30\n4,40\n5,50\n6,60\n");
  WorkerGroup g = group(1.0);
  g.noise_model.kind = NoiseKind::kTrace;
  g.noise_model.trace = load_trace(path);
  g.noise_model.block = 3;
  EXPECT_DOUBLE_EQ(g.noise_model.trace->mean, 231.0 / 12);
  NoiseStreams s(11);
  s.reset(1);
  constexpr std::size_t kSteps = 3000;
  std::size_t runs_on = 0, tens = 0;
  double before = 0.0;
  for (std::size_t k = 0; k < kSteps; ++k) {
    const double v = s.draw(0, g);
    const double unit = v >= 10.0 ? 10.0 : 1.0;
    EXPECT_TRUE(v == std::round(v) && v / unit >= 1.0 && v / unit <= 6.0) << v;  // one of the trace's
    tens += unit == 10.0 ? 1 : 0;
    runs_on += v == before + unit ? 1 : 0;
    before = v;
  }
  // Within a block the next value is the next step of the same column: 2 of
  // 3 steps (fewer where a block wraps round the column's end); independent
  // draws would run on 1 time in 12.
  EXPECT_GT(runs_on, kSteps / 2);
  EXPECT_GT(tens, kSteps / 3);  // both recorded workers are replayed
  EXPECT_LT(tens, 2 * kSteps / 3);
  std::remove(path.c_str());
}

TEST(Noise, ABadTraceIsADataErrorNamingTheLine) {
  const std::string bad = write_trace("bad.csv", "rank0,rank1\n1,2\n1,x\n");
  try {
    load_trace(bad);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:3"), std::string::npos) << e.what();
  }
  const std::string short_row = write_trace("short.csv", "rank0,rank1\n1,2\n1\n");
  EXPECT_THROW(load_trace(short_row), DataError);
  EXPECT_THROW(load_trace(::testing::TempDir() + "missing.csv"), DataError);
  std::remove(bad.c_str());
  std::remove(short_row.c_str());
}

TEST(ClusterFile, ReadsTheNoiseModelCostsAndFactorEvents) {
  const std::string dir = ::testing::TempDir();
  write_trace("beside.csv", "w\n1\n2\n");
  const Cluster c = parse_cluster(R"(global_batch = 8
gradient_bytes = 4
[[group]]
name = "a"
speed = 10
noise = 0.2
noise_kind = "lognormal"
noise_correlation = 0.5
spike_chance = 0.01
spike_min = 2
spike_max = 3
tile = 4
cache_samples = 16
cache_penalty = 1.5
device_overhead = 0.001
device_sample_cost = 0.01
[[group]]
name = "b"
speed = 10
noise_kind = "trace"
noise_trace = "beside.csv"
noise_block = 7
[[event]]
step = 3
kind = "speed"
group = "a"
factor = 0.5
)",
                                  dir + "c.toml");
  const NoiseModel& m = c.groups[0].noise_model;
  EXPECT_EQ(m.kind, NoiseKind::kLognormal);
  EXPECT_EQ(m.correlation, 0.5);
  EXPECT_EQ(m.spike_min, 2.0);
  EXPECT_EQ(c.groups[0].tile, 4u);
  EXPECT_EQ(c.groups[0].cache_samples, 16u);
  EXPECT_EQ(c.groups[0].device_sample_cost, 0.01);
  EXPECT_EQ(c.groups[1].noise_model.trace->columns[0], (std::vector<double>{1, 2}));
  EXPECT_EQ(c.groups[1].noise_model.block, 7u);
  EXPECT_EQ(c.events[0].factor, 0.5);
  std::remove((dir + "beside.csv").c_str());
}

TEST(ClusterFile, NoiseMistakesAreNamed) {
  const std::string head = "global_batch = 8\ngradient_bytes = 4\n[[group]]\nname = \"a\"\nspeed = 10\n";
  auto error_of = [&](const std::string& extra) {
    try {
      parse_cluster(head + extra, "c.toml");
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error_of("noise_kind = \"pink\"\n").find("noise_kind"), std::string::npos);
  EXPECT_NE(error_of("noise_correlation = 1\n").find("noise_correlation"), std::string::npos);
  EXPECT_NE(error_of("noise_kind = \"trace\"\n").find("noise_trace"), std::string::npos);
  EXPECT_NE(error_of("noise_kind = \"trace\"\nnoise_trace = \"nowhere.csv\"\n").find("nowhere.csv"),
            std::string::npos);
  EXPECT_NE(error_of("noise_trace = \"x.csv\"\n").find("noise_trace"), std::string::npos);
  EXPECT_NE(error_of("spike_min = 5\nspike_max = 2\n").find("spike_max"), std::string::npos);
  EXPECT_NE(error_of("[[event]]\nstep = 1\nkind = \"speed\"\ngroup = \"a\"\n").find("speed"), std::string::npos);
}

// Three devices of 100, 200 and 300 samples/s, B = 60.
Cluster three() {
  Cluster c;
  c.global_batch = 60;
  c.gradient_bytes = 4;
  for (const double s : {100.0, 200.0, 300.0}) c.groups.push_back(group(s));
  c.groups[0].name = "a";
  c.groups[1].name = "b";
  c.groups[2].name = "c";
  return c;
}

TEST(Oracle, SplitsIndependentDevicesInProportionToTheirTrueMeanSpeeds) {
  Cluster c = three();
  std::vector<std::size_t> rank_group{0, 1, 2};
  EXPECT_EQ(oracle_split({&c, &c.groups, &rank_group}, 60, 0), (std::vector<std::size_t>{10, 20, 30}));
  // Spikes make c's mean time 1 + 0.1 x 6.5 = 1.65 x its noise-free one:
  // 300 / 1.65 = 182 samples/s, so b and c now take about the same share.
  c.groups[2].noise_model.spike_chance = 0.1;
  const auto split = oracle_split({&c, &c.groups, &rank_group}, 60, 0);
  EXPECT_EQ(split[0], 12u);
  EXPECT_NEAR(static_cast<double>(split[1]), static_cast<double>(split[2]), 2.0);
  EXPECT_EQ(oracle_split({&c, &c.groups, &rank_group}, 60, 22)[2], 22u);  // the memory cap holds
}

TEST(Oracle, FollowsTheWorldsEventsInTheSimulator) {
  Cluster c = three();
  Event e;
  e.step = 2;
  e.group = 2;
  e.factor = 1.0 / 3;  // c drops to 100 samples/s
  c.events.push_back(e);
  SimOptions o;
  o.alloc.name = "oracle";
  o.steps = 4;
  o.record_splits = true;
  const SimResult r = simulate(c, o);
  EXPECT_EQ(r.splits[1], (std::vector<std::size_t>{10, 20, 30}));
  EXPECT_EQ(r.splits[2], (std::vector<std::size_t>{15, 30, 15}));
  EXPECT_DOUBLE_EQ(r.steps[3].compute, 0.15);
}

TEST(Oracle, ALateOracleRunsTheEqualSplitUntilItKnowsAndFollowsAChangeLate) {
  Cluster c = three();
  Event e;
  e.step = 3;
  e.group = 2;
  e.factor = 1.0 / 3;
  c.events.push_back(e);
  SimOptions o;
  o.alloc.name = "oracle";
  o.steps = 6;
  o.record_splits = true;
  o.oracle_start = 2, o.oracle_lag = 2;
  const SimResult r = simulate(c, o);
  EXPECT_EQ(r.splits[1], (std::vector<std::size_t>{20, 20, 20}));  // nothing known yet
  EXPECT_EQ(r.splits[2], (std::vector<std::size_t>{10, 20, 30}));
  EXPECT_EQ(r.splits[4], (std::vector<std::size_t>{10, 20, 30}));  // the change, not yet learnt
  EXPECT_EQ(r.splits[5], (std::vector<std::size_t>{15, 30, 15}));
}

// One machine of one core holding a worker of 1 ms per sample and `pair`
// of 2 ms; B = 90.
Cluster one_core(std::size_t pair) {
  Cluster c;
  c.global_batch = 90;
  c.gradient_bytes = 4;
  c.machines.push_back({"one", 1.0});
  c.groups = {group(1000.0), group(500.0)};
  c.groups[1].count = pair;
  for (auto& g : c.groups) g.machine = 0;
  return c;
}

TEST(Oracle, OnASaturatedMachineGivesTheCheapWorkerMore) {
  // One core, two workers of 1 and 2 ms per sample: the split by standalone
  // speed (60 / 30) ends at 0.12 s; all 90 on the cheap one at 0.09 s.
  const Cluster c = one_core(1);
  std::vector<std::size_t> rank_group{0, 1};
  const WorldView w{&c, &c.groups, &rank_group};
  const auto split = oracle_split(w, 90, 0);
  const auto finish = expected_finish(w, split);
  EXPECT_LE(*std::max_element(finish.begin(), finish.end()), 0.09 + 1e-9);
  EXPECT_GE(split[0], 89u);
}

TEST(Oracle, OfTiedSplitsTakesTheOneThatHoldsIdenticalWorkersEqual) {
  // One core, a 1 ms worker and two identical 2 ms ones: every sample on the
  // cheap one is fastest (0.09 s); with a cap of 50 the other 40 go to the
  // identical pair, and any split of those 40 ends at the same time (one
  // core shared). Of the tied splits the oracle keeps the even one, so that
  // only a real gain sets identical workers apart (the allocation property
  // holds a policy's identical workers together wherever the oracle does).
  const Cluster c = one_core(2);
  std::vector<std::size_t> rank_group{0, 1, 1};
  const WorldView w{&c, &c.groups, &rank_group};
  const auto split = oracle_split(w, 90, 50);
  EXPECT_EQ(split, (std::vector<std::size_t>{50, 20, 20}));
}

TEST(Simulator, ThePolicySeesTimeOffTheCpuApart) {
  Cluster c = three();
  c.groups[1].device_sample_cost = 0.01;
  std::vector<double> cpu, wait;
  SimOptions o;
  o.alloc.name = "equal";
  o.steps = 1;
  o.on_observe = [&](const alloc::Observation& obs) {
    cpu = obs.cpu_seconds;
    wait = obs.wait_seconds;
  };
  const SimResult r = simulate(c, o);
  EXPECT_NEAR(cpu[1], 0.1, 1e-6);
  EXPECT_NEAR(wait[1], 0.2, 1e-6);
  EXPECT_EQ(wait[0], 0.0);
  EXPECT_NEAR(r.steps[0].compute, 0.3, 1e-12);
}

TEST(Simulator, OldClusterFilesKeepTheirMeaning) {
  // A file of 414595a's format: normal noise around 1, independent per step.
  WorkerGroup g = group(100.0);
  g.noise = 0.1;
  NoiseStreams s(1);
  s.reset(1);
  const Moments m = moments(s, g, [](double x) { return x; });
  EXPECT_NEAR(m.mean, 1.0, 0.005);
  EXPECT_NEAR(m.sd, 0.1, 0.005);
  EXPECT_NEAR(m.lag1, 0.0, 0.03);
}

TEST(Simulator, EveryPolicyMeetsTheSameNoiseWhateverItGivesWhom) {
  // Four devices with persistent log-normal noise and no overhead: a
  // worker's multiplier at a step is the world's, whatever anyone holds. At
  // 10 samples each, at 10, 10, 20 and 10 (B = 50), at one each with the
  // last idle (B = 3), and under the oracle while the last is 1000x slow
  // (idle) from step 20 to 30, every worker's time per sample at every step
  // it runs at its usual speed is the same multiplier: an idle worker's noise
  // ran on while it idled.
  Cluster c = three();
  c.groups.resize(4, c.groups[0]);  // one worker each: static shares are by group
  for (std::size_t g = 0; g < 4; ++g) {
    c.groups[g].name = std::string(1, static_cast<char>('a' + g));
    c.groups[g].overhead = 0.0, c.groups[g].noise = 0.2;
    c.groups[g].noise_model.kind = NoiseKind::kLognormal;
    c.groups[g].noise_model.correlation = 0.9;
  }
  auto per_sample = [&](std::size_t batch, std::vector<double> shares, const std::string& policy = "") {
    std::vector<std::vector<double>> seen;
    c.global_batch = batch;
    SimOptions o;
    o.alloc.name = !policy.empty() ? policy : shares.empty() ? "equal" : "static";
    o.alloc.shares = std::move(shares), o.steps = 50;
    o.on_observe = [&](const alloc::Observation& obs) {
      std::vector<double> t(4, 0.0);
      for (std::size_t i = 0; i < 4; ++i) {
        if (obs.local_batch[i] > 0) t[i] = obs.compute_seconds[i] / static_cast<double>(obs.local_batch[i]);
      }
      seen.push_back(t);
    };
    simulate(c, o);
    return seen;
  };
  const auto even = per_sample(40, {}), uneven = per_sample(50, {1, 1, 2, 1}), idle = per_sample(3, {});
  c.events = {{20, EventKind::kSpeed, 3, 0.0, 0.001, 1}, {30, EventKind::kSpeed, 3, 0.0, 1.0, 1}};
  const auto oracle = per_sample(40, {}, "oracle");
  ASSERT_EQ(even.size(), 50u);
  ASSERT_EQ(oracle[25][3], 0.0);  // idled while slow
  for (std::size_t k = 0; k < even.size(); ++k) {
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_NEAR(uneven[k][i], even[k][i], 1e-6 * even[k][i]) << "step " << k << ", worker " << i;
      if (i < 3) {
        EXPECT_NEAR(idle[k][i], even[k][i], 1e-6 * even[k][i]) << "step " << k << ", worker " << i;
      }
      if (i < 3 || k < 20 || k >= 30) {
        EXPECT_NEAR(oracle[k][i], even[k][i], 1e-6 * even[k][i]) << "oracle, step " << k << ", worker " << i;
      }
    }
  }
}

}  // namespace
}  // namespace hetrain::sim

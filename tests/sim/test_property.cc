// The allocation property (issue 26, docs/simulation.md): over random
// clusters of the simulated world (random_world.h) whose seeds come from
// HETRAIN_PROPERTY_SEEDS=FIRST:COUNT,
//  - where nothing changes, the policy under test costs at most 3% over the
//    better of the equal split and the static split in proportion to the
//    true initial speeds;
//  - where something changes, at most 10% over the oracle (the world's own
//    solver with every worker's true mean cost at every step);
//  - identical workers (same costs, same noise process) hold within 5% (or
//    one sample) of each other at every step from the 50th of each world on,
//    wherever the oracle held them so at that step and the one before.
// The policy under test is `adaptive`, or HETRAIN_PROPERTY_POLICY (to show
// that the property fails for a bad one). Seeded and deterministic.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "hetrain/sim/cluster.h"
#include "hetrain/sim/oracle.h"
#include "hetrain/sim/simulator.h"
#include "random_world.h"

namespace hetrain::sim {
namespace {

// 1,000 steps (four epochs of Fashion-MNIST at B = 256): a short training
// run, long enough that a policy measuring before it moves (its first steps
// at the equal split cost up to 7 of static's where speeds are 8x apart) can
// stay within the tolerance.
constexpr std::size_t kSteps = 1000;
constexpr double kFixedTolerance = 1.03;   // nothing changes: / min(equal, static with true speeds)
constexpr double kOracleTolerance = 1.10;  // something changes: / the oracle
constexpr double kIdenticalSpread = 0.05;  // identical workers' shares, relative to the larger
constexpr std::size_t kRoundingSamples = 1;   // a split of whole samples rounds identical shares apart by 1
constexpr double kSameTime = 1e-9;           // relative: two expected step times this close are one
constexpr std::size_t kSettleSteps = 50;      // of each world, before identical workers are compared
// A policy learns of a change from the step it happened in: at the step
// after it, the earliest, it still runs the old world's split. Identical
// workers the oracle held apart that step before are not judged at this one
// (docs/simulation.md: the oracle itself, one step late, fails the rule in
// 6% of the held-out clusters otherwise).
constexpr std::size_t kCausalLagSteps = 1;
constexpr std::size_t kDescribedFailures = 20;  // failures printed in full; the rest by seed
constexpr const char* kDefaultSeeds = "10001:3000";  // the held-out seeds (tune below 10000)

struct SeedRange {
  std::uint64_t first = 0, count = 0;
};

// HETRAIN_PROPERTY_SEEDS=FIRST:COUNT, or the default; nullopt-like count 0
// with `error` set for a malformed value.
SeedRange seed_range(std::string& error) {
  const char* env = std::getenv("HETRAIN_PROPERTY_SEEDS");
  const std::string text = env != nullptr ? env : kDefaultSeeds;
  const std::size_t colon = text.find(':');
  try {
    std::size_t used_first = 0, used_count = 0;
    const std::string first = text.substr(0, colon), count = colon == std::string::npos ? "" : text.substr(colon + 1);
    SeedRange r{std::stoull(first, &used_first), std::stoull(count, &used_count)};
    if (used_first == first.size() && used_count == count.size() && r.count > 0 && first[0] != '-' && count[0] != '-') {
      return r;
    }
  } catch (const std::exception&) {
  }
  error = fmt::format("HETRAIN_PROPERTY_SEEDS='{}': expected FIRST:COUNT, two positive integers", text);
  return {};
}

// HETRAIN_PROPERTY_POLICY: a policy's name, or oracle:LAG (the oracle
// learning of each change of speed LAG steps late: how much a policy that
// knows the true speeds but follows late may lose).
struct Trial {
  std::string policy = "adaptive";
  std::size_t oracle_lag = 0;
};

Trial policy_under_test() {
  const char* env = std::getenv("HETRAIN_PROPERTY_POLICY");
  Trial t;
  if (env == nullptr) return t;
  t.policy = env;
  if (t.policy.rfind("oracle:", 0) == 0) {
    const std::string lag = t.policy.substr(7);
    if (lag.empty() || lag.find_first_not_of("0123456789") != std::string::npos) {
      throw std::invalid_argument(fmt::format("HETRAIN_PROPERTY_POLICY='{}': expected oracle:STEPS", t.policy));
    }
    t.oracle_lag = std::stoul(lag);
    t.policy = "oracle";
  }
  return t;
}

// HETRAIN_PROPERTY_TRACES=DIR: the folder of devices.csv, host.csv and
// quota.csv the random clusters replay (default: examples/noise), so the
// property can be judged on traces it was never tuned on.
std::string traces_dir() {
  const char* env = std::getenv("HETRAIN_PROPERTY_TRACES");
  return env != nullptr ? env : HETRAIN_NOISE_DIR;
}

// With HETRAIN_PROPERTY_DUMP=DIR set, a failing cluster is written to
// DIR/cluster_SEED.toml, to replay with hetrain sim; its first line is a
// comment holding the static split's --shares.
void dump(const Cluster& c, std::uint64_t seed, const std::vector<double>& shares) {
  const char* dir = std::getenv("HETRAIN_PROPERTY_DUMP");
  if (dir == nullptr) return;
  std::ofstream(fmt::format("{}/cluster_{}.toml", dir, seed))
      << fmt::format("# --shares {}\n", fmt::join(shares, ",")) << to_toml(c);
}

SimResult run(const Cluster& c, const std::string& policy, std::vector<double> shares = {},
               std::size_t oracle_lag = 0) {
  SimOptions o;
  o.alloc.name = policy;
  o.oracle_lag = oracle_lag;
  o.steps = kSteps;
  o.alloc.shares = std::move(shares);
  o.record_splits = true;
  return simulate(c, o);
}

// Whether the workers of group `g` (ranks [first, first + count)) hold
// within kIdenticalSpread (or one sample) of each other at step k.
bool together(const SimResult& r, std::size_t k, std::size_t first, std::size_t count) {
  const auto begin = r.splits[k].begin() + static_cast<std::ptrdiff_t>(first);
  const auto [lo, hi] = std::minmax_element(begin, begin + static_cast<std::ptrdiff_t>(count));
  const double allowed = std::max(kIdenticalSpread * static_cast<double>(*hi), double{kRoundingSamples});
  return static_cast<double>(*hi - *lo) <= allowed;
}

// Identical workers against the oracle: `first` is "" if, at every step
// from the kSettleSteps-th of each world (a join or leave starts a new one),
// the workers of every group hold together wherever the oracle holds them
// together (and did a step before: kCausalLagSteps); else the first step and
// group that did not. The oracle, knowing
// the true means, sets identical workers apart only where that is strictly
// faster (a shared machine with per-step overheads, tiles:
// docs/simulation.md): there the policy may too. Elsewhere a split of
// identical workers is noise's doing. `checked` and `apart` count the
// (step, group) pairs compared and those apart: how often, not only whether.
struct Spread {
  std::string first;
  std::size_t checked = 0, apart = 0;
};

// Whether evening out the workers of a group (ranks [first, first + count))
// in the policy's split at step k, every other worker as it was, would make
// that step's expected compute strictly longer at the true mean costs: where
// it would (per-step overheads on a saturated core, tiles), their spread is
// the objective's doing, not noise's, even where the oracle's own split (a
// local search on shared machines) holds them together.
bool apart_pays(const Cluster& c, const SimResult& r, std::size_t k, std::size_t first, std::size_t count) {
  const auto world = std::prev(std::upper_bound(r.worlds.begin(), r.worlds.end(), k,
                                                [](std::size_t step, const SimResult::WorldAt& w) { return step < w.step; }));
  const WorldView view{&c, &world->groups, &world->rank_group};
  std::vector<std::size_t> evened = r.splits[k];
  std::size_t total = 0;
  for (std::size_t i = first; i < first + count; ++i) total += evened[i];
  for (std::size_t i = first; i < first + count; ++i) evened[i] = total / count + (i - first < total % count ? 1 : 0);
  auto makespan = [&](const std::vector<std::size_t>& split) {
    const std::vector<double> t = expected_finish(view, split);
    return *std::max_element(t.begin(), t.end());
  };
  return makespan(evened) > makespan(r.splits[k]) * (1.0 + kSameTime);
}

// Whether the oracle held group [first, first + count) together at step k
// and at each of the kCausalLagSteps steps before it in the same world
// (`into_world` steps into it): a policy one step late may still hold the
// old world's split there.
bool oracle_together(const SimResult& oracle, std::size_t k, std::size_t into_world, std::size_t first,
                     std::size_t count) {
  for (std::size_t back = 0; back <= std::min(kCausalLagSteps, into_world); ++back) {
    if (!together(oracle, k - back, first, count)) return false;
  }
  return true;
}

Spread identical_spread(const Cluster& c, const SimResult& r, const SimResult& oracle) {
  Spread out;
  std::size_t world_start = 0;
  for (std::size_t k = 0; k < r.splits.size(); ++k) {
    if (k > 0 && r.group_workers[k] != r.group_workers[k - 1]) world_start = k;
    if (k < world_start + kSettleSteps) continue;
    std::size_t rank = 0;
    for (std::size_t g = 0; g < c.groups.size(); ++g) {
      const std::size_t count = r.group_workers[k][g], first = rank;
      rank += count;
      if (count < 2 || !oracle_together(oracle, k, k - world_start, first, count)) continue;
      ++out.checked;
      if (together(r, k, first, count) || apart_pays(c, r, k, first, count)) continue;
      ++out.apart;
      if (!out.first.empty()) continue;
      const auto begin = r.splits[k].begin() + static_cast<std::ptrdiff_t>(first);
      const auto [lo, hi] = std::minmax_element(begin, begin + static_cast<std::ptrdiff_t>(count));
      out.first = fmt::format("step {}: identical workers of {} hold {} to {} samples (the oracle: within {}%)", k,
                              c.groups[g].name, *lo, *hi, kIdenticalSpread * 100.0);
    }
  }
  return out;
}

struct Verdict {
  double ratio = 0.0;  // the policy's time / its yardstick's
  bool slow = false;
  Spread apart;        // identical workers apart: where, and how often
  std::string text;    // the whole story, for a failure
};

Verdict judge(const Cluster& c, const Trial& trial) {
  const std::string& policy = trial.policy;
  const std::vector<double> shares = true_initial_speeds(c);
  const SimResult tested = run(c, policy, policy == "static" ? shares : std::vector<double>{}, trial.oracle_lag);
  const SimResult oracle = run(c, "oracle");
  Verdict v;
  v.apart = identical_spread(c, tested, oracle);
  std::string yardstick;
  if (changes(c)) {
    v.ratio = tested.total_seconds / oracle.total_seconds;
    v.slow = v.ratio > kOracleTolerance;
    yardstick = fmt::format("oracle {:.4f} s (tolerance {}x)", oracle.total_seconds, kOracleTolerance);
  } else {
    const SimResult equal = run(c, "equal"), fixed = run(c, "static", shares);
    v.ratio = tested.total_seconds / std::min(equal.total_seconds, fixed.total_seconds);
    v.slow = v.ratio > kFixedTolerance;
    yardstick = fmt::format("equal {:.4f} s, static-true {:.4f} s (tolerance {}x)", equal.total_seconds,
                            fixed.total_seconds, kFixedTolerance);
  }
  v.text = fmt::format("{} {:.4f} s, {}: ratio {:.3f}; moves {}, reverts {}; final split [{}]{}\n  {}", policy,
                       tested.total_seconds, yardstick, v.ratio, tested.moves, tested.reverts,
                       fmt::join(tested.splits.back(), ","), v.apart.first.empty() ? "" : "; " + v.apart.first, describe(c));
  return v;
}

TEST(AllocationProperty, ThePolicyKeepsUpWithTheBestFixedSplitAndTheOracleAndIdenticalWorkersMatch) {
  std::string error;
  const SeedRange seeds = seed_range(error);
  ASSERT_TRUE(error.empty()) << error;
  const Traces traces = load_traces(traces_dir());
  const Trial trial = policy_under_test();
  const std::string policy = trial.oracle_lag > 0 ? fmt::format("oracle:{}", trial.oracle_lag) : trial.policy;
  std::size_t slow_fixed = 0, slow_changing = 0, spread = 0, changing = 0, checked = 0, apart = 0;
  std::vector<std::uint64_t> failing;
  for (std::uint64_t seed = seeds.first; seed < seeds.first + seeds.count; ++seed) {
    const Cluster c = random_cluster(seed, traces);
    const Verdict v = judge(c, trial);
    changing += changes(c) ? 1 : 0;
    (changes(c) ? slow_changing : slow_fixed) += v.slow ? 1 : 0;
    spread += v.apart.first.empty() ? 0 : 1;
    checked += v.apart.checked, apart += v.apart.apart;
    // HETRAIN_PROPERTY_RATIOS: every cluster's ratio, to compare policies beyond pass and fail.
    if (std::getenv("HETRAIN_PROPERTY_RATIOS") != nullptr) fmt::print(stderr, "R {} {} {:.4f} {}/{} {}\n", seed, changes(c) ? 1 : 0, v.ratio, v.apart.apart, v.apart.checked, v.apart.first);
    if (!v.slow && v.apart.first.empty()) continue;
    failing.push_back(seed);
    dump(c, seed, true_initial_speeds(c));
    if (failing.size() <= kDescribedFailures) ADD_FAILURE() << fmt::format("seed {}: {}", seed, v.text);
  }
  EXPECT_EQ(failing.size(), 0u) << fmt::format(
      "{} of {} clusters (seeds {}:{}) fail for {}: {} of {} unchanging slower than {}x the better fixed split, "
      "{} of {} changing slower than {}x the oracle, {} with identical workers apart (in {} of the {} checked "
      "steps of a group, {:.2f}%); seeds: {}",
      failing.size(), seeds.count, seeds.first, seeds.count, policy, slow_fixed, seeds.count - changing,
      kFixedTolerance, slow_changing, changing, kOracleTolerance, spread, apart, checked,
      checked > 0 ? 100.0 * static_cast<double>(apart) / static_cast<double>(checked) : 0.0,
      fmt::join(failing, " "));
}

// The judge's excuse for identical workers apart: only where evening them
// out would make the step slower at the true means. Two identical workers
// with a 10 ms CPU overhead per step on one core, 4 samples of 1 ms: one of
// them idle (14 ms) beats two sharing the core (24 ms), so [0, 4] is
// excused; as independent devices without overhead, [1, 3] (3 ms) is slower
// than [2, 2] (2 ms) and is not.
TEST(AllocationPropertyJudge, ASpreadOfIdenticalWorkersIsExcusedOnlyWhereEvenSharesAreSlower) {
  Cluster c;
  c.global_batch = 4;
  WorkerGroup g;
  g.name = "twins", g.count = 2, g.speed = 1000.0, g.overhead = 0.010, g.machine = 0;
  c.machines.push_back({"box", 1.0});
  c.groups.push_back(g);
  SimResult r;
  r.worlds.push_back({0, c.groups, {0, 0}});
  r.splits = {{0, 4}, {2, 2}};
  EXPECT_TRUE(apart_pays(c, r, 0, 0, 2));
  EXPECT_FALSE(apart_pays(c, r, 1, 0, 2));  // already even: nothing to excuse
  Cluster d = c;
  d.machines.clear();
  d.groups[0].machine = kNoMachine, d.groups[0].overhead = 0.0;
  SimResult q;
  q.worlds.push_back({0, d.groups, {0, 0}});
  q.splits = {{1, 3}};
  EXPECT_FALSE(apart_pays(d, q, 0, 0, 2));
}

// The oracle evens twins out at step 2: a policy one step late is not judged
// there, but is at step 3, and never before its world's first step.
TEST(AllocationPropertyJudge, TheStepAfterTheOraclesSplitChangedIsNotJudged) {
  SimResult oracle;
  oracle.splits = {{1, 3}, {1, 3}, {2, 2}, {2, 2}};
  EXPECT_FALSE(oracle_together(oracle, 1, 1, 0, 2));
  EXPECT_FALSE(oracle_together(oracle, 2, 2, 0, 2));  // step 1 held them apart
  EXPECT_TRUE(oracle_together(oracle, 3, 3, 0, 2));
  EXPECT_TRUE(oracle_together(oracle, 2, 0, 0, 2));  // a new world's first step looks no further back
}

// Membership events, replayed in step order, never empty a group: two
// leaves drawn for one pair once emptied seed 3454's only group, the cluster
// ran out of workers, and the property stopped there.
TEST(AllocationProperty, TheRandomClustersNeverEmptyAGroup) {
  const Traces traces = load_traces(HETRAIN_NOISE_DIR);
  constexpr std::uint64_t kSeeds = 1000;  // seeds 1-1000 and 3001-4000, where 3454 emptied its group
  std::vector<std::uint64_t> seeds;
  for (std::uint64_t s = 1; s <= kSeeds; ++s) seeds.push_back(s), seeds.push_back(3000 + s);
  for (const std::uint64_t seed : seeds) {
    const Cluster c = random_cluster(seed, traces);
    std::vector<std::size_t> count;
    for (const auto& g : c.groups) count.push_back(g.count);
    for (const Event& e : c.events) {
      if (e.kind == EventKind::kJoin) count[e.group] += e.count;
      if (e.kind != EventKind::kLeave) continue;
      ASSERT_GT(count[e.group], e.count) << "seed " << seed << ": a leave at step " << e.step << " empties group " << e.group;
      count[e.group] -= e.count;
    }
  }
}

TEST(AllocationProperty, TheRandomClustersAreDeterministicReplayableAndMixed) {
  const Traces traces = load_traces(HETRAIN_NOISE_DIR);
  EXPECT_EQ(to_toml(random_cluster(7, traces)), to_toml(random_cluster(7, traces)));
  constexpr std::uint64_t kLooked = 1000;  // training seeds: the generator's mix, not any policy's outcome
  std::size_t devices_only = 0, shared = 0, quotas = 0, identical = 0, changing = 0, lognormal = 0, replayed = 0,
              off_cpu = 0, nonlinear = 0, spikes = 0;
  for (std::uint64_t seed = 1; seed <= kLooked; ++seed) {
    const Cluster c = random_cluster(seed, traces);
    if (seed <= 20) {
      EXPECT_EQ(to_toml(parse_cluster(to_toml(c), "dump.toml")), to_toml(c)) << seed;
    }
    devices_only += c.machines.empty() ? 1 : 0;
    shared += c.machines.empty() ? 0 : 1;
    changing += changes(c) ? 1 : 0;
    bool quota = false, same = false, logn = false, trace = false, device = false, bent = false, spike = false;
    for (const auto& g : c.groups) {
      quota = quota || g.quota > 0.0;
      same = same || g.count > 1;
      logn = logn || g.noise_model.kind == NoiseKind::kLognormal;
      trace = trace || g.noise_model.kind == NoiseKind::kTrace;
      device = device || g.device_sample_cost > 0.0;
      bent = bent || g.tile > 1 || g.cache_samples > 0;
      spike = spike || g.noise_model.spike_chance > 0.0;
    }
    quotas += quota ? 1 : 0;
    identical += same ? 1 : 0;
    lognormal += logn ? 1 : 0;
    replayed += trace ? 1 : 0;
    off_cpu += device ? 1 : 0;
    nonlinear += bent ? 1 : 0;
    spikes += spike ? 1 : 0;
    EXPECT_GT(c.global_batch, c.workers()) << seed;
  }
  for (const std::size_t n : {devices_only, quotas, changing, lognormal, replayed, off_cpu, nonlinear, spikes}) {
    EXPECT_GT(n, kLooked / 5);
  }
  EXPECT_GT(shared, kLooked / 2);
  EXPECT_GT(identical, kLooked / 2);
}

}  // namespace
}  // namespace hetrain::sim

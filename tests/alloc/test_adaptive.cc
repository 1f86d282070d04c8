// The adaptive policy closed loop on independent devices, fed synthetic
// observations of modelled clusters (workers sharing a host's cores:
// test_adaptive_hosts.cc) (no clocks, seeded noise). Expectations are hand-computed splits
// and comparisons with the equal split on the same world.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <random>

#include "adaptive_testing.h"
#include "hetrain/alloc/adaptive.h"

namespace hetrain::alloc {
namespace {

using adaptive_test::adaptive;
using adaptive_test::run;
using adaptive_test::Split;

// Independent devices: worker i computes b in (a + b / v_i) (1 + noise), a
// step takes the slowest plus `comm` (1 + comm_noise) plus penalty(split).
// `modeled` is the last step's time without noise.
struct Devices {
  std::vector<double> speed;
  double overhead = 0.0, noise = 0.0, comm = 0.0, comm_noise = 0.0;
  std::size_t tile = 1;  // work done in whole tiles: b samples cost ceil(b / tile) tiles
  std::function<double(const Split&)> penalty = [](const Split&) { return 0.0; };
  bool report_step = true;
  std::mt19937_64 rng{11};
  double previous = 0.0, modeled = 0.0;

  Observation step(const Split& split) {
    std::normal_distribution<double> u(0.0, 1.0);
    Observation o;
    o.local_batch = split;
    o.previous_step_seconds = report_step ? previous : 0.0;
    double slowest = 0.0, slowest_modeled = 0.0;
    for (std::size_t i = 0; i < split.size(); ++i) {
      const double paid = static_cast<double>((split[i] + tile - 1) / tile * tile);
      const double t = split[i] == 0 ? 0.0 : overhead + paid / speed[i];
      o.compute_seconds.push_back(t * std::max(0.1, 1.0 + noise * u(rng)));
      slowest = std::max(slowest, o.compute_seconds.back());
      slowest_modeled = std::max(slowest_modeled, t);
    }
    modeled = slowest_modeled + comm + penalty(split);
    previous = slowest + comm * std::max(0.1, 1.0 + comm_noise * u(rng)) + penalty(split);
    return o;
  }
};

TEST(AdaptivePolicy, StartsEqualAndReachesTheProportionalSplit) {
  Devices d{{400, 400, 400, 100}};
  d.noise = 0.02;
  auto p = adaptive(4, 130);
  EXPECT_EQ(p->split(), (Split{33, 33, 32, 32}));
  run(*p, d, 30);
  // 40/40/40/10 is where all finish at 0.1 s.
  const Split s = p->split();
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(static_cast<double>(s[i]), 40.0, 1.0) << i;
  EXPECT_NEAR(static_cast<double>(s[3]), 10.0, 1.0);
}

TEST(AdaptivePolicy, IdenticalNoisyWorkersStayWithinOneSampleAtEveryStep) {
  Devices d{{200, 200, 200, 200, 200, 200}};
  d.noise = 0.1, d.comm = 0.02, d.comm_noise = 0.2;
  auto p = adaptive(6, 200);
  for (int s = 0; s < 400; ++s) {
    p->observe(d.step(p->split()));
    const Split x = p->split();
    const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    ASSERT_LE(*hi - *lo, 1u) << "step " << s;
  }
  EXPECT_LE(p->stats().moves, 2u);
}

TEST(AdaptivePolicy, IdenticalWorkersThatChangeTogetherStayTogether) {
  // Workers 0 and 1 are identical and 4x faster than 2 and 3; at step 60 both
  // slow 8x (to half the others' speed). Their alarms come a step or two
  // apart (independent noise): the first must not carry its twin's unit
  // past the other workers.
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Devices d{{800, 800, 200, 200}};
    d.noise = 0.02, d.comm = 0.01, d.rng.seed(seed);
    auto p = adaptive(4, 200);
    for (int s = 0; s < 120; ++s) {
      if (s == 60) d.speed[0] = d.speed[1] = 100;
      p->observe(d.step(p->split()));
      const Split x = p->split();
      const std::size_t gap = x[0] > x[1] ? x[0] - x[1] : x[1] - x[0];
      if (s >= 5) {
        ASSERT_LE(static_cast<double>(gap), std::max(1.0, 0.05 * static_cast<double>(std::max(x[0], x[1]))))
            << "seed " << seed << " step " << s << ": " << ::testing::PrintToString(x);
      }
    }
  }
}

// Three identical devices with tiles of 4 beside a slower one: their unit's
// rounding holds 17, 17 and 16 samples, and whoever holds 17 pays for 20. Were
// the remainder always the lowest ranks', the third twin would read a fifth
// cheaper a sample than the others and be cut from their unit (at [16, 16, 18]
// or [15, 15, 20] in 9 of these 10 seeds). Taken in turn, every twin runs both
// batches, and they read alike.
TEST(AdaptivePolicy, TwinsTakeTheirUnitsRemainderInTurnAndStayOneUnitWhereCostComesInTiles) {
  std::size_t seeds_with_a_remainder = 0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    Devices d{{400, 400, 400, 100}};
    d.tile = 4, d.noise = 0.02, d.comm = 0.005, d.rng.seed(seed);
    auto p = adaptive(4, 54);
    Split short_of_it(3, 0);  // steps from 100 on each twin held fewer samples than another
    for (int s = 0; s < 200; ++s) {
      p->observe(d.step(p->split()));
      const Split x = p->split();
      const auto [lo, hi] = std::minmax_element(x.begin(), x.begin() + 3);
      if (s >= 20) {
        ASSERT_LE(*hi - *lo, 1u) << "seed " << seed << " step " << s << ": " << ::testing::PrintToString(x);
      }
      if (s >= 100)
        for (std::size_t i = 0; i < 3; ++i) short_of_it[i] += x[i] < *hi ? 1 : 0;
    }
    if (std::all_of(short_of_it.begin(), short_of_it.end(), [](std::size_t n) { return n == 0; })) continue;
    ++seeds_with_a_remainder;
    for (std::size_t i = 0; i < 3; ++i)
      EXPECT_GT(short_of_it[i], 0u) << "seed " << seed << ": twin " << i << " always held the remainder";
  }
  EXPECT_GT(seeds_with_a_remainder, 0u);
}

// Two pairs of devices 15% apart (200 and 230 samples a second) under 15%
// noise, planned with `placement`, 300 steps: the faster pair's samples over
// the slower's from step 100 on, or nothing (a failure added) where a pair
// is ever more than a sample apart there.
std::optional<double> two_pairs(const Placement& placement, std::uint64_t seed) {
  Devices d{{200, 200, 230, 230}};
  d.noise = 0.15, d.comm = 0.01, d.rng.seed(seed);
  auto p = adaptive(4, 400, placement);
  double slow = 0.0, fast = 0.0;
  for (int s = 0; s < 300; ++s) {
    p->observe(d.step(p->split()));
    const Split x = p->split();
    if (s < 100) continue;
    slow += static_cast<double>(x[0] + x[1]), fast += static_cast<double>(x[2] + x[3]);
    if (std::max(x[0], x[1]) - std::min(x[0], x[1]) > 1 || std::max(x[2], x[3]) - std::min(x[2], x[3]) > 1) {
      ADD_FAILURE() << "seed " << seed << " step " << s << ": a pair apart, " << ::testing::PrintToString(x);
      return std::nullopt;
    }
  }
  return fast / slow;
}

// Four identical devices (200 samples a second, 15% noise) planned with
// `placement`, 300 steps: no two more than a sample apart from step 100 on.
void four_alike(const Placement& placement, std::uint64_t seed) {
  Devices d{{200, 200, 200, 200}};
  d.noise = 0.15, d.comm = 0.01, d.rng.seed(seed);
  auto p = adaptive(4, 400, placement);
  for (int s = 0; s < 300; ++s) {
    p->observe(d.step(p->split()));
    const Split y = p->split();
    if (s < 100) continue;
    ASSERT_LE(*std::max_element(y.begin(), y.end()) - *std::min_element(y.begin(), y.end()), 1u)
        << "seed " << seed << " step " << s << ": " << ::testing::PrintToString(y);
  }
}

// Two kinds of device 15% apart under 15% noise: within what the estimates
// can tell apart for a long while, so without kinds the Grouper may lump
// them at equal shares. Told their kinds (Placement::kind), the policy never
// plans them as one unit: the faster kind gets more samples on average, and
// each kind's pair still holds together.
TEST(AdaptivePolicy, WorkersOfDifferentKindsAreNeverOneUnit) {
  Placement kinds;
  kinds.kind = {1, 1, 2, 2};
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const std::optional<double> ratio = two_pairs(kinds, seed);
    ASSERT_TRUE(ratio.has_value());
    // Proportional shares are 230/200 = 1.15: at least half of that gain.
    EXPECT_GT(*ratio, 1.07) << "seed " << seed;
  }
}

// The same two speeds on machines whose cores are not shared out (each
// worker planned as a device): workers given different CPUs (here a quota of
// 0.87 CPU) are different hardware and never one unit, as different kinds
// are; identical workers on two identical machines (same cores, same CPUs)
// are one unit, held within a sample of each other, and so are workers of
// one said kind in machines of different sizes. The kinds test's world
// and seeds; with the faster pair first, seeds 2, 7 and 8 end at 1.01-1.02
// (not yet traced: docs/allocation.md, "Known limits", has the trials that
// revert a real gain of this size under this noise).
TEST(AdaptivePolicy, WorkersGivenDifferentCpusAreNeverOneUnitAndLikeMachinesAreAlike) {
  Placement machines;
  machines.host = {0, 0, 1, 1}, machines.cpus = {0.87, 0.87, 1.0, 1.0}, machines.host_cores = {4.0, 4.0};
  Placement like = machines;
  like.host = {0, 1, 0, 1}, like.cpus = {1.0, 1.0, 1.0, 1.0};
  // Like GPUs (one kind said) in a small and a large machine, with the threads each gives them.
  Placement sized;
  sized.host = {0, 1, 0, 1}, sized.cpus = {2.0, 8.0, 2.0, 8.0}, sized.host_cores = {4.0, 16.0};
  sized.kind = {1, 1, 1, 1};
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const std::optional<double> ratio = two_pairs(machines, seed);
    ASSERT_TRUE(ratio.has_value());
    EXPECT_GT(*ratio, 1.07) << "seed " << seed;
    four_alike(like, seed);
    four_alike(sized, seed);
  }
}

// Steps after a change at step 40 of worker 3's speed to `after` until the
// split is within 10% of proportional to the new speeds.
std::size_t steps_to_follow(double after, double noise) {
  Devices d{{400, 400, 400, 400}};
  d.noise = noise, d.comm = 0.01;
  auto p = adaptive(4, 160);
  run(*p, d, 40);
  d.speed[3] = after;
  const double vs = 1200.0 + after;
  for (std::size_t k = 1; k <= 60; ++k) {
    p->observe(d.step(p->split()));
    const double ideal = 160.0 * after / vs;
    if (std::abs(static_cast<double>(p->split()[3]) - ideal) <= std::max(1.0, 0.1 * ideal)) return k;
  }
  ADD_FAILURE() << "split after 60 steps: " << ::testing::PrintToString(p->split());
  return 1000;
}

TEST(AdaptivePolicy, DevicesAQuarterApartOnQuietNoiseAreToldApartWithinAFewSteps) {
  // The benchmark's mixed6-device as devices with 1% noise: 1, 1.25, 2, 2, 1
  // and 3.3 ms a sample. The first decision, on one sample each under the
  // prior's 10% noise, may hold the 1 and 1.25 ms workers as one unit; ten
  // samples of 1% noise must then tell them apart (with the prior pooled in
  // a plain mean the lines still reported 3% noise, and held them for 11
  // steps in the simulator's replica, 17-38 in real runs).
  Devices d{{1000, 800, 500, 500, 1000, 300}};
  d.noise = 0.01;
  auto p = adaptive(6, 384);
  run(*p, d, 8);
  const Split s = p->split();
  // In proportion to speed the 1 ms worker holds 1.25x the 1.25 ms one's share.
  EXPECT_GT(static_cast<double>(s[0]), 1.15 * static_cast<double>(s[1])) << ::testing::PrintToString(s);
}

TEST(AdaptivePolicy, FollowsASlowdownAndARecoveryWithinAFewSteps) {
  EXPECT_LE(steps_to_follow(100, 0.01), 5u);
  EXPECT_LE(steps_to_follow(100, 0.1), 10u);
}

TEST(AdaptivePolicy, AConfirmedChangeIsFollowedAtOnceNotThroughATrial) {
  // The bench's device-slow: three 1,000 samples/s devices and one at 250;
  // worker 1 slows 4x at step 40. Its alarm (three samples) keeps it in its
  // twins' unit while the change is on test; the sample that confirms it is
  // a change for the plan too: the proportional split follows at once (it
  // took two more steps, a trial's, when only the alarm counted).
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    Devices d{{1000, 1000, 1000, 250}};
    d.overhead = 0.002, d.noise = 0.02, d.comm = 0.002, d.rng.seed(seed);
    auto p = adaptive(4, 64);
    run(*p, d, 40);
    d.speed[1] = 250;
    std::size_t k = 0;
    for (; k < 20 && !(p->split()[0] >= 25 && p->split()[1] <= 7); ++k) p->observe(d.step(p->split()));
    EXPECT_LE(k, 5u) << "seed " << seed << ": " << ::testing::PrintToString(p->split());
  }
}

TEST(AdaptivePolicy, ARecoveredWorkerIsFollowedBack) {
  Devices d{{400, 400, 400, 100}};
  d.noise = 0.03, d.comm = 0.01;
  auto p = adaptive(4, 160);
  run(*p, d, 40);
  ASSERT_LT(p->split()[3], 25u);
  d.speed[3] = 400;
  run(*p, d, 15);
  EXPECT_NEAR(static_cast<double>(p->split()[3]), 40.0, 2.0);
}

TEST(AdaptivePolicy, AWorkerTooSlowForOneSampleIsIdleThenProbedAndSeenToRecover) {
  // Overhead 0.05 s: the slow worker's one sample takes 0.05 + 1/2 s, far
  // beyond the others' step (30 samples in 0.15 s).
  Devices d{{100, 100, 100, 2}};
  d.overhead = 0.05, d.noise = 0.02, d.comm = 0.01;
  auto p = adaptive(4, 30);
  run(*p, d, 30);
  ASSERT_EQ(p->split()[3], 0u);
  d.speed[3] = 100;
  std::size_t k = 0;
  while (k < 3000 && p->split()[3] < 5) p->observe(d.step(p->split())), ++k;
  EXPECT_LT(k, 3000u) << "never probed back";
}

TEST(AdaptivePolicy, AnIdleWorkerIsProbedForWhatMayHaveChangedNotForTheNoiseItsSamplesShowed) {
  // One sample of the slow worker takes 0.05 + 1/speed s, 7-17% beyond the
  // others' step (100 samples in 0.15 s): idle is best, and holding it one
  // sample throughout costs as much. Its level is known to its noise after a
  // few samples; a probe finds something new only once its speed could have
  // drifted that far (speed_drift per step), and a drop back to idle that the
  // noise reverted is tried again after the backoff.
  const std::vector<std::pair<double, double>> cases{{9, 0.1}, {8, 0.1}, {8, 0.2}, {7, 0.3}};
  double log_ratios = 0.0;
  for (const auto& [speed, noise] : cases) {
    Devices d{{1000, 1000, 1000, speed}};
    d.overhead = 0.05, d.noise = noise, d.comm = 0.01;
    auto p = adaptive(4, 300);
    run(*p, d, 100);
    Devices idle = d, held = d;
    idle.step({100, 100, 100, 0}), held.step({100, 100, 99, 1});
    const double ratio = run(*p, d, 500) / idle.modeled;
    EXPECT_LT(ratio, held.modeled / idle.modeled) << speed << " samples/s, noise " << noise;
    log_ratios += std::log(ratio);
  }
  EXPECT_LE(std::exp(log_ratios / static_cast<double>(cases.size())), 1.05);
}

TEST(AdaptivePolicy, ACommunicationBoundStepIsNeverSlowerThanEqual) {
  Devices base{{400, 380, 420, 390}};
  base.noise = 0.1, base.comm = 0.5, base.comm_noise = 0.3;
  Devices a = base, e = base;
  auto p = adaptive(4, 64);
  PolicyConfig c;
  c.workers = 4, c.global_batch = 64;
  auto eq = make_policy(c);
  EXPECT_LE(run(*p, a, 300), 1.01 * run(*eq, e, 300));
}

TEST(AdaptivePolicy, AMoveThatCostsMoreThanTheModelSeesIsRevertedAndNotRetried) {
  // A shared host: every sample moved away from 32 each costs 5 ms (the model
  // cannot see it). The slow worker's model proposes moves; the step time
  // shows they lose, and the policy ends near equal.
  Devices d{{400, 400, 400, 300}};
  d.noise = 0.02, d.comm = 0.01;
  d.penalty = [](const Split& s) {
    double moved = 0.0;
    for (const std::size_t b : s) moved += std::abs(static_cast<double>(b) - 32.0);
    return 0.005 * moved;
  };
  auto p = adaptive(4, 128);
  Devices e = d;
  PolicyConfig c;
  c.workers = 4, c.global_batch = 128;
  auto eq = make_policy(c);
  const double mine = run(*p, d, 400, 100), equal = run(*eq, e, 400, 100);
  EXPECT_GE(p->stats().reverts, 1u);
  EXPECT_LE(mine, 1.03 * equal);
}

TEST(AdaptivePolicy, AMoveTakenOnTheModelsWordThatSlowsTheStepIsRevertedAndNotRetaken) {
  // Worker 3 is 5% slower, measured on 2% noise, but the step time carries
  // an allreduce of 50 ms with 50% noise: the model's gain from moving
  // samples off worker 3 (some 2% of the step) is too small for a trial to
  // show, so it is taken on the model's word. Every sample moved away from 32
  // costs 10 ms the model cannot see (a step of some 135 ms): the steps after
  // the move show the harm against the steps before it, the move is undone,
  // and the model, wrong once, moves no more on its word alone. (Without the
  // check, in 6 of these 10 seeds the step time's own shift undid the move
  // some steps later and the model, still trusted, took it again: up to 6
  // moves and 39 steps at a cost, none counted as a revert.)
  std::size_t moves = 0, reverts = 0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    Devices d{{400, 400, 400, 380}};
    d.noise = 0.02, d.comm = 0.05, d.comm_noise = 0.5, d.rng.seed(seed);
    d.penalty = [](const Split& s) {
      double moved = 0.0;
      for (const std::size_t b : s) moved += std::abs(static_cast<double>(b) - 32.0);
      return 0.01 * moved;
    };
    auto p = adaptive(4, 128);
    std::size_t moved_steps = 0;
    for (int s = 0; s < 1000; ++s) {
      p->observe(d.step(p->split()));
      moved_steps += p->split() != Split{32, 32, 32, 32} ? 1 : 0;
    }
    EXPECT_LE(moved_steps, AdaptiveTuning{}.max_trial_steps) << "seed " << seed;
    moves += p->stats().moves, reverts += p->stats().reverts;
  }
  EXPECT_GT(moves, 0u);  // else nothing was taken and this tests nothing
  EXPECT_EQ(reverts, moves);
}

TEST(AdaptivePolicy, WithoutStepTimesTheModelDecides) {
  Devices d{{400, 400, 400, 100}};
  d.report_step = false;
  auto p = adaptive(4, 130);
  run(*p, d, 10);
  EXPECT_EQ(p->split(), (Split{40, 40, 40, 10}));
}

TEST(AdaptivePolicy, SameObservationsGiveTheSameSplits) {
  Devices d1{{400, 300, 200, 100}}, d2{{400, 300, 200, 100}};
  d1.noise = d2.noise = 0.1;
  auto p1 = adaptive(4, 100), p2 = adaptive(4, 100);
  for (int s = 0; s < 200; ++s) {
    p1->observe(d1.step(p1->split()));
    p2->observe(d2.step(p2->split()));
    ASSERT_EQ(p1->split(), p2->split());
  }
}

TEST(AdaptivePolicy, AShortBatchGivesNoStepTimeEvidenceAndSplitsStayWhole) {
  Devices d{{400, 400, 400, 100}};
  auto p = adaptive(4, 130);
  for (int s = 0; s < 20; ++s) {
    Split x = p->split();
    if (s % 5 == 4) x = scale_split(x, 13, Bounds{}.max_local);
    p->observe(d.step(x));
    const Split next = p->split();
    EXPECT_EQ(std::accumulate(next.begin(), next.end(), std::size_t{0}), 130u);
  }
}

TEST(AdaptivePolicy, RespectsTheMemoryCap) {
  Devices d{{1000, 100, 100, 100}};
  PolicyConfig c;
  c.name = "adaptive", c.workers = 4, c.global_batch = 100;
  c.bounds.max_local = 40;
  auto p = make_policy(c);
  run(*p, d, 20);
  EXPECT_EQ(p->split()[0], 40u);
}

TEST(AdaptivePolicy, AResumedRunStartsFromTheSavedModels) {
  PolicyConfig c;
  c.name = "adaptive", c.workers = 5, c.global_batch = 130;
  c.known = {{0, 400}, {0, 400}, {0, 400}, {0, 100}};  // rank 4 is new: the median speed
  auto p = make_policy(c);
  // 1,700 samples/s in all: T = 130 / 1700 s, so 7.6 for rank 3, 30.6 for the others.
  EXPECT_NEAR(static_cast<double>(p->split()[3]), 7.6, 1.0);
  EXPECT_NEAR(static_cast<double>(p->split()[4]), 30.6, 1.0);
}

TEST(AdaptivePolicy, ANewRankSlowerThanItsGuessIsFollowedAtOnce) {
  // Rank 4 joins a resumed run, guessed at the median saved speed (400/s)
  // but really at 100/s. Its first sample replaces the guess: after it, the
  // rank holds its share by its true speed (100 / 1400 of 130: 9.3). A
  // guess held as sure as a saved line (to the speed drift, 1%) moved a
  // fraction of the miss a step.
  PolicyConfig c;
  c.name = "adaptive", c.workers = 5, c.global_batch = 130;
  c.known = {{0, 400}, {0, 400}, {0, 400}, {0, 100}};
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    auto p = make_policy(c);
    Devices d{{400, 400, 400, 100, 100}};
    d.noise = 0.05, d.comm = 0.01, d.rng.seed(seed);
    for (int s = 0; s < 2; ++s) p->observe(d.step(p->split()));
    EXPECT_NEAR(static_cast<double>(p->split()[4]), 9.3, 1.5) << "seed " << seed;
  }
}

TEST(AdaptivePolicy, WhatItLearnedCanBeSavedBeforeAnyWorkerIsMeasured) {
  auto p = adaptive(3, 30);
  const std::vector<WorkerModel> m = p->learned();
  ASSERT_EQ(m.size(), 3u);
  for (const WorkerModel& w : m) EXPECT_EQ(w.speed, 0.0);
}

TEST(ProfiledStaticPolicy, MeasuresThenFreezes) {
  Devices d{{400, 400, 400, 100}};
  PolicyConfig c;
  c.name = "static", c.workers = 4, c.global_batch = 130, c.profile_steps = 10;
  auto p = make_policy(c);
  run(*p, d, 10);
  const Split frozen = p->split();
  EXPECT_EQ(frozen, (Split{40, 40, 40, 10}));
  d.speed[3] = 400;
  run(*p, d, 30);
  EXPECT_EQ(p->split(), frozen);
}

}  // namespace
}  // namespace hetrain::alloc

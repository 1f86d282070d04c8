// The adaptive policy's closed loop on the realized step time, fed synthetic
// observations: no clocks, no sleeps, seeded noise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "hetrain/alloc/adaptive.h"

namespace hetrain::alloc {
namespace {

using Split = std::vector<std::size_t>;

// A modeled cluster. Worker i computes b_i samples in b_i / v_i seconds
// (times uniform noise of +-noise); a step takes the slowest worker, plus
// `comm` seconds of allreduce (times +-comm_noise), plus `penalty(split)`:
// what a split costs beyond that on a shared host. `modeled` is the last
// step's time without noise, the figure the tests compare.
struct Host {
  std::vector<double> speed;
  double noise = 0.0;
  double comm = 0.0;
  double comm_noise = 0.0;
  std::function<double(const Split&)> penalty = [](const Split&) { return 0.0; };
  std::mt19937_64 rng{11};
  double previous = 0.0;
  double modeled = 0.0;

  Observation step(const Split& split) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    Observation o;
    o.local_batch = split;
    o.previous_step_seconds = previous;
    double slowest = 0.0, slowest_modeled = 0.0;
    for (std::size_t i = 0; i < split.size(); ++i) {
      const double t = static_cast<double>(split[i]) / speed[i];
      o.compute_seconds.push_back(t * (1.0 + noise * u(rng)));
      slowest = std::max(slowest, o.compute_seconds.back());
      slowest_modeled = std::max(slowest_modeled, t);
    }
    modeled = slowest_modeled + comm + penalty(split);
    previous = slowest + comm * (1.0 + comm_noise * u(rng)) + penalty(split);
    return o;
  }
};

// Runs `steps` steps; returns the mean modeled step time.
double run(Policy& p, Host& h, std::size_t steps) {
  double sum = 0.0;
  for (std::size_t s = 0; s < steps; ++s) {
    p.observe(h.step(p.split()));
    sum += h.modeled;
  }
  return sum / static_cast<double>(steps);
}

// The largest relative distance of a part from the split proportional to the speeds.
double gap_to_proportional(const Split& split, const std::vector<double>& speed) {
  const double total = static_cast<double>(std::accumulate(split.begin(), split.end(), std::size_t{0}));
  const double vs = std::accumulate(speed.begin(), speed.end(), 0.0);
  double worst = 0.0;
  for (std::size_t i = 0; i < split.size(); ++i) {
    const double ideal = total * speed[i] / vs;
    worst = std::max(worst, std::abs(static_cast<double>(split[i]) - ideal) / ideal);
  }
  return worst;
}

// Seconds per sample moved away from the equal split: on a shared host the
// CPU a worker is given comes from its neighbours, so moving work only costs.
std::function<double(const Split&)> moving_costs(double seconds_per_sample, std::size_t equal_part) {
  return [=](const Split& s) {
    double moved = 0.0;
    for (const std::size_t b : s) moved += std::abs(static_cast<double>(b) - static_cast<double>(equal_part));
    return seconds_per_sample * moved;
  };
}

TEST(AdaptiveClosedLoop, AFasterProposalIsKept) {
  AdaptivePolicy p(4, 256, {});
  Host h{{400, 400, 400, 100}, 0.02, 0.05, 0.02};
  run(p, h, 30);
  EXPECT_LT(gap_to_proportional(p.split(), h.speed), 0.10);
  EXPECT_EQ(p.best_split(), p.split());
  EXPECT_GE(p.stats().moves, 1u);
  EXPECT_EQ(p.stats().reverts, 0u);
}

TEST(AdaptiveClosedLoop, AKeptMoveIsTriedOnceMoreAndTakenBackIfSlower) {
  // Equal to proportional is kept; the same move again (worker 3 down to
  // ~10 samples) makes worker 0 the slowest: tried, reverted, and the model's
  // split stays, with no churn after.
  AdaptivePolicy p(4, 256, {});
  Host h{{400, 400, 400, 200}, 0.01, 0.05, 0.01};
  run(p, h, 40);
  EXPECT_EQ(p.stats().moves, 2u);
  EXPECT_EQ(p.stats().reverts, 1u);
  EXPECT_LT(gap_to_proportional(p.split(), h.speed), 0.10);
  EXPECT_EQ(p.best_split(), p.split());
}

TEST(AdaptiveClosedLoop, ASlowerProposalIsRevertedAndLaterAttemptsBackOff) {
  // Compute times say worker 3 is 4x slower, but on this host moving work
  // makes the step slower: every trial must be taken back.
  const Split equal{64, 64, 64, 64};
  AdaptivePolicy p(4, 256, {});
  Host h{{400, 400, 400, 100}, 0.02, 1.0, 0.02, moving_costs(0.01, 64)};
  std::vector<std::size_t> trial_starts;
  Split before = p.split();
  for (std::size_t s = 0; s < 400; ++s) {
    const std::size_t reverts = p.stats().reverts;
    p.observe(h.step(p.split()));
    if (p.split() != before && before == equal) trial_starts.push_back(s);
    if (p.stats().reverts > reverts) {
      ASSERT_EQ(p.split(), equal) << "a revert returns to the previous split";
    }
    before = p.split();
  }
  EXPECT_EQ(p.stats().reverts, p.stats().moves);
  EXPECT_EQ(p.split(), equal);
  ASSERT_GE(trial_starts.size(), 3u);
  // Each wait is at least the one before (doubling, less the trial itself).
  for (std::size_t k = 2; k < trial_starts.size(); ++k) {
    EXPECT_GE(trial_starts[k] - trial_starts[k - 1], trial_starts[k - 1] - trial_starts[k - 2]) << k;
  }
  // 400 steps hold few attempts: log2 of the run over the first wait.
  EXPECT_LE(trial_starts.size(), 7u);
}

TEST(AdaptiveClosedLoop, ARealChangeEndsTheBackoff) {
  // The same host: trials rejected, backoff grown. Then worker 0 really
  // becomes 4x slower and the step shows it: the change is followed at once.
  AdaptivePolicy p(4, 256, {});
  Host h{{400, 400, 400, 100}, 0.01, 1.0, 0.01, moving_costs(0.01, 64)};
  run(p, h, 150);
  ASSERT_GE(p.stats().reverts, 3u);
  h.speed = {100, 400, 400, 100};
  h.penalty = [](const Split&) { return 0.0; };
  const std::size_t moves = p.stats().moves;
  run(p, h, 6);
  EXPECT_GT(p.stats().moves, moves);
  EXPECT_LT(gap_to_proportional(p.split(), h.speed), 0.10);
}

TEST(AdaptiveClosedLoop, IdenticalWorkersGetIdenticalSharesAndTheSplitStops) {
  // Ranks 0 and 4, and 2 and 3, are identical; 5% noise on every time.
  AdaptivePolicy p(6, 384, {});
  Host h{{1000, 800, 500, 500, 1000, 300}, 0.05, 0.02, 0.05};
  run(p, h, 200);
  auto within = [](std::size_t a, std::size_t b) {
    return static_cast<double>(std::max(a, b)) <= 1.05 * static_cast<double>(std::min(a, b));
  };
  const Split settled = p.best_split();
  EXPECT_LT(gap_to_proportional(settled, h.speed), 0.10);
  const std::size_t moves = p.stats().moves;
  for (std::size_t s = 0; s < 100; ++s) {
    p.observe(h.step(p.split()));
    // The best split holds; a rare trial (backed off) may still probe a
    // refinement, but never splits identical workers apart.
    ASSERT_EQ(p.best_split(), settled) << "step " << 200 + s;
    const Split& now = p.split();
    ASSERT_TRUE(within(now[0], now[4]) && within(now[2], now[3])) << "step " << 200 + s;
  }
  EXPECT_LE(p.stats().moves - moves, 3u);
}

TEST(AdaptiveClosedLoop, FourIdenticalNoisyWorkersNeverMove) {
  AdaptivePolicy p(4, 256, {});
  Host h{{400, 400, 400, 400}, 0.05, 0.01, 0.05};
  run(p, h, 200);
  EXPECT_EQ(p.split(), (Split{64, 64, 64, 64}));
  EXPECT_EQ(p.stats().moves, 0u);
}

// Four identical workers; at step 100 worker 2 becomes 4x slower.
void expect_followed(double noise, std::size_t within_steps) {
  AdaptivePolicy p(4, 256, {});
  Host h{{400, 400, 400, 400}, noise, 0.02, noise};
  run(p, h, 100);
  h.speed[2] = 100;
  run(p, h, within_steps);
  EXPECT_LT(gap_to_proportional(p.split(), h.speed), 0.10) << "noise " << noise;
  // and the followed split is kept
  run(p, h, 20);
  EXPECT_LT(gap_to_proportional(p.best_split(), h.speed), 0.10) << "noise " << noise;
}

TEST(AdaptiveClosedLoop, FollowsAFourTimesSlowdownWithinFiveStepsWhenQuiet) { expect_followed(0.01, 5); }

TEST(AdaptiveClosedLoop, FollowsAFourTimesSlowdownWithinTenStepsWhenNoisy) { expect_followed(0.10, 10); }

TEST(AdaptiveClosedLoop, CommunicationBoundNeverEndsSlowerThanEqual) {
  // 0.08 s of compute at the equal split, 0.046 s balanced, against 1 s of
  // allreduce: at most 3% to gain.
  const std::vector<double> speeds{400, 400, 400, 200};
  for (const double noise : {0.01, 0.10}) {
    for (const double move_cost : {0.0, 0.001}) {
      PolicyConfig pc;
      pc.workers = 4;
      pc.global_batch = 64;
      auto policy = make_policy(pc);
      Host e{speeds, noise, 1.0, noise, moving_costs(move_cost, 16)};
      const double equal = run(*policy, e, 300);
      AdaptivePolicy p(4, 64, {});
      Host a{speeds, noise, 1.0, noise, moving_costs(move_cost, 16)};
      const double adaptive = run(p, a, 300);
      EXPECT_LE(adaptive, equal * 1.001) << "noise " << noise << " move cost " << move_cost;
      if (noise < 0.05 && move_cost == 0.0) {
        EXPECT_LT(adaptive, equal * 0.985) << "quiet: the little there is, taken";
      }
    }
  }
}

TEST(AdaptiveClosedLoop, WithoutStepTimesTheModelDecides) {
  // A caller that reports no step times: a trial cannot be judged, so it is
  // kept once its budget has run out (the cost model alone, as before).
  AdaptivePolicy p(4, 256, {});
  Host h{{400, 400, 400, 100}, 0.02};
  for (std::size_t s = 0; s < 20; ++s) {
    Observation o = h.step(p.split());
    o.previous_step_seconds = 0.0;
    p.observe(o);
  }
  EXPECT_LT(gap_to_proportional(p.split(), h.speed), 0.10);
  EXPECT_EQ(p.best_split(), p.split());
  EXPECT_EQ(p.stats().reverts, 0u);
}

TEST(AdaptiveClosedLoop, SameObservationsGiveTheSameSplits) {
  // Every worker runs its own copy: the same numbers must give the same split.
  AdaptivePolicy a(6, 384, {}), b(6, 384, {});
  Host h{{1000, 800, 500, 500, 1000, 300}, 0.1, 0.05, 0.1, moving_costs(0.0005, 64)};
  for (std::size_t s = 0; s < 200; ++s) {
    const Observation o = h.step(a.split());
    a.observe(o);
    b.observe(o);
    ASSERT_EQ(a.split(), b.split()) << "step " << s;
  }
}

TEST(AdaptiveClosedLoop, AFirstStepLeftUnmeasuredIsMeasuredBeforeATrialIsJudged) {
  // A trainer reports its first step's time as unknown (lazy initialisation)
  // and the policy is told to ignore none: the first trial has nothing to
  // compare with, goes back to measure the equal split, then tries again and
  // keeps the faster split.
  AdaptiveConfig config;
  config.warmup_steps = 0;
  config.ignored_step_times = 0;
  AdaptivePolicy p(4, 256, {}, config);
  Host h{{400, 400, 400, 100}, 0.02, 0.05, 0.02};
  bool returned = false;
  for (std::size_t s = 0; s < 20; ++s) {
    Observation o = h.step(p.split());
    if (s == 1) o.previous_step_seconds = 0.0;
    const Split before = p.split();
    p.observe(o);
    returned = returned || (before != Split{64, 64, 64, 64} && p.split() == Split{64, 64, 64, 64});
  }
  EXPECT_TRUE(returned);
  EXPECT_LT(gap_to_proportional(p.best_split(), h.speed), 0.10);
  EXPECT_EQ(p.stats().reverts, 0u);
}

TEST(AdaptiveClosedLoop, ByDefaultTheFirstTrialWaitsForAMeasuredStepAndNeverGoesBack) {
  AdaptivePolicy p(4, 256, {});
  Host h{{400, 400, 400, 100}, 0.02, 0.05, 0.02};
  bool left = false, returned = false;
  for (std::size_t s = 0; s < 20; ++s) {
    Observation o = h.step(p.split());
    if (s == 1) o.previous_step_seconds = 0.0;
    p.observe(o);
    const bool equal = p.split() == Split{64, 64, 64, 64};
    returned = returned || (left && equal);
    left = left || !equal;
  }
  EXPECT_TRUE(left);
  EXPECT_FALSE(returned);
  EXPECT_LT(gap_to_proportional(p.best_split(), h.speed), 0.10);
}

TEST(AdaptiveClosedLoop, AWorkerTooSlowForOneSampleGetsNoneAndIsProbedUntilItRecovers) {
  // One sample on worker 3 takes 0.2 s, the others' whole share 0.01 s.
  AdaptivePolicy p(4, 30, {});
  Host h{{1000, 1000, 1000, 5}, 0.01, 0.01, 0.01};
  run(p, h, 40);
  EXPECT_EQ(p.best_split()[3], 0u);
  // It recovers: a probe finds it, and it is given its share again.
  h.speed[3] = 1000;
  std::size_t probes = 0;
  for (std::size_t s = 0; s < 120 && p.best_split()[3] == 0; ++s) {
    probes += p.split()[3] > 0 ? 1 : 0;
    p.observe(h.step(p.split()));
  }
  EXPECT_GE(probes, 1u);
  EXPECT_LT(gap_to_proportional(p.best_split(), h.speed), 0.15);
}

TEST(AdaptiveClosedLoop, AShortBatchGivesNoStepTimeEvidence) {
  // The host where every move is slower; every other step is an epoch's
  // short last batch, reported absurdly slow. Those times belong to no full
  // split: counted with the equal split's, they would make a trial look faster.
  const Split equal{64, 64, 64, 64};
  AdaptivePolicy p(4, 256, {});
  Host h{{400, 400, 400, 100}, 0.02, 1.0, 0.02, moving_costs(0.01, 64)};
  for (std::size_t s = 0; s < 60; ++s) {
    const bool short_batch = s % 2 == 1;
    Observation o = h.step(short_batch ? scale_split(p.split(), 128, 1000) : p.split());
    if (!short_batch && s > 0) o.previous_step_seconds = 100.0;  // the short step before
    p.observe(o);
  }
  EXPECT_GE(p.stats().reverts, 1u);
  EXPECT_EQ(p.stats().reverts, p.stats().moves);
  EXPECT_EQ(p.best_split(), equal);
}

TEST(SolveSplit, AWorkerThatCannotAffordOneSampleGetsNone) {
  // Rounding alone would give the slow worker its 0.3 sample as 1 (0.1 s,
  // ten times the others' 0.01 s).
  const std::vector<WorkerModel> ms{{0, 1000}, {0, 1000}, {0, 1000}, {0, 10}};
  const SolvedSplit s = solve_split(ms, 30, {});
  EXPECT_EQ(s.split, (Split{10, 10, 10, 0}));
  EXPECT_NEAR(s.makespan, 0.01, 1e-12);
  // Bounds still hold: a minimum of one sample keeps it.
  Bounds one;
  one.min_local = 1;
  EXPECT_EQ(solve_split(ms, 30, one).split[3], 1u);
}

}  // namespace
}  // namespace hetrain::alloc

// The adaptive policy closed loop on workers sharing a host's cores
// (processor sharing), fed synthetic observations (no clocks, seeded noise).
// Expectations are comparisons with the equal split on the same host and
// hand-computed shares.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "adaptive_testing.h"
#include "hetrain/alloc/adaptive.h"

namespace hetrain::alloc {
namespace {

using adaptive_test::adaptive;
using adaptive_test::run;
using adaptive_test::Split;

// A host of `cores` CPUs shared by workers of 1 CPU each: worker i needs
// cpu_i CPU-seconds per sample and sleeps wait_i per sample (an emulated
// device or a slowdown). Equal caps: processor sharing by ascending work.
struct SharedHost {
  std::vector<double> cpu, wait;
  double cores = 2.0, noise = 0.02;
  double cpu_noise = 0.0;  // further scatter of the measured CPU-seconds alone (relative)
  double overhead = 0.0;   // CPU-seconds per step of a worker holding samples
  std::mt19937_64 rng{3};
  double previous = 0.0, modeled = 0.0;
  Observation step(const Split& split) {
    const std::size_t n = split.size();
    std::vector<double> work(n), finish(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) work[i] = split[i] > 0 ? overhead + static_cast<double>(split[i]) * cpu[i] : 0.0;
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return work[a] < work[b]; });
    double now = 0.0, done = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
      const double rate = std::min(1.0, cores / static_cast<double>(n - k));
      now += (work[order[k]] - done) / rate, done = work[order[k]];
      finish[order[k]] = now;
    }
    // A standard deviation must be positive: without scatter, v is never drawn.
    std::normal_distribution<double> u(0.0, noise), v(0.0, cpu_noise > 0.0 ? cpu_noise : 1.0);
    Observation o;
    o.local_batch = split;
    o.previous_step_seconds = previous;
    double slowest = 0.0;
    modeled = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double w = static_cast<double>(split[i]) * wait[i], f = 1.0 + u(rng);
      o.compute_seconds.push_back((finish[i] + w) * f);
      o.cpu_seconds.push_back(work[i] * std::max(0.1, f + (cpu_noise > 0.0 ? v(rng) : 0.0)));
      o.wait_seconds.push_back(w * f);
      slowest = std::max(slowest, o.compute_seconds.back());
      modeled = std::max(modeled, finish[i] + w);
    }
    previous = slowest + 0.005;
    return o;
  }
};

Placement one_host(std::size_t n, double cores) {
  Placement p;
  p.host.assign(n, 0), p.cpus.assign(n, 1.0), p.host_cores = {cores};
  return p;
}

TEST(AdaptiveOnHosts, ASlowSleepingWorkerOnASaturatedHostGetsLessAndTheStepBeatsEqual) {
  // 4 workers on 2 cores, 1 ms CPU per sample; worker 3 also sleeps 3 ms per
  // sample (4x slow). Equal: 16 each, CPU 64 ms on 2 cores = 32 ms, the slow
  // one 16 + 48 = 64 ms.
  SharedHost h{{0.001, 0.001, 0.001, 0.001}, {0, 0, 0, 0.003}};
  SharedHost e = h;
  auto p = adaptive(4, 64, one_host(4, 2.0));
  PolicyConfig c;
  c.workers = 4, c.global_batch = 64;
  auto eq = make_policy(c);
  const double mine = run(*p, h, 200, 50), equal = run(*eq, e, 200, 50);
  EXPECT_LT(mine, 0.7 * equal);
  EXPECT_LT(p->split()[3], 10u);
}

TEST(AdaptiveOnHosts, AfterTheSlowWorkerRecoversTheStepIsNoSlowerThanEqual) {
  SharedHost h{{0.001, 0.001, 0.001, 0.001}, {0, 0, 0, 0.003}};
  auto p = adaptive(4, 64, one_host(4, 2.0));
  run(*p, h, 100);
  h.wait[3] = 0.0;
  SharedHost e = h;
  PolicyConfig c;
  c.workers = 4, c.global_batch = 64;
  auto eq = make_policy(c);
  const double mine = run(*p, h, 200, 50), equal = run(*eq, e, 200, 50);
  EXPECT_LE(mine, 1.02 * equal);
}

TEST(AdaptiveOnHosts, ANoisySmallCpuPartDoesNotHideADifferenceInTheSleep) {
  // Emulated devices on a saturated host (6 workers on 2 cores, as the
  // benchmark's mixed6-device): each sleeps 1, 1.25, 2, 2, 1 or 3.3 ms per
  // sample and uses 0.05 ms of CPU per sample, whose measurement scatters by
  // 40%. The CPU is 2-5% of each worker's time: its noise must not make the
  // 1 ms and the 1.25 ms workers look alike (they were one unit for 38
  // steps of a real run when the key's error was the larger relative one).
  SharedHost h{std::vector<double>(6, 5e-5), {0.001, 0.00125, 0.002, 0.002, 0.001, 0.0033}};
  h.cpu_noise = 0.4;
  auto p = adaptive(6, 384, one_host(6, 2.0));
  run(*p, h, 15);
  const Split s = p->split();
  // In proportion to speed the 1 ms worker holds 1.25x the 1.25 ms one's share.
  EXPECT_GT(static_cast<double>(s[0]), 1.15 * static_cast<double>(s[1])) << ::testing::PrintToString(s);
}

TEST(AdaptiveOnHosts, AWorkerWhoseFirstSampleFellInABurstIsMeasuredUntilItCanBeCorrected) {
  // 8 identical workers on 2 cores, 256 samples each: the host is saturated,
  // so the plan fills the cheapest CPU first and a worker that looks dearer
  // gets nothing. Worker 7's first measured step is a 3x burst (a shared
  // host's noise: property seeds 71 and 204 held such twins 0 to 151 samples
  // apart); idled on that one sample, it would not be measured again for
  // hundreds of steps. One sample of its CPU is 0.3% of the step: it is kept
  // until its line could have been corrected, and is.
  SharedHost h{std::vector<double>(8, 0.001), std::vector<double>(8, 0.0)};
  auto p = adaptive(8, 2048, one_host(8, 2.0));
  for (int s = 0; s < 60; ++s) {
    Observation o = h.step(p->split());
    if (s == 1) o.compute_seconds[7] *= 3.0, o.cpu_seconds[7] *= 3.0;
    p->observe(o);
    const Split now = p->split();
    const auto [lo, hi] = std::minmax_element(now.begin(), now.end());
    if (s >= 20) {
      EXPECT_LE(*hi - *lo, 1u) << "step " << s << ": " << ::testing::PrintToString(now);
    }
  }
}

TEST(AdaptiveOnHosts, AnEarlyOutlierDoesNotLeaveASlowdownAtTheEqualSplit) {
  // 4 workers on 2 cores, 0.4 ms of CPU per sample, CPU-seconds read with 30%
  // more scatter (one read in a few hundred clamped to 0.1x); three of the
  // four sleep 2.4 ms per sample from step 12 (the bench's recovery scenario).
  // A first CPU read of 0.1x once made its worker's noise estimate 2.5 and
  // its error 1.5, the Grouper joined it to the slowed workers' unit and the
  // split stayed equal through the slowdown (3 of these 400 seeds). None may.
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    SharedHost h{{0.0004, 0.0004, 0.0004, 0.0004}, {0, 0, 0, 0}};
    h.noise = 0.1, h.cpu_noise = 0.3, h.rng.seed(seed);
    auto p = adaptive(4, 512, one_host(4, 2.0));
    int equal_steps = 0;
    for (int s = 0; s < 30; ++s) {
      if (s == 12) h.wait = {0, 0.0024, 0.0024, 0.0024};
      p->observe(h.step(p->split()));
      if (s >= 16 && p->split() == Split{128, 128, 128, 128}) ++equal_steps;
    }
    EXPECT_LT(equal_steps, 8) << "seed " << seed;
  }
}

// The benchmark's identical row (4 cnn workers on the 2 cores, 256 samples):
// in one repetition the first measured step's CPU time was 35-55% high on
// two workers, the first decision (every line one sample) set them apart
// and they stayed at one sample each. `overhead` CPU-seconds per step make
// that split cheaper or not.
struct BurstOnTwoFirstSamples {
  SharedHost host;
  std::unique_ptr<Policy> policy;
  BurstOnTwoFirstSamples(std::uint64_t seed, double overhead)
      : host{std::vector<double>(4, 0.00023), std::vector<double>(4, 0.0)},
        policy(adaptive(4, 256, one_host(4, 2.0))) {
    host.noise = 0.1, host.cpu_noise = 0.1, host.overhead = overhead, host.rng.seed(seed);
  }
  void step(int s) {
    Observation o = host.step(policy->split());
    if (s == 1) {
      o.cpu_seconds[1] *= 1.45, o.compute_seconds[1] *= 1.45;
      o.cpu_seconds[2] *= 1.5, o.compute_seconds[2] *= 1.5;
    }
    policy->observe(o);
  }
};

TEST(AdaptiveOnHosts, IdenticalWorkersPartedByAFirstSampleInABurstAreEvenAgainWhereNothingIsSaved) {
  // No per-step overhead: a split of the host's CPU among identical workers
  // costs the same however it is made, so a first decision on bursty first
  // samples may part them (it does in most of these seeds) but their next
  // samples, at any batch, show one cost per sample and they are one unit.
  std::size_t parted = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    BurstOnTwoFirstSamples w(seed, 0.0);
    for (int s = 0; s < 60; ++s) {
      w.step(s);
      const Split now = w.policy->split();
      const auto [lo, hi] = std::minmax_element(now.begin(), now.end());
      if (s == 1 && *hi - *lo > 1) ++parted;
      if (s >= 5) {
        EXPECT_LE(*hi - *lo, 1u) << "seed " << seed << " step " << s << ": " << ::testing::PrintToString(now);
      }
    }
  }
  EXPECT_GT(parted, 0u);  // else the burst parted no one and this tests nothing
}

TEST(AdaptiveOnHosts, WithAPerStepCpuOverheadABurstOnFirstSamplesCostsNoMoreThanAMoveIsWorth) {
  // 2 ms of CPU per step for each worker holding samples: two workers at 128
  // each on the 2 cores take 31.4 ms a step, four at 64 take 33.4 ms, and
  // 85, 85, 85 and 1 take 33.4 ms too (the one-sample worker still pays its
  // overhead). Parted by the burst, the policy may stay parted (two of these
  // seeds hold one worker at one sample to the end: docs/allocation.md,
  // "Known limits", an overhead mistaken for a per-sample cost), but never
  // at a cost: over the run no slower than equal by more than a move is
  // worth (min_gain; a probe of an idle worker costs a step a little).
  const double equal = 0.5 * 4.0 * (0.002 + 64.0 * 0.00023);
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    BurstOnTwoFirstSamples w(seed, 0.002);
    double sum = 0.0;
    for (int s = 0; s < 60; ++s) {
      w.step(s);
      if (s >= 10) sum += w.host.modeled;
    }
    EXPECT_LE(sum / 50.0, (1.0 + AdaptiveTuning{}.min_gain) * equal) << "seed " << seed;
  }
}

TEST(AdaptiveOnHosts, DevicesTooSlowForOneSampleBesideASaturatedHostAreIdle) {
  // Property training seed 115's shape: two workers of 10 ms CPU a sample on
  // a 1-core host, two devices beside it (off any host, no CPU) of 0.5 s a
  // sample, 40 samples. [20, 20, 0, 0] ends at 0.4 s; the rounding of the
  // host model's water-filling gives each device 1 sample (0.5 s), which no
  // single-sample move undid while every worker was priced only with its
  // host (1.25x the best split). Settled, the devices are idle but for the
  // probes an idle worker gets.
  SharedHost h{{0.01, 0.01, 0.0, 0.0}, {0.0, 0.0, 0.5, 0.5}};
  h.cores = 1.0;
  Placement place;
  place.host = {0, 0, kNoHost, kNoHost}, place.cpus.assign(4, 1.0), place.host_cores = {1.0};
  auto p = adaptive(4, 40, place);
  std::vector<double> modeled;
  for (int s = 0; s < 80; ++s) {
    p->observe(h.step(p->split()));
    if (s >= 20) modeled.push_back(h.modeled);
  }
  std::nth_element(modeled.begin(), modeled.begin() + static_cast<std::ptrdiff_t>(modeled.size() / 2), modeled.end());
  EXPECT_NEAR(modeled[modeled.size() / 2], 0.4, 0.01) << ::testing::PrintToString(p->split());
}

}  // namespace
}  // namespace hetrain::alloc

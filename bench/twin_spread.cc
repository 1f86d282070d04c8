// How far apart noise alone sets two identical workers ("twins": the same
// speed, the same noise process) when their noise is replayed from a recorded
// trace the way the simulator replays it (sim/noise.h: blocks of `block`
// steps from random offsets of random recorded ranks), and what the policy's
// Estimator makes of it. Each of `pairs` pairs runs `steps` steps at a
// constant 0.32 s for 32 samples times its multiplier; from step kSettle on
// (the property's first checked step) it counts the steps where
//  - the twins' mean times over the last kWindow steps differ by more than
//    5% (the property's spread) and 20%: what any observer with that memory
//    sees, whatever its model;
//  - their Estimator keys (time per sample, as the Proposer compares them)
//    differ by more than the Grouper's tolerance for a merge (the larger of
//    `alike` and clip_sigmas combined standard errors) and for a held
//    boundary (twice that); also the share of pairs for which that happens
//    at some checked step (the property asks for every step).
// Prints one line per trace. Usage: twin_spread TRACE.csv [pairs=200]
// [steps=1000] [block=20]. Plain C++: its figures go to docs/simulation.md.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <numeric>

#include "hetrain/alloc/estimator.h"
#include "hetrain/sim/noise.h"

namespace {

constexpr std::size_t kSettle = 50;   // the property's first checked step (tests/sim/test_property.cc)
constexpr std::size_t kWindow = 50;   // steps an observer's memory spans: the settle period again
constexpr double kBatch = 32.0;       // samples a step, as bench/cusum_false_alarms.cc
constexpr double kSeconds = 0.32;     // its noise-free time

struct Counts {
  std::size_t checked = 0, mean5 = 0, mean20 = 0, merge = 0, hold = 0;
  std::size_t pairs_merge = 0, pairs_hold = 0;  // pairs beyond either at some checked step
};

// The Proposer's key: the planned time per sample where the worker runs,
// before the noise margin and the mean factor (which scale the plan only),
// at its level before a change still on test.
double key(const hetrain::alloc::LineEstimate& l, const hetrain::alloc::AdaptiveTuning& t) {
  return l.predict(kBatch) / kBatch * std::exp(-l.unconfirmed_shift(t));
}

void run_pair(hetrain::sim::NoiseStreams& noise, const hetrain::sim::WorkerGroup& g, long steps, Counts& c) {
  const hetrain::alloc::AdaptiveTuning t;
  hetrain::alloc::LineEstimate line[2];
  std::deque<double> recent[2];
  noise.reset(2);
  const std::size_t merge = c.merge, hold = c.hold;
  for (long k = 0; k < steps; ++k) {
    for (std::size_t w = 0; w < 2; ++w) {
      const double q = kSeconds * noise.draw(w, g);
      line[w].drift(t);
      line[w].observe(kBatch, q, t);
      recent[w].push_back(q);
      if (recent[w].size() > kWindow) recent[w].pop_front();
    }
    if (static_cast<std::size_t>(k) < kSettle) continue;
    ++c.checked;
    const double m0 = std::accumulate(recent[0].begin(), recent[0].end(), 0.0);
    const double m1 = std::accumulate(recent[1].begin(), recent[1].end(), 0.0);
    const double apart = std::fabs(std::log(m0 / m1));
    c.mean5 += apart > std::log(1.05) ? 1 : 0;
    c.mean20 += apart > std::log(1.2) ? 1 : 0;
    // As the Grouper's share(): a held boundary is widened by the reach of a change on test.
    const double gap = std::fabs(std::log(key(line[0], t) / key(line[1], t)));
    const double combined = std::hypot(line[0].error(kBatch), line[1].error(kBatch));
    const double reach = std::hypot(line[0].reach(t), line[1].reach(t));
    c.merge += gap > std::max(t.alike, t.clip_sigmas * combined) ? 1 : 0;
    c.hold += gap > 2.0 * std::max(t.alike, t.clip_sigmas * std::hypot(combined, reach)) ? 1 : 0;
  }
  c.pairs_merge += c.merge > merge ? 1 : 0;
  c.pairs_hold += c.hold > hold ? 1 : 0;
}

long positive(int argc, char** argv, int i, long fallback) {
  if (argc <= i) return fallback;
  char* end = nullptr;
  const long v = std::strtol(argv[i], &end, 10);
  return *end == '\0' && v > 0 ? v : -1;
}

}  // namespace

int main(int argc, char** argv) {
  const long pairs = positive(argc, argv, 2, 200), steps = positive(argc, argv, 3, 1000);
  const long block = positive(argc, argv, 4, 20);
  if (argc < 2 || pairs <= 0 || steps <= static_cast<long>(kSettle) || block <= 0) {
    std::fprintf(stderr, "usage: twin_spread TRACE.csv [pairs>0] [steps>%zu] [block>0]\n", kSettle);
    return 2;
  }
  hetrain::sim::WorkerGroup g;
  try {
    g.noise_model.trace = hetrain::sim::load_trace(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "twin_spread: %s\n", e.what());
    return 2;
  }
  g.noise_model.kind = hetrain::sim::NoiseKind::kTrace;
  g.noise_model.block = static_cast<std::size_t>(block);
  hetrain::sim::NoiseStreams noise(1);
  Counts c;
  for (long p = 0; p < pairs; ++p) run_pair(noise, g, steps, c);
  auto pct = [&](std::size_t n) { return 100.0 * static_cast<double>(n) / static_cast<double>(c.checked); };
  auto of_pairs = [&](std::size_t n) { return 100.0 * static_cast<double>(n) / static_cast<double>(pairs); };
  std::printf(
      "%s (blocks of %ld, %ld pairs x %ld steps): twins' last-%zu-step mean times apart by >5%% in %.1f%% of "
      "steps, >20%% in %.1f%%; Estimator keys beyond the merge tolerance in %.2f%% of steps (%.0f%% of pairs), "
      "beyond the hold in %.2f%% (%.0f%% of pairs)\n",
      argv[1], block, pairs, steps, kWindow, pct(c.mean5), pct(c.mean20), pct(c.merge), of_pairs(c.pairs_merge),
      pct(c.hold), of_pairs(c.pairs_hold));
  return 0;
}

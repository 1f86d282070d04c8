#include "hetrain/sim/oracle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "hetrain/sim/noise.h"
#include "hetrain/sim/world.h"

namespace hetrain::sim {
namespace {

constexpr int kBisections = 100;           // halvings of the makespan interval (down to double rounding)
constexpr double kTieFraction = 1e-12;     // finish times this close count as tied
constexpr std::size_t kMovesPerSample = 4; // local search: at most this many moves per sample of the batch

// Expected seconds of b samples on rank r alone on its machine.
double alone(const WorldView& w, std::size_t r, std::size_t b) {
  const WorkerGroup& g = (*w.groups)[(*w.rank_group)[r]];
  const WorkCost cost = cost_of(g, b);
  const double cpus = g.machine == kNoMachine ? 1.0 : std::min(cpu_cap(g), w.cluster->machines[g.machine].cores);
  return mean_multiplier(g) * (cost.cpu / cpus + cost.device);
}

// The most samples (up to `limit`) rank r does alone within `t` seconds.
std::size_t most_within(const WorldView& w, std::size_t r, double t, std::size_t limit) {
  std::size_t lo = 0, hi = limit;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo + 1) / 2;
    if (alone(w, r, mid) <= t) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

std::vector<std::size_t> independent_split(const WorldView& w, std::size_t batch, std::size_t limit) {
  const std::size_t n = w.rank_group->size();
  auto fill = [&](double t) {
    std::vector<std::size_t> b(n);
    for (std::size_t r = 0; r < n; ++r) b[r] = most_within(w, r, t, limit);
    return b;
  };
  auto total = [](const std::vector<std::size_t>& b) { return std::accumulate(b.begin(), b.end(), std::size_t{0}); };
  double lo = 0.0, hi = 0.0;
  for (std::size_t r = 0; r < n; ++r) hi = std::max(hi, alone(w, r, limit));
  for (int k = 0; k < kBisections && hi - lo > kTieFraction * hi; ++k) {
    const double mid = 0.5 * (lo + hi);
    (total(fill(mid)) >= batch ? hi : lo) = mid;
  }
  std::vector<std::size_t> b = fill(hi);
  for (std::size_t extra = total(b); extra > batch; --extra) {  // the costliest last samples go
    std::size_t worst = n;
    for (std::size_t r = 0; r < n; ++r) {
      if (b[r] > 0 && (worst == n || alone(w, r, b[r]) > alone(w, worst, b[worst]))) worst = r;
    }
    --b[worst];
  }
  return b;
}

struct Score {
  double makespan = 0.0;
  double squares = 0.0;
  bool operator<(const Score& o) const {
    if (makespan < o.makespan * (1.0 - kTieFraction)) return true;
    return makespan <= o.makespan * (1.0 + kTieFraction) && squares < o.squares * (1.0 - kTieFraction);
  }
};

Score score(const std::vector<double>& finish) {
  Score s;
  for (const double f : finish) {
    s.makespan = std::max(s.makespan, f);
    s.squares += f * f;
  }
  return s;
}

// Workers of one group holding as many samples are alike: one of each.
std::vector<std::size_t> representatives(const WorldView& w, const std::vector<std::size_t>& b) {
  std::vector<std::size_t> out;
  for (std::size_t r = 0; r < b.size(); ++r) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](std::size_t u) {
      return (*w.rank_group)[u] == (*w.rank_group)[r] && b[u] == b[r];
    });
    if (!seen) out.push_back(r);
  }
  return out;
}

// The best move of one sample between two workers, if it improves the
// score. Any worker may give: on a shared machine a worker that is not the
// slowest frees cores for the one that is.
bool improve(const WorldView& w, std::vector<std::size_t>& b, std::size_t limit) {
  const Score now = score(expected_finish(w, b));
  const std::vector<std::size_t> alike = representatives(w, b);
  Score best = now;
  std::size_t from = 0, to = 0;
  for (const std::size_t s : alike) {
    if (b[s] == 0) continue;
    for (const std::size_t t : alike) {
      if (t == s || b[t] >= limit) continue;
      --b[s];
      ++b[t];
      const Score tried = score(expected_finish(w, b));
      ++b[s];
      --b[t];
      if (tried < best) {
        best = tried;
        from = s;
        to = t;
      }
    }
  }
  if (!(best < now)) return false;
  --b[from];
  ++b[to];
  return true;
}

// `b` with each group's samples spread evenly over its members (to one
// sample, the lowest ranks first): identical workers held equal.
std::vector<std::size_t> evened(const WorldView& w, const std::vector<std::size_t>& b) {
  const std::size_t groups = w.groups->size();
  std::vector<std::size_t> sum(groups, 0), members(groups, 0), given(groups, 0);
  for (std::size_t r = 0; r < b.size(); ++r) sum[(*w.rank_group)[r]] += b[r], ++members[(*w.rank_group)[r]];
  std::vector<std::size_t> out(b.size());
  for (std::size_t r = 0; r < b.size(); ++r) {
    const std::size_t g = (*w.rank_group)[r];
    out[r] = sum[g] / members[g] + (given[g]++ < sum[g] % members[g] ? 1 : 0);
  }
  return out;
}

}  // namespace

std::vector<double> expected_finish(const WorldView& w, const std::vector<std::size_t>& split) {
  std::vector<WorkCost> cost(split.size());
  for (std::size_t r = 0; r < split.size(); ++r) {
    const WorkerGroup& g = (*w.groups)[(*w.rank_group)[r]];
    cost[r] = cost_of(g, split[r]);
    const double m = mean_multiplier(g);
    cost[r].cpu *= m;
    cost[r].device *= m;
  }
  return finish_times(*w.cluster, *w.groups, *w.rank_group, ranks_by_machine(*w.cluster, *w.groups, *w.rank_group),
                      cost);
}

std::vector<std::size_t> oracle_split(const WorldView& w, std::size_t batch, std::size_t max_local) {
  const std::size_t limit = max_local > 0 ? std::min(max_local, batch) : batch;
  std::vector<std::size_t> b = independent_split(w, batch, limit);
  bool shared = false;
  for (const auto& ranks : ranks_by_machine(*w.cluster, *w.groups, *w.rank_group)) shared = shared || ranks.size() > 1;
  if (!shared) return b;
  for (std::size_t moves = 0; moves < kMovesPerSample * batch && improve(w, b, limit); ++moves) {
  }
  // Many splits of a shared machine tie (processor sharing spreads its cores
  // whoever holds the samples): of those, the one that treats identical
  // workers alike, so that only a real gain sets them apart.
  std::vector<std::size_t> even = evened(w, b);
  const double makespan = score(expected_finish(w, b)).makespan;
  if (score(expected_finish(w, even)).makespan <= makespan * (1.0 + kTieFraction)) return even;
  return b;
}

std::vector<double> true_initial_speeds(const Cluster& c) {
  std::vector<std::size_t> rank_group;
  for (std::size_t g = 0; g < c.groups.size(); ++g) rank_group.insert(rank_group.end(), c.groups[g].count, g);
  const WorldView w{&c, &c.groups, &rank_group};
  const std::size_t share = std::max<std::size_t>(1, c.global_batch / std::max<std::size_t>(1, rank_group.size()));
  std::vector<double> speeds;
  for (std::size_t r = 0; r < rank_group.size(); ++r) speeds.push_back(static_cast<double>(share) / alone(w, r, share));
  return speeds;
}

}  // namespace hetrain::sim

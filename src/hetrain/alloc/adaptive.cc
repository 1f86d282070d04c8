#include "hetrain/alloc/adaptive.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "hetrain/common/error.h"
#include "hetrain/common/median.h"

namespace hetrain::alloc {
namespace {

std::size_t total(const std::vector<std::size_t>& v) { return std::accumulate(v.begin(), v.end(), std::size_t{0}); }

bool usable(const WorkerModel& m) { return m.speed > 0.0 && std::isfinite(m.speed) && std::isfinite(m.overhead); }

// Each unit's samples dealt out among its m members: sum / m each, and the
// sum % m left over to the members `offset` further round from its lowest
// ranks. With `within_one`, only units whose members already hold within one
// sample of each other (a rearrangement, no move); the others as they are.
std::vector<std::size_t> dealt(const std::vector<std::size_t>& split, const std::vector<std::size_t>& unit,
                               std::size_t offset, bool within_one) {
  if (unit.size() != split.size() || unit.empty()) return split;
  const std::size_t units = *std::max_element(unit.begin(), unit.end()) + 1;
  std::vector<std::size_t> sum(units, 0), members(units, 0), lo(units, std::numeric_limits<std::size_t>::max()),
      hi(units, 0), member(units, 0);
  for (std::size_t i = 0; i < unit.size(); ++i) {
    const std::size_t u = unit[i];
    sum[u] += split[i], ++members[u], lo[u] = std::min(lo[u], split[i]), hi[u] = std::max(hi[u], split[i]);
  }
  std::vector<std::size_t> out = split;
  for (std::size_t i = 0; i < unit.size(); ++i) {
    const std::size_t u = unit[i], m = members[u], k = member[u]++;
    if (!within_one || hi[u] <= lo[u] + 1) out[i] = sum[u] / m + ((k + m - offset % m) % m < sum[u] % m ? 1 : 0);
  }
  return out;
}

}  // namespace

AdaptivePolicy::AdaptivePolicy(std::size_t workers, std::size_t global_batch, Bounds bounds, AdaptiveTuning tuning,
                               const std::vector<WorkerModel>& known, Placement placement)
    : global_batch_(global_batch),
      bounds_(bounds),
      tuning_(tuning),
      proposer_(global_batch, bounds, (placement.check(workers), std::move(placement)), tuning),
      estimator_(workers, tuning, proposer_.on_cpu()),
      control_(tuning),
      samples_(workers) {
  incumbent_ = split_proportional(std::vector<double>(workers, 1.0), global_batch, bounds_);
  split_ = incumbent_;
  seed(known);
  issue();
}

// A resumed run: the saved lines; a new rank planned at the median known
// speed until its first sample, which starts its line as any first sample
// does (a guess is not a measurement: held as sure as a saved line, it
// took a joiner 3x slower than guessed tens of steps to shed).
void AdaptivePolicy::seed(const std::vector<WorkerModel>& known) {
  std::vector<double> speeds;
  for (const auto& k : known)
    if (usable(k)) speeds.push_back(k.speed);
  if (speeds.empty()) return;
  const double typical = upper_median(speeds);
  for (std::size_t i = 0; i < incumbent_.size(); ++i) {
    const bool have = i < known.size() && usable(known[i]);
    estimator_.seed(i, have ? std::max(0.0, known[i].overhead) : 0.0, have ? known[i].speed : typical,
                    static_cast<double>(incumbent_[i]), !have);
  }
  incumbent_ = split_ = proposer_.propose(estimator_, incumbent_).split;
}

void AdaptivePolicy::observe(const Observation& obs) {
  HETRAIN_ENFORCE_EQ(obs.local_batch.size(), incumbent_.size());
  HETRAIN_ENFORCE_EQ(obs.compute_seconds.size(), incumbent_.size());
  observe_step(obs);
  issue();
}

// The rounding's remainder is no property of a worker: the members of a unit
// (alike, planned at one share) that hold q and q + 1 samples take the extra
// sample in turn, one member further each step. Given always to the lowest
// ranks, it made them read dearer wherever cost is not a line (four twins of
// a tile of 4 at [13, 13, 13, 12] pay for 16, 16, 16 and 12 samples) and
// showed no member's line a second batch; in turn, every member runs both.
// What is kept and judged is split_: a step run at a split that differs from
// it only by where each unit's remainder lies was run at it (the Python
// plug-in observes a step two decisions late, a different turn).
void AdaptivePolicy::issue() { issued_ = turned(split_, seen_); }

// `split` with each unit's extra samples (where its members hold q and q + 1)
// on the members `offset` further round from its lowest ranks; at offset 0,
// on its lowest ranks.
std::vector<std::size_t> AdaptivePolicy::turned(const std::vector<std::size_t>& split, std::size_t offset) const {
  return dealt(split, proposer_.units(), offset, true);
}

// The split a step ran, as kept: one that differs from the split running or
// the incumbent only by where each unit's remainder lies (under today's
// units: a step observed late and issued under others times nothing) was
// run at it.
std::vector<std::size_t> AdaptivePolicy::as_kept(const std::vector<std::size_t>& ran) const {
  if (ran == issued_) return split_;
  const std::vector<std::size_t> even = turned(ran, 0);
  if (even == turned(split_, 0)) return split_;
  if (even == turned(incumbent_, 0)) return incumbent_;
  return ran;
}

void AdaptivePolicy::observe_step(const Observation& obs) {
  const std::size_t step = seen_++;
  record_step_time(obs, step);
  last_split_ = as_kept(obs.local_batch);
  last_full_ = total(obs.local_batch) == global_batch_;
  last_compute_ = *std::max_element(obs.compute_seconds.begin(), obs.compute_seconds.end());
  // The first step pays for lazy initialisation (and an emulated slow worker
  // stretches it): its times say nothing about the split.
  if (step == 0) return;
  learn(obs);
  if (!estimator_.all_known()) return;
  control_.ready();
  judge_trial();
  if (control_.state() == TrialState::kSteady) decide(step);
}

// The previous step's time, at the split observed last. A short batch (an
// epoch's last) says nothing about a full split; the first step's time is
// lazy initialisation's.
void AdaptivePolicy::record_step_time(const Observation& obs, std::size_t step) {
  const double seconds = obs.previous_step_seconds;
  if (step < 2 || !last_full_ || !(seconds > 0.0) || !std::isfinite(seconds)) return;
  const double rest = std::max(0.0, seconds - last_compute_);
  if (control_.state() == TrialState::kTrial && last_split_ == split_) {
    control_.trial_time(seconds, rest);
  } else if (last_split_ == incumbent_) {
    const bool in_trial = control_.state() == TrialState::kTrial;
    if (control_.incumbent_time(seconds, rest) && in_trial) split_ = incumbent_;
  }
}

void AdaptivePolicy::learn(const Observation& obs) {
  const bool cpu = obs.cpu_seconds.size() == incumbent_.size();
  const bool wait = obs.wait_seconds.size() == incumbent_.size();
  for (std::size_t i = 0; i < incumbent_.size(); ++i) {
    samples_[i] = {static_cast<double>(obs.local_batch[i]), obs.compute_seconds[i], cpu ? obs.cpu_seconds[i] : -1.0,
                   wait ? obs.wait_seconds[i] : -1.0};
  }
  if (!estimator_.observe(samples_)) return;
  // A worker changed: a trial's times would compare two regimes.
  if (control_.state() == TrialState::kTrial) split_ = incumbent_;
  control_.changed();
}

void AdaptivePolicy::judge_trial() {
  const bool checking = control_.state() == TrialState::kCheck;
  switch (control_.verdict()) {
    case Verdict::kKeep:
      incumbent_ = split_;
      break;
    case Verdict::kRevert:
      if (checking) incumbent_ = previous_;  // a move taken untested, shown to harm
      split_ = incumbent_;
      ++stats_.reverts;
      break;
    case Verdict::kUndecided:
      break;
  }
}

// Members of one unit hold equal shares (to one sample, the lowest ranks
// first): a move the model calls neutral, taken at once.
void AdaptivePolicy::even_out_units() {
  std::vector<std::size_t> even = dealt(incumbent_, proposer_.units(), 0, false);
  if (even == incumbent_) return;
  incumbent_ = split_ = std::move(even);
  ++stats_.moves;
}

void AdaptivePolicy::decide(std::size_t step) {
  const Proposal p = proposer_.propose(estimator_, incumbent_);
  even_out_units();
  if (p.split == incumbent_) return;
  const double rest = control_.incumbent().size() > 0 ? control_.incumbent().rest() : 0.0;
  const double gain = p.gain(rest);
  // Optimism under uncertainty: where the optimistic plan would use an idle
  // worker at no predicted cost, it is measured (or it is never seen again),
  // as cheaply as can be: one sample.
  const std::vector<std::size_t> probe = probe_of(p.split);
  if (probe != incumbent_ && p.best <= p.now && control_.probe() == Action::kMove) {
    incumbent_ = split_ = probe;
    ++stats_.moves;
    return;
  }
  // A move the step time cannot judge must beat what the estimates' own error
  // could explain; one it can judge is left to the trial's test.
  const bool judged = control_.steps_to_show(gain) <= static_cast<double>(tuning_.max_trial_steps);
  if (!judged && !(gain > p.error * p.now / (p.now + rest))) return;
  switch (control_.consider(gain, p.split, step)) {
    case Action::kChecked:
      previous_ = incumbent_;
      [[fallthrough]];
    case Action::kMove:
      incumbent_ = split_ = p.split;
      ++stats_.moves;
      break;
    case Action::kTrial:
      split_ = p.split;
      ++stats_.moves;
      break;
    case Action::kNone:
      break;
  }
}

// The incumbent with one sample for each worker it leaves idle and
// `proposal` uses, each taken from the worker holding the most (which keeps
// at least one).
std::vector<std::size_t> AdaptivePolicy::probe_of(const std::vector<std::size_t>& proposal) const {
  std::vector<std::size_t> s = incumbent_, idle;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (incumbent_[i] == 0 && proposal[i] > 0) idle.push_back(i);
  give_one_each(s, idle, std::max<std::size_t>(bounds_.min_local, 1));
  return s;
}

std::vector<WorkerModel> AdaptivePolicy::learned() const {
  std::vector<WorkerModel> out;
  for (std::size_t i = 0; i < estimator_.workers(); ++i) {
    const LineEstimate& w = estimator_.wall(i);
    out.push_back(w.known() ? WorkerModel{w.overhead(), 1.0 / w.per_sample()} : WorkerModel{0.0, 0.0});
  }
  return out;
}

ProfiledStaticPolicy::ProfiledStaticPolicy(std::size_t workers, std::size_t global_batch, Bounds bounds,
                                           std::size_t profile_steps, Placement placement)
    : inner_(workers, global_batch, bounds, AdaptiveTuning{}, {}, std::move(placement)),
      remaining_(profile_steps) {}

void ProfiledStaticPolicy::observe(const Observation& obs) {
  if (remaining_ == 0) return;
  --remaining_;
  inner_.observe(obs);
}

}  // namespace hetrain::alloc

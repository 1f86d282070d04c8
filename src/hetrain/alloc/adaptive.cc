#include "hetrain/alloc/adaptive.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>

#include "hetrain/common/error.h"

namespace hetrain::alloc {
namespace {

// Step times at one split that measure its noise.
constexpr std::size_t kMinNoiseTimes = 3;
// Earlier times at a split that a shift of its step time is judged against.
constexpr std::size_t kMinShiftBaseline = 2;
// A shift of the step time must also exceed this many noise standard deviations.
constexpr double kShiftNoiseBands = 3.0;
// Rejected proposals remembered (the newest), for AdaptiveConfig::retry_distance.
constexpr std::size_t kRememberedRejections = 8;
// A model proposal is credible when its trial showed at least this share of
// the compute gain it predicted.
constexpr double kCredibleShare = 0.5;
// Times of the replaced split a paused trial waits for (at most).
constexpr std::size_t kBaselineTimes = 8;
// A step's time arrives with the next step's observation.
constexpr std::size_t kEvidenceLagSteps = 1;

std::size_t total(const std::vector<std::size_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::size_t{0});
}

// The share of the batch that moves between two splits of it.
double moved_share(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b, std::size_t batch) {
  double moved = 0.0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    moved += std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
  }
  return moved / (2.0 * static_cast<double>(batch));
}

}  // namespace

AdaptivePolicy::AdaptivePolicy(std::size_t workers, std::size_t global_batch, Bounds bounds,
                               AdaptiveConfig config, const std::vector<WorkerModel>& known,
                               Placement placement)
    : global_batch_(global_batch),
      bounds_(bounds),
      config_(config),
      cost_(workers, CostModel(config.model)),
      placement_(std::move(placement)),
      cpu_(workers, CostModel(config.model)),
      wait_(workers, CostModel(config.model)),
      incumbent_times_(config.step_window),
      probe_wait_(config.idle_probe_steps) {
  placement_.check(workers);
  credible_ = !placement_.oversubscribed();
  incumbent_ = split_proportional(std::vector<double>(workers, 1.0), global_batch, bounds_);
  split_ = incumbent_;
  std::vector<double> speeds;
  for (const auto& k : known)
    if (k.speed > 0.0 && std::isfinite(k.speed)) speeds.push_back(k.speed);
  if (speeds.empty()) return;
  std::nth_element(speeds.begin(), speeds.begin() + static_cast<std::ptrdiff_t>(speeds.size() / 2),
                   speeds.end());
  const double typical = speeds[speeds.size() / 2];
  for (std::size_t i = 0; i < workers; ++i) {
    const bool have = i < known.size() && known[i].speed > 0.0 && std::isfinite(known[i].speed);
    cost_[i].seed(have ? known[i].speed : typical, have ? std::max(0.0, known[i].overhead) : 0.0);
  }
  incumbent_ = solve_split(grouped_models().models, global_batch_, bounds_).split;
  split_ = incumbent_;
}

void AdaptivePolicy::observe(const Observation& obs) {
  HETRAIN_ENFORCE_EQ(obs.local_batch.size(), cost_.size());
  HETRAIN_ENFORCE_EQ(obs.compute_seconds.size(), cost_.size());
  const std::size_t step = seen_++;
  attribute(obs.previous_step_seconds, step);
  last_split_ = obs.local_batch;
  last_full_ = total(obs.local_batch) == global_batch_;
  last_compute_ = *std::max_element(obs.compute_seconds.begin(), obs.compute_seconds.end());
  if (probing_) review_probe(obs, step);
  if (step < config_.warmup_steps) return;
  if (learn(obs)) {
    // A worker really changed: forget the backoff and the old regime's times
    // (the change showed over the last change_run steps). A trial's times
    // would compare two regimes: back to the incumbent, measured afresh.
    const std::size_t since = trial_ ? step + 1 : step + 1 - std::min(step + 1, config_.model.change_run);
    if (trial_) {
      trial_.reset();
      split_ = incumbent_;
    }
    reset(since);
  } else if (trial_) {
    judge(step);
  }
  propose(step);
  plan_probe(step);
}

void AdaptivePolicy::review_probe(const Observation& obs, std::size_t step) {
  // A probed worker far from its model may have changed: probe again at once,
  // so its model sees the run of surprises a change needs; else wait longer.
  bool surprised = false;
  for (std::size_t i = 0; i < cost_.size(); ++i) {
    if (incumbent_[i] > 0 || obs.local_batch[i] == 0 || !cost_[i].fitted()) continue;
    const double ratio = obs.compute_seconds[i] / cost_[i].predict(static_cast<double>(obs.local_batch[i]));
    surprised = surprised || std::abs(ratio - 1.0) > config_.model.change_threshold;
  }
  if (!surprised) probe_wait_ = std::min(2 * probe_wait_, config_.max_backoff_steps);
  next_probe_step_ = surprised ? step + 1 : step + probe_wait_;
  probing_ = false;
  split_ = trial_ ? trial_->split : incumbent_;
}

void AdaptivePolicy::plan_probe(std::size_t step) {
  if (trial_ || config_.idle_probe_steps == 0) return;
  std::vector<std::size_t> probe = incumbent_;
  for (std::size_t i = 0; i < probe.size(); ++i) {
    if (probe[i] > 0) continue;
    // One sample for the idle worker, from the largest part (the lowest rank on a tie).
    const auto largest = std::max_element(probe.begin(), probe.end());
    if (*largest <= std::max<std::size_t>(bounds_.min_local, 1) || bounds_.max_local == 0) return;
    --*largest;
    probe[i] = 1;
  }
  if (probe == incumbent_) {
    next_probe_step_ = 0;  // nobody idle: the next idle worker waits a full interval
    return;
  }
  if (next_probe_step_ == 0) next_probe_step_ = step + probe_wait_;
  if (step + 1 < next_probe_step_) return;
  split_ = std::move(probe);
  probing_ = true;
}

void AdaptivePolicy::attribute(double seconds, std::size_t step) {
  // The time is the previous step's, which ran at the split observed last; a
  // short batch (an epoch's last) says nothing about any full split.
  if (step == 0 || !last_full_ || step - 1 < config_.ignored_step_times) return;
  if (!(seconds > 0.0) || !std::isfinite(seconds)) return;
  const StepTime t{step - 1, seconds, std::min(last_compute_, seconds)};
  if (trial_ && last_split_ == trial_->split) {
    trial_->times.add(t);
  } else if (last_split_ == incumbent_) {
    add_incumbent_time(t);
  }
}

void AdaptivePolicy::add_incumbent_time(const StepTime& t) {
  // A shift is judged against the times before the run that may show it.
  const std::vector<double> before =
      incumbent_times_.values(Part::kStep, shift_.active() ? shift_.first_step() : t.step);
  bool shifted = false;
  if (!trial_ && before.size() >= kMinShiftBaseline) {
    const double threshold = std::max(config_.step_change_threshold, kShiftNoiseBands * noise(Part::kStep));
    shifted = shift_.add(t, t.seconds / median_of(before), threshold, config_.step_change_run);
  }
  incumbent_times_.add(t);
  if (shifted) reset(shift_.first_step());
  measure_noise();
}

bool AdaptivePolicy::learn(const Observation& obs) {
  bool changed = false;
  const bool cpu = obs.cpu_seconds.size() == cost_.size(), wait = obs.wait_seconds.size() == cost_.size();
  for (std::size_t i = 0; i < cost_.size(); ++i) {
    const auto b = static_cast<double>(obs.local_batch[i]);
    if (cpu) cpu_[i].observe({b, obs.cpu_seconds[i]});
    // Only time actually slept fits the model: a worker that never sleeps has none.
    if (wait && obs.wait_seconds[i] > 0.0) wait_[i].observe({b, obs.wait_seconds[i]});
    const std::size_t before = cost_[i].changes();
    cost_[i].observe({static_cast<double>(obs.local_batch[i]), obs.compute_seconds[i]});
    changed = changed || cost_[i].changes() != before;
  }
  return changed;
}

void AdaptivePolicy::judge(std::size_t step) {
  const Trial& t = *trial_;
  const std::size_t n = t.times.size(), m = incumbent_times_.size();
  // The times arrive a step late; past this step, waiting longer shows nothing.
  const bool overdue = step >= t.first_step + t.budget + kEvidenceLagSteps;
  if (n == 0 || m == 0) {
    if (!overdue) return;
    if (n == 0) {
      keep();  // no step times at all (a caller that measures none): the model decides
    } else {
      // The replaced split's times went unreported (a first step left out
      // for its lazy initialisation): go back and measure it, no backoff.
      trial_.reset();
      split_ = incumbent_;
    }
    return;
  }
  if (n < config_.min_trial_steps && !overdue) return;
  const Verdict v = compare(t.times);
  // Undecided after its budget, a trial goes on while its compute still looks
  // faster, up to max_trial_steps: a gain the budget underrated can still show.
  const bool spent = n >= config_.max_trial_steps || (n >= t.budget && !(v.compute_gain > 0.0));
  if (v.faster) {
    if (t.predicted_gain > 0.0) credible_ = v.compute_gain >= kCredibleShare * t.predicted_gain;
    plan_extension(v.compute_gain);
    keep();
  } else if (t.trusted && !v.slower && n >= t.budget) {
    keep();  // too small to show, and not slower: the credible model decides
  } else if (!v.slower && spent && !t.resumed && m < std::min(n, kBaselineTimes)) {
    pause();
  } else if (v.slower || spent) {
    revert(step);
  }
}

// Terms: g_c and g_r are the trial's gains, as shares of the replaced
// split's median step, in the slowest worker's compute and in the rest of the
// step; their standard errors are 1.2533 sqrt(s_t^2/n + s_b^2/m) (medians of n
// and m times of noise s_t and s_b). Faster: the compute gain clears the band while the rest is
// not worse beyond its noise, or the whole step's gain clears the band. So
// the allreduce's jitter, which no split causes, cannot hide a compute gain,
// and a move that costs outside the compute still shows. Slower: the whole
// step, or the compute alone, loses beyond the noise.
AdaptivePolicy::Verdict AdaptivePolicy::compare(const StepTimeLog& trial) const {
  const double base = incumbent_times_.median();
  const double n = static_cast<double>(trial.size()), m = static_cast<double>(incumbent_times_.size());
  auto gain = [&](Part p) { return (incumbent_times_.median(p) - trial.median(p)) / base; };
  // Each side with its own noise: the trial's once it has three times.
  auto error = [&](Part p) {
    const double own =
        trial.size() >= kMinNoiseTimes ? std::max(config_.min_step_noise, trial.noise(p, base)) : noise(p);
    return kMedianPerMean * std::sqrt(own * own / n + noise(p) * noise(p) / m);
  };
  const double gc = gain(Part::kCompute), gr = gain(Part::kRest);
  const double ec = error(Part::kCompute), er = error(Part::kRest), et = std::hypot(ec, er);
  const double bands = config_.keep_bands, floor = config_.min_step_gain;
  Verdict v;
  v.compute_gain = gc;
  v.faster = (gc > std::max(floor, bands * ec) && gr > -bands * er) || gc + gr > std::max(floor, bands * et);
  v.slower = gc + gr < -bands * et || gc < -std::max(floor, bands * ec);
  return v;
}

// The kept move made once more, from the trial's split (none if a part
// would leave the bounds): the model fits each split's contention as it
// finds it, so on shared cores its fixed point can stop short of the best.
void AdaptivePolicy::plan_extension(double measured_gain) {
  extension_.reset();
  if (!config_.extend_kept_moves) return;
  std::vector<std::size_t> next(incumbent_.size());
  for (std::size_t i = 0; i < next.size(); ++i) {
    const auto b =
        2 * static_cast<std::ptrdiff_t>(trial_->split[i]) - static_cast<std::ptrdiff_t>(incumbent_[i]);
    if (b < static_cast<std::ptrdiff_t>(bounds_.min_local) ||
        static_cast<std::size_t>(b) > bounds_.max_local) {
      return;
    }
    next[i] = static_cast<std::size_t>(b);
  }
  if (groups_.size() == next.size()) next = even_out(next, groups_, noise_by_rank(), noise_limit());
  extension_ = Extension{std::move(next), measured_gain};
}

void AdaptivePolicy::keep() {
  incumbent_ = std::move(trial_->split);
  incumbent_times_ = std::move(trial_->times);
  trial_.reset();
  shift_.clear();
  split_ = incumbent_;
  measure_noise();
}

void AdaptivePolicy::revert(std::size_t step) {
  ++stats_.reverts;
  if (trial_->predicted_gain > 0.0) credible_ = false;
  split_ = incumbent_;
  shift_.clear();
  if (extending_) {
    trial_.reset();  // exploration that did not pay: no backoff for the model's proposals
    return;
  }
  rejected_.push_back(std::move(trial_->split));
  if (rejected_.size() > kRememberedRejections) rejected_.erase(rejected_.begin());
  trial_.reset();
  extension_.reset();
  ++rejections_;
  std::size_t backoff = config_.backoff_steps;
  for (std::size_t i = 1; i < rejections_ && backoff < config_.max_backoff_steps; ++i) backoff *= 2;
  backoff = std::min(backoff, config_.max_backoff_steps);
  revert_step_ = step + 1;
  next_trial_step_ = step + 1 + backoff;
  // The incumbent's earlier times stay: nothing says the workers changed.
}

// Back to the incumbent to measure it, the trial kept aside (no backoff: it
// did not lose; the first steps of a run are the noisiest, and three times
// of them cannot judge a trial of twenty).
void AdaptivePolicy::pause() {
  paused_ = std::move(trial_);
  paused_->resumed = true;
  trial_.reset();
  split_ = incumbent_;
  shift_.clear();
}

// The paused trial again, once the incumbent has as many times as it (or
// kBaselineTimes), its earlier times kept.
bool AdaptivePolicy::resume(std::size_t step) {
  if (!paused_ || incumbent_times_.size() < std::min(paused_->times.size(), kBaselineTimes)) return false;
  Trial t = std::move(*paused_);
  paused_.reset();
  if (t.split == incumbent_) return false;
  t.first_step = step + 1;
  t.budget = config_.min_trial_steps;
  split_ = t.split;
  trial_ = std::move(t);
  ++stats_.moves;
  return true;
}

void AdaptivePolicy::reset(std::size_t first_step) {
  paused_.reset();
  extension_.reset();
  rejected_.clear();
  rejections_ = 0;
  next_trial_step_ = revert_step_ = 0;
  probe_wait_ = config_.idle_probe_steps;
  incumbent_times_.keep_since(first_step);
  shift_.clear();
}

void AdaptivePolicy::propose(std::size_t step) {
  if (trial_ || resume(step)) return;
  // A trial needs the current split's time to compare with: measured, or
  // that of the step just run, arriving with the next observation.
  const bool pending = last_full_ && last_split_ == incumbent_ && step >= config_.ignored_step_times;
  const std::size_t baseline = incumbent_times_.size() + (pending ? 1 : 0);
  if (baseline == 0) return;
  const std::optional<double> band = model_band();
  if (!band) return;
  const Grouping groups = grouped_models();
  groups_ = groups.group;
  // Identical workers hold equal shares: a change the model calls neutral.
  if (std::vector<std::size_t> even = even_out(incumbent_, groups.group, noise_by_rank(), noise_limit());
      even != incumbent_) {
    incumbent_ = split_ = std::move(even);
    ++stats_.moves;
  }
  if (extension_) {
    Extension e = std::move(*extension_);
    extension_.reset();
    if (start_trial(std::move(e.split), trial_budget(e.gain, baseline), step)) {
      extending_ = true;
      return;
    }
  }
  double now = 0.0;
  SolvedSplit best = best_split_for(groups, now);
  if (!(best.makespan < (1.0 - *band) * now) || best.split == incumbent_) return;
  if (!cooled_down(best.split, step)) return;
  const double reference = incumbent_times_.empty() ? now : incumbent_times_.median();
  const double gain = (now - best.makespan) / reference;
  std::size_t budget = trial_budget(gain, baseline);
  // A credible model's small gain: tried long enough to see a loss.
  const bool trusted = credible_ && budget == 0 && gain > config_.min_step_gain;
  if (trusted) budget = config_.trusted_trial_steps;
  if (start_trial(std::move(best.split), budget, step, gain)) {
    extending_ = false;
    trial_->trusted = trusted;
  }
}

bool AdaptivePolicy::start_trial(std::vector<std::size_t> split, std::size_t budget, std::size_t step,
                                 double predicted_gain) {
  if (budget == 0 || split == incumbent_) return false;
  split_ = split;
  trial_ = Trial{std::move(split), step + 1, budget, StepTimeLog(config_.step_window)};
  trial_->predicted_gain = predicted_gain;
  ++stats_.moves;
  return true;
}

bool AdaptivePolicy::cooled_down(const std::vector<std::size_t>& proposal, std::size_t step) const {
  if (rejections_ == 0) return true;
  const bool near = std::any_of(rejected_.begin(), rejected_.end(), [&](const std::vector<std::size_t>& r) {
    return moved_share(r, proposal, global_batch_) <= config_.retry_distance;
  });
  const std::size_t until =
      near ? next_trial_step_ : std::min(next_trial_step_, revert_step_ + config_.backoff_steps);
  return step + 1 >= until;
}

std::size_t AdaptivePolicy::trial_budget(double predicted_gain, std::size_t baseline) const {
  // Trial times n resolve the target when keep_bands standard errors of the
  // difference of medians, 1.2533 sigma sqrt(1/n + 1/baseline), fit in it.
  const double target = config_.detect_share * predicted_gain;
  if (!(target > config_.min_step_gain)) return 0;
  const double c = target / (config_.keep_bands * kMedianPerMean * noise(Part::kCompute));
  const double room = c * c - 1.0 / static_cast<double>(baseline);
  if (!(room > 0.0)) return 0;
  const double needed = std::ceil(1.0 / room);
  if (needed > static_cast<double>(config_.max_trial_steps)) return 0;
  return std::max(config_.min_trial_steps, static_cast<std::size_t>(needed));
}

void AdaptivePolicy::measure_noise() {
  if (incumbent_times_.size() < kMinNoiseTimes) return;
  const double scale = incumbent_times_.median();
  measured_noise_ =
      StepNoise{incumbent_times_.noise(Part::kStep, scale), incumbent_times_.noise(Part::kCompute, scale),
                incumbent_times_.noise(Part::kRest, scale)};
}

double AdaptivePolicy::noise(Part p) const {
  if (!measured_noise_) return std::max(config_.min_step_noise, config_.assumed_step_noise);
  const double measured = p == Part::kStep      ? measured_noise_->step
                          : p == Part::kCompute ? measured_noise_->compute
                                                : measured_noise_->rest;
  return std::max(config_.min_step_noise, measured);
}

ProfiledStaticPolicy::ProfiledStaticPolicy(std::size_t workers, std::size_t global_batch, Bounds bounds,
                                           std::size_t profile_steps, Placement placement)
    : inner_(workers, global_batch, bounds, AdaptiveConfig{}, {}, std::move(placement)),
      remaining_(profile_steps) {}

void ProfiledStaticPolicy::observe(const Observation& obs) {
  if (remaining_ == 0) return;
  --remaining_;
  inner_.observe(obs);
}

}  // namespace hetrain::alloc

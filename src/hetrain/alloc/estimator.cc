#include "hetrain/alloc/estimator.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "hetrain/common/median.h"

namespace hetrain::alloc {
namespace {

// A sample this many clips out (6 sigma, which Gaussian noise never reaches)
// is judged by how often the line's noise has thrown one that far.
constexpr double kFar = 2.0;

// The fewest residuals that can raise a CUSUM alarm, each clipped at
// clip_sigmas (3 with the tuning table's values).
std::size_t fewest_to_alarm(const AdaptiveTuning& t) {
  return static_cast<std::size_t>(std::ceil(t.cusum_limit / (t.clip_sigmas - t.cusum_drift)));
}

bool usable(double b, double q) { return b > 0.0 && q > 0.0 && std::isfinite(b) && std::isfinite(q); }

}  // namespace

void Cusum::push(double z, double drift) {
  up_ = std::max(0.0, up_ + z - drift);
  down_ = std::max(0.0, down_ - z - drift);
  up_run_ = up_ > 0.0 ? up_run_ + 1 : 0;
  down_run_ = down_ > 0.0 ? down_run_ + 1 : 0;
}

bool Cusum::alarm(double up, double down) {
  if (up_ < up && down_ < down) return false;
  rose_ = up_ >= up;
  const std::size_t run = rose_ ? up_run_ : down_run_;
  clear();
  run_ = run;
  return true;
}

// The Kalman filter assumes independent noise; a mean of AR(1) noise of
// lag-1 correlation phi varies (1 + phi) / (1 - phi) times as much.
double LineEstimate::error(double b) const {
  const double y = predict(b);
  const double phi = persist_.corr;
  const double var = (paa_ + 2.0 * b * pac_ + b * b * pcc_) * (1.0 + phi) / (1.0 - phi);
  return y > 0.0 ? std::sqrt(std::max(var, 0.0)) / y : 0.0;
}

void LineEstimate::drift(const AdaptiveTuning& t) {
  if (!known_) return;
  // The level's random walk: the whole line scales, Q = d^2 x x'.
  const double d2 = t.speed_drift * t.speed_drift;
  paa_ += d2 * a_ * a_, pac_ += d2 * a_ * c_, pcc_ += d2 * c_ * c_;
}

// The first sample: all of it per-sample cost, the overhead unknown up to
// half the step, the level known up to the prior noise.
void LineEstimate::start(double b, double q, const AdaptiveTuning& t) {
  const double sa2 = 0.25 * q * q, sy2 = t.prior_noise * t.prior_noise * q * q;
  a_ = 0.0, c_ = q / b;
  paa_ = sa2, pac_ = -sa2 / b, pcc_ = (sa2 + sy2) / (b * b);
  noise_ = t.prior_noise, mean_sq_ = 0.0, counted_ = 0.0;
  log_prior2_ = std::log(t.prior_noise * t.prior_noise);
  persist_ = Persistence{};
  persist_.tail = std::erfc(t.clip_sigmas / std::sqrt(2.0));  // the Gaussian design's share beyond the clip
  persist_.far = std::erfc(kFar * t.clip_sigmas / std::sqrt(2.0));  // ... and beyond kFar times it
  before_up_ = before_down_ = persist_, last_z_ = 0.0;
  known_ = true;
  samples_ = 1;
  measured_at(b);
}

// A saved line is known as well as a measured one drifts: its level to the
// speed drift (the overhead as unsure as a first sample's).
void LineEstimate::seed(double overhead, double per_sample, double b, bool guess, const AdaptiveTuning& t) {
  const double y = overhead + per_sample * b, sa2 = 0.25 * y * y, sy2 = t.speed_drift * t.speed_drift * y * y;
  start(b, y, t);
  a_ = overhead, c_ = per_sample;
  paa_ = sa2, pac_ = -sa2 / b, pcc_ = (sa2 + sy2) / (b * b);
  guess_ = guess;
  measured_error_ = level_error();
}

void LineEstimate::update(double b, double q, const AdaptiveTuning& t) {
  const double clip = t.clip_sigmas;
  const double y = std::max(predict(b), 1e-12);
  const double ph0 = paa_ + b * pac_, ph1 = pac_ + b * pcc_;
  const double hph = std::max(ph0 + b * ph1, 0.0);
  const double s = hph + noise_ * noise_ * y * y;
  const double root = std::sqrt(s);
  const double nu = std::clamp(q - y, -clip * root, clip * root);
  a_ += ph0 / s * nu, c_ += ph1 / s * nu;
  paa_ -= ph0 * ph0 / s, pac_ -= ph0 * ph1 / s, pcc_ -= ph1 * ph1 / s;
  project(b);
  // The noise: a running mean of squared residuals, less the line's own
  // uncertainty, forgetting at the speed drift's rate. A residual tells the
  // noise R only as well as R dominates its variance hph + R (nu^2 - hph
  // estimates R with a spread of about (hph + R)^2): weighted by
  // (R / (hph + R))^2, so that while the line itself is unsure (its first
  // samples, a restart) its misses move the line, not the noise.
  const double r2 = std::max(0.0, (nu * nu - hph) / (y * y));
  const double r = noise_ * noise_ * y * y, told = r / (hph + r);
  counted_ = std::min(counted_ + told * told, 1.0 / t.speed_drift);
  const double w = counted_ > 0.0 ? told * told / counted_ : 0.0;  // this residual's weight in the means
  mean_sq_ += w * (r2 - mean_sq_);
  // The prior counts as one residual on a log scale: the noise's scale is
  // unknown over orders of magnitude (a timer's 0.5% to a shared host's
  // 30%). In a plain mean a 10% prior outweighs a hundred residuals of 1%
  // noise, and two workers 25% apart stayed one unit for tens of steps.
  const double floor2 = t.min_noise * t.min_noise;
  const double log2 = (log_prior2_ + counted_ * std::log(std::max(mean_sq_, floor2))) / (1.0 + counted_);
  noise_ = std::max(t.min_noise, std::exp(0.5 * log2));
  // What the clip took off, relative (a mean of the same residuals, weighted
  // alike): under one-sided noise (spikes, a host's bursts) the mean time
  // exceeds the clipped level by its mean.
  excess_ = (1.0 - w) * excess_ + w * ((q - y) - nu) / y;
}

// Onto the lines that make sense (no negative overhead, a positive cost per
// sample), keeping the prediction at batch b: the level there is what the
// samples measured, the split between overhead and slope is what is unsure.
void LineEstimate::project(double b) {
  const double y = predict(b);
  if (a_ < 0.0) a_ = 0.0, c_ = y / b;
  if (c_ < 1e-12 * std::max(y, 1e-12)) c_ = 1e-12 * std::max(y, 1e-12), a_ = std::max(0.0, y - c_ * b);
}

// The residual with the previous one's share removed (an AR(1) innovation,
// rescaled to unit variance), clipped; the autocorrelation learns from the
// residual first (the prior: one uncorrelated residual), and stays below the
// correlation the forgetting window can resolve (a correlation time of at
// most 1 / speed_drift steps).
double LineEstimate::whiten(double z, double raw, const AdaptiveTuning& t) {
  if (cusum_.up_at_zero()) before_up_ = persist_, excess_before_up_ = excess_;
  if (cusum_.down_at_zero()) before_down_ = persist_, excess_before_down_ = excess_;
  Persistence& p = persist_;
  const double e = (z - p.corr * last_z_) / std::sqrt(1.0 - p.corr * p.corr);
  const double w = std::max(1.0 / static_cast<double>(samples_ + 1), t.speed_drift);
  p.zz = (1.0 - w) * p.zz + w * z * z;
  p.zl = (1.0 - w) * p.zl + w * z * last_z_;
  p.tail = (1.0 - w) * p.tail + w * (std::abs(z) >= t.clip_sigmas ? 1.0 : 0.0);
  // A far sample's rate is a rare event's: a mean over the line's whole life
  // (forgetting as the others do, a heavy tail raised an alarm again some
  // hundred samples after each far sample).
  const double life = 1.0 / static_cast<double>(samples_ + 1);
  p.far = (1.0 - life) * p.far + life * (std::abs(raw) >= kFar * t.clip_sigmas ? 1.0 : 0.0);
  p.corr = p.zz > 0.0 ? std::clamp(p.zl / p.zz, 0.0, 1.0 - 2.0 * t.speed_drift) : 0.0;
  last_z_ = z;
  const double x = std::clamp(e, -t.clip_sigmas, t.clip_sigmas);
  p.m1 = (1.0 - w) * p.m1 + w * x, p.m2 = (1.0 - w) * p.m2 + w * x * x, p.m3 = (1.0 - w) * p.m3 + w * x * x * x;
  return x;
}

// A CUSUM side's increments x - k (x its input, k the drift) first reach h
// after about exp(theta h) steps, theta the root of E[exp(theta (x - k))] = 1
// (Cramer-Lundberg; for unit Gaussian x, theta = 2k). Each side's limit is
// the one whose theta h is the Gaussian design's (2k x cusum_limit), theta
// from the input's first three cumulants: a skewed input (a shared host's
// bursts: a quarter of the steps 2-4x slow) or one wider than the model's
// noise would raise alarms several times as often at the tuning's limit.
std::array<double, 2> LineEstimate::limits(const AdaptiveTuning& t) const {
  const double k = t.cusum_drift, design = 2.0 * k * t.cusum_limit;
  std::array<double, 2> h{};
  for (int side = 0; side < 2; ++side) {
    // The input's moments as they were before the side's run: its samples may be a change.
    const Persistence& p = side == 0 ? before_up_ : before_down_;
    const double var = std::max(p.m2 - p.m1 * p.m1, 1e-6);
    const double skew = p.m3 - 3.0 * p.m1 * p.m2 + 2.0 * p.m1 * p.m1 * p.m1;  // third cumulant
    const double sign = side == 0 ? 1.0 : -1.0;
    const double mu = sign * p.m1 - k, k3 = sign * skew;
    if (!(mu < 0.0)) {  // no drift back to zero: alarm on the tuning's evidence alone
      h[side] = t.cusum_limit;
      continue;
    }
    // log E[exp(theta x')] ~ mu theta + var theta^2 / 2 + k3 theta^3 / 6 = 0.
    const double a = k3 / 6.0, b = var / 2.0;
    const double theta = std::abs(a) < 1e-9 ? -mu / b : (-b + std::sqrt(std::max(b * b - 4.0 * a * mu, 0.0))) / (2.0 * a);
    h[side] = theta > 0.0 ? std::max(t.cusum_limit, design / theta) : t.cusum_limit;
  }
  return h;
}

// A change: the level at batch b becomes the prediction times the median
// measured/predicted ratio r over the samples that raised the alarm (the
// last few), so a spike among them does not set it. The line restarts there
// as a first sample does (all of it per sample, the overhead unknown: a
// change may not scale both alike), its noise and persistence kept, its
// level known as well as those k samples tell; reach() keeps the old level
// in sight while the change is on test (test_change).
void LineEstimate::restart(double b, const AdaptiveTuning& t) {
  before_change_ = {a_, c_, paa_, pac_, pcc_, excess_, persist_};
  evidence_ = 0.0;
  // The samples that raised it: its run, but no more than the fewest that can
  // (an abrupt change's run may start before it, in noise that kept the sum up).
  const std::size_t k =
      std::clamp<std::size_t>(std::min(cusum_.run(), fewest_to_alarm(t)), 1, std::min(recent_n_, kRecent));
  std::array<double, kRecent> last{};
  for (std::size_t j = 0; j < k; ++j) last[j] = recent_[(recent_n_ - 1 - j) % kRecent];
  const double mid = upper_median(last.begin(), last.begin() + static_cast<std::ptrdiff_t>(k));
  const double y = predict(b) * std::exp(mid);
  const double e2 = noise_ * noise_ / static_cast<double>(k);
  const double noise = noise_, mean_sq = mean_sq_, counted = counted_;
  const double excess = cusum_.rose() ? excess_before_up_ : excess_before_down_;
  const std::size_t samples = samples_;
  const Persistence persist = cusum_.rose() ? before_up_ : before_down_;
  start(b, y, t);
  noise_ = noise, mean_sq_ = mean_sq, counted_ = counted;
  excess_ = excess, persist_ = persist, samples_ = samples;
  pcc_ += (e2 * y * y - t.prior_noise * t.prior_noise * y * y) / (b * b);
  shift_ = mid, reach_ = std::abs(mid) / t.clip_sigmas, since_change_ = 0;
  unconfirmable_ = fewest_to_alarm(t) - k;
}

// Huber's robust test: the noise throws a sample beyond the clip at a rate
// eps (the line's measured share), so no one sample tells more than
// log((1 - eps) / eps) nats of any level. A sample beyond twice the clip is
// held to the share the noise throws that far: a timer's rare 20% outlier
// says nothing against a worker now 4x slower.
double LineEstimate::evidence_cap(double distance, const AdaptiveTuning& t) const {
  const double share = std::abs(distance) >= kFar * t.clip_sigmas ? persist_.far : persist_.tail;
  const double eps = std::clamp(share, 1e-12, 0.5);
  return std::log((1.0 - eps) / eps);
}

// One sample alone is a change when its evidence for a shift to its own
// level (the generalized likelihood ratio of z, its whitened residual,
// against the line: z^2 / 2 nats were the noise known), capped as the
// change's test caps one sample's (evidence_cap), reaches the evidence the
// CUSUM asks of a run (2 k h nats, its drift k, its limit h). On a quiet
// line a 4x step is then a change at once, not after three samples; where
// the noise throws far samples once in e^(2 k h) steps or more often
// (bursts, spikes) no one sample is.
bool LineEstimate::sudden(double z, const AdaptiveTuning& t) const {
  const double phi = persist_.corr;
  const double e = (z - phi * last_z_) / std::sqrt(1.0 - phi * phi);
  // The noise is itself estimated, from about nu residuals (the prior counts
  // as one; the forgetting keeps about 1 / speed_drift): Student's t, not the
  // Gaussian, so a young line's first misses are its noise, not changes.
  const double nu = std::min(static_cast<double>(samples_), 1.0 / t.speed_drift);
  const double evidence = 0.5 * (nu + 1.0) * std::log1p(e * e / nu);
  return std::min(evidence, evidence_cap(e, t)) >= 2.0 * t.cusum_drift * t.cusum_limit;
}

bool LineEstimate::settled(const AdaptiveTuning& t) const { return samples_ > fewest_to_alarm(t); }

// While the change is on test the old level stays within clip_sigmas of
// this reach: the samples that raise an alarm are selected for being far out
// (a false alarm's shift is all selection, a burst's lasts as long as it).
// So is the level a run the CUSUM is weighing points to, in proportion to
// how far the run has come toward an alarm: identical workers that change
// together alarm a few steps apart, and the first to confirm would
// otherwise leave the others, their runs not yet alarms, behind.
double LineEstimate::reach(const AdaptiveTuning& t) const { return std::max(reach_, pending_ / t.clip_sigmas); }

// A change is a hypothesis, tested on the samples after it as a trial's move
// is (trial.h): Wald's sequential test of the new level against the old one,
// each sample's log residual against either clipped at clip_sigmas noise
// standard deviations (a spike is no more evidence than a 3-sigma draw) and
// its evidence shrunk by (1 - phi) / (1 + phi) (persistent noise repeats
// itself). Bounds from the trial's error rates: keeping a change that did not
// happen at false_keep, dropping one that did at false_revert. Undecided
// after max_trial_steps samples, the sign of the evidence decides.
LineEstimate::Test LineEstimate::test_change(double b, double q, const AdaptiveTuning& t) {
  const Level& o = before_change_;
  const double y_new = std::max(predict(b), 1e-12), y_old = std::max(o.a + o.c * b, 1e-12);
  const double v_old = std::max(o.paa + 2.0 * b * o.pac + b * b * o.pcc, 0.0) / (y_old * y_old);
  const double v_new = std::max(paa_ + 2.0 * b * pac_ + b * b * pcc_, 0.0) / (y_new * y_new);
  const double n2 = noise_ * noise_, s_old = n2 + v_old, s_new = n2 + v_new;
  auto clipped = [&](double r, double s) { return std::clamp(r, -t.clip_sigmas * std::sqrt(s), t.clip_sigmas * std::sqrt(s)); };
  const double r_old = clipped(std::log(q / y_old), s_old), r_new = clipped(std::log(q / y_new), s_new);
  const double phi = persist_.corr;
  const double llr = 0.5 * (r_old * r_old / s_old - r_new * r_new / s_new) + 0.5 * std::log(s_old / s_new);
  // Huber's robust test, each way capped by the noise's share of samples as far from the level it refutes.
  // A change raised by fewer samples than a CUSUM needs is refuted by the samples that make up the
  // difference but not confirmed: they stand where a CUSUM alarm's samples, which its test never sees, stand.
  const double d_old = std::log(q / y_old) / std::sqrt(s_old), d_new = std::log(q / y_new) / std::sqrt(s_new);
  const double most = since_change_ < unconfirmable_ ? 0.0 : evidence_cap(d_old, t);
  const double least = -evidence_cap(d_new, t);
  evidence_ += std::clamp(llr, least, most) * (1.0 - phi) / (1.0 + phi);
  const WaldBounds bound = wald_bounds(t.false_keep, t.false_revert);  // H1: the change happened
  const bool last = since_change_ + 1 >= t.max_trial_steps;
  if (evidence_ >= bound.h1 || (last && evidence_ >= 0.0)) return Test::kConfirmed;
  if (evidence_ <= bound.h0 || last) return Test::kRejected;
  return Test::kOpen;
}

bool LineEstimate::observe(double b, double q, const AdaptiveTuning& t) {
  if (!usable(b, q)) {
    // Idle: a run in progress cannot go on, and what may have moved unseen
    // is the level's drift error's to say, not a frozen run's reach.
    if (!(b > 0.0)) pending_ = 0.0;
    return false;
  }
  if (!known_ || guess_) {
    start(b, q, t);
    guess_ = false;
    return false;
  }
  const double y = std::max(predict(b), 1e-12);
  const double s = std::max(paa_ + 2.0 * b * pac_ + b * b * pcc_, 0.0) + noise_ * noise_ * y * y;
  const double raw = (q - y) / std::sqrt(s);
  const double z = std::clamp(raw, -t.clip_sigmas, t.clip_sigmas);
  // Before this sample teaches the tail; a change on test is decided by its test first.
  const bool one = reach_ == 0.0 && sudden(raw, t);
  recent_[recent_n_++ % kRecent] = std::log(q / y);
  bool confirmed = false;
  if (reach_ > 0.0) {
    const Test verdict = test_change(b, q, t);
    if (verdict != Test::kOpen) reach_ = 0.0;
    confirmed = verdict == Test::kConfirmed;
    if (verdict == Test::kRejected) {  // the old line, as it was
      const Level& o = before_change_;
      a_ = o.a, c_ = o.c, paa_ = o.paa, pac_ = o.pac, pcc_ = o.pcc, excess_ = o.excess, persist_ = o.persist;
      shift_ = 0.0, last_z_ = 0.0, pending_ = 0.0;  // the CUSUM starts afresh: no run in progress
      cusum_.clear();
      measured_at(b);
      ++samples_;
      return true;
    }
  }
  cusum_.push(whiten(z, raw, t), t.cusum_drift);
  bool alarm = false;
  if (one) {
    cusum_.alarm_one(raw > 0.0);
    alarm = true;
  } else if (cusum_.reached(t.cusum_limit)) {  // every limit is at least the tuning's
    const std::array<double, 2> h = limits(t);
    alarm = cusum_.alarm(h[0], h[1]);
  }
  if (alarm) {
    restart(b, t);
    ++changes_;
  } else {
    update(b, q, t);
  }
  pending_ = 0.0;
  if (const std::size_t run = std::min(cusum_.running(), std::min(recent_n_, kRecent)); run > 0) {
    double sum = 0.0;
    for (std::size_t j = 0; j < run; ++j) sum += recent_[(recent_n_ - 1 - j) % kRecent];
    pending_ = std::abs(sum / static_cast<double>(run)) * cusum_.progress(t.cusum_limit);
  }
  measured_at(b);
  ++samples_;
  if (!alarm) ++since_change_;
  return alarm || confirmed;
}

Estimator::Estimator(std::size_t workers, AdaptiveTuning tuning, std::vector<bool> on_cpu)
    : tuning_(tuning), wall_(workers), cpu_(workers), wait_(workers), on_cpu_(std::move(on_cpu)) {
  on_cpu_.resize(workers, false);
}

bool Estimator::observe(const std::vector<WorkerSample>& samples) {
  bool changed = false;
  for (std::size_t i = 0; i < wall_.size(); ++i) {
    const WorkerSample& s = samples[i];
    wall_[i].drift(tuning_);
    const bool wall = wall_[i].observe(s.batch, s.compute, tuning_);
    if (!on_cpu_[i]) {  // planned by its compute time alone (its other lines are never read)
      changed = changed || wall;
      continue;
    }
    cpu_[i].drift(tuning_), wait_[i].drift(tuning_);
    // Every sample is observed, whether or not another worker changed this step.
    const bool cpu = cpu_[i].observe(s.batch, s.cpu, tuning_);
    const bool wait = observe_wait(i, s);
    changed = changed || cpu || wait;
  }
  return changed;
}

// Time off the CPU comes and goes (an emulated slowdown, a device): a worker
// that starts or stops sleeping has changed; one that never sleeps has none.
bool Estimator::observe_wait(std::size_t i, const WorkerSample& s) {
  if (!(s.batch > 0.0) || s.wait < 0.0) return false;
  const bool had = wait_[i].known();
  if (s.wait == 0.0) {
    if (had) wait_[i] = LineEstimate{};
    return had;
  }
  const bool changed = wait_[i].observe(s.batch, s.wait, tuning_);
  return changed || (!had && cpu_[i].samples() > 1);
}

void Estimator::seed(std::size_t i, double overhead, double speed, double batch, bool guess) {
  wall_[i].seed(overhead, 1.0 / speed, std::max(batch, 1.0), guess, tuning_);
}

bool Estimator::settled(std::size_t i) const {
  return (on_cpu_[i] && cpu_[i].known() ? cpu_[i] : wall_[i]).settled(tuning_);
}

bool Estimator::all_known() const {
  return std::all_of(wall_.begin(), wall_.end(), [](const LineEstimate& l) { return l.known(); });
}

}  // namespace hetrain::alloc

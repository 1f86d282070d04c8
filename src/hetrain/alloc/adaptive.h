// Self-adaptive allocation: every worker fits each worker's cost model from
// the compute times reduced with the gradients, and computes the same next
// split. No coordinator: same numbers in, same split out. The cost model only
// proposes: a proposal is tried and kept only if the realized step time (the
// whole synchronous step, the same number on every worker) gets faster.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "hetrain/alloc/cost_model.h"
#include "hetrain/alloc/groups.h"
#include "hetrain/alloc/hosts.h"
#include "hetrain/alloc/policy.h"
#include "hetrain/alloc/step_time.h"

namespace hetrain::alloc {

// Predicted step compute time of `split`: max_i a_i + b_i / v_i (workers
// with b_i = 0 take no time).
double predicted_makespan(const std::vector<WorkerModel>& models, const std::vector<std::size_t>& split);

// Terms: T is the common finish time. For a given T worker i can take
// b_i(T) = clamp((T - a_i) v_i, lo, hi) samples; sum_i b_i(T) grows with T,
// so bisection finds the smallest T whose capacity holds B (water-filling).
// The real-valued b_i(T) are then rounded by largest remainder within the
// bounds, which keeps sum b_i = B, and single samples move from the worker
// that finishes last to one that finishes earlier even with one more (a
// slow worker may end with none).
SolvedSplit solve_split(const std::vector<WorkerModel>& models, std::size_t total, const Bounds& bounds);

struct AdaptiveConfig {
  CostModelConfig model;
  // Propose a move only when the predicted step gets faster by at least the
  // larger of `dead_band` and `noise_bands` standard errors of the prediction
  // (relative scatter / sqrt(samples), of the least certain worker). None by
  // default: the window caps the samples, so that error never shrinks, and
  // the measured step time judges every trial (trial_budget refuses a gain
  // it cannot show), so the model band need only keep rounding from trials.
  double dead_band = 0.02;
  double noise_bands = 0.0;
  // Samples each worker's model needs before the first proposal (later, a
  // detected change may act on CostModelConfig::change_run of them). Until
  // every worker has two, a proposal must gain at least `single_sample_band`
  // (a worker over ~2.3x slower than three others): one sample says nothing
  // about a worker's noise, and the first step's scheduling noise among equal
  // workers can reach 1.7x on a shared host.
  std::size_t min_samples = 1;
  double single_sample_band = 0.5;
  // Steps whose compute times are ignored at the start. The first pays for
  // lazy initialisation, and an emulated slow worker's stretches it: a
  // proposal from it would be a guess tried at a price.
  std::size_t warmup_steps = 1;

  // The closed loop. A proposal is tried, and kept only if the measured step
  // time beats the split it replaced beyond the measured noise.
  // Step times of the run's first steps, ignored (steps). The first step's
  // is lazy initialisation's: the first trial waits for one measured step
  // of the split it replaces, rather than going back to measure it later.
  std::size_t ignored_step_times = 1;
  // Step times per split kept to judge it (steps): medians of this many.
  std::size_t step_window = 32;
  // Trial length (steps with a measured time): at least `min_trial_steps` (one
  // time can be a spike), at most `max_trial_steps` (a gain that needs more to
  // be seen is too small to be worth a trial). A trial that loses beyond the
  // noise ends at once, so a long one costs little.
  std::size_t min_trial_steps = 2;
  std::size_t max_trial_steps = 24;
  // A trial is kept when it beats the replaced split by more than
  // `keep_bands` standard errors of the difference of the two medians, and by
  // more than `min_step_gain` (a share of the step): the slowest worker's
  // compute, with the rest of the step not worse beyond its own noise, or the
  // whole step (adaptive.cc, compare()).
  double keep_bands = 2.5;
  double min_step_gain = 0.01;
  // Steps a trusted trial (a credible model's gain too small to show) runs
  // before it is kept, unless it shows itself slower first.
  std::size_t trusted_trial_steps = 8;
  // A trial starts only if it can resolve `detect_share` of the predicted gain
  // within max_trial_steps, given the compute's measured noise.
  double detect_share = 1.0;
  // The step time's noise (standard deviation, as a share of the step) until
  // three times at one split measure it, and its floor: a step measured as
  // exactly repeatable still jitters by this much.
  double assumed_step_noise = 0.05;
  double min_step_noise = 0.005;
  // A real change of the step at the current split: `step_change_run`
  // consecutive times off its median on one side, by more than
  // `step_change_threshold` (a share of the step) and three noise bands.
  std::size_t step_change_run = 3;
  double step_change_threshold = 0.1;
  // Backoff after a revert (steps before the next trial): `backoff_steps`,
  // doubled with every revert since the last real change, at most
  // `max_backoff_steps`. A proposal that moves more than `retry_distance` of
  // the batch away from every rejected one waits only `backoff_steps`.
  std::size_t backoff_steps = 8;
  std::size_t max_backoff_steps = 1024;
  double retry_distance = 0.1;
  // Workers whose predicted times differ by less than the larger of
  // `group_tolerance` and `group_bands` standard errors are treated as one,
  // with the group's pooled model and equal shares (groups.h): noise cannot
  // split identical workers apart. A worker 5% slower than another then
  // costs at most 5% of balance.
  double group_tolerance = 0.05;
  double group_bands = 3.0;
  // A worker so slow that one sample would make it the slowest by far gets
  // none, and so is measured no more: every `idle_probe_steps` steps
  // (doubling after each probe that finds it unchanged, at most
  // max_backoff_steps) one step gives it a sample. A probe far off its model
  // is repeated at once, so a recovered worker's model sees the run of
  // surprises a change needs.
  std::size_t idle_probe_steps = 64;
  // The split plans each worker at its mean time plus this many standard
  // deviations of its noise (relative): a synchronous step waits for the
  // slowest draw, so a noisy worker should get less than its mean speed
  // says. 0.56: the expected excess of the larger of two equal-mean draws.
  double noise_margin = 0.56;
  // After a kept move, trial the same move once more (a line search, judged
  // by the step time like any trial): the model refits each split's
  // contention, so on shared cores its proposals can stop short of the best.
  bool extend_kept_moves = true;
};

class AdaptivePolicy final : public Policy {
 public:
  // `known`: models learned in an earlier run, by rank (a resumed run; may be
  // shorter or longer than `workers`). Known workers start from them, new
  // ones from the median known speed, and the first split is solved from
  // these guesses; learning then goes on as usual.
  // `placement`: which workers share a host's cores (empty: none do).
  AdaptivePolicy(std::size_t workers, std::size_t global_batch, Bounds bounds, AdaptiveConfig config = {},
                 const std::vector<WorkerModel>& known = {}, Placement placement = {});
  std::vector<std::size_t> split() const override { return split_; }
  void observe(const Observation& obs) override;
  // As models(), with speed 0 (unknown) for a worker not yet measured: a
  // checkpoint may come before the first fit.
  std::vector<WorkerModel> learned() const override;
  PolicyStats stats() const override { return stats_; }
  // What the policy currently believes (for metrics, checkpoints, the simulator).
  std::vector<WorkerModel> models() const;
  // The best measured split since the last real change (the split itself
  // while no trial runs).
  const std::vector<std::size_t>& best_split() const { return incumbent_; }

 private:
  void attribute(double previous_step_seconds, std::size_t step);
  void add_incumbent_time(const StepTime& t);
  void review_probe(const Observation& obs, std::size_t step);
  void plan_probe(std::size_t step);
  bool learn(const Observation& obs);
  void judge(std::size_t step);
  void keep();
  void revert(std::size_t step);
  void pause();
  bool resume(std::size_t step);
  void reset(std::size_t first_step);
  void propose(std::size_t step);
  std::optional<double> model_band();
  Grouping grouped_models() const;
  // Each worker's relative noise (standard deviations) as its model measures it.
  std::vector<double> noise_by_rank() const;
  // Noise (relative standard deviations) further apart than this costs more
  // than group_tolerance in the noise margin: such workers are not alike.
  double noise_limit() const;
  SolvedSplit best_split_for(const Grouping& groups, double& now) const;
  bool hosts_known() const;
  std::vector<HostCost> host_costs() const;
  void plan_extension(double measured_gain);
  bool start_trial(std::vector<std::size_t> split, std::size_t budget, std::size_t step,
                   double predicted_gain = 0.0);
  bool cooled_down(const std::vector<std::size_t>& proposal, std::size_t step) const;
  std::size_t trial_budget(double predicted_gain, std::size_t baseline_times) const;
  struct Verdict {
    bool faster = false, slower = false;
    double compute_gain = 0.0;  // of the slowest worker's compute, as a share of the step
  };
  Verdict compare(const StepTimeLog& trial) const;
  // The step's noise (standard deviations as shares of the incumbent's median step).
  struct StepNoise {
    double step = 0.0, compute = 0.0, rest = 0.0;
  };
  void measure_noise();
  double noise(Part p) const;

  std::size_t global_batch_;
  Bounds bounds_;
  AdaptiveConfig config_;
  std::vector<CostModel> cost_;
  Placement placement_;
  std::vector<CostModel> cpu_, wait_;   // CPU-seconds and seconds off the CPU, of each worker's compute
  std::vector<std::size_t> split_;      // the next step's: the trial's, else the incumbent
  std::vector<std::size_t> incumbent_;  // the best measured split since the last real change
  StepTimeLog incumbent_times_;
  ShiftRun shift_;
  std::optional<Trial> trial_;
  // A trial undecided because the split it replaced had too few times to
  // compare with: those are measured, then the trial goes on with its own.
  std::optional<Trial> paused_;
  struct Extension {
    std::vector<std::size_t> split;
    double gain = 0.0;  // the kept move's measured gain (share of the step): its trial's budget
  };
  std::optional<Extension> extension_;  // after a kept move: the same move once more
  bool extending_ = false;              // the running trial is an extension (its revert costs no backoff)
  // Whether the last of the model's proposals judged by the step time showed
  // at least kCredibleShare of its predicted gain (then small gains are
  // tried on the model's word, and kept unless slower). Before any is
  // judged: where no host is oversubscribed, so that each worker's time
  // depends on its own batch alone, as the model assumes.
  bool credible_ = false;
  std::vector<std::vector<std::size_t>> rejected_;  // since the last real change, newest last
  std::size_t rejections_ = 0;                      // since the last real change
  std::size_t next_trial_step_ = 0;                 // after a revert: the backoff's end (no clearer proposal)
  std::size_t revert_step_ = 0;                     // the first step after the last revert
  std::optional<StepNoise> measured_noise_;         // once three times at one split measure it
  std::size_t probe_wait_ = 0;                      // steps from one probe of idle workers to the next
  std::size_t next_probe_step_ = 0;                 // 0: not planned
  bool probing_ = false;                            // the next step gives every idle worker one sample
  std::vector<std::size_t> groups_;                 // each worker's group at the last proposal
  std::vector<std::size_t> last_split_;             // the split of the step observed last
  bool last_full_ = false;                          // ... whether it held the whole global batch
  double last_compute_ = 0.0;                       // ... and its slowest worker's compute seconds
  std::size_t seen_ = 0;
  bool warmed_up_ = false;
  PolicyStats stats_;
};

// `static` without --shares: adaptive for `profile_steps` steps, then the
// split is frozen for the rest of the run.
class ProfiledStaticPolicy final : public Policy {
 public:
  ProfiledStaticPolicy(std::size_t workers, std::size_t global_batch, Bounds bounds,
                       std::size_t profile_steps, Placement placement = {});
  // While profiling, the adaptive split (trials included); then the best
  // measured one, frozen.
  std::vector<std::size_t> split() const override {
    return remaining_ > 0 ? inner_.split() : inner_.best_split();
  }
  void observe(const Observation& obs) override;
  std::vector<WorkerModel> learned() const override { return inner_.learned(); }
  PolicyStats stats() const override { return inner_.stats(); }

 private:
  AdaptivePolicy inner_;
  std::size_t remaining_;
};

}  // namespace hetrain::alloc

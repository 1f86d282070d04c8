#include "hetrain/train/step.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ctime>
#include <thread>

#include "hetrain/alloc/split.h"
#include "hetrain/comm/allreduce.h"
#include "hetrain/common/error.h"
#include "hetrain/train/stop.h"

namespace hetrain::train {
namespace {

constexpr double kSecondsPerMs = 1e-3;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU time of `clock`, seconds.
double cpu_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The compute's CPU time: this thread's when torch computes on it alone
// (the process's would add the store, Gloo's I/O and the input prefetch),
// else the whole process's.
clockid_t compute_cpu_clock() {
  return torch::get_num_threads() == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID;
}

}  // namespace

Emulation::Emulation(const TrainOptions& o, std::size_t rank, torch::nn::Module& model)
    : options_(o), rank_(rank), device_(model, o.sample_cost_ms > 0.0) {}

void Emulation::begin(std::size_t global_step, std::size_t samples) {
  speed_ = emulated_speed(options_, rank_, global_step);
  stretched_ = 0.0;
  // The device's time, slowed by the worker's speed, is slept inside forward
  // and backward.
  device_.begin_step(options_.sample_cost_ms * kSecondsPerMs * static_cast<double>(samples) / speed_);
}

void Emulation::after_backward(double elapsed) {
  if (speed_ >= 1.0) return;
  // The device time above is already divided by s: stretch only the host's.
  const double host = elapsed - device_.slept_seconds();
  stretched_ = host * (1.0 / speed_ - 1.0);
  std::this_thread::sleep_for(std::chrono::duration<double>(stretched_));
}

StepRunner::StepRunner(const TrainOptions& o, Model& model, torch::optim::Optimizer& optimizer,
                       comm::Group& group, alloc::Policy& policy, std::size_t planned_steps, LossKind loss)
    : options_(o),
      model_(model),
      optimizer_(optimizer),
      group_(group),
      policy_(policy),
      planned_steps_(planned_steps),
      loss_(loss),
      rank_(static_cast<std::size_t>(group.rank())),
      num_params_(count_parameters(model)),
      telemetry_(static_cast<std::size_t>(group.size())),
      buffer_(num_params_ + telemetry_.size(), 0.0f),
      reducer_(model, std::span<float>(buffer_), num_params_, group, comm::parse_algorithm(o.allreduce),
               bucket_elements(o), o.overlap),
      emulation_(o, rank_, model),
      cpu_clock_(compute_cpu_clock()) {}

StepPlan StepRunner::slice(std::size_t epoch, std::size_t step, std::size_t global_step,
                           std::span<const std::uint32_t> permutation) const {
  const std::size_t global_batch = options_.global_batch;
  StepPlan plan;
  plan.epoch = epoch;
  plan.step = step;
  plan.global_step = global_step;
  plan.batch = data::step_batch(permutation.size(), global_batch, step);
  plan.first = step * global_batch;
  const std::size_t max_local = options_.alloc.bounds.max_local;
  plan.split = plan.batch == global_batch ? policy_.split() : alloc::scale_split(policy_.split(), plan.batch, max_local);
  plan.slice = data::slice_of(plan.split, rank_);
  plan.rows = permutation.subspan(plan.first + plan.slice.begin, plan.slice.count);
  return plan;
}

StepOutcome StepRunner::run(const StepPlan& plan, const Batch& slice) {
  StepOutcome out;
  out.plan = plan;
  out.clock.begin = Clock::now();
  std::fill(buffer_.begin(), buffer_.end(), 0.0f);
  reducer_.begin_step();
  emulation_.begin(plan.global_step, plan.slice.count);
  out.clock.compute_begin = Clock::now();
  const double cpu_begin = cpu_seconds(cpu_clock_);
  Telemetry::Mine mine;
  mine.scaled_loss = compute(plan, slice, out.clock.compute_begin);
  out.clock.compute_end = Clock::now();
  out.compute_seconds = seconds_between(out.clock.compute_begin, out.clock.compute_end);
  mine.compute_seconds = out.compute_seconds;
  mine.cpu_seconds = cpu_seconds(cpu_clock_) - cpu_begin;
  mine.off_cpu_seconds = emulation_.slept_seconds();
  mine.previous_step_seconds = last_step_seconds_;
  mine.fingerprint = split_fingerprint(plan.split);
  mine.stop = stop_requested();  // as late as possible: this step is done either way
  out.all = reduce(plan, mine, out);
  apply(plan.global_step);
  out.clock.apply_end = Clock::now();
  observe(plan, out.all);
  out.clock.observe_end = Clock::now();
  // The process's first step pays for lazy initialisation (allocations,
  // the reducer learning the gradients' order): no measure of the split.
  last_step_seconds_ = first_step_ ? 0.0 : seconds_between(out.clock.begin, out.clock.apply_end);
  first_step_ = false;
  return out;
}

double StepRunner::compute(const StepPlan& plan, const Batch& slice, Clock::time_point begin) {
  double scaled_loss = 0.0;
  if (plan.slice.count > 0) {
    HETRAIN_ENFORCE_EQ(static_cast<std::size_t>(slice.x.size(0)), plan.slice.count);
    auto loss = batch_loss(loss_, model_.forward(slice.x), slice.y);
    emulation_.after_forward();
    // Scaled by b_i/B, the SUM allreduce yields the global batch's mean.
    auto scaled = loss * (static_cast<double>(plan.slice.count) / static_cast<double>(plan.batch));
    scaled.backward();
    scaled_loss = scaled.item<double>();
  }
  emulation_.after_backward(seconds_between(begin, Clock::now()));
  return scaled_loss;
}

Telemetry::All StepRunner::reduce(const StepPlan& plan, const Telemetry::Mine& mine, StepOutcome& out) {
  telemetry_.write(std::span<float>(buffer_).subspan(num_params_), rank_, mine);
  // Telemetry rides in the last bucket, after the gradients.
  const ReduceTimes times = reducer_.finish();
  out.clock.reduce_end = Clock::now();
  out.wait_seconds = seconds_between(out.clock.compute_end, out.clock.reduce_end);
  out.hidden_seconds = times.hidden_seconds;
  Telemetry::All all = telemetry_.read(std::span<const float>(buffer_).subspan(num_params_));
  // Every rank must have cut the batch the same way, or samples would be
  // skipped or used twice.
  if (!telemetry_.same_split(all, mine.fingerprint)) {
    throw Error(fmt::format("workers disagree on the split at step {} (rank {} used {})", plan.global_step, rank_,
                            fmt::join(plan.split, "/")));
  }
  return all;
}

void StepRunner::apply(std::size_t global_step) {
  const double lr = scheduled_lr(options_, global_step, planned_steps_);
  for (auto& g : optimizer_.param_groups()) g.options().set_lr(lr);
  optimizer_.step();
}

void StepRunner::observe(const StepPlan& plan, const Telemetry::All& all) {
  alloc::Observation obs;
  obs.local_batch = plan.split;
  obs.compute_seconds = all.compute_seconds;
  obs.previous_step_seconds = all.previous_step_seconds;
  obs.cpu_seconds = all.cpu_seconds;
  obs.wait_seconds = all.off_cpu_seconds;
  policy_.observe(obs);
}

}  // namespace hetrain::train

#include "hetrain/train/observers.h"

#include <fmt/format.h>

#include <cmath>

#include "hetrain/common/error.h"

namespace hetrain::train {
namespace {

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// StepLog's doubles per step: batch, compute, wait, hidden, input wait,
// loss, end (seconds since the run's start).
constexpr std::size_t kStepFields = 7;

}  // namespace

SampleLog::SampleLog(const std::string& prefix, std::size_t rank, int restart_count) {
  const std::string path = restart_count == 0 ? fmt::format("{}.rank{}", prefix, rank)
                                              : fmt::format("{}.attempt{}.rank{}", prefix, restart_count, rank);
  out_.open(path);
  if (!out_) throw DataError(fmt::format("cannot write {}", path));
}

void SampleLog::before_compute(const StepPlan& plan) {
  out_ << plan.epoch << ' ' << plan.step;
  for (const std::uint32_t id : plan.rows) out_ << ' ' << id;
  out_ << std::endl;  // flushed: a killed run's log stays complete
}

void StepLog::after_step(const StepOutcome& s, const Cursor&) {
  mine_.insert(mine_.end(), {static_cast<double>(s.plan.slice.count), s.compute_seconds, s.wait_seconds,
                             s.hidden_seconds, s.input_seconds, s.all.loss,
                             clock_.at(s.clock.observe_end)});
}

void StepLog::end_epoch(const Cursor& c, std::size_t epoch_steps) {
  HETRAIN_ENFORCE_EQ(mine_.size(), epoch_steps * kStepFields);
  const auto all = group_.allgather(std::span<const double>(mine_));
  const auto n = static_cast<std::size_t>(group_.size());
  for (std::size_t s = 0; s < epoch_steps; ++s) {
    record::StepRecord rec;
    rec.epoch = c.epoch;
    for (std::size_t i = 0; i < n; ++i) {
      const double* f = &all[i * mine_.size() + s * kStepFields];
      rec.local_batch.push_back(static_cast<std::size_t>(std::llround(f[0])));
      rec.compute_seconds.push_back(f[1]);
      rec.wait_seconds.push_back(f[2]);
      rec.hidden_seconds.push_back(f[3]);
      rec.input_seconds.push_back(f[4]);
    }
    // The loss is the same on every rank; the clock is rank 0's.
    rec.loss = all[s * kStepFields + 5];
    rec.end_seconds = all[s * kStepFields + 6];
    out_.push_back(std::move(rec));
  }
  mine_.clear();
}

TraceRecorder::TraceRecorder(comm::Group& group, const std::string& path, Clock::time_point origin)
    : group_(group), origin_(origin) {
  if (group.rank() == 0) writer_ = std::make_unique<record::TraceWriter>(path, group.size());
}

TraceRecorder::~TraceRecorder() = default;

void TraceRecorder::after_step(const StepOutcome& s, const Cursor&) {
  const StepClock& k = s.clock;
  mine_.push_back({seconds_between(origin_, k.compute_begin), seconds_between(origin_, k.compute_end),
                   seconds_between(origin_, k.reduce_end), seconds_between(origin_, k.apply_end),
                   seconds_between(origin_, k.observe_end), static_cast<double>(s.plan.slice.count)});
}

void TraceRecorder::end_epoch(const Cursor& c, std::size_t epoch_steps) {
  const auto flat = record::flatten(mine_);
  const auto all = group_.allgather(std::span<const double>(flat));
  const auto n = static_cast<std::size_t>(group_.size());
  if (writer_) {
    std::vector<std::vector<record::StepTimes>> times(mine_.size());
    for (std::size_t i = 0; i < n; ++i) {
      const auto rank_times = record::unflatten(&all[i * flat.size()], mine_.size());
      for (std::size_t s = 0; s < mine_.size(); ++s) times[s].push_back(rank_times[s]);
    }
    writer_->add_epoch(c.epoch + 1, c.total_steps - epoch_steps, std::move(times));
  }
  mine_.clear();
}

void TraceRecorder::close() {
  if (writer_) writer_->close();
}

Checkpointer::Checkpointer(const TrainOptions& o, const CheckpointMeta& base, std::size_t steps_in_epoch,
                           int world_size, Model& model, torch::optim::Optimizer& optimizer,
                           const alloc::Policy& policy)
    : options_(o),
      base_(base),
      steps_in_epoch_(steps_in_epoch),
      world_size_(world_size),
      model_(model),
      optimizer_(optimizer),
      policy_(policy) {}

void Checkpointer::after_step(const StepOutcome&, const Cursor& c) {
  if (options_.checkpoint_every != 0 && c.total_steps % options_.checkpoint_every == 0) save(c);
}

void Checkpointer::end_epoch(const Cursor& c, std::size_t) {
  // Unless the periodic checkpoint just wrote this very cursor.
  if (options_.checkpoint_every == 0 || c.total_steps % options_.checkpoint_every != 0) save(c);
}

void Checkpointer::stopped(const Cursor& c) {
  if (options_.checkpoint_every == 0 || c.total_steps % options_.checkpoint_every != 0) save(c);
}

void Checkpointer::save(const Cursor& c) {
  CheckpointMeta meta = base_;
  const bool epoch_done = c.next_step == steps_in_epoch_;
  meta.epoch = epoch_done ? c.epoch + 1 : c.epoch;
  meta.step = epoch_done ? 0 : c.next_step;
  meta.total_steps = c.total_steps;
  meta.world_size = world_size_;
  meta.workers = policy_.learned();
  save_checkpoint(options_.checkpoint_dir, meta, model_, optimizer_);
}

void ProgressFeed::after_step(const StepOutcome& s, const Cursor& c) {
  callback_({c.total_steps, planned_steps_, c.epoch + 1, epochs_, s.plan.batch, s.all.loss, s.plan.split});
}

}  // namespace hetrain::train

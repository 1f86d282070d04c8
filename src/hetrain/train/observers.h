// What watches the training step without being part of it: per-step
// metrics, the trace, the sample log, checkpoints and progress. The step
// (train/step.h) knows none of them; the trainer calls each observer at the
// same points on every rank, so the collective ones (end_epoch) line up.
#pragma once

#include <cstddef>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hetrain/alloc/policy.h"
#include "hetrain/comm/group.h"
#include "hetrain/record/metrics.h"
#include "hetrain/record/step_progress.h"
#include "hetrain/record/trace.h"
#include "hetrain/train/checkpoint.h"
#include "hetrain/train/step.h"

namespace hetrain::train {

// The clock of the curves against wall-clock time: seconds since the run's
// start with the test evaluations' own time left out (they measure the
// model, they do not train it, and they cost every policy the same).
struct RunClock {
  Clock::time_point start = Clock::now();
  double paused_seconds = 0.0;  // spent evaluating so far
  double at(Clock::time_point t) const {
    return std::chrono::duration<double>(t - start).count() - paused_seconds;
  }
};

// Where the run stands after a step or an epoch.
struct Cursor {
  std::size_t epoch = 0;        // 0-based, the epoch just trained in
  std::size_t next_step = 0;    // its next step
  std::size_t total_steps = 0;  // steps done in all
};

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void before_compute(const StepPlan&) {}
  virtual void after_step(const StepOutcome&, const Cursor&) {}
  // Collective where an observer gathers: every rank calls it after each
  // epoch's steps, observers in the same order.
  virtual void end_epoch(const Cursor&, std::size_t /*epoch_steps*/) {}
  // Every rank, after the step at which the ranks agreed to stop (train/stop.h).
  virtual void stopped(const Cursor&) {}
};

// --sample-log PREFIX: each rank appends "epoch step id..." for the samples
// it trains on, flushed per line so a killed run's log stays complete.
class SampleLog final : public StepObserver {
 public:
  SampleLog(const std::string& prefix, std::size_t rank, int restart_count);
  void before_compute(const StepPlan& plan) override;

 private:
  std::ofstream out_;
};

// Every rank's per-step batch, compute, wait, hidden communication and
// input wait, with the step's loss and end time, gathered into the metrics
// at the end of each epoch.
class StepLog final : public StepObserver {
 public:
  StepLog(comm::Group& group, std::vector<record::StepRecord>& out, const RunClock& clock)
      : group_(group), out_(out), clock_(clock) {}
  void after_step(const StepOutcome& s, const Cursor&) override;
  void end_epoch(const Cursor& c, std::size_t epoch_steps) override;

 private:
  comm::Group& group_;
  std::vector<record::StepRecord>& out_;
  const RunClock& clock_;  // steps' end times
  std::vector<double> mine_;  // kFields per step of this epoch
};

// --trace FILE: every rank times its steps; rank 0 writes the timeline
// (record/trace.h).
class TraceRecorder final : public StepObserver {
 public:
  TraceRecorder(comm::Group& group, const std::string& path, Clock::time_point origin);
  ~TraceRecorder() override;
  void after_step(const StepOutcome& s, const Cursor&) override;
  void end_epoch(const Cursor& c, std::size_t epoch_steps) override;
  // Finishes the file (rank 0); without it the trace is discarded.
  void close();

 private:
  comm::Group& group_;
  Clock::time_point origin_;
  std::unique_ptr<record::TraceWriter> writer_;  // rank 0 only
  std::vector<record::StepTimes> mine_;
};

// --checkpoint DIR: rank 0 saves every --checkpoint-every steps and at the
// end of each epoch (every rank holds the same state).
class Checkpointer final : public StepObserver {
 public:
  Checkpointer(const TrainOptions& o, const CheckpointMeta& base, std::size_t steps_in_epoch, int world_size,
               Model& model, torch::optim::Optimizer& optimizer, const alloc::Policy& policy);
  void after_step(const StepOutcome& s, const Cursor& c) override;
  void end_epoch(const Cursor& c, std::size_t epoch_steps) override;
  void stopped(const Cursor& c) override;

 private:
  void save(const Cursor& c);
  const TrainOptions& options_;
  CheckpointMeta base_;
  std::size_t steps_in_epoch_;
  int world_size_;
  Model& model_;
  torch::optim::Optimizer& optimizer_;
  const alloc::Policy& policy_;
};

// Hands each finished step to a callback (the CLI's progress bar).
class ProgressFeed final : public StepObserver {
 public:
  using Callback = std::function<void(const record::StepProgress&)>;
  ProgressFeed(Callback callback, std::size_t planned_steps, std::size_t epochs)
      : callback_(std::move(callback)), planned_steps_(planned_steps), epochs_(epochs) {}
  void after_step(const StepOutcome& s, const Cursor& c) override;

 private:
  Callback callback_;
  std::size_t planned_steps_, epochs_;
};

}  // namespace hetrain::train

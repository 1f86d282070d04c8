// `--trace FILE`: a per-worker timeline in Chrome's trace-event JSON (opens in
// Perfetto, chrome://tracing, speedscope), modelled on Horovod's timeline.
//
// Design: on the step path each rank only stores a few timestamps per step
// (StepTimes, no allocation beyond a vector push, no I/O). At the end of an
// epoch every rank's timestamps are gathered (the trainer's allgather), and
// rank 0 hands them to a TraceWriter, whose own thread turns them into
// events and streams them to a temporary file; close() renames it into
// place, so a failed run leaves no half trace.
//
// Rows: pid 0, one tid per rank ("rank i"). Spans per step and rank:
//   compute     forward+backward (+ emulated slowdown)
//   wait        in the allreduce until the last worker arrived
//   allreduce   from the last arrival to the end of the allreduce (transfer)
//   optimizer   the optimizer step
//   allocation  the policy's decision of the next split
// Clocks: each rank records seconds since its own start of training; the
// writer aligns every rank's row to rank 0's by the median, over the epoch's
// steps, of the difference of their allreduce end times (every rank leaves
// an allreduce at about the same moment), so machines need no common clock.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>


namespace hetrain::record {

// One rank's view of one step, seconds since the common origin.
struct StepTimes {
  double compute_begin = 0.0;
  double allreduce_begin = 0.0;  // = compute end
  double allreduce_end = 0.0;
  double decide_begin = 0.0;  // = optimizer step end
  double decide_end = 0.0;
  double local_batch = 0.0;  // b_i of the step (samples)
};

// StepTimes as plain doubles (kStepTimesFields per step) and back, so that
// a caller can gather them over a comm::Group.
inline constexpr std::size_t kStepTimesFields = 6;
std::vector<double> flatten(const std::vector<StepTimes>& steps);
std::vector<StepTimes> unflatten(const double* values, std::size_t steps);

class TraceWriter {
 public:
  // Opens a temporary file beside `path` (DataError if it cannot) and starts
  // the writer thread.
  TraceWriter(std::string path, int world_size);
  // Without close(): stops the thread and removes the temporary file.
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Queues an epoch's steps (times[step][rank]); `first_step` is the global
  // index of its first step. Returns at once; the writer thread does the rest.
  void add_epoch(std::size_t epoch, std::size_t first_step, std::vector<std::vector<StepTimes>> times);

  // Writes what is queued, closes the JSON, fsyncs and renames the file
  // into place. Throws DataError on a write failure.
  void close();

 private:
  struct Batch {
    std::size_t epoch = 0, first_step = 0;
    std::vector<std::vector<StepTimes>> times;
  };
  void run();
  void write_batch(const Batch& b);
  void stop();

  std::string path_, tmp_;
  int world_size_ = 1;
  std::FILE* file_ = nullptr;
  bool failed_ = false;  // a write failed (writer thread); close() reports it

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Batch> queue_;  // guarded by mutex_
  bool stopping_ = false;    // guarded by mutex_
  std::thread thread_;
};

}  // namespace hetrain::record

// The input pipeline of one worker: while step k computes, a background
// thread reads the samples this worker is predicted to train on in steps
// k + 1 .. k + kDepth (its slices under the current split, which the
// allocation policy changes rarely: a small margin around them covers a
// moving split) and hints the step after those to the kernel, so that only
// a wrong prediction, or reads falling more than kDepth steps behind, cost
// the step time. The samples, and so the results, never depend on the
// prediction: what is not covered is read on the spot.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "hetrain/train/examples.h"

namespace hetrain::train {

class Prefetcher {
 public:
  // Steps read ahead and held in memory. Two let a read take up to two
  // steps' time (a disk seek queue, a prefetch thread starved of CPU by the
  // compute) before a step waits for it, while what is held stays at two
  // slices (with margins) per worker, plus one read being dropped.
  static constexpr std::size_t kDepth = 2;

  // A step to read: positions [begin, end) of the permutation for global step `key`.
  struct Range {
    std::size_t key = 0, begin = 0, end = 0;
  };

  // `timeout_seconds`: the longest take() waits for the thread (--timeout).
  Prefetcher(const Examples& examples, double timeout_seconds);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The steps to have read, nearest first (at most kDepth are kept): a step
  // already read or being read over a range that covers the new one is kept,
  // any other read is replaced or dropped. Then positions `hint` (the step
  // after them) are hinted (Examples::will_need), so the files' pages are on
  // their way a step before they are read. Never waits for the thread.
  void ahead(std::span<const std::uint32_t> permutation, std::span<const Range> steps,
             std::pair<std::size_t, std::size_t> hint = {0, 0});

  // The samples at positions [begin, begin + count) of `permutation` for
  // step `key`: a view of the rows read ahead when they cover them, else read
  // now. Drops what was read for this step and earlier ones. Rethrows what
  // the thread's read threw; DataError when the thread takes longer than
  // the timeout.
  Batch take(std::size_t key, std::span<const std::uint32_t> permutation, std::size_t begin, std::size_t count);

  std::size_t hits() const { return hits_; }
  std::size_t misses() const { return misses_; }

 private:
  struct Job {
    std::size_t key = 0, begin = 0, end = 0;
    std::vector<std::uint32_t> ids;  // permutation[begin, end): the permutation may go before the read ends
    bool reading = false;
    std::optional<Batch> done;
    std::exception_ptr error;
    bool finished() const { return done.has_value() || error != nullptr; }
  };
  // Shared: a job dropped while the thread reads it lives until the read ends.
  using JobPtr = std::shared_ptr<Job>;
  void loop();
  // The first job nobody reads yet, nearest step first; null if none.
  JobPtr next_unread() const;
  void read(const JobPtr& job, std::unique_lock<std::mutex>& lock);

  const Examples& examples_;
  double timeout_seconds_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<JobPtr> jobs_;          // nearest step first, at most kDepth
  std::vector<std::uint32_t> hint_;   // hinted once the jobs are read
  bool stop_ = false;
  std::size_t hits_ = 0, misses_ = 0;
  std::thread thread_;  // last: starts after everything it uses
};

}  // namespace hetrain::train

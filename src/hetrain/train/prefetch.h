// The input pipeline of one worker: while step k computes, a background
// thread reads the samples this worker is predicted to train on in step
// k + 1 (its slice under the current split, which the allocation policy
// changes rarely: a small margin around it covers a moving split), so that
// only a wrong prediction, or a read slower than a step, costs the step
// time. The samples, and so the results, never depend on the prediction:
// what is not covered is read on the spot.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
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
  // `timeout_seconds`: the longest take() waits for the thread (--timeout).
  Prefetcher(const Examples& examples, double timeout_seconds);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Starts reading positions [begin, end) of `permutation` for step `key`
  // (a global step index), dropping any earlier read not taken yet; then
  // hints positions `hint` (the step after: Examples::will_need), so the
  // files' pages are on their way a step before they are read.
  void ahead(std::size_t key, std::span<const std::uint32_t> permutation, std::size_t begin, std::size_t end,
             std::pair<std::size_t, std::size_t> hint = {0, 0});

  // The samples at positions [begin, begin + count) of `permutation` for
  // step `key`: a view of the rows read ahead when they cover them, else read
  // now. Rethrows what the thread's read threw; DataError when the thread
  // takes longer than the timeout.
  Batch take(std::size_t key, std::span<const std::uint32_t> permutation, std::size_t begin, std::size_t count);

  std::size_t hits() const { return hits_; }
  std::size_t misses() const { return misses_; }

 private:
  struct Job {
    std::size_t key = 0, begin = 0, end = 0;
    std::vector<std::uint32_t> ids;  // permutation[begin, end): the permutation may go before the read ends
    std::vector<std::uint32_t> hint;  // read after ids, with no wait
    std::optional<Batch> done;
    std::exception_ptr error;
  };
  void loop();

  const Examples& examples_;
  double timeout_seconds_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<Job> job_;  // the latest request, read or being read
  bool busy_ = false;       // the thread is reading job_
  bool stop_ = false;
  std::size_t hits_ = 0, misses_ = 0;
  std::thread thread_;  // last: starts after everything it uses
};

}  // namespace hetrain::train

#include "hetrain/train/prefetch.h"

#include <fmt/format.h>

#include <chrono>

#include "hetrain/common/error.h"

namespace hetrain::train {
namespace {

// The reading thread checks for a stop this often while it has no work.
constexpr auto kIdlePoll = std::chrono::milliseconds(200);

Batch read_now(const Examples& examples, std::span<const std::uint32_t> permutation, std::size_t begin,
               std::size_t count) {
  if (count == 0) return {};
  return examples.gather(permutation.subspan(begin, count));
}

}  // namespace

Prefetcher::Prefetcher(const Examples& examples, double timeout_seconds)
    : examples_(examples), timeout_seconds_(timeout_seconds), thread_([this] { loop(); }) {}

Prefetcher::~Prefetcher() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Prefetcher::ahead(std::size_t key, std::span<const std::uint32_t> permutation, std::size_t begin,
                       std::size_t end, std::pair<std::size_t, std::size_t> hint) {
  Job job;
  job.key = key;
  job.begin = begin;
  job.end = end;
  job.ids.assign(permutation.begin() + static_cast<std::ptrdiff_t>(begin),
                 permutation.begin() + static_cast<std::ptrdiff_t>(end));
  job.hint.assign(permutation.begin() + static_cast<std::ptrdiff_t>(hint.first),
                  permutation.begin() + static_cast<std::ptrdiff_t>(hint.second));
  std::unique_lock lock(mutex_);
  // A read in flight keeps its job: wait for it rather than race it (the
  // previous step's prediction, normally taken long ago).
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_seconds_), [this] { return !busy_; })) {
    throw DataError(fmt::format("reading training samples took more than --timeout {} s", timeout_seconds_));
  }
  job_ = std::move(job);
  lock.unlock();
  cv_.notify_all();
}

Batch Prefetcher::take(std::size_t key, std::span<const std::uint32_t> permutation, std::size_t begin,
                       std::size_t count) {
  std::unique_lock lock(mutex_);
  const bool covers = job_ && job_->key == key && job_->begin <= begin && begin + count <= job_->end;
  if (!covers || count == 0) {
    job_.reset();  // stale: the thread finishes it, nobody takes it
    ++misses_;
    lock.unlock();
    return read_now(examples_, permutation, begin, count);
  }
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_seconds_),
                    [this] { return job_->done.has_value() || job_->error != nullptr; })) {
    throw DataError(fmt::format("reading the samples of step {} took more than --timeout {} s", key + 1,
                                timeout_seconds_));
  }
  if (job_->error) std::rethrow_exception(job_->error);
  Job job = std::move(*job_);
  job_.reset();
  ++hits_;
  lock.unlock();
  const auto offset = static_cast<std::int64_t>(begin - job.begin), n = static_cast<std::int64_t>(count);
  return {job.done->x.narrow(0, offset, n), job.done->y.narrow(0, offset, n)};
}

void Prefetcher::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (!job_ || job_->done || job_->error) {
      cv_.wait_for(lock, kIdlePoll);
      continue;
    }
    busy_ = true;
    const std::vector<std::uint32_t> ids = job_->ids, hint = job_->hint;
    lock.unlock();
    std::optional<Batch> batch;
    std::exception_ptr error;
    try {
      batch = examples_.gather(ids);
      examples_.will_need(hint);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    // The job may have been dropped (a miss) while it was read.
    if (job_ && job_->ids == ids && !job_->done) {
      job_->done = std::move(batch);
      job_->error = error;
    }
    cv_.notify_all();
  }
}

}  // namespace hetrain::train

#include "hetrain/train/prefetch.h"

#include <fmt/format.h>

#include <algorithm>
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

std::vector<std::uint32_t> positions(std::span<const std::uint32_t> permutation, std::size_t begin,
                                     std::size_t end) {
  return {permutation.begin() + static_cast<std::ptrdiff_t>(begin),
          permutation.begin() + static_cast<std::ptrdiff_t>(end)};
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

void Prefetcher::ahead(std::span<const std::uint32_t> permutation, std::span<const Range> steps,
                       std::pair<std::size_t, std::size_t> hint) {
  std::vector<JobPtr> next;
  std::unique_lock lock(mutex_);
  for (const Range& r : steps.first(std::min(steps.size(), kDepth))) {
    const auto same = std::find_if(jobs_.begin(), jobs_.end(), [&r](const JobPtr& j) {
      return j->key == r.key && j->begin <= r.begin && r.end <= j->end && j->error == nullptr;
    });
    if (same != jobs_.end()) {
      next.push_back(*same);
      continue;
    }
    auto job = std::make_shared<Job>();
    job->key = r.key;
    job->begin = r.begin;
    job->end = r.end;
    job->ids = positions(permutation, r.begin, r.end);
    next.push_back(std::move(job));
  }
  // Jobs not asked for any more go; one being read finishes unseen.
  jobs_ = std::move(next);
  hint_ = positions(permutation, hint.first, hint.second);
  lock.unlock();
  cv_.notify_all();
}

Batch Prefetcher::take(std::size_t key, std::span<const std::uint32_t> permutation, std::size_t begin,
                       std::size_t count) {
  std::unique_lock lock(mutex_);
  const auto it = std::find_if(jobs_.begin(), jobs_.end(), [&](const JobPtr& j) {
    return j->key == key && j->begin <= begin && begin + count <= j->end;
  });
  const JobPtr job = it != jobs_.end() && count > 0 ? *it : nullptr;
  const auto drop_past = [this, key] {
    std::erase_if(jobs_, [key](const JobPtr& j) { return j->key <= key; });
  };
  if (job == nullptr) {
    drop_past();
    ++misses_;
    lock.unlock();
    return read_now(examples_, permutation, begin, count);
  }
  // Dropped only once finished: the thread reads only what jobs_ holds.
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_seconds_), [&job] { return job->finished(); })) {
    throw DataError(fmt::format("reading the samples of step {} took more than --timeout {} s", key + 1,
                                timeout_seconds_));
  }
  drop_past();
  if (job->error) std::rethrow_exception(job->error);
  ++hits_;
  const Batch rows = std::move(*job->done);
  lock.unlock();
  const auto offset = static_cast<std::int64_t>(begin - job->begin), n = static_cast<std::int64_t>(count);
  return {rows.x.narrow(0, offset, n), rows.y.narrow(0, offset, n)};
}

Prefetcher::JobPtr Prefetcher::next_unread() const {
  for (const JobPtr& j : jobs_) {
    if (!j->reading && !j->finished()) return j;
  }
  return nullptr;
}

void Prefetcher::read(const JobPtr& job, std::unique_lock<std::mutex>& lock) {
  job->reading = true;
  lock.unlock();
  std::optional<Batch> batch;
  std::exception_ptr error;
  try {
    batch = examples_.gather(job->ids);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  job->reading = false;
  job->done = std::move(batch);
  job->error = error;
  cv_.notify_all();
}

void Prefetcher::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (const JobPtr job = next_unread()) {
      read(job, lock);
      continue;
    }
    if (!hint_.empty()) {
      const std::vector<std::uint32_t> ids = std::move(hint_);
      hint_.clear();
      lock.unlock();
      // A hint that fails costs nothing: the read of these rows reports it.
      try {
        examples_.will_need(ids);
      } catch (...) {
      }
      lock.lock();
      continue;
    }
    cv_.wait_for(lock, kIdlePoll);
  }
}

}  // namespace hetrain::train

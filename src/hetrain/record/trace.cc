#include "hetrain/record/trace.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "hetrain/common/error.h"
#include "hetrain/common/file_io.h"
#include "hetrain/common/median.h"

namespace hetrain::record {
namespace {

constexpr std::size_t kFields = kStepTimesFields;
constexpr double kMicrosPerSecond = 1e6;

double& field(StepTimes& t, std::size_t f) {
  switch (f) {
    case 0:
      return t.compute_begin;
    case 1:
      return t.allreduce_begin;
    case 2:
      return t.allreduce_end;
    case 3:
      return t.decide_begin;
    case 4:
      return t.decide_end;
    default:
      return t.local_batch;
  }
}

// Each rank's clock minus rank 0's: every rank leaves an allreduce at about
// the same moment, so the median over the steps of the difference of the
// allreduce ends is the offset, whatever a descheduled process did on a step.
std::vector<double> clock_offsets(const std::vector<std::vector<StepTimes>>& times) {
  const std::size_t n = times.empty() ? 0 : times.front().size();
  std::vector<double> offset(n, 0.0);
  for (std::size_t i = 1; i < n; ++i) {
    std::vector<double> d;
    d.reserve(times.size());
    for (const auto& step : times) d.push_back(step[i].allreduce_end - step[0].allreduce_end);
    offset[i] = upper_median(d);
  }
  return offset;
}

void shift(StepTimes& t, double by) {
  for (std::size_t f = 0; f + 1 < kFields; ++f) field(t, f) += by;  // every time, not the batch
}

}  // namespace

std::vector<double> flatten(const std::vector<StepTimes>& steps) {
  std::vector<double> out;
  out.reserve(steps.size() * kFields);
  for (StepTimes t : steps) {
    for (std::size_t f = 0; f < kFields; ++f) out.push_back(field(t, f));
  }
  return out;
}

std::vector<StepTimes> unflatten(const double* values, std::size_t steps) {
  std::vector<StepTimes> out(steps);
  for (std::size_t s = 0; s < steps; ++s) {
    for (std::size_t f = 0; f < kFields; ++f) field(out[s], f) = values[s * kFields + f];
  }
  return out;
}

TraceWriter::TraceWriter(std::string path, int world_size)
    : path_(std::move(path)), tmp_(temporary_path_for(path_)), world_size_(world_size) {
  file_ = std::fopen(tmp_.c_str(), "w");
  if (!file_) throw DataError(fmt::format("cannot write {}: {}", path_, std::strerror(errno)));
  std::string head = R"({"displayTimeUnit":"ms","otherData":{"producer":"hetrain"},"traceEvents":[)";
  head +=
      "\n"
      R"({"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"hetrain workers"}})";
  for (int i = 0; i < world_size_; ++i) {
    head += fmt::format(
        ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":{0},\"args\":{{\"name\":"
        "\"rank {0}\"}}}},\n{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":{0},"
        "\"args\":{{\"sort_index\":{0}}}}}",
        i);
  }
  if (std::fwrite(head.data(), 1, head.size(), file_) != head.size()) failed_ = true;
  thread_ = std::thread([this] { run(); });
}

TraceWriter::~TraceWriter() {
  stop();
  if (file_) {
    std::fclose(file_);
    std::remove(tmp_.c_str());
  }
}

void TraceWriter::add_epoch(std::size_t epoch, std::size_t first_step,
                            std::vector<std::vector<StepTimes>> times) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({epoch, first_step, std::move(times)});
  }
  ready_.notify_one();
}

void TraceWriter::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void TraceWriter::run() {
  for (;;) {
    Batch b;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything is written
      b = std::move(queue_.front());
      queue_.pop_front();
    }
    write_batch(b);
  }
}

// One "complete" event per span; the wait/allreduce boundary is the last
// arrival at the allreduce, known only once every rank's times are here.
void TraceWriter::write_batch(const Batch& b) {
  std::string out;
  auto span = [&](const char* name, const char* cat, std::size_t rank, std::size_t step, double begin,
                  double end, double batch) {
    if (end <= begin) return;  // e.g. no wait for the last worker to arrive
    out += fmt::format(
        ",\n{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":0,\"tid\":{},"
        "\"args\":{{\"step\":{},\"epoch\":{},\"local_batch\":{}}}}}",
        name, cat, begin * kMicrosPerSecond, (end - begin) * kMicrosPerSecond, rank, step, b.epoch,
        std::llround(batch));
  };
  const auto offset = clock_offsets(b.times);
  for (std::size_t s = 0; s < b.times.size(); ++s) {
    auto ranks = b.times[s];
    for (std::size_t i = 0; i < ranks.size(); ++i) shift(ranks[i], -offset[i]);
    double last_arrival = 0.0;
    for (const auto& t : ranks) last_arrival = std::max(last_arrival, t.allreduce_begin);
    const std::size_t step = b.first_step + s;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const auto& t = ranks[i];
      const double transfer_begin = std::clamp(last_arrival, t.allreduce_begin, t.allreduce_end);
      span("compute", "compute", i, step, t.compute_begin, t.allreduce_begin, t.local_batch);
      span("wait", "comm", i, step, t.allreduce_begin, transfer_begin, t.local_batch);
      span("allreduce", "comm", i, step, transfer_begin, t.allreduce_end, t.local_batch);
      span("optimizer", "compute", i, step, t.allreduce_end, t.decide_begin, t.local_batch);
      span("allocation", "policy", i, step, t.decide_begin, t.decide_end, t.local_batch);
    }
  }
  if (!failed_ && std::fwrite(out.data(), 1, out.size(), file_) != out.size()) failed_ = true;
}

void TraceWriter::close() {
  stop();
  const std::string tail = "\n]}\n";
  bool ok = !failed_ && std::fwrite(tail.data(), 1, tail.size(), file_) == tail.size();
  ok = ok && std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
  const int err = errno;
  ok = std::fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::remove(tmp_.c_str());
    throw DataError(fmt::format("cannot write {}: {}", path_, std::strerror(ok ? errno : err)));
  }
}

}  // namespace hetrain::record

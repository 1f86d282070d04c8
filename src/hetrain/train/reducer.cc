#include "hetrain/train/reducer.h"

#include <torch/csrc/autograd/function_hook.h>

#include <chrono>

#include "hetrain/common/error.h"

namespace hetrain::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Runs after a parameter's gradient was accumulated into its .grad view.
class ReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  ReadyHook(std::function<void()> ready) : ready_(std::move(ready)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    ready_();
    return outputs;
  }

 private:
  std::function<void()> ready_;
};

}  // namespace

GradientReducer::GradientReducer(torch::nn::Module& model, std::span<float> buffer, std::size_t num_params,
                                 comm::Group& group, comm::Algorithm algorithm, std::size_t bucket_elements,
                                 bool overlap)
    : buffer_(buffer), group_(group), algorithm_(algorithm), bucket_elements_(bucket_elements), overlap_(overlap) {
  HETRAIN_ENFORCE_LE(num_params, buffer.size());
  HETRAIN_ENFORCE_LT(std::size_t{0}, bucket_elements);
  auto flat = torch::from_blob(buffer.data(), {static_cast<std::int64_t>(buffer.size())}, torch::kFloat32);
  auto params = model.parameters();
  std::size_t offset = 0;
  std::vector<std::size_t> bucket_of(params.size());
  for (std::size_t k = params.size(); k-- > 0;) {  // reverse module order: backward's order
    auto& p = params[k];
    const auto count = static_cast<std::size_t>(p.numel());
    if (bucket_end_.empty() || bucket_end_.back() - bucket_begin_.back() >= bucket_elements_) {
      bucket_begin_.push_back(offset);
      bucket_end_.push_back(offset);
      params_in_bucket_.push_back(0);
    }
    p.mutable_grad() = flat.narrow(0, static_cast<std::int64_t>(offset), p.numel()).view_as(p);
    offset += count;
    bucket_end_.back() = offset;
    ++params_in_bucket_.back();
    bucket_of[k] = bucket_end_.size() - 1;
  }
  HETRAIN_ENFORCE_EQ(offset, num_params);
  if (bucket_end_.empty()) {  // no parameters: one bucket of telemetry
    bucket_begin_.push_back(0);
    bucket_end_.push_back(0);
    params_in_bucket_.push_back(0);
  }
  bucket_end_.back() = buffer.size();  // the telemetry rides in the last bucket
  pending_ = params_in_bucket_;
  if (!overlap_) return;
  for (std::size_t k = 0; k < params.size(); ++k) {
    auto acc = torch::autograd::impl::grad_accumulator(params[k]);
    const std::size_t b = bucket_of[k];
    acc->add_post_hook(std::make_unique<ReadyHook>([this, b] { parameter_ready(b); }));
    accumulators_.push_back(std::move(acc));
  }
  thread_ = std::thread([this] { communicate(); });
}

GradientReducer::~GradientReducer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GradientReducer::begin_step() {
  if (!overlap_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = params_in_bucket_;
    finishing_ = false;
    done_ = 0;
    comm_seconds_ = 0.0;
    error_ = nullptr;
    ++step_;
  }
  cv_.notify_all();
}

void GradientReducer::parameter_ready(std::size_t bucket) {
  bool notify = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    notify = --pending_[bucket] == 0;
  }
  if (notify) cv_.notify_all();
}

void GradientReducer::communicate() {
  std::size_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || step_ != seen; });
    if (stop_) return;
    seen = step_;
    const std::size_t last = bucket_end_.size() - 1;
    for (std::size_t b = 0; b <= last; ++b) {
      cv_.wait(lock, [&] { return stop_ || (pending_[b] <= 0 && (b != last || finishing_)); });
      if (stop_) return;
      lock.unlock();
      const auto t0 = Clock::now();
      std::exception_ptr failed;
      try {
        comm::allreduce(group_, {buffer_.subspan(bucket_begin_[b], bucket_end_[b] - bucket_begin_[b]), algorithm_, 0});
      } catch (...) {
        failed = std::current_exception();
      }
      const double took = seconds_since(t0);
      lock.lock();
      comm_seconds_ += took;
      if (failed) {
        error_ = failed;
        done_ = bucket_end_.size();  // the rest would only wait for a dead peer
        cv_.notify_all();
        break;
      }
      done_ = b + 1;
      cv_.notify_all();
    }
  }
}

ReduceTimes GradientReducer::finish() {
  const auto t0 = Clock::now();
  ReduceTimes times;
  if (!overlap_) {
    comm::allreduce(group_, {buffer_, algorithm_, bucket_elements_});
    times.exposed_seconds = seconds_since(t0);
    return times;
  }
  std::unique_lock<std::mutex> lock(mu_);
  finishing_ = true;
  for (auto& p : pending_) p = 0;  // parameters backward did not reach hold zeros
  cv_.notify_all();
  cv_.wait(lock, [&] { return done_ == bucket_end_.size(); });
  times.exposed_seconds = seconds_since(t0);
  times.hidden_seconds = std::max(0.0, comm_seconds_ - times.exposed_seconds);
  if (error_) std::rethrow_exception(error_);
  return times;
}

}  // namespace hetrain::train

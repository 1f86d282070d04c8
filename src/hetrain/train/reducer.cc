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
    : buffer_(buffer),
      group_(group),
      algorithm_(algorithm),
      bucket_elements_(bucket_elements),
      overlap_(overlap),
      params_(model.parameters()) {
  HETRAIN_ENFORCE_LE(num_params, buffer.size());
  HETRAIN_ENFORCE_LT(std::size_t{0}, bucket_elements);
  std::size_t count = 0;
  for (const auto& p : params_) count += static_cast<std::size_t>(p.numel());
  HETRAIN_ENFORCE_EQ(count, num_params);
  std::vector<std::size_t> reverse(params_.size());  // reverse module order: backward's, usually
  for (std::size_t k = 0; k < reverse.size(); ++k) reverse[k] = reverse.size() - 1 - k;
  lay_out(reverse);
  recorded_.assign(params_.size(), false);
  learned_ = !overlap_ || params_.empty();
  if (!overlap_) return;
  for (std::size_t k = 0; k < params_.size(); ++k) {
    auto acc = torch::autograd::impl::grad_accumulator(params_[k]);
    acc->add_post_hook(std::make_unique<ReadyHook>([this, k] { parameter_ready(k); }));
    accumulators_.push_back(std::move(acc));
  }
  thread_ = std::thread([this] { communicate(); });
}

void GradientReducer::lay_out(const std::vector<std::size_t>& order) {
  auto flat = torch::from_blob(buffer_.data(), {static_cast<std::int64_t>(buffer_.size())}, torch::kFloat32);
  order_ = order;
  offset_of_.assign(params_.size(), 0);
  bucket_of_.assign(params_.size(), 0);
  bucket_begin_.clear();
  bucket_end_.clear();
  params_in_bucket_.clear();
  std::size_t offset = 0;
  for (const std::size_t k : order) {
    auto& p = params_[k];
    if (bucket_end_.empty() || bucket_end_.back() - bucket_begin_.back() >= bucket_elements_) {
      bucket_begin_.push_back(offset);
      bucket_end_.push_back(offset);
      params_in_bucket_.push_back(0);
    }
    p.mutable_grad() = flat.narrow(0, static_cast<std::int64_t>(offset), p.numel()).view_as(p);
    offset_of_[k] = offset;
    offset += static_cast<std::size_t>(p.numel());
    bucket_end_.back() = offset;
    ++params_in_bucket_.back();
    bucket_of_[k] = bucket_end_.size() - 1;
  }
  if (bucket_end_.empty()) {  // no parameters: one bucket of telemetry
    bucket_begin_.push_back(0);
    bucket_end_.push_back(0);
    params_in_bucket_.push_back(0);
  }
  bucket_end_.back() = buffer_.size();  // the telemetry rides in the last bucket
  pending_ = params_in_bucket_;
}

std::vector<std::vector<std::size_t>> GradientReducer::bucket_parameters() const {
  std::vector<std::vector<std::size_t>> out(bucket_end_.size());
  for (const std::size_t k : order_) out[bucket_of_[k]].push_back(k);
  return out;
}

void GradientReducer::relearn_order() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    learned_ = true;  // hooks stop recording
  }
  const std::size_t n = params_.size();
  // Complete this rank's recording: parameters backward never reached keep
  // their place relative to each other, after the recorded ones.
  std::vector<std::size_t> order = observed_;
  const std::size_t seen = order.size();
  for (const std::size_t k : order_)
    if (!recorded_[k]) order.push_back(k);
  // Agree on one recording: the fullest, the lowest rank on a tie.
  const float mine = static_cast<float>(seen);
  const std::vector<float> counts = group_.allgather(std::span<const float>(&mine, 1));
  const auto root = static_cast<int>(std::max_element(counts.begin(), counts.end()) - counts.begin());
  std::vector<float> shared(order.begin(), order.end());  // indices < 2^24: exact in float
  group_.broadcast(shared, root);
  std::vector<std::size_t> agreed;
  std::vector<bool> taken(n, false);
  for (const float f : shared) {
    const auto k = static_cast<std::size_t>(f);
    HETRAIN_ENFORCE_LT(k, n);
    HETRAIN_ENFORCE_EQ(static_cast<bool>(taken[k]), false);  // a permutation
    taken[k] = true;
    agreed.push_back(k);
  }
  if (agreed == order_) return;
  // Move the reduced gradients (the optimizer reads them next) to the new
  // layout. No hook runs between steps; the lock orders this before the
  // communication thread's next reads.
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<float> old(buffer_.begin(), buffer_.end());
  const std::vector<std::size_t> old_offset = offset_of_;
  lay_out(agreed);
  for (std::size_t k = 0; k < n; ++k) {
    const auto len = static_cast<std::size_t>(params_[k].numel());
    std::copy_n(old.begin() + static_cast<std::ptrdiff_t>(old_offset[k]), len,
                buffer_.begin() + static_cast<std::ptrdiff_t>(offset_of_[k]));
  }
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
    done_ = 0;
    comm_seconds_ = 0.0;
    error_ = nullptr;
    ++step_;
  }
  cv_.notify_all();
}

void GradientReducer::parameter_ready(std::size_t param) {
  bool notify = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!learned_ && !recorded_[param]) {
      recorded_[param] = true;
      observed_.push_back(param);
    }
    notify = --pending_[bucket_of_[param]] == 0;
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
    // Every bucket but the last: that one carries the telemetry and goes
    // from finish(), on the training thread.
    const std::size_t last = bucket_end_.size() - 1;
    for (std::size_t b = 0; b < last; ++b) {
      cv_.wait(lock, [&] { return stop_ || pending_[b] <= 0; });
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
        done_ = last;  // the rest would only wait for a dead peer
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
  for (auto& p : pending_) p = 0;  // parameters backward did not reach hold zeros
  cv_.notify_all();
  const std::size_t last = bucket_end_.size() - 1;
  cv_.wait(lock, [&] { return done_ >= last; });
  if (error_) std::rethrow_exception(error_);
  const double earlier_seconds = comm_seconds_;
  lock.unlock();  // the communication thread is idle until the next step
  // The last bucket, on this thread: it could only start now, and a hand-off
  // to the communication thread and back would add two wake-ups to every
  // step (the whole reduction, when the gradients fit one bucket).
  const auto t_last = Clock::now();
  comm::allreduce(group_, {buffer_.subspan(bucket_begin_[last], bucket_end_[last] - bucket_begin_[last]),
                           algorithm_, 0});
  const double comm_seconds = earlier_seconds + seconds_since(t_last);
  times.exposed_seconds = seconds_since(t0);
  times.hidden_seconds = std::max(0.0, comm_seconds - times.exposed_seconds);
  if (!learned_) relearn_order();
  return times;
}

}  // namespace hetrain::train

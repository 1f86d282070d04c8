#include "hetrain/train/device_time.h"

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>

namespace hetrain::train {

using Clock = std::chrono::steady_clock;

struct DeviceTime::State {
  double backward_seconds = 0.0;     // this step's backward device time
  std::vector<double> share;         // per parameter: its share of this step's backward
  std::vector<double> numel_share;   // per parameter: its share of the trained parameters (step 1's split)
  std::vector<double> host_seconds;  // per parameter: host backward time before its hook, all steps
  Clock::time_point mark;            // the end of the forward's sleep, then of the last hook
  // Written by the backward's hooks, read by the training thread after
  // backward has returned; atomic so the order needs no further argument.
  std::atomic<double> slept{0.0};

  void sleep(double seconds) {
    if (seconds <= 0.0) return;
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    slept.store(slept.load() + took);
  }

  // Runs in parameter k's gradient hook, on the backward's thread.
  void hook(std::size_t k) {
    host_seconds[k] += std::chrono::duration<double>(Clock::now() - mark).count();
    sleep(backward_seconds * share[k]);
    mark = Clock::now();
  }
};

DeviceTime::DeviceTime(torch::nn::Module& model, bool enabled) : state_(std::make_shared<State>()) {
  if (!enabled) return;
  auto params = model.parameters();
  // Frozen parameters have no gradient, so no hook: the device's backward
  // time is spread over the others.
  auto trained = [&](std::size_t k) {
    return params[k].requires_grad() ? static_cast<double>(params[k].numel()) : 0.0;
  };
  double total = 0.0;
  for (std::size_t k = 0; k < params.size(); ++k) total += trained(k);
  for (std::size_t k = 0; k < params.size(); ++k) {
    state_->numel_share.push_back(total > 0.0 ? trained(k) / total : 0.0);
  }
  state_->share = state_->numel_share;
  state_->host_seconds.assign(params.size(), 0.0);
  for (std::size_t k = 0; k < params.size(); ++k) {
    if (!params[k].requires_grad()) continue;  // a hook on a tensor without gradient would throw
    // A weak pointer: a model kept after the trainer must not keep the state alive.
    std::weak_ptr<State> weak = state_;
    params[k].register_hook([weak, k](const torch::Tensor&) {
      if (auto s = weak.lock()) s->hook(k);
    });
  }
}

void DeviceTime::begin_step(double device_seconds) {
  State& s = *state_;
  s.slept.store(0.0);
  const double measured = std::accumulate(s.host_seconds.begin(), s.host_seconds.end(), 0.0);
  for (std::size_t k = 0; k < s.share.size(); ++k) {
    s.share[k] = measured > 0.0 ? s.host_seconds[k] / measured : s.numel_share[k];
  }
  s.backward_seconds = s.share.empty() ? 0.0 : device_seconds * (1.0 - kForwardShare);
  pending_forward_ = s.share.empty() ? 0.0 : device_seconds * kForwardShare;
}

void DeviceTime::after_forward() {
  state_->sleep(pending_forward_);
  pending_forward_ = 0.0;
  state_->mark = Clock::now();  // the backward starts now
}

double DeviceTime::slept_seconds() const { return state_->slept.load(); }

std::vector<double> DeviceTime::backward_shares() const { return state_->share; }

}  // namespace hetrain::train

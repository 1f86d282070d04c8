#include "hetrain/train/device_time.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace hetrain::train {

struct DeviceTime::State {
  double backward_seconds = 0.0;  // this step's backward device time
  std::vector<double> fraction;   // per parameter: its share of the backward
  // Written by the backward's hooks, read by the training thread after
  // backward has returned; atomic so the order needs no further argument.
  std::atomic<double> slept{0.0};

  void sleep(double seconds) {
    if (seconds <= 0.0) return;
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    slept.store(slept.load() + took);
  }
};

DeviceTime::DeviceTime(torch::nn::Module& model, bool enabled) : state_(std::make_shared<State>()) {
  if (!enabled) return;
  auto params = model.parameters();
  double total = 0.0;
  for (const auto& p : params) total += static_cast<double>(p.numel());
  for (std::size_t k = 0; k < params.size(); ++k) {
    state_->fraction.push_back(total > 0.0 ? static_cast<double>(params[k].numel()) / total : 0.0);
    if (!params[k].requires_grad()) continue;  // frozen: no gradient, no device time
    // A weak pointer: a model kept after the trainer must not keep the state alive.
    std::weak_ptr<State> weak = state_;
    params[k].register_hook([weak, k](const torch::Tensor&) {
      if (auto s = weak.lock()) s->sleep(s->backward_seconds * s->fraction[k]);
    });
  }
}

void DeviceTime::begin_step(double device_seconds) {
  state_->slept.store(0.0);
  state_->backward_seconds = state_->fraction.empty() ? 0.0 : device_seconds * (1.0 - kForwardShare);
  pending_forward_ = state_->fraction.empty() ? 0.0 : device_seconds * kForwardShare;
}

void DeviceTime::after_forward() {
  state_->sleep(pending_forward_);
  pending_forward_ = 0.0;
}

double DeviceTime::slept_seconds() const { return state_->slept.load(); }

}  // namespace hetrain::train

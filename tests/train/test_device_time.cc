// The emulated device time is slept where a device would hold the host: a
// third after the forward, the rest in the parameters' gradient hooks, each
// before its gradient reaches anything hooked after it (the reducer), shared
// out where the host's backward spends its time.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "hetrain/train/device_time.h"

namespace hetrain::train {
namespace {

constexpr double kDeviceSeconds = 0.03;
constexpr double kSlack = 1e-9;  // float sums of the slept durations

struct TwoLayers : torch::nn::Module {
  TwoLayers() {
    first = register_module("first", torch::nn::Linear(4, 8));
    last = register_module("last", torch::nn::Linear(8, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) { return last(torch::relu(first(x))); }
  torch::nn::Linear first{nullptr}, last{nullptr};
};

double numel_share(const torch::Tensor& p, TwoLayers& m) {
  double total = 0.0;
  for (const auto& q : m.parameters()) total += static_cast<double>(q.numel());
  return static_cast<double>(p.numel()) / total;
}

TEST(DeviceTime, DisabledSleepsNothingAndLeavesTheModelAlone) {
  TwoLayers m;
  DeviceTime device(m, false);
  device.begin_step(kDeviceSeconds);
  auto out = m.forward(torch::ones({3, 4}));
  device.after_forward();
  out.sum().backward();
  EXPECT_EQ(device.slept_seconds(), 0.0);
}

TEST(DeviceTime, ForwardShareThenBackwardBeforeEachGradientIsHandedOn) {
  TwoLayers m;
  DeviceTime device(m, true);
  // Hooked after the device time, as the reducer is: what it sees must come
  // after that parameter's share (and every share before it) was slept.
  double slept_when_first_weight_ready = -1.0;
  m.first->weight.register_hook(
      [&](const torch::Tensor&) { slept_when_first_weight_ready = device.slept_seconds(); });
  for (int step = 0; step < 3; ++step) {  // begin_step starts each step's count afresh
    device.begin_step(kDeviceSeconds);
    const auto shares = device.backward_shares();
    ASSERT_EQ(shares.size(), m.parameters().size());
    double sum = 0.0;
    for (const double s : shares) sum += s;
    EXPECT_NEAR(sum, 1.0, 1e-12);
    auto out = m.forward(torch::ones({3, 4}));
    EXPECT_EQ(device.slept_seconds(), 0.0);
    device.after_forward();
    EXPECT_GE(device.slept_seconds() + kSlack, kDeviceSeconds * kForwardShare);
    EXPECT_LT(device.slept_seconds(), kDeviceSeconds);
    out.sum().backward();
    EXPECT_GE(device.slept_seconds() + kSlack, kDeviceSeconds);
    // first.weight's gradient comes last but for (perhaps) first.bias's.
    const std::size_t first_bias = 1;  // parameters(): first.weight, first.bias, last.weight, last.bias
    const double before =
        kDeviceSeconds * kForwardShare + kDeviceSeconds * (1.0 - kForwardShare) * (1.0 - shares[first_bias]);
    EXPECT_GE(slept_when_first_weight_ready + kSlack, before);
  }
}

TEST(DeviceTime, FirstStepSplitsByParameterCount) {
  TwoLayers m;
  DeviceTime device(m, true);
  device.begin_step(kDeviceSeconds);
  const auto shares = device.backward_shares();
  const auto params = m.parameters();
  for (std::size_t k = 0; k < params.size(); ++k) EXPECT_DOUBLE_EQ(shares[k], numel_share(params[k], m));
}

TEST(DeviceTime, SharesFollowWhereTheHostsBackwardSpendsItsTime) {
  // `first` holds 40 of the 58 parameters, but the backward spends its time
  // between `last`'s gradients and `first`'s: a hook on the hidden
  // activation sleeps there, as a heavy layer's arithmetic would.
  constexpr double kHeavySeconds = 0.02;
  TwoLayers m;
  DeviceTime device(m, true);
  for (int step = 0; step < 2; ++step) {
    device.begin_step(kDeviceSeconds);
    auto hidden = torch::relu(m.first(torch::ones({3, 4})));
    hidden.register_hook([&](const torch::Tensor&) {
      std::this_thread::sleep_for(std::chrono::duration<double>(kHeavySeconds));
    });
    auto out = m.last(hidden);
    device.after_forward();
    out.sum().backward();
  }
  device.begin_step(kDeviceSeconds);
  const auto shares = device.backward_shares();
  // first.weight and first.bias: the heavy interval lies before whichever runs first.
  EXPECT_GT(shares[0] + shares[1], 0.5);
  EXPECT_GT(shares[0] + shares[1], numel_share(m.first->weight, m) + numel_share(m.first->bias, m));
}

TEST(DeviceTime, FrozenParametersGetNoShare) {
  TwoLayers m;
  m.first->weight.set_requires_grad(false);
  m.first->bias.set_requires_grad(false);
  DeviceTime device(m, true);             // no hook on a tensor without gradient (that would throw)
  for (int step = 0; step < 2; ++step) {  // the parameter-count split, then the measured one
    device.begin_step(kDeviceSeconds);
    const auto shares = device.backward_shares();
    EXPECT_EQ(shares[0], 0.0);
    EXPECT_EQ(shares[1], 0.0);
    auto out = m.forward(torch::ones({3, 4}));
    device.after_forward();
    out.sum().backward();
    // The whole device time is slept, in `last`'s hooks.
    EXPECT_GE(device.slept_seconds() + kSlack, kDeviceSeconds);
  }
}

}  // namespace
}  // namespace hetrain::train

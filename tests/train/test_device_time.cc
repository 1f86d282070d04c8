// The emulated device time is slept where a device would hold the host: a
// third after the forward, the rest in the parameters' gradient hooks, each
// before its gradient reaches anything hooked after it (the reducer).
#include <gtest/gtest.h>

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
  m.first->weight.register_hook([&](const torch::Tensor&) {
    slept_when_first_weight_ready = device.slept_seconds();
  });
  for (int step = 0; step < 2; ++step) {  // begin_step starts each step's count afresh
    device.begin_step(kDeviceSeconds);
    auto out = m.forward(torch::ones({3, 4}));
    EXPECT_EQ(device.slept_seconds(), 0.0);
    device.after_forward();
    EXPECT_GE(device.slept_seconds() + kSlack, kDeviceSeconds * kForwardShare);
    EXPECT_LT(device.slept_seconds(), kDeviceSeconds);
    out.sum().backward();
    EXPECT_GE(device.slept_seconds() + kSlack, kDeviceSeconds);
    // first.weight's gradient comes last but for (perhaps) first.bias's.
    const double before = kDeviceSeconds * kForwardShare +
                          kDeviceSeconds * (1.0 - kForwardShare) * (1.0 - numel_share(m.first->bias, m));
    EXPECT_GE(slept_when_first_weight_ready + kSlack, before);
  }
}

TEST(DeviceTime, FrozenParametersAreSkipped) {
  TwoLayers m;
  m.first->weight.set_requires_grad(false);
  m.first->bias.set_requires_grad(false);
  DeviceTime device(m, true);  // no hook on a tensor without gradient (that would throw)
  device.begin_step(kDeviceSeconds);
  auto out = m.forward(torch::ones({3, 4}));
  device.after_forward();
  out.sum().backward();
  // Only last's share of the backward is slept.
  const double last_share = numel_share(m.last->weight, m) + numel_share(m.last->bias, m);
  EXPECT_GE(device.slept_seconds() + kSlack,
            kDeviceSeconds * (kForwardShare + (1.0 - kForwardShare) * last_share));
}

}  // namespace
}  // namespace hetrain::train

// Emulated accelerator time (--sample-cost-ms, scaled by --speeds).
//
// Terms: on an accelerator the device runs forward and backward while the
// host waits, its cores free for communication. The emulation puts a sleep
// where the device would hold the host: kForwardShare of the step's device
// time right after the forward, the rest during backward, in each
// parameter's gradient hook. The hook runs before the gradient is
// accumulated, so the reducer (train/reducer.h) sees the gradient only after
// its layer's device time, as it would on a device, and overlapped
// communication can use the idle cores meanwhile. A sleep after backward
// instead would let communication hide behind device time that on a real
// device comes before the gradients exist.
//
// A parameter's share of the backward is where the work is, not where the
// parameters are: a device spends backward time in proportion to each
// layer's arithmetic, and a convolution holds few parameters but does most of
// a residual network's (its fc1 holds 91% of the parameters and 8% of the
// multiply-adds). So the shares are learned from the host's own backward:
// the host seconds from the previous hook (or the backward's start) to each
// hook, summed over every step so far. The first step, with nothing measured,
// splits by parameter count. Shares only move the sleeps; a step's total is
// its device time either way.
//
// bench/ddp_peer.py emulates PyTorch DDP's device the same way.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace hetrain::train {

// The forward pass's share of a step's compute (backward costs about twice
// the forward).
inline constexpr double kForwardShare = 1.0 / 3.0;

class DeviceTime {
 public:
  // Registers the gradient hooks on the model's parameters when `enabled`;
  // otherwise every call is a no-op and the model is untouched.
  DeviceTime(torch::nn::Module& model, bool enabled);

  // This step's device time, in seconds (0: none).
  void begin_step(double device_seconds);
  // Sleeps the forward's share; call between the forward and the backward.
  void after_forward();
  // Seconds actually slept since begin_step (sleeps overshoot a little).
  double slept_seconds() const;
  // Per parameter (model.parameters() order): its share of this step's
  // backward device time (empty when disabled).
  std::vector<double> backward_shares() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the hooks, which may outlive this
  double pending_forward_ = 0.0;  // this step's forward device time, not yet slept
};

}  // namespace hetrain::train

"""Device-like emulated heterogeneity for the Python tests and bench/ddp_hetrain_bench.py: a rank of speed s
sleeps cost x b_i / s where a device would hold the host, as hetrain's --sample-cost-ms (bench/ddp_peer.py's
DeviceTime, which src/hetrain/train/device_time.h describes), and tells the balancer what it slept."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import ddp_peer  # noqa: E402


class ReportedDeviceTime(ddp_peer.DeviceTime):
    def __init__(self, params, balancer):
        super().__init__(params, True)
        self.balancer = balancer

    def _sleep(self, seconds):
        before = self.slept
        super()._sleep(seconds)
        if self.balancer is not None:
            self.balancer.off_cpu(self.slept - before)


def emulate(ddp_model, cost_ms, speed, balancer=None):
    """Each training step sleeps cost_ms x b / speed, a third after the forward, the rest in backward.

    b: the balancer's local batch (registered after balancer.attach, its pre-hook runs first), or without a
    balancer (plain DDP) the batch's size."""
    device = ReportedDeviceTime(ddp_model.module.parameters(), balancer)

    def begin(module, args):
        if module.training:
            b = balancer.local_batch if balancer is not None else args[0].shape[0]
            device.begin_step(cost_ms * 1e-3 * b / speed)

    ddp_model.register_forward_pre_hook(begin)
    ddp_model.register_forward_hook(lambda m, a, out: device.after_forward() if m.training else None)
    return device

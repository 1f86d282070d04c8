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
        self.balancer.off_cpu(self.slept - before)


def emulate(ddp_model, balancer, cost_ms, speed):
    """After balancer.attach(ddp_model): each step sleeps cost_ms x b_i / speed (a third after the forward)."""
    device = ReportedDeviceTime(ddp_model.module.parameters(), balancer)
    # Registered after the balancer's pre-hook, so local_batch is this step's.
    ddp_model.register_forward_pre_hook(
        lambda m, a: device.begin_step(cost_ms * 1e-3 * balancer.local_batch / speed) if m.training else None)
    ddp_model.register_forward_hook(lambda m, a, out: device.after_forward() if m.training else None)
    return device

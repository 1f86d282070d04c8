"""What a rank measures of its own step, as the C++ trainer does (src/hetrain/train/step.cc).

compute_seconds  wall seconds from the forward's start to the moment the last
                 gradient bucket is ready (DDP's backward then waits for the
                 other ranks' buckets: that wait is not this rank's compute)
cpu_seconds      CPU-seconds of that compute: this thread's when torch
                 computes on one thread (the process's would add Gloo's
                 threads and the loader's), else the whole process's
wait_seconds     of that compute, seconds off the CPU by design: what an
                 emulated device reports through Balancer.off_cpu(), and on a
                 GPU the host's wait for the device at the end of backward
previous_step    wall seconds of this rank's step before, forward to forward
                 (the whole synchronous step: compute, allreduce, optimizer)
"""
import time

import torch


def cpu_clock():
    """The compute's CPU clock, chosen as the C++ trainer chooses (step.cc, compute_cpu_clock)."""
    return time.thread_time if torch.get_num_threads() == 1 else time.process_time


class StepTimer:
    """One rank's clocks over one step at a time."""

    def __init__(self):
        self._cpu = cpu_clock()
        self._wall0 = self._cpu0 = 0.0
        self._last_begin = None  # the previous step's forward start (None: no previous step to time)
        self._first = True  # this process's first step pays for lazy initialisation: not a measure
        self.off_cpu = 0.0

    def forget_last_step(self):
        self._last_begin = None

    def begin(self):
        """At the forward's start; returns the previous step's wall seconds (0: none)."""
        now = time.perf_counter()
        previous = 0.0 if self._last_begin is None else now - self._last_begin
        self._last_begin = None if self._first else now
        self._first = False
        self._wall0, self._cpu0, self.off_cpu = now, self._cpu(), 0.0
        return previous

    def end(self, device):
        """When the last gradient is ready: (compute, cpu, wait) seconds."""
        if device is not None and device.type == "cuda":
            t0 = time.perf_counter()
            torch.cuda.synchronize(device)  # the kernels queued so far are the compute
            self.off_cpu += time.perf_counter() - t0
        wall = time.perf_counter() - self._wall0
        return wall, self._cpu() - self._cpu0, self.off_cpu

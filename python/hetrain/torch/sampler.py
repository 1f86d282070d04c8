"""A batch sampler giving each rank its slice of the same global batch every step.

Every step takes the next B samples of the epoch's order (one seeded
permutation, the same on every rank and as one process would see it) and
cuts them into contiguous slices b_0..b_{N-1} by the balancer's split; rank i
gets slice i. Every sample is used once per epoch whatever the splits, so a
resumed run (state_dict/load_state_dict) continues at the next global batch.
Use it as a DataLoader's batch_sampler; num_workers > 0 works (schedule.py).
"""
import math

from torch.utils.data import Sampler

from hetrain import _core
from hetrain.torch import schedule
from hetrain.torch.balancer import Balancer


class BatchSampler(Sampler):
    def __init__(self, data_source, balancer, shuffle=True, seed=0, drop_last=False):
        if not isinstance(balancer, Balancer):
            raise _core.UsageError("hetrain: BatchSampler needs the hetrain.torch.Balancer that splits and measures "
                                   f"the steps, not {type(balancer).__name__}")
        self.num_samples = data_source if isinstance(data_source, int) else len(data_source)
        self.balancer, self.shuffle, self.seed, self.drop_last = balancer, shuffle, seed, drop_last
        self.global_batch = balancer.global_batch
        if self.num_samples < (self.global_batch if drop_last else 1):
            raise _core.UsageError(f"hetrain: {self.num_samples} samples make no global batch of "
                                   f"{self.global_batch}")
        self.epoch = 0
        self._start = 0  # the step this epoch starts at (a resumed epoch: after the checkpoint's)
        self._base = None  # the global step of this epoch's step 0, once iterated

    def __len__(self):
        if self.drop_last:
            return self.num_samples // self.global_batch
        return math.ceil(self.num_samples / self.global_batch)

    def set_epoch(self, epoch):
        if epoch != self.epoch:
            self._start, self._base = 0, None
        self.epoch = epoch

    def __iter__(self):
        trained = self.balancer._begin_epoch()
        start, self._start = self._start, 0
        self._base = trained - start
        key = (self.num_samples, self.seed, self.epoch, self.shuffle)
        for step in range(start, len(self)):
            g = self._base + step
            batch = schedule.step_batch(self.num_samples, self.global_batch, step)
            self.balancer._drawn(g, batch)
            yield schedule.StepIndices(self.balancer.table, self.balancer.timeout, g, self.epoch,
                                       step * self.global_batch, batch, self.balancer.rank, key,
                                       self.balancer.bounds.max_local)

    def _done(self):
        """Steps of this epoch trained so far."""
        if self._base is None:
            return self._start
        return min(max(self.balancer.trained_steps - self._base, 0), len(self))

    def state_dict(self):
        return {"epoch": self.epoch, "step": self._done(), "seed": self.seed, "num_samples": self.num_samples,
                "global_batch": self.global_batch, "shuffle": self.shuffle}

    def load_state_dict(self, state):
        for key in ("seed", "num_samples", "global_batch", "shuffle"):
            if state[key] != getattr(self, key):
                raise _core.UsageError(f"hetrain: the checkpoint's sampler has {key}={state[key]!r}, this one "
                                       f"{getattr(self, key)!r}")
        self.epoch, self._start, self._base = state["epoch"], state["step"], None

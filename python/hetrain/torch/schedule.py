"""The splits every rank uses, step by step, shared with the DataLoader's workers.

Terms: g counts the global steps trained (over all epochs). The split of
step g is decided when step g - LAG has been observed (LAG = 2: the C++
trainer's read-ahead depth), the same moment on every rank, so every rank
cuts step g the same way. A DataLoader asks its batch sampler for indices
further ahead (num_workers x prefetch_factor + 1 steps), before the split is
known: the sampler hands out StepIndices, which name the step only and turn
into sample indices when the loader reads them, in the worker process. The
worker then waits (with a timeout) for the split of step g in a small table
in shared memory, published after step g - LAG: that leaves it one step's
compute to load its samples.
"""
import functools
import time

import torch

from hetrain import _core

LAG = 2  # steps between the observation a split is decided on and the step that uses it
SLOTS = 16  # ring of published splits: at least LAG + 1 live at once
POLL_SECONDS = 0.0005  # a waiting worker looks at the table this often


class SplitTable:
    """Ring of (step, split) in shared memory: written by the training process, read by any."""

    def __init__(self, workers):
        self.table = torch.full((SLOTS, workers + 1), -1, dtype=torch.int64).share_memory_()

    def publish(self, step, split):
        row = self.table[step % SLOTS]
        row[1:] = torch.tensor(split, dtype=torch.int64)
        row[0] = step  # last: a reader that sees the step sees its split

    def lookup(self, step, timeout):
        row, deadline = self.table[step % SLOTS], time.monotonic() + timeout
        while True:
            at = int(row[0])
            if at == step:
                split = row[1:].tolist()
                if int(row[0]) == step:  # not overwritten while read
                    return split
            elif at > step:
                raise _core.Error(f"hetrain: the split of step {step} was overwritten before it was read "
                                  f"(a loader more than {SLOTS - LAG} steps behind the training)")
            if time.monotonic() > deadline:
                raise _core.CommError(f"hetrain: no split for step {step} after {timeout:g} s: the training "
                                      f"loop stopped observing steps (balancer.attach(model) missing?)")
            time.sleep(POLL_SECONDS)


@functools.lru_cache(maxsize=2)
def epoch_order(num_samples, seed, epoch, shuffle=True):
    """The epoch's sample order, as one process would see it (seed + epoch, like DistributedSampler)."""
    if not shuffle:
        return torch.arange(num_samples)
    g = torch.Generator()
    g.manual_seed(seed + epoch)
    return torch.randperm(num_samples, generator=g)


def step_batch(num_samples, global_batch, step):
    """Samples in step `step` of an epoch: B, fewer for a short last batch."""
    return min(global_batch, num_samples - step * global_batch)


def local_split(full, batch, max_local):
    """The split of a batch of `batch` samples: the full one, or scaled for a short last batch."""
    return list(full) if batch == sum(full) else _core.scale_split(list(full), batch, max_local)


class StepIndices:
    """One rank's sample indices of one step, resolved when first read (a list-like)."""

    def __init__(self, table, timeout, step, epoch, position, batch, rank, order_key, max_local):
        self._table, self._timeout = table, timeout
        self.step, self.epoch, self.position, self.batch, self.rank = step, epoch, position, batch, rank
        self._order_key, self._max_local = order_key, max_local
        self._indices = None

    def split(self):
        return local_split(self._table.lookup(self.step, self._timeout), self.batch, self._max_local)

    def indices(self):
        if self._indices is None:
            split = self.split()
            begin = self.position + sum(split[:self.rank])
            order = epoch_order(*self._order_key)
            # A rank given no samples still runs a forward and backward (DDP
            # needs every rank's gradients): on the batch's first sample,
            # with its gradient zeroed by the communication hook.
            count = split[self.rank] if split[self.rank] > 0 else 1
            begin = begin if split[self.rank] > 0 else self.position
            self._indices = order[begin:begin + count].tolist()
        return self._indices

    def __iter__(self):
        return iter(self.indices())

    def __len__(self):
        return len(self.indices())

    def __getitem__(self, i):
        return self.indices()[i]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_indices"] = None
        return state

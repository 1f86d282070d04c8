"""The balancer: measures each rank's own compute, exchanges it, and gives every rank the same next split.

Per step g (hetrain.torch.schedule for why splits are decided LAG steps ahead):
  forward    the DDP model's forward pre-hook settles step g-1 (waits for its
             small exchange, hands the policy its Observation, publishes the
             split of step g-1+LAG), then starts this step's clocks
  backward   the communication hook (hook.py) scales each bucket by b_i/B;
             at the last bucket the compute ends and the measurements leave
             in one small SUM allreduce, issued after the gradients'
No rank decides for the others: each runs its own copy of the policy on the
same numbers.
"""
import zlib

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from hetrain import _core
from hetrain.torch import hook as _hook
from hetrain.torch import measure, placement, schedule, telemetry

DEFAULT_TIMEOUT_SECONDS = 300.0  # a DataLoader worker's longest wait for a split (the training loop stalled)


def _usage(message):
    return _core.UsageError(f"hetrain: {message}")


class Balancer:
    """Uneven per-rank batches for a DDP model: policy 'equal', 'static' (shares, or profiled) or 'adaptive'."""

    def __init__(self, policy="adaptive", global_batch=None, shares=None, min_local_batch=0, max_local_batch=None,
                 profile_steps=_core.DEFAULT_PROFILE_STEPS, group=None, timeout=DEFAULT_TIMEOUT_SECONDS,
                 record=False, kind=None):
        if not dist.is_available() or not dist.is_initialized():
            raise _usage("call torch.distributed.init_process_group() before creating the Balancer")
        self.group = group if group is not None else dist.group.WORLD
        self.rank, self.workers = dist.get_rank(self.group), dist.get_world_size(self.group)
        if not isinstance(global_batch, int) or global_batch < self.workers:
            raise _usage(f"global_batch={global_batch!r} must be an integer of at least the {self.workers} ranks")
        if shares is not None and policy != "static":
            raise _usage(f"shares are for the static policy, not {policy!r}")
        if kind is not None and not isinstance(kind, str):
            raise _usage(f"kind={kind!r} must be a string (this rank's hardware kind, e.g. its GPU's model)")
        self.kind = kind  # None: a CUDA device's name, else not said (ranks of different kinds are never one unit)
        self.policy_name, self.global_batch, self.timeout = policy, global_batch, timeout
        self.shares = [float(s) for s in shares] if shares is not None else []
        self.profile_steps = profile_steps
        self.bounds = _core.Bounds(min_local_batch, max_local_batch if max_local_batch else _core.Bounds().max_local)
        self._comm_device = (torch.device("cuda", torch.cuda.current_device())
                             if dist.get_backend(self.group) == "nccl" else None)
        self._make_policy([], _core.Placement())  # checks the configuration on every rank alone ...
        self._check_same_config()  # ... and that every rank has the same one
        self.table = schedule.SplitTable(self.workers)
        self._policy, self._placement, self._known = None, None, []
        self._model, self._device = None, None
        self._trained = 0  # global steps whose backward ran
        self._batches = {}  # global step -> samples in its batch, as the sampler drew it
        self._full = {}  # global step -> the full split decided for it
        self._inflight = None  # (step, split, batch, previous step seconds) between forward and last bucket
        self._measured = None
        self._pending = None  # (step, split, work, tensor): the exchange not yet observed
        self._timer = measure.StepTimer()
        self.weight = 0.0  # b_i / batch of the step in flight (for logging the global loss)
        self.local_batch = 0  # b_i of the step in flight (0: the rank runs on one stand-in sample)
        self.observations = [] if record else None  # every Observation handed to the policy, as dicts

    # -- set-up -------------------------------------------------------------------------------------------
    def _make_policy(self, known, where):
        return _core.make_policy(self.policy_name, self.workers, self.global_batch, shares=self.shares,
                                 profile_steps=self.profile_steps, bounds=self.bounds, known=known, placement=where)

    def _check_same_config(self):
        text = repr((self.policy_name, self.global_batch, self.shares, self.profile_steps, self.bounds.min_local,
                     self.bounds.max_local))
        h = float(zlib.crc32(text.encode()))
        t = torch.tensor([h, -h], dtype=torch.float64)
        t = t.to(self._comm_device) if self._comm_device is not None else t
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group)
        if t[0].item() != h or t[1].item() != -h:
            raise _usage("the ranks were given different Balancer settings (policy, global_batch, shares, bounds "
                         "must match on every rank)")

    def attach(self, model):
        """Registers the forward pre-hook and the communication hook on the DDP model (once, before training)."""
        if not isinstance(model, DistributedDataParallel):
            raise _usage(f"attach() takes the DistributedDataParallel model, not {type(model).__name__}")
        if self._model is not None:
            raise _usage("the Balancer is already attached to a model")
        self._device = next(model.parameters()).device
        accelerator = self._device.type != "cpu"
        kind = self.kind
        if kind is None:
            kind = torch.cuda.get_device_name(self._device) if self._device.type == "cuda" else ""
        self._placement = (placement.gather(self.group, self.rank, self.workers, accelerator, self._comm_device, kind)
                           if self.policy_name != "equal" else _core.Placement())
        self._model = model
        self._restart()
        model.register_forward_pre_hook(self._before_forward)
        model.register_comm_hook(self, _hook.scaled_sum_hook)
        return model

    def _restart(self):
        """A fresh policy (from the known models on a resume) and the first LAG splits."""
        self._policy = self._make_policy(self._known, self._placement)
        self._pending, self._inflight = None, None
        self._full.clear()
        for g in range(self._trained, self._trained + schedule.LAG):
            self._decide(g)

    def _decide(self, step):
        full = self._policy.split()
        self._full[step] = full
        for old in [k for k in self._full if k < step - schedule.SLOTS]:
            del self._full[old]
        self.table.publish(step, full)

    # -- what the sampler calls ----------------------------------------------------------------------------
    def _begin_epoch(self):
        if self._model is None:
            raise _usage("the BatchSampler is used before balancer.attach(ddp_model): without the balancer's "
                         "communication hook DDP would average uneven slices wrongly")
        self._settle()
        self._timer.forget_last_step()  # the time between epochs is not a step
        self._batches = {g: b for g, b in self._batches.items() if g < self._trained}
        return self._trained

    def _drawn(self, step, batch):
        self._batches[step] = batch

    @property
    def trained_steps(self):
        return self._trained

    # -- the step ------------------------------------------------------------------------------------------
    def _before_forward(self, module, args):
        if not (torch.is_grad_enabled() and module.training):
            return None  # evaluation: not a training step
        self._settle()
        step = self._trained
        if step not in self._batches:
            raise _usage(f"a training forward at step {step} has no batch from hetrain.torch.BatchSampler: give the "
                         "DataLoader batch_sampler=BatchSampler(..., balancer) and run one forward per batch")
        batch = self._batches[step]
        split = schedule.local_split(self._full[step], batch, self.bounds.max_local)
        mine = split[self.rank]
        if args and torch.is_tensor(args[0]) and args[0].dim() > 0 and args[0].shape[0] != max(mine, 1):
            raise _usage(f"the batch at step {step} has {args[0].shape[0]} samples but hetrain's split gives this "
                         f"rank {mine} (is the DataLoader's batch_sampler the hetrain.torch.BatchSampler?)")
        self.weight, self.local_batch = mine / batch, mine
        self._inflight = (step, split, batch, self._timer.begin())
        return None

    def off_cpu(self, seconds):
        """Seconds of this step's compute spent off the CPU by design (an emulated device's delay)."""
        self._timer.off_cpu += seconds

    def forget_last_step(self):
        """The next step has no predecessor to time (call after evaluation or checkpoints mid-epoch)."""
        self._timer.forget_last_step()

    def _compute_done(self):
        if self._inflight is None:
            raise _usage("DDP's backward ran without a training forward the balancer saw")
        self._measured = self._timer.end(self._device)

    def _exchange(self):
        step, split, batch, previous = self._inflight
        compute, cpu, wait = self._measured
        t = telemetry.pack(self.rank, self.workers, compute, cpu, wait, previous, split[self.rank], self._comm_device)
        work = dist.all_reduce(t, group=self.group, async_op=True)
        self._pending = (step, split, work, t)
        self._trained, self._inflight = step + 1, None
        self._batches.pop(step, None)

    def _settle(self):
        if self._pending is None:
            return
        step, split, work, t = self._pending
        self._pending = None
        work.wait()
        obs = telemetry.unpack(t, self.workers, split, step)
        self._policy.observe(obs)
        if self.observations is not None:
            self.observations.append({"step": step, "local_batch": list(obs.local_batch),
                                      "compute_seconds": list(obs.compute_seconds),
                                      "cpu_seconds": list(obs.cpu_seconds), "wait_seconds": list(obs.wait_seconds),
                                      "previous_step_seconds": obs.previous_step_seconds})
        self._decide(step + schedule.LAG)

    # -- what the policy says, and resumable state ---------------------------------------------------------
    def split(self, step=None):
        """The full split of global step `step` (default: the next one to train)."""
        self._settle()
        return list(self._full[self._trained if step is None else step])

    def learned(self):
        self._settle()
        return [(m.overhead, m.speed) for m in self._policy.learned()]

    def stats(self):
        s = self._policy.stats()
        return {"moves": s.moves, "reverts": s.reverts}

    def state_dict(self):
        self._settle()
        return {"trained_steps": self._trained, "global_batch": self.global_batch, "policy": self.policy_name,
                "learned": self.learned() if self._policy is not None else []}

    def load_state_dict(self, state):
        if state.get("global_batch") != self.global_batch:
            raise _usage(f"the checkpoint's global batch is {state.get('global_batch')}, this run's "
                         f"{self.global_batch}")
        self._trained = int(state["trained_steps"])
        self._known = [_core.WorkerModel(o, s) for o, s in state.get("learned", [])]
        self._batches.clear()
        if self._model is not None:
            self._restart()

"""The per-step exchange: every rank's measurements in one small SUM allreduce.

Layout for N ranks (float64): [compute x N | cpu x N | wait x N | previous
step x N | local batch x N]. Each rank writes its own slot of each field and
zeros elsewhere, so the sum gathers them (as src/hetrain/train/telemetry.h,
which rides in the gradients' buffer instead). The local batches gathered
must be the split every rank believes, or the ranks cut the batch apart.
"""
import torch

from hetrain import _core

FIELDS = 5  # compute, cpu, wait, previous step, local batch


def pack(rank, workers, compute, cpu, wait, previous, local_batch, device):
    t = torch.zeros(FIELDS * workers, dtype=torch.float64)
    for field, value in enumerate((compute, cpu, wait, previous, float(local_batch))):
        t[field * workers + rank] = value
    return t.to(device) if device is not None else t


def unpack(reduced, workers, split, step):
    """The Observation every rank hands its policy; raises if the ranks used different splits."""
    v = reduced.cpu().tolist()
    field = [v[k * workers:(k + 1) * workers] for k in range(FIELDS)]
    used = [int(round(b)) for b in field[4]]
    if used != list(split):
        raise _core.Error(f"hetrain: the ranks disagree on the split at step {step}: this rank used "
                          f"{'/'.join(map(str, split))}, the ranks' own slices were {'/'.join(map(str, used))} "
                          f"(every rank needs the same DataLoader settings and the same balancer)")
    obs = _core.Observation()
    obs.local_batch = used
    obs.compute_seconds, obs.cpu_seconds, obs.wait_seconds = field[0], field[1], field[2]
    obs.previous_step_seconds = max(field[3])  # the slowest rank's view: the same number everywhere
    return obs

"""Which ranks share a host's cores, and each rank's kind, gathered once (as src/hetrain/train/placement.h,
whose this_worker/placement_of the binding exposes): the adaptive policy plans shared hosts' CPUs with it, and
never plans ranks of different kinds (GPU models) as one unit."""
import torch
import torch.distributed as dist

from hetrain import _core

# host id (a 52-bit hash, exact in float64), CPUs, host cores, kind id (a 52-bit hash; 0: not said),
# on an accelerator (0/1)
FIELDS = 5


def gather(group, rank, workers, accelerator, comm_device, kind=""):
    me = _core.this_worker(torch.get_num_threads(), kind)
    t = torch.zeros(FIELDS * workers, dtype=torch.float64)
    t[FIELDS * rank:FIELDS * (rank + 1)] = torch.tensor(
        [me.host_id, me.cpus, me.host_cores, me.kind_id, float(accelerator)], dtype=torch.float64)
    t = t.to(comm_device) if comm_device is not None else t
    dist.all_reduce(t, group=group)
    v = t.cpu().tolist()
    rows = [v[FIELDS * i:FIELDS * (i + 1)] for i in range(workers)]
    p = _core.placement_of([_core.WorkerPlace(r[0], r[1], r[2], r[3]) for r in rows])
    # A rank on an accelerator shares its compute with no other rank.
    p.host = [_core.NO_HOST if r[4] > 0.5 else h for r, h in zip(rows, p.host)]
    return p

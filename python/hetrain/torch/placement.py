"""Which ranks share a host's cores, gathered once (as src/hetrain/train/placement.h, whose
this_worker/placement_of the binding exposes): the adaptive policy plans shared hosts' CPUs with it."""
import torch
import torch.distributed as dist

from hetrain import _core

FIELDS = 4  # host id (a 52-bit hash, exact in float64), CPUs, host cores, on an accelerator (0/1)


def gather(group, rank, workers, accelerator, comm_device):
    me = _core.this_worker(torch.get_num_threads())
    t = torch.zeros(FIELDS * workers, dtype=torch.float64)
    t[FIELDS * rank:FIELDS * (rank + 1)] = torch.tensor([me.host_id, me.cpus, me.host_cores, float(accelerator)],
                                                        dtype=torch.float64)
    t = t.to(comm_device) if comm_device is not None else t
    dist.all_reduce(t, group=group)
    v = t.cpu().tolist()
    rows = [v[FIELDS * i:FIELDS * (i + 1)] for i in range(workers)]
    p = _core.placement_of([_core.WorkerPlace(r[0], r[1], r[2]) for r in rows])
    # A rank on an accelerator shares its compute with no other rank.
    p.host = [_core.NO_HOST if r[3] > 0.5 else h for r, h in zip(rows, p.host)]
    return p

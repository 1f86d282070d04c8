"""One rank of the tests' DDP job (tests/python/ddp_test.py): a small MLP on a synthetic set, trained through
hetrain.torch's BatchSampler, Balancer and communication hook. Launched by torch.distributed.run or torchrun."""
import argparse
import datetime
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

import hetrain
import hetrain.torch as ht

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulation  # noqa: E402

SIDE, CLASSES, HIDDEN = 8, 4, 16


class Synthetic(Dataset):
    """n samples drawn from a seed: (image, label, index)."""

    def __init__(self, n, seed=7):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, SIDE * SIDE, generator=g)
        self.y = torch.randint(0, CLASSES, (n,), generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i], i


class FashionMnist(Dataset):
    """Debian's Fashion-MNIST training set, normalised as hetrain does: (image, label, index)."""

    def __init__(self):
        x, self.y = emulation.ddp_peer.load(emulation.ddp_peer.DATA, "train")
        self.x = emulation.ddp_peer.normalise(x)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i], i


def make_model(name="tiny"):
    torch.manual_seed(0)
    if name == "mlp":  # hetrain's mlp (bench/ddp_peer.py)
        return emulation.ddp_peer.Mlp()
    return nn.Sequential(nn.Linear(SIDE * SIDE, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, CLASSES))


def make_optimizer(name, params, lr):
    return torch.optim.SGD(params, lr=lr, momentum=0.9) if name == "sgd" else torch.optim.Adam(params, lr=lr)


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--policy", default="static")
    p.add_argument("--shares", default="")
    p.add_argument("-b", "--global-batch", type=int, default=64)
    p.add_argument("--samples", type=int, default=640)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--optimizer", default="sgd")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--sample-cost-ms", type=float, default=0.0)
    p.add_argument("--speeds", default="")
    p.add_argument("--kinds", default="", help="each rank's Balancer kind, comma-separated (default: none said)")
    p.add_argument("--max-local", type=int, default=0)
    p.add_argument("--checkpoint", default="", help="save here after --stop-after steps and stop")
    p.add_argument("--stop-after", type=int, default=0)
    p.add_argument("--resume", default="")
    p.add_argument("--data", default="synthetic", help="synthetic | fashion-mnist")
    p.add_argument("--model", default="tiny", help="tiny | mlp (hetrain's)")
    return p.parse_args()


def main():
    a = parse()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    rank = dist.get_rank()
    shares = [float(s) for s in a.shares.split(",")] if a.shares else None
    balancer = ht.Balancer(a.policy, global_batch=a.global_batch, shares=shares,
                           max_local_batch=a.max_local or None, record=True,
                           kind=a.kinds.split(",")[rank] if a.kinds else None)
    data = Synthetic(a.samples) if a.data == "synthetic" else FashionMnist()
    sampler = ht.BatchSampler(data, balancer, seed=3)
    loader = DataLoader(data, batch_sampler=sampler, num_workers=a.num_workers)
    model = balancer.attach(DDP(make_model(a.model)))
    opt = make_optimizer(a.optimizer, model.parameters(), a.lr)
    if a.sample_cost_ms > 0:
        speeds = [float(s) for s in a.speeds.split(",")] if a.speeds else [1.0] * dist.get_world_size()
        emulation.emulate(model, a.sample_cost_ms, speeds[rank], balancer)
    start_epoch, used, splits = 0, [], []
    if a.resume:
        ckpt = torch.load(a.resume)
        model.module.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        sampler.load_state_dict(ckpt["sampler"])
        balancer.load_state_dict(ckpt["balancer"])
        start_epoch = ckpt["sampler"]["epoch"]
    steps = 0
    for epoch in range(start_epoch, a.epochs):
        sampler.set_epoch(epoch)
        for x, y, idx in loader:
            loss = F.cross_entropy(model(x), y)  # the mean over this rank's slice
            opt.zero_grad()
            loss.backward()
            opt.step()
            used.append({"epoch": epoch, "samples": idx.tolist() if balancer.local_batch > 0 else []})
            steps += 1
            if a.checkpoint and steps == a.stop_after:
                if rank == 0:
                    torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(),
                                "sampler": sampler.state_dict(), "balancer": balancer.state_dict()}, a.checkpoint)
                dist.barrier()
                break
            if a.max_steps and steps >= a.max_steps:
                break
        else:
            continue
        break
    balancer.split()  # settles the last step's observation
    params = torch.cat([p.detach().flatten() for p in model.module.parameters()]).tolist()
    with open(os.path.join(a.out, f"rank{rank}.json"), "w") as f:
        json.dump({"rank": rank, "params": params, "used": used, "observations": balancer.observations,
                   "stats": balancer.stats(), "learned": balancer.learned(),
                   "kinds": list(balancer._placement.kind)}, f)
    dist.barrier()  # no rank tears its connections down while another still finishes a collective
    dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main()
    except hetrain.Error as e:
        print(f"ddp_worker: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)

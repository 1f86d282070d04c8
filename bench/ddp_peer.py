#!/usr/bin/env python3
"""The peer hetrain is measured against: PyTorch DistributedDataParallel (Gloo).

Same models (architecture and init distribution), same global batch B, same
data (Fashion-MNIST from Debian's package, or --data DIR), same per-epoch permutation idea:
each global batch of B samples is cut into N equal slices, as DDP users do.
Launch with bench/launch_local.sh (or torchrun where it works):

  bench/launch_local.sh 4 29500 python3 bench/ddp_peer.py --model mlp -b 256

--speeds emulates a slower device the way hetrain does: worker i measures its
forward+backward time c and sleeps c*(1/s_i - 1) before the optimizer step.
c ends at the last parameter's gradient hook: DDP's backward then waits for
the allreduce, and a wait counted in c would feed one slow worker's sleep into
another's, growing step by step when several workers are slow.
--sample-cost-ms emulates an accelerator as hetrain does (src/hetrain/train/
device_time.h): b x cost / s_i of sleep, a third right after the forward and the
rest in each parameter's gradient hook, shared out where the host's backward
spends its time, which runs before DDP's reducer sees the gradient; then c above
is the host's compute only.
--slowdown RANK@STEP:SPEED,... changes a worker's emulated speed from a global
step on (counted from 0), as hetrain's flag does.
--model also takes a TorchScript file (*.pt, torch.jit.script(m).save): the
same file hetrain loads, so both train the same parameters from the same start.
--timeout bounds the rendezvous and every collective, so a dead peer ends the
run with an error instead of DDP's 30-minute default wait.
Writes a small JSON (wall_seconds, epochs) on rank 0.
"""
import argparse
import datetime
import gzip
import json
import math
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"
PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530


def read_idx(path, header):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=header)


def load(data, split):
    x = read_idx(f"{data}/{split}-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)
    y = read_idx(f"{data}/{split}-labels-idx1-ubyte.gz", 8)
    return torch.from_numpy(x.copy()), torch.from_numpy(y.astype(np.int64))


def normalise(u8):
    return (u8.float() / 255.0 - PIXEL_MEAN) / PIXEL_STD


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(784, 256), nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride=stride) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = self.conv2(F.relu(self.conv1(x)))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNet(nn.Module):
    """hetrain's resnet: stem, three one-block stages (32, 64, 128), fc 512, classifier."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 32, 3, padding=1)
        self.block1, self.block2, self.block3 = Block(32, 32, 1), Block(32, 64, 2), Block(64, 128, 2)
        self.fc1, self.fc2 = nn.Linear(128 * 7 * 7, 512), nn.Linear(512, 10)

    def forward(self, x):
        x = self.block3(self.block2(self.block1(F.relu(self.stem(x)))))
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(32 * 7 * 7, 256), nn.Linear(256, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


BUILTIN = {"mlp": Mlp, "cnn": Cnn, "resnet": ResNet}
FORWARD_SHARE = 1.0 / 3.0  # of a step's device time, as hetrain's kForwardShare


class DeviceTime:
    """Emulated device time, slept where a device would hold the host.

    As hetrain's (src/hetrain/train/device_time.h): each parameter's share of
    the backward is the host's backward time up to its hook, summed over the
    steps so far (the first step splits by parameter count). The hooks are
    registered even without device time: `mark` after the last one is where
    the step's compute ends."""

    def __init__(self, params, enabled):
        params = [p for p in params if p.requires_grad]
        total = sum(p.numel() for p in params)
        self.backward, self.forward, self.slept = 0.0, 0.0, 0.0
        self.numel_share = [p.numel() / total for p in params] if params else []
        self.share = list(self.numel_share)
        self.host = [0.0] * len(params)
        self.mark = time.perf_counter()
        self.enabled = enabled
        for k, p in enumerate(params):
            p.register_hook(self._hook(k))

    def _hook(self, k):
        def hook(_grad):
            self.host[k] += time.perf_counter() - self.mark
            self._sleep(self.backward * self.share[k])
            self.mark = time.perf_counter()
        return hook

    def _sleep(self, seconds):
        if seconds > 0:
            t0 = time.perf_counter()
            time.sleep(seconds)
            self.slept += time.perf_counter() - t0

    def begin_step(self, seconds):
        self.slept = 0.0
        measured = sum(self.host)
        self.share = [h / measured for h in self.host] if measured > 0 else list(self.numel_share)
        if self.enabled:
            self.forward, self.backward = seconds * FORWARD_SHARE, seconds * (1.0 - FORWARD_SHARE)

    def after_forward(self):
        self._sleep(self.forward)
        self.mark = time.perf_counter()  # the backward starts now


def parse_slowdowns(text):
    """"RANK@STEP:SPEED,..." -> [(rank, step, speed)], as hetrain's --slowdown."""
    out = []
    for item in filter(None, text.split(",")):
        try:
            rank, rest = item.split("@")
            step, speed = rest.split(":")
            out.append((int(rank), int(step), float(speed)))
        except ValueError:
            raise SystemExit(f"ddp_peer: --slowdown item {item!r} is not RANK@STEP:SPEED") from None
    return out


def emulated_speed(speeds, slowdowns, rank, step):
    """The speed of `rank` at global step `step`: the latest change at or before it."""
    speed, latest = speeds[rank], -1
    for r, at, s in slowdowns:
        if r == rank and latest <= at <= step:
            speed, latest = s, at
    return speed


def make_model(name):
    if name.endswith(".pt"):
        return torch.jit.load(name)  # its own parameters, as hetrain takes them
    if name not in BUILTIN:
        raise SystemExit(f"ddp_peer: unknown model {name!r} (mlp | cnn | resnet | FILE.pt)")
    return BUILTIN[name]()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp", help="mlp | cnn | resnet | a TorchScript file *.pt")
    p.add_argument("--data", default=DATA, help="a directory of the four MNIST-format .gz idx files")
    p.add_argument("-b", "--global-batch", type=int, default=256)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--speeds", default="")
    p.add_argument("--sample-cost-ms", type=float, default=0.0,
                   help="emulated device: this many ms per local sample, slept in forward and backward (as hetrain)")
    p.add_argument("--slowdown", default="", help="RANK@STEP:SPEED,...: emulated speed changes, as hetrain's")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds any rendezvous or collective may take")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--metrics", default="")
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=a.timeout))
    rank, n = dist.get_rank(), dist.get_world_size()
    speeds = [float(s) for s in a.speeds.split(",")] if a.speeds else [1.0] * n
    if len(speeds) != n:
        raise SystemExit(f"ddp_peer: --speeds has {len(speeds)} values for {n} workers")
    slowdowns = parse_slowdowns(a.slowdown)
    torch.manual_seed(a.seed)
    model = nn.parallel.DistributedDataParallel(make_model(a.model))
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    device = DeviceTime(model.module.parameters(), a.sample_cost_ms > 0)
    xtr, ytr = load(a.data, "train")
    xte, yte = load(a.data, "t10k")
    B = a.global_batch
    steps = math.ceil(len(ytr) / B)
    lo, hi = rank * B // n, (rank + 1) * B // n  # DDP: equal slices

    dist.barrier()
    start = time.perf_counter()
    epochs, total = [], 0
    for epoch in range(a.epochs):
        t_epoch = time.perf_counter()
        perm = torch.randperm(len(ytr), generator=torch.Generator().manual_seed(a.seed + epoch))
        for step in range(steps):
            if a.max_steps and total >= a.max_steps:
                break
            idx = perm[step * B:(step + 1) * B]
            mine = idx[lo * len(idx) // B:hi * len(idx) // B]
            speed = emulated_speed(speeds, slowdowns, rank, total)
            device.begin_step(a.sample_cost_ms * len(mine) / 1000.0 / speed)
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = F.cross_entropy(model(normalise(xtr[mine])), ytr[mine])
            device.after_forward()
            loss.backward()
            c = device.mark - t0 - device.slept  # compute only: up to the last gradient, before DDP's wait
            if speed < 1.0:
                time.sleep(c * (1.0 / speed - 1.0))
            opt.step()
            total += 1
        train_seconds = time.perf_counter() - t_epoch
        with torch.no_grad():
            share = slice(rank * len(yte) // n, (rank + 1) * len(yte) // n)
            correct = (model.module(normalise(xte[share])).argmax(1) == yte[share]).sum().double()
            counts = torch.stack([correct, torch.tensor(float(len(yte[share])), dtype=torch.float64)])
            dist.all_reduce(counts)
        epochs.append({"epoch": epoch + 1, "seconds": time.perf_counter() - t_epoch,
                       "train_seconds": train_seconds,
                       "test_accuracy": (counts[0] / counts[1]).item()})
    wall = time.perf_counter() - start
    if rank == 0:
        doc = {"wall_seconds": wall, "epochs": epochs, "world_size": n, "model": a.model,
               "global_batch": B, "speeds": speeds, "slowdown": a.slowdown, "peer": "pytorch-ddp-gloo"}
        if a.metrics:
            with open(a.metrics + ".tmp", "w") as f:
                json.dump(doc, f)
            os.replace(a.metrics + ".tmp", a.metrics)
        print(f"ddp: {wall:.2f} s, test accuracy {epochs[-1]['test_accuracy']:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Plain PyTorch DDP against DDP + hetrain.torch on the same script (issue 28 point 3).

One script, `worker` mode: hetrain's cnn on Fashion-MNIST (Debian's), Gloo on CPU, one compute thread per
rank, a global batch of B; --hetrain off trains like any DDP script (DistributedSampler, B/N per rank, DDP's
mean), --hetrain adaptive adds the Balancer, the BatchSampler and the hook (docs/pytorch.md). Each run times
the steps after --skip-steps (the adaptive policy's first moves are part of the cost: it starts at the equal
split every run, and --skip-steps only drops lazy initialisation).

Cells (heterogeneity: real, device-like, none):
  quota      2 ranks, rank 1 held to 0.25 CPU by a cgroup CPU quota (bench/allocation_cgroup.py; root)
  slow4x     3 ranks with an emulated device of --sample-cost-ms per sample, rank 1 at speed 0.25 (a sleep,
             device-like: tests/python/emulation.py, as hetrain's --sample-cost-ms)
  identical  2 identical ranks, CPU-bound: hetrain's own cost (hooks, one small allreduce a step)
Runs are interleaved (rep by rep, cell by cell, the two modes in alternating order); the table gives each
cell's median seconds per step and the ratio of the medians, plain / hetrain (> 1: hetrain faster).

  /usr/bin/python3 bench/ddp_hetrain_bench.py --reps 5 --out bench_ddp_hetrain.json
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

QUOTA_CPUS = 0.25  # the throttled rank's CPU quota
SLOW_SPEED = 0.25  # the emulated slow rank's speed (4x slow)
CELLS = {
    "quota": {"ranks": 2, "cgroup_rank": 1},
    "slow4x": {"ranks": 3, "speeds": f"1,{SLOW_SPEED},1"},
    "identical": {"ranks": 2},
}
RUN_TIMEOUT = 900  # seconds for one run


def worker(a):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    import ddp_peer
    import emulation

    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    rank, n = dist.get_rank(), dist.get_world_size()
    x, y = ddp_peer.load(ddp_peer.DATA, "train")
    data = TensorDataset(ddp_peer.normalise(x), y)
    torch.manual_seed(0)
    net = ddp_peer.Cnn()
    balancer = None
    if a.hetrain == "off":
        sampler = DistributedSampler(data, seed=0, drop_last=True)
        loader = DataLoader(data, batch_size=a.global_batch // n, sampler=sampler, drop_last=True)
        model = DDP(net)
    else:
        import hetrain.torch as ht
        balancer = ht.Balancer(a.hetrain, global_batch=a.global_batch)
        sampler = ht.BatchSampler(data, balancer, seed=0)
        loader = DataLoader(data, batch_sampler=sampler)
        model = balancer.attach(DDP(net))
    if a.sample_cost_ms > 0:
        speeds = [float(s) for s in a.speeds.split(",")] if a.speeds else [1.0] * n
        emulation.emulate(model, a.sample_cost_ms, speeds[rank], balancer)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    step, t0 = 0, None
    for xb, yb in loader:
        if step == a.skip_steps:
            dist.barrier()
            t0 = time.perf_counter()
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step == a.steps:
            break
    dist.barrier()
    seconds = (time.perf_counter() - t0) / (a.steps - a.skip_steps)
    if rank == 0:
        with open(a.out, "w") as f:
            json.dump({"seconds_per_step": seconds, "split": balancer.split() if balancer else None}, f)
    dist.barrier()  # torch 1.13 + Gloo: no rank tears down while another still finishes the last collective
    dist.destroy_process_group()


def run_one(a, cell, mode, port, out):
    spec = CELLS[cell]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([a.python_path, os.environ.get("PYTHONPATH", "")]))
    cmd = [os.path.join(HERE, "launch_local.sh"), str(spec["ranks"]), str(port), sys.executable, __file__, "worker",
           "--hetrain", mode, "--global-batch", str(a.global_batch), "--steps", str(a.steps),
           "--skip-steps", str(a.skip_steps), "--out", out]
    quota = None
    if "speeds" in spec:
        cmd += ["--sample-cost-ms", str(a.sample_cost_ms), "--speeds", spec["speeds"]]
    if "cgroup_rank" in spec:
        from allocation_cgroup import CpuQuota
        quota = CpuQuota(QUOTA_CPUS)
        quota.up()
        env.update(CGROUP=quota.path, CGROUP_RANK=str(spec["cgroup_rank"]))
    throttled = None
    try:
        subprocess.run(cmd, env=env, check=True, timeout=RUN_TIMEOUT, stdout=subprocess.DEVNULL)
        throttled = quota.throttled_periods() if quota is not None else None
    finally:
        if quota is not None:
            quota.down()
    with open(out) as f:
        r = json.load(f)
    r["throttled_periods"] = throttled  # quota periods that ended throttled: the quota did bind
    return r


def drive(a):
    results = {c: {"off": [], "adaptive": []} for c in a.cells}
    splits = {c: [] for c in a.cells}
    port = a.port
    for rep in range(a.reps):
        for cell in a.cells:
            modes = ["off", "adaptive"] if rep % 2 == 0 else ["adaptive", "off"]
            for mode in modes:
                port += 1
                r = run_one(a, cell, mode, port, os.path.join(a.work, f"{cell}_{mode}_{rep}.json"))
                results[cell][mode].append(r["seconds_per_step"])
                if r["split"]:
                    splits[cell].append(r["split"])
                quota = f" throttled periods {r['throttled_periods']}" if r["throttled_periods"] is not None else ""
                print(f"rep {rep} {cell:9s} {mode:8s} {r['seconds_per_step']:.4f} s/step {r['split'] or ''}{quota}",
                      flush=True)
    rows = []
    for cell in a.cells:
        off, ada = statistics.median(results[cell]["off"]), statistics.median(results[cell]["adaptive"])
        rows.append({"cell": cell, "ddp_s": off, "hetrain_s": ada, "speedup": off / ada,
                     "runs": len(results[cell]["off"]), "last_split": splits[cell][-1] if splits[cell] else None})
    print("| cell | runs | plain DDP s/step (median) | DDP + hetrain s/step (median) | plain / hetrain |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['cell']} | {r['runs']} | {r['ddp_s']:.4f} | {r['hetrain_s']:.4f} | {r['speedup']:.2f}x |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"args": vars(a), "runs": results, "splits": splits, "rows": rows}, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", nargs="?", default="drive", choices=["drive", "worker"])
    p.add_argument("--hetrain", default="adaptive", help="worker: off (plain DDP) | equal | static | adaptive")
    p.add_argument("--global-batch", type=int, default=192)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--skip-steps", type=int, default=3, help="steps left out of the timing (initialisation)")
    p.add_argument("--sample-cost-ms", type=float, default=3.0,
                   help="slow4x: the emulated device's ms per sample (well above the host's share of a step)")
    p.add_argument("--speeds", default="")
    p.add_argument("--out", default="")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--cells", default="quota,slow4x,identical")
    p.add_argument("--port", type=int, default=29600)
    p.add_argument("--work", default="/tmp/ddp_hetrain_bench")
    p.add_argument("--python-path", default=os.path.join(ROOT, "build", "python"),
                   help="where the hetrain package is (default: the CMake build's)")
    a = p.parse_args()
    if a.mode == "worker":
        return worker(a)
    a.cells = a.cells.split(",")
    unknown = [c for c in a.cells if c not in CELLS]
    if unknown:
        raise SystemExit(f"ddp_hetrain_bench: unknown cells {unknown} (use {', '.join(CELLS)})")
    os.makedirs(a.work, exist_ok=True)
    drive(a)


if __name__ == "__main__":
    main()

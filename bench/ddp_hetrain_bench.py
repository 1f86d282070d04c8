#!/usr/bin/env python3
"""Plain PyTorch DDP against DDP + hetrain.torch on the same script (issue 28 point 3).

One script, `worker` mode: hetrain's cnn on Fashion-MNIST (Debian's), Gloo on CPU, one compute thread per
rank, a global batch of B; --hetrain off trains like any DDP script (DistributedSampler, B/N per rank, DDP's
mean), --hetrain adaptive adds the Balancer, the BatchSampler and the hook (docs/pytorch.md). Each run times
the steps after --skip-steps (the adaptive policy's first moves are part of the cost: it starts at the equal
split every run, and --skip-steps only drops lazy initialisation).

Cells (heterogeneity: real, device-like, none):
  quota      2 ranks, rank 1 held to 0.25 CPU by a cgroup CPU quota (bench/allocation_cgroup.py; root), no
             sleep anywhere: CPU-bound, B = --cpu-global-batch so that a step spans several quota periods
  slow4x     3 ranks with an emulated device of --sample-cost-ms per sample, rank 1 at speed 0.25 (a sleep,
             device-like: tests/python/emulation.py, as hetrain's --sample-cost-ms), B = --global-batch
  identical  2 identical CPU-bound ranks, B = --cpu-global-batch: hetrain's own cost (hooks, one small
             allreduce a step) against the quota cell's step without the quota
Only slow4x emulates a device: the other cells' time is the ranks' own compute. Every run also reports, per
rank, the process's CPU-seconds per wall second over the timed steps (all its threads: what a quota caps)
and the share of the step spent waiting for the DataLoader, so a table shows what the step waited for.
Runs are interleaved (rep by rep, cell by cell, the two modes in alternating order); the table gives each
cell's median seconds per step and the ratio of the medians, plain / hetrain (> 1: hetrain faster).

  /usr/bin/python3 bench/ddp_hetrain_bench.py --reps 5 --out ddp_hetrain_bench.json
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
# "batch": which global batch a cell trains: "cpu" (--cpu-global-batch) or "device" (--global-batch).
CELLS = {
    "quota": {"ranks": 2, "cgroup_rank": 1, "batch": "cpu"},
    "slow4x": {"ranks": 3, "speeds": f"1,{SLOW_SPEED},1", "batch": "device"},
    "identical": {"ranks": 2, "batch": "cpu"},
}
RUN_TIMEOUT = 900  # seconds for one run


def worker(a):
    import torch
    import torch.distributed as dist
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
    seconds, mine = train(a, model, opt, loader)
    # Per rank: [CPU-seconds of the whole process, seconds waiting for the loader] per wall second.
    shares = torch.zeros(2 * n, dtype=torch.float64)
    shares[2 * rank:2 * rank + 2] = torch.tensor(mine, dtype=torch.float64)
    dist.all_reduce(shares)
    if rank == 0:
        v = shares.tolist()
        with open(a.out, "w") as f:
            json.dump({"seconds_per_step": seconds, "split": balancer.split() if balancer else None,
                       "cpu_share": v[0::2], "loader_share": v[1::2]}, f)
    dist.barrier()  # torch 1.13 + Gloo: no rank tears down while another still finishes the last collective
    dist.destroy_process_group()


def train(a, model, opt, loader):
    """Trains --steps steps; returns the timed steps' seconds per step and this rank's (CPU-seconds of its
    process, seconds blocked in the loader), each per wall second of the timed steps."""
    import torch.distributed as dist
    import torch.nn.functional as F

    t0 = cpu0 = None
    waited = 0.0
    batches = iter(loader)
    for step in range(a.steps):
        if step == a.skip_steps:
            dist.barrier()
            t0, cpu0, waited = time.perf_counter(), time.process_time(), 0.0
        w0 = time.perf_counter()
        xb, yb = next(batches, (None, None))
        if xb is None:
            raise SystemExit(f"ddp_hetrain_bench: --steps {a.steps} is more than one epoch of this global batch")
        waited += time.perf_counter() - w0
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.barrier()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return wall / (a.steps - a.skip_steps), (cpu / wall, waited / wall)


def run_one(a, cell, mode, port, out):
    spec = CELLS[cell]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([a.python_path, os.environ.get("PYTHONPATH", "")]))
    batch = a.cpu_global_batch if spec["batch"] == "cpu" else a.global_batch
    cmd = [os.path.join(HERE, "launch_local.sh"), str(spec["ranks"]), str(port), sys.executable, __file__, "worker",
           "--hetrain", mode, "--global-batch", str(batch), "--steps", str(a.steps),
           "--skip-steps", str(a.skip_steps), "--out", out]
    # Explicit in every cell: only a cell with "speeds" has an emulated device (the flag's default is slow4x's
    # cost, and a sleep on every rank would leave a quota nothing to hold back).
    cmd += ["--sample-cost-ms", str(a.sample_cost_ms if "speeds" in spec else 0.0)]
    quota = None
    if "speeds" in spec:
        cmd += ["--speeds", spec["speeds"]]
    if "cgroup_rank" in spec:
        from allocation_cgroup import CpuQuota
        quota = CpuQuota(QUOTA_CPUS)
        quota.up()
        env.update(CGROUP=quota.path, CGROUP_RANK=str(spec["cgroup_rank"]))
    stat = None
    try:
        subprocess.run(cmd, env=env, check=True, timeout=RUN_TIMEOUT, stdout=subprocess.DEVNULL)
        stat = quota.stat() if quota is not None else None
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"ddp_hetrain_bench: the {cell} cell's {mode} run exited with status {e.returncode} "
                         "(its ranks' messages are above)") from None
    except subprocess.TimeoutExpired:
        raise SystemExit(f"ddp_hetrain_bench: the {cell} cell's {mode} run took over {RUN_TIMEOUT} s") from None
    finally:
        if quota is not None:
            quota.down()
    with open(out) as f:
        r = json.load(f)
    r["quota_stat"] = stat  # periods, throttled periods and time: the quota did bind
    return r


def drive(a):
    results = {c: {"off": [], "adaptive": []} for c in a.cells}
    splits = {c: [] for c in a.cells}
    shares = {c: {"off": [], "adaptive": []} for c in a.cells}
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
                shares[cell][mode].append(r["cpu_share"])
                print(run_line(rep, cell, mode, r), flush=True)
    rows = summarise(a, results, splits, shares)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"args": vars(a), "runs": results, "splits": splits, "cpu_shares": shares, "rows": rows}, f,
                      indent=1)


def run_line(rep, cell, mode, r):
    """One run: seconds per step, split, each rank's CPU and loader shares, the quota's periods."""
    line = (f"rep {rep} {cell:9s} {mode:8s} {r['seconds_per_step']:.4f} s/step {r['split'] or ''} "
            f"cpu {by_rank(r['cpu_share'])} loader {by_rank(r['loader_share'])}")
    q = r["quota_stat"]
    if q is not None:
        line += (f" quota: {q.get('nr_throttled')}/{q.get('nr_periods')} periods throttled, "
                 f"{cgroup_throttled_seconds(q):.1f} s")
    return line


def by_rank(values):
    return " / ".join(f"{x:.2f}" for x in values)


def cgroup_throttled_seconds(stat):
    """cpu.stat's throttled time: v1 `throttled_time` (ns), v2 `throttled_usec`."""
    return stat.get("throttled_time", 0) * 1e-9 + stat.get("throttled_usec", 0) * 1e-6


def summarise(a, results, splits, shares):
    """Prints the medians' table, each rank's median CPU share under plain DDP, and the quota cell's plain
    step against the identical cell's; returns the rows."""
    rows = []
    for cell in a.cells:
        off, ada = statistics.median(results[cell]["off"]), statistics.median(results[cell]["adaptive"])
        cpu = [statistics.median(r[i] for r in shares[cell]["off"]) for i in range(len(shares[cell]["off"][0]))]
        rows.append({"cell": cell, "ddp_s": off, "hetrain_s": ada, "speedup": off / ada,
                     "runs": len(results[cell]["off"]), "last_split": splits[cell][-1] if splits[cell] else None,
                     "ddp_cpu_share": cpu})
    print("| cell | runs | plain DDP s/step (median) | DDP + hetrain s/step (median) | plain / hetrain "
          "| plain DDP CPU per wall second, by rank (median) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['cell']} | {r['runs']} | {r['ddp_s']:.4f} | {r['hetrain_s']:.4f} | {r['speedup']:.2f}x "
              f"| {by_rank(r['ddp_cpu_share'])} |")
    by = {r["cell"]: r for r in rows}
    if "quota" in by and "identical" in by:
        print(f"plain DDP: the quota cell's step is {by['quota']['ddp_s'] / by['identical']['ddp_s']:.2f}x the "
              "identical cell's (same script and batch, rank 1 without its quota)")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", nargs="?", default="drive", choices=["drive", "worker"])
    p.add_argument("--hetrain", default="adaptive", help="worker: off (plain DDP) | equal | static | adaptive")
    p.add_argument("--global-batch", type=int, default=192, help="B of the device-like cell (slow4x); worker: B")
    p.add_argument("--cpu-global-batch", type=int, default=768,
                   help="B of the CPU-bound cells (quota, identical): a plain DDP step under the quota spans "
                        "several of its 0.1 s periods")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--skip-steps", type=int, default=3, help="steps left out of the timing (initialisation)")
    p.add_argument("--sample-cost-ms", type=float, default=3.0,
                   help="slow4x's emulated device: ms per sample (well above the host's share of a step); the "
                        "other cells have no emulated device")
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
    if a.reps < 1 or a.steps <= a.skip_steps:
        raise SystemExit(f"ddp_hetrain_bench: --reps {a.reps} must be at least 1 and --steps {a.steps} more than "
                         f"--skip-steps {a.skip_steps}")
    os.makedirs(a.work, exist_ok=True)
    drive(a)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Scale of hetrain sim --jobs: 200 jobs on 1,000 machines over at least 1,000
re-planning rounds, timed end to end (docs/benchmarks.md, "Multi-job planner
at scale").

Writes a pool of five machine types (1,000 machines) and a 200-job trace
(seeded), runs `hetrain sim --jobs` once with the mixed-type planner and
periodic rounds, and prints the wall time, the rounds planned (from --json)
and the schedule's figures. Exits 1 if fewer than --min-rounds plans were made
(the input would not test what it claims to).

  python3 bench/jobs_scale_bench.py --hetrain build/hetrain [--solver lp] [--work DIR]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

TYPES = [  # name, count, price per hour, relative speed
    ("h100", 100, 6.0, 2.2), ("a100", 200, 3.0, 1.0), ("v100", 250, 1.5, 0.5),
    ("t4", 300, 0.5, 0.2), ("cpu", 150, 0.3, 0.02),
]
MODELS = [  # name, A100 samples/s, per-type factor on top of the relative speed, gradient bytes
    ("resnet50", 1400, {"t4": 1.2, "cpu": 0.5}, 1.0e8),
    ("bert", 420, {"t4": 0.6, "cpu": 0.2}, 4.4e8),
    ("lstm", 900, {"v100": 1.4, "t4": 1.7, "cpu": 2.5}, 4.0e7),
    ("recsys", 24000, {"v100": 1.4, "t4": 2.5, "cpu": 8.0}, 8.0e6),
    ("transformer", 3000, {"h100": 1.3, "t4": 0.6, "cpu": 0.5}, 2.0e8),
]


def write_inputs(work, jobs, seed):
    rng = random.Random(seed)
    pool = ["[network]\nbandwidth = 1.25e10\nlatency = 2e-5\n"]
    for name, count, price, _ in TYPES:
        pool.append(f'[[type]]\nname = "{name}"\ncount = {count}\nprice_per_hour = {price}\n')
    out = []
    for name, a100, factor, grad in MODELS:
        speeds = ", ".join(f"{t} = {a100 * rel * factor.get(t, 1.0):.1f}" for t, _, _, rel in TYPES)
        out.append(f'[[model]]\nname = "{name}"\nspeeds = {{ {speeds} }}\ngradient_bytes = {grad:g}\n'
                   f'overhead = 0.004\n')
    t = 0.0
    for i in range(jobs):
        model = rng.choice(MODELS)
        batch = rng.choice([256, 512, 1024, 2048])
        hours = rng.choice([0.5, 1, 2, 4, 8, 16])  # on 8 A100s
        steps = max(1, int(hours * 3600 * 8 * model[1] / batch))
        out.append(f'[[job]]\nname = "job{i:03d}"\nmodel = "{model[0]}"\nglobal_batch = {batch}\n'
                   f'steps = {steps}\narrival = {t:.0f}\nworkers = {rng.choice([1, 2, 4, 8, 16])}\n'
                   f'weight = {rng.choice([1, 1, 1, 2])}\n')
        t += rng.expovariate(1 / 600.0)
    pool_path, jobs_path = os.path.join(work, "pool.toml"), os.path.join(work, "jobs.toml")
    open(pool_path, "w").write("\n".join(pool))
    open(jobs_path, "w").write("\n".join(out))
    return pool_path, jobs_path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetrain", default="build/hetrain")
    ap.add_argument("--work", help="where the inputs and the JSON go (default: a temporary folder)")
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--round-seconds", type=float, default=300.0)
    ap.add_argument("--objective", default="max-min-fair")
    ap.add_argument("--solver", default="auto")
    ap.add_argument("--schedulers", default="mixed")
    ap.add_argument("--min-rounds", type=int, default=1000)
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="jobs_scale_")
    os.makedirs(work, exist_ok=True)
    pool, jobs = write_inputs(work, args.jobs, args.seed)
    out = os.path.join(work, "out.json")
    cmd = [args.hetrain, "sim", "--jobs", jobs, "--cluster", pool, "--objective", args.objective,
           "--solver", args.solver, "--schedulers", args.schedulers, "--round-seconds", str(args.round_seconds),
           "--json", out, "-q"]
    start = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if r.returncode != 0:
        print(r.stderr.strip(), file=sys.stderr)
        return r.returncode
    doc = json.load(open(out))
    machines = sum(c for _, c, _, _ in TYPES)
    print(f"command: {' '.join(cmd)}")
    print(f"{args.jobs} jobs, {machines} machines, solver {doc['solver']}, objective {doc['objective']}")
    print("| scheduler | plans | wall (s) | avg JCT (h) | makespan (h) | utilization | moves |")
    print("|---|---|---|---|---|---|---|")
    for s in doc["schedulers"]:
        print(f"| {s['name']} | {s['plans']} | {wall:.1f} | {s['avg_jct'] / 3600:.2f} | {s['makespan'] / 3600:.2f} "
              f"| {s['utilization']:.3f} | {s['moves']} |")
    plans = min(s["plans"] for s in doc["schedulers"])
    if plans < args.min_rounds:
        print(f"only {plans} plans: lower --round-seconds", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

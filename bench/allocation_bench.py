#!/usr/bin/env python3
"""Allocation benchmark: hetrain's equal / static / adaptive against PyTorch DDP.

One run of this script measures every configuration side by side, repeated
--reps times in interleaved order (the policies' order rotating from one
repetition to the next: use a multiple of 4 for --reps to give every policy
every position), and prints one table of medians:

  scenario     policy    seconds  x ideal  x equal  efficiency  accuracy

Scenarios (4 workers on this one machine):
  homogeneous  all workers equal
  emulated     rank 3 emulated 4x slower (--speeds 1,1,1,0.25: sleeps 3x its compute)
  cgroup       rank 3 really throttled to a quarter CPU by a cgroup v1 CPU quota (root only)
  device       emulated accelerators: model mlp, every sample costs --sample-cost-ms of sleep on top of
               the real compute, slept inside forward and backward where a device would hold the host
               (src/hetrain/train/device_time.h; the host's cores stay free meanwhile), and rank 3 is
               4x slower (--speeds 1,1,1,0.25). With four processes on a 2-core machine this is the
               scenario whose noise comes from the devices, not from the host scheduler.
  device-equal the device scenario with all workers equal: adaptive's cost over equal, measured where
               the step-to-step noise (about 1%) is small enough to resolve a 1% difference.

After the table, for each scenario: adaptive / equal run by run (each pair ran
in the same repetition) and how many times adaptive changed the split.

"seconds" is the training time of --steps steps of global batch B (evaluation
excluded), the same samples in the same order for every configuration.
"ideal" = steps x B / sum_i v_i + comm, with v_i each worker's compute speed
(samples per compute second) and comm the run's communication time: the sum
over steps of the wait of the worker that arrived last (the allreduce alone),
both measured in the same scenario's adaptive runs. "x ideal (median comm)"
prices every step's communication at the median step's instead, which leaves
out the slow tail of the allreduces (the first version of this script did so). Usage:

  python3 bench/allocation_bench.py [--reps 3] [--steps 100] [--model cnn] [-b 256]
                                    [--scenarios homogeneous,emulated,cgroup,device,device-equal] [--sample-cost-ms 1]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HETRAIN = os.path.join(ROOT, "build", "hetrain")
LAUNCH = os.path.join(ROOT, "bench", "launch_local.sh")
PEER = os.path.join(ROOT, "bench", "ddp_peer.py")
CGROUP = "/sys/fs/cgroup/cpu/hetrain_bench"
WORKERS = 4
SLOW_RANK = 3
QUOTA_SHARE = 0.25        # of one CPU
CFS_PERIOD_US = 100000    # cgroup v1 scheduling period, microseconds


def cgroup_up():
    if os.geteuid() != 0:
        sys.exit("allocation_bench: the cgroup scenario needs root (it writes /sys/fs/cgroup/cpu); "
                 "run as root or pass --scenarios homogeneous,emulated")
    if not os.path.isdir("/sys/fs/cgroup/cpu"):
        sys.exit("allocation_bench: no cgroup v1 cpu controller at /sys/fs/cgroup/cpu")
    os.makedirs(CGROUP, exist_ok=True)
    with open(f"{CGROUP}/cpu.cfs_period_us", "w") as f:
        f.write(str(CFS_PERIOD_US))
    with open(f"{CGROUP}/cpu.cfs_quota_us", "w") as f:
        f.write(str(int(QUOTA_SHARE * CFS_PERIOD_US)))


def cgroup_down():
    if os.path.isdir(CGROUP):
        try:
            os.rmdir(CGROUP)
        except OSError:
            pass


def run(cmd, scenario, port, out):
    env = dict(os.environ)
    if scenario == "cgroup":
        env.update(CGROUP=CGROUP, CGROUP_RANK=str(SLOW_RANK))
    full = [LAUNCH, str(WORKERS), str(port)] + cmd + ["--metrics", out]
    subprocess.run(full, env=env, check=True, stdout=subprocess.DEVNULL, timeout=3600)
    with open(out) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--model", default="cnn")
    p.add_argument("-b", "--global-batch", type=int, default=256)
    p.add_argument("--scenarios", default="homogeneous,emulated,cgroup,device,device-equal")
    p.add_argument("--sample-cost-ms", type=float, default=1.0, help="device scenario: sleep per sample")
    p.add_argument("--json", default="", help="also write every run's numbers here")
    a = p.parse_args()
    scenarios = a.scenarios.split(",")
    if "cgroup" in scenarios:
        cgroup_up()
    base = ["-b", str(a.global_batch), "--max-steps", str(a.steps)]
    common = {sc: ["--model", "mlp" if sc.startswith("device") else a.model] + base for sc in scenarios}
    device = ["--sample-cost-ms", str(a.sample_cost_ms)]
    speeds = {"emulated": ["--speeds", "1,1,1,0.25"], "device": device + ["--speeds", "1,1,1,0.25"],
              "device-equal": device}
    shares = {"emulated": ["--shares", "4,4,4,1"], "device": ["--shares", "4,4,4,1"]}  # the true speeds
    # elsewhere static profiles its shares
    policies = ["equal", "static", "adaptive", "ddp"]
    results = {}
    port = 29700
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for rep in range(a.reps):
                for sc in scenarios:
                    # The order rotates with the repetition, so no policy always runs first (the
                    # machine's state drifts; a fixed order biased the pairs by about 2%).
                    for pol in policies[rep % len(policies):] + policies[:rep % len(policies)]:
                        port += 1
                        out = os.path.join(tmp, f"{sc}-{pol}-{rep}.json")
                        extra = speeds.get(sc, [])
                        if pol == "ddp":
                            cmd = ["/usr/bin/python3", PEER] + common[sc] + ["--lr", "2e-3"] + extra
                        else:
                            cmd = [HETRAIN, "worker", "-q", "--policy", pol, "--lr", "2e-3",
                                   "--lr-schedule", "constant"] + common[sc] + extra
                            if pol == "static":
                                cmd += shares.get(sc, [])
                        d = run(cmd, sc, port, out)
                        results.setdefault((sc, pol), []).append(d)
                        print(f"rep {rep} {sc:12s} {pol:9s} {sum(e['train_seconds'] for e in d['epochs']):7.2f} s",
                              file=sys.stderr, flush=True)
    finally:
        cgroup_down()

    print(f"\n{WORKERS} workers, model {a.model} (device: mlp, {a.sample_cost_ms} ms/sample), "
          f"B={a.global_batch}, {a.steps} steps, medians of {a.reps} runs\n")
    print("| scenario | policy | seconds | x ideal | x ideal (median comm) | x equal | DDP / this "
          "| balance efficiency | test accuracy |")
    print("|---|---|---|---|---|---|---|---|---|")
    dump = {}
    for sc in scenarios:
        secs = {pol: statistics.median(sum(e["train_seconds"] for e in d["epochs"]) for d in results[(sc, pol)])
                for pol in policies}
        ideals, ideals_median_comm = [], []
        for d in results[(sc, "adaptive")]:
            speed = sum(w["samples"] / w["compute_seconds"] for w in d["workers"] if w["compute_seconds"] > 0)
            last_waits = [min(ws) for ws in d["steps"]["wait_seconds"]]  # the allreduce alone
            steps = len(d["allocation"])
            ideals.append(steps * a.global_batch / speed + sum(last_waits))
            ideals_median_comm.append(steps * (a.global_batch / speed + statistics.median(last_waits)))
        ideal = statistics.median(ideals)
        ideal_median_comm = statistics.median(ideals_median_comm)
        for pol in policies:
            runs = results[(sc, pol)]
            eff = "-" if pol == "ddp" else f"{statistics.median(d['balance_efficiency'] for d in runs):.3f}"
            acc = statistics.median(d["epochs"][-1]["test_accuracy"] for d in runs)
            print(f"| {sc} | {pol} | {secs[pol]:.2f} | {secs[pol] / ideal:.2f} | {secs[pol] / ideal_median_comm:.2f} "
                  f"| {secs[pol] / secs['equal']:.2f} "
                  f"| {secs['ddp'] / secs[pol]:.2f} | {eff} | {acc:.4f} |")
            dump[f"{sc}/{pol}"] = {"seconds": [sum(e["train_seconds"] for e in d["epochs"]) for d in runs],
                                    "ideal_seconds": ideal, "ideal_seconds_median_comm": ideal_median_comm}
    print()
    for sc in scenarios:
        pairs = [ad_sec / eq_sec for ad_sec, eq_sec in zip(
            (sum(e["train_seconds"] for e in d["epochs"]) for d in results[(sc, "adaptive")]),
            (sum(e["train_seconds"] for e in d["epochs"]) for d in results[(sc, "equal")]))]
        # A policy's moves: changes between full global batches (an epoch's last, partial batch scales the
        # split without the policy moving).
        moves = [sum(1 for x, y in zip(d["allocation"], d["allocation"][1:]) if x != y and sum(x) == sum(y))
                 for d in results[(sc, "adaptive")]]
        print(f"- {sc}: adaptive / equal per pair {' '.join(f'{r:.3f}' for r in pairs)} "
              f"(median {statistics.median(pairs):.3f}); adaptive changed the split {moves} times")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dump, f, indent=1)


if __name__ == "__main__":
    main()

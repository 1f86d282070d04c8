#!/usr/bin/env python3
"""Calibration check: does `hetrain sim` predict real runs?

Runs one real 4-worker training per policy on this machine (rank 3 emulated
4x slower), calibrates the simulator from one of them (`hetrain sim
--calibrate RUN.json`: worker speeds and overheads, the allreduce's latency,
the per-step overhead), predicts every policy's training time for the same
number of steps, and prints predicted / measured:

  calibrated on  policy    measured (s)  predicted (s)  ratio

"measured" is the run's train_seconds (the step loop, evaluation excluded).
Each real run takes well under a minute. Usage:

  python3 bench/sim_calibrate.py [--steps 100] [--sample-cost-ms 2] [--calibrate-on adaptive,equal]
                                 [--keep DIR]

--sample-cost-ms adds a steady synthetic per-sample cost (a sleep) to each
worker's compute, so that on a shared machine the compute follows
t = a + b/v closely; 0 leaves the MLP's own (tiny, noisy) compute.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HETRAIN = os.path.join(ROOT, "build", "hetrain")
WORKERS = 4
SPEEDS = "1,1,1,0.25"
SHARES = "4,4,4,1"          # static: in proportion to the emulated speeds
MLP_GRADIENT_BYTES = 4 * (784 * 256 + 256 + 256 * 10 + 10)  # 784-256-10 MLP, float32
POLICIES = ["equal", "static", "adaptive"]


def real_run(policy, args, metrics):
    # Exactly `steps` steps in one epoch of synthetic data.
    cmd = [HETRAIN, "run", "-n", str(WORKERS), "--model", "mlp", "--data", "synthetic",
           "--synthetic-train", str(args.steps * args.global_batch),
           "--speeds", SPEEDS, "--policy", policy, "--max-steps", str(args.steps),
           "-b", str(args.global_batch), "--metrics", metrics, "--quiet"]
    if args.sample_cost_ms > 0:
        cmd += ["--sample-cost-ms", str(args.sample_cost_ms)]
    if policy == "static":
        cmd += ["--shares", SHARES]
    print("$", " ".join(cmd[1:]), file=sys.stderr)
    subprocess.run(cmd, check=True, timeout=300)
    with open(metrics) as f:
        return sum(e["train_seconds"] for e in json.load(f)["epochs"])


def predict(run_json, policy, steps, trace):
    cmd = [HETRAIN, "sim", "--calibrate", run_json, "--policy", policy, "--steps", str(steps),
           "--gradient-bytes", str(MLP_GRADIENT_BYTES), "--json", trace, "--quiet"]
    if policy == "static":
        cmd += ["--shares", SHARES]
    subprocess.run(cmd, check=True, timeout=120)
    with open(trace) as f:
        return json.load(f)["policies"][0]["total_seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("-b", "--global-batch", type=int, default=64)
    ap.add_argument("--sample-cost-ms", type=float, default=2.0)
    ap.add_argument("--calibrate-on", default="adaptive,equal")
    ap.add_argument("--keep", help="keep the runs' metrics and traces in this directory")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hetrain_sim_calibrate_") as scratch:
        tmp = args.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        measured = {}
        for p in POLICIES:
            measured[p] = real_run(p, args, os.path.join(tmp, f"{p}.json"))
        print(f"4 workers, speeds {SPEEDS}, mlp, B={args.global_batch}, {args.steps} steps, "
              f"--sample-cost-ms {args.sample_cost_ms}")
        print("| calibrated on | policy | measured (s) | predicted (s) | predicted / measured |")
        print("|---|---|---|---|---|")
        worst = 0.0
        for source in args.calibrate_on.split(","):
            for p in POLICIES:
                trace = os.path.join(tmp, f"predict_{p}_from_{source}.json")
                got = predict(os.path.join(tmp, f"{source}.json"), p, args.steps, trace)
                ratio = got / measured[p]
                worst = max(worst, abs(ratio - 1.0))
                print(f"| {source} | {p} | {measured[p]:.3f} | {got:.3f} | {ratio:.3f} |")
        print(f"largest error: {100 * worst:.1f}%")


if __name__ == "__main__":
    main()

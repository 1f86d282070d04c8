#!/usr/bin/env python3
"""Overlap benchmark: hetrain against PyTorch DDP with all workers equal (issue 8).

For each model (mlp, cnn, resnet), 4 local workers, the same global batch B cut
into 4 equal slices, Fashion-MNIST, --steps steps, each configuration run
--reps times in interleaved order:

  hetrain       equal split, gradients reduced bucket by bucket during backward (default)
  no-overlap    hetrain --no-overlap: one reduction after backward
  ddp           bench/ddp_peer.py: PyTorch 1.13 DistributedDataParallel, Gloo, the same model

and prints one table of medians of the training time (train_seconds, evaluation
excluded), with hetrain's ratio to DDP and to --no-overlap. The three
configurations' order rotates from one repetition to the next.

--sample-cost-ms X emulates accelerators: every sample also costs X ms, slept
inside forward and backward where a device would hold the host (hetrain:
src/hetrain/train/device_time.h; DDP: the same in bench/ddp_peer.py), so the
host's cores are free for communication while the device computes, as with
GPUs. Without it (the default) the models compute on the host's shared cores,
where the communication's copies compete with backward for the same cycles.
Usage:

  python3 bench/overlap_bench.py [--reps 3] [--steps 60] [-b 64] [--models mlp,cnn,resnet]
                                 [--sample-cost-ms 0]
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
WORKERS = 4


def run(cmd, port, out):
    subprocess.run([LAUNCH, str(WORKERS), str(port)] + cmd + ["--metrics", out], check=True,
                   stdout=subprocess.DEVNULL, timeout=3600)
    with open(out) as f:
        d = json.load(f)
    return d, sum(e["train_seconds"] for e in d["epochs"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("-b", "--global-batch", type=int, default=64)
    p.add_argument("--models", default="mlp,cnn,resnet")
    p.add_argument("--sample-cost-ms", type=float, default=0.0, help="emulated accelerator: ms per sample")
    a = p.parse_args()
    models = a.models.split(",")
    configs = ["hetrain", "no-overlap", "ddp"]
    secs, hidden = {}, {}
    port = 29800
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            for model in models:
                common = ["--model", model, "-b", str(a.global_batch), "--max-steps", str(a.steps), "--lr", "2e-3"]
                if a.sample_cost_ms > 0:
                    common += ["--sample-cost-ms", str(a.sample_cost_ms)]
                for c in configs[rep % len(configs):] + configs[:rep % len(configs)]:
                    port += 1
                    out = os.path.join(tmp, f"{model}-{c}-{rep}.json")
                    if c == "ddp":
                        cmd = ["/usr/bin/python3", PEER] + common
                    else:
                        cmd = [HETRAIN, "worker", "-q", "--policy", "equal", "--lr-schedule", "constant"] + common
                        if c == "no-overlap":
                            cmd.append("--no-overlap")
                    d, t = run(cmd, port, out)
                    secs.setdefault((model, c), []).append(t)
                    if c == "hetrain":
                        hidden.setdefault(model, []).append(
                            statistics.median(w["hidden_comm_seconds"] for w in d["workers"]))
                    print(f"rep {rep} {model:7s} {c:10s} {t:7.2f} s", file=sys.stderr, flush=True)
    device = f"emulated accelerators, {a.sample_cost_ms} ms/sample" if a.sample_cost_ms > 0 else "host compute"
    print(f"\n{WORKERS} workers, all equal, {device}, B={a.global_batch}, {a.steps} steps, "
          f"medians of {a.reps} runs\n")
    print("| model | hetrain (s) | --no-overlap (s) | DDP (s) | hetrain / DDP | hetrain / no-overlap "
          "| comm hidden by overlap (s) |")
    print("|---|---|---|---|---|---|---|")
    for model in models:
        h, n, d = (statistics.median(secs[(model, c)]) for c in configs)
        print(f"| {model} | {h:.2f} | {n:.2f} | {d:.2f} | {h / d:.2f} | {h / n:.2f} "
              f"| {statistics.median(hidden[model]):.2f} |")
    print()
    for model in models:
        h, n, d = (secs[(model, c)] for c in configs)
        print(f"- {model}: per repetition, hetrain / DDP {' '.join(f'{x / y:.3f}' for x, y in zip(h, d))}; "
              f"hetrain / no-overlap {' '.join(f'{x / y:.3f}' for x, y in zip(h, n))}")


if __name__ == "__main__":
    main()

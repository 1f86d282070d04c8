#!/usr/bin/env python3
"""Tracing overhead: the same run with and without --trace, side by side.

Each repetition runs the pair (off, on) back to back, alternating which goes
first, so drifts in the machine's load hit both alike. Prints medians of the
per-step time over the repetitions, and the median of the paired differences:

  tracing  step ms (train)  step ms (wall)  trace MB

"step ms (train)" is the epoch's step loop divided by its steps (evaluation
and the epoch-end gathers excluded): what tracing adds on the step path.
"step ms (wall)" is the whole run divided by its steps, including the
epoch-end gather of the trace's timestamps and evaluation. Usage:

  python3 bench/trace_bench.py [--reps 7] [--steps 200] [--workers 4] [--model cnn] [-b 256]
                               [--synthetic] [--sample-cost-ms X]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HETRAIN = os.environ.get("HETRAIN", os.path.join(ROOT, "build", "hetrain"))


def run(args, workdir, trace):
    metrics = os.path.join(workdir, "m.json")
    cmd = [HETRAIN, "run", "-n", str(args.workers), "--model", args.model, "-b", str(args.global_batch),
           "--epochs", "1", "--max-steps", str(args.steps), "--policy", "adaptive", "--speeds",
           ",".join(["1"] * (args.workers - 1) + ["0.25"]), "--lr-schedule", "constant", "--quiet",
           "--metrics", metrics] + (["--data", "synthetic", "--synthetic-train", str(args.global_batch *
                                                                                        args.steps)]
                                    if args.synthetic else [])
    if args.sample_cost_ms > 0:
        cmd += ["--sample-cost-ms", str(args.sample_cost_ms), "--threads", "1"]
    path = os.path.join(workdir, "t.json")
    if trace:
        cmd += ["--trace", path]
    subprocess.run(cmd, check=True)
    d = json.load(open(metrics))
    steps = len(d["allocation"])
    size = os.path.getsize(path) / 1e6 if trace else 0.0
    if trace:
        json.load(open(path))  # must be valid
        os.remove(path)
    train = sum(e["train_seconds"] for e in d["epochs"])
    return 1e3 * train / steps, 1e3 * d["wall_seconds"] / steps, size


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--model", default="cnn")
    ap.add_argument("-b", "--global-batch", type=int, default=256)
    ap.add_argument("--synthetic", action="store_true", help="synthetic data instead of Fashion-MNIST")
    ap.add_argument("--sample-cost-ms", type=float, default=0.0,
                    help="add a steady sleep per sample (hetrain's synthetic workload): steps that a loaded "
                         "machine's scheduler disturbs less than compute")
    args = ap.parse_args()
    if not os.path.exists(HETRAIN):
        sys.exit(f"trace_bench: build {HETRAIN} first (cmake --build build --target hetrain)")
    results = {False: [], True: []}
    with tempfile.TemporaryDirectory() as workdir:
        for rep in range(args.reps):
            for trace in ((False, True) if rep % 2 == 0 else (True, False)):
                results[trace].append(run(args, workdir, trace))
                t, w, _ = results[trace][-1]
                print(f"rep {rep} trace {'on ' if trace else 'off'}: step {t:.2f} ms (train), {w:.2f} ms (wall)",
                      file=sys.stderr, flush=True)
    print(f"{args.workers} workers, {args.model}, B={args.global_batch}, {args.steps} steps, adaptive, "
          f"one worker emulated 4x slower, sample cost {args.sample_cost_ms} ms; "
          f"medians of {args.reps} interleaved pairs\n")
    print("| tracing | step ms (train) | step ms (wall) | trace MB |\n|---|---|---|---|")
    for trace in (False, True):
        r = results[trace]
        print(f"| {'on' if trace else 'off'} | {statistics.median(x[0] for x in r):.2f} | "
              f"{statistics.median(x[1] for x in r):.2f} | {statistics.median(x[2] for x in r):.2f} |")
    for i, name in ((0, "train"), (1, "wall")):
        diffs = [100.0 * (on[i] - off[i]) / off[i] for off, on in zip(results[False], results[True])]
        print(f"\nstep time ({name}), on vs off: median of paired differences {statistics.median(diffs):+.2f}% "
              f"(pairs: {', '.join(f'{d:+.1f}' for d in diffs)})")


if __name__ == "__main__":
    main()

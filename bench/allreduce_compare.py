#!/usr/bin/env python3
"""Repeats `hetrain bench allreduce` and says, size by size, how often and by how
much the ring reached Gloo's bus bandwidth (issue 4).

One run of the bench decides "ring >= gloo at every size" by the machine's
noise when the two differ by less than that noise (docs/benchmarks.md, issue
4). This script runs the same command --runs times, back to back, and prints
for each size every run's ring / gloo bus-bandwidth ratio, their median, the
runs the ring won, and the runs in which it won at every size from --from up.
Every other algorithm given with --algo gets its ratio to gloo too.

Usage:

  python3 bench/allreduce_compare.py [--runs 5] [-n 4] [--iters 7]
      [--algo gloo,ring,halving-doubling] [--sizes 1M,4M,16M,64M,256M] [--from 1M]
"""
import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HETRAIN = os.path.join(ROOT, "build", "hetrain")
TIMEOUT_S = 1800  # one run of the bench, all sizes


def parse_bytes(text):
    units = {"K": 10, "M": 20, "G": 30}
    if text and text[-1].upper() in units:
        return int(text[:-1]) << units[text[-1].upper()]
    return int(text)


def run_once(args):
    """One bench run: {(algo, bytes): busbw}, and the reference line."""
    cmd = [HETRAIN, "bench", "allreduce", "-n", str(args.n), "--algo", args.algo, "--sizes", args.sizes,
           "--iters", str(args.iters)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        sys.exit(f"allreduce_compare: the bench ran over {TIMEOUT_S} s: {' '.join(cmd)}")
    if out.returncode != 0:
        last = out.stderr.strip().splitlines()[-1:] or ["(no message)"]
        sys.exit(f"allreduce_compare: the bench failed (exit {out.returncode}): {last[0]}")
    rows, reference = {}, ""
    for line in out.stdout.splitlines():
        if line.startswith("# reference"):
            reference = line[2:]
        if not line.strip() or line.startswith("#"):
            continue
        algo, size, _count, _us, _algbw, busbw = line.split()
        rows[(algo, int(size))] = float(busbw)
    return rows, reference


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("-n", type=int, default=4)
    p.add_argument("--iters", type=int, default=7)
    p.add_argument("--algo", default="gloo,ring,halving-doubling")
    p.add_argument("--sizes", default="1M,4M,16M,64M,256M")
    p.add_argument("--from", dest="from_size", default="1M", help="smallest size the every-size verdict counts")
    args = p.parse_args()
    if args.runs < 1:
        sys.exit("allreduce_compare: --runs must be >= 1")
    algos = args.algo.split(",")
    if "gloo" not in algos or "ring" not in algos:
        sys.exit("allreduce_compare: --algo must include gloo and ring")
    if not os.access(HETRAIN, os.X_OK):
        sys.exit(f"allreduce_compare: {HETRAIN} not found; build first (scripts/test.sh or cmake --build build)")
    try:
        sizes = [parse_bytes(s) for s in args.sizes.split(",")]
        from_bytes = parse_bytes(args.from_size)
    except ValueError as e:
        sys.exit(f"allreduce_compare: bad size: {e}")

    runs = []
    for r in range(args.runs):
        rows, reference = run_once(args)
        runs.append(rows)
        print(f"run {r + 1}/{args.runs}: {reference}", flush=True)

    others = [a for a in algos if a != "gloo"]
    print(f"\n# {args.runs} runs of: hetrain bench allreduce -n {args.n} --algo {args.algo} --sizes {args.sizes} "
          f"--iters {args.iters}")
    print("# x / gloo bus bandwidth, run by run; the median; the runs where x >= gloo")
    for a in others:
        for size in sizes:
            ratios = [rows[(a, size)] / rows[("gloo", size)] for rows in runs if rows.get(("gloo", size), 0) > 0]
            if not ratios:
                continue
            wins = sum(x >= 1.0 for x in ratios)
            print(f"{a:>17} {size:>11}  {' '.join(f'{x:.2f}' for x in ratios)}  median {statistics.median(ratios):.3f}"
                  f"  {wins}/{len(ratios)}")
    counted = [s for s in sizes if s >= from_bytes]
    every = sum(all(rows[("ring", s)] >= rows[("gloo", s)] for s in counted) for rows in runs)
    print(f"# runs where ring >= gloo at every size from {args.from_size}: {every}/{args.runs}")


if __name__ == "__main__":
    main()

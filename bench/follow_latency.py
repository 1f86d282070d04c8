#!/usr/bin/env python3
"""Steps the adaptive policy takes to follow a 4x slowdown, for one or more hetrain binaries, interleaved.

The run is the one `Cli.AdaptiveFollowsASlowdownWithinEightSteps` makes: three emulated devices
(--sample-cost-ms 0.2) on this machine's CPUs, B = 384, worker 2 turns 4x slower at step 200. The latency is
the first step after 200 whose split is within 10% of the proportional one (1, 1, 0.25), as
sum_i |b_i - p_i| / B; "none" if no step up to 209 is.

  /usr/bin/python3 bench/follow_latency.py --reps 8 [--busy] BINARY [BINARY ...]

--busy runs a busy loop (one core) beside each run: a loaded machine, as CI's `ctest -j2` is.
Prints one line per run, then per binary the latencies' median and range.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

RUN_TIMEOUT_S = 180  # a 210-step run takes about 12 s on the 2-core machine
SHARES = (1.0, 1.0, 0.25)
BATCH, AT, LAST = 384, 200, 209


def latency(binary, busy, metrics):
    """The first step after AT whose split is within 10% of the proportional one, or None."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        subprocess.run([binary, "run", "-n", "3", "--model", "mlp", "--threads", "1", "--policy", "adaptive",
                        "-b", str(BATCH), "--epochs", "2", "--max-steps", str(LAST + 1), "--sample-cost-ms", "0.2",
                        "--slowdown", f"2@{AT}:0.25", "-q", "--metrics", metrics],
                       check=True, timeout=RUN_TIMEOUT_S)
    finally:
        if hog:
            hog.kill()
            hog.wait()
    with open(metrics) as f:
        alloc = json.load(f)["allocation"]
    total = sum(SHARES)

    def gap(step):
        return sum(abs(b - BATCH * s / total) for b, s in zip(alloc[step], SHARES)) / BATCH

    return next((s for s in range(AT + 1, min(LAST, len(alloc) - 1) + 1) if gap(s) < 0.10), None)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("binaries", nargs="+")
    p.add_argument("--reps", type=int, default=8)
    p.add_argument("--busy", action="store_true", help="a busy loop beside each run")
    a = p.parse_args()
    for b in a.binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"follow_latency.py: {b} is not an executable")
    if a.reps < 1:
        sys.exit("follow_latency.py: --reps must be at least 1")
    found = {b: [] for b in a.binaries}
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.json")
        for rep in range(a.reps):
            for b in a.binaries:
                try:
                    step = latency(b, a.busy, metrics)
                except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
                    sys.exit(f"follow_latency.py: {b} failed: {e}")
                found[b].append(step)
                print(f"rep {rep + 1} {b}: {step if step is not None else 'none'}", flush=True)
    for b, steps in found.items():
        seen = sorted(s - AT for s in steps if s is not None)
        missed = len(steps) - len(seen)
        summary = f"median {statistics.median(seen)}, {seen[0]}-{seen[-1]} steps" if seen else "never"
        print(f"{b}: {summary} after the slowdown ({len(steps)} runs{f', {missed} not followed' if missed else ''})")


if __name__ == "__main__":
    main()

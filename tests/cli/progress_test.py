#!/usr/bin/env python3
"""Live progress of `hetrain run` on rank 0, end to end: --log-level debug
prints a progress line per step, info (the default) a few, warn and --quiet
none; a bad level is a usage error. Not a terminal here (captured output), so
the lines are plain; tests/report/test_progress.cc covers the terminal bar."""
import argparse
import re
import subprocess
import sys

STEPS = 12
USAGE_ERROR = 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hetrain", required=True)
    a = ap.parse_args()
    base = [a.hetrain, "run", "-n", "2", "--model", "mlp", "--data", "synthetic", "--synthetic-train", "600",
            "--synthetic-test", "100", "--threads", "1", "-b", "40", "--max-steps", str(STEPS)]
    failures = []

    def progress_lines(*extra):
        p = subprocess.run(base + list(extra), capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            failures.append(f"{extra}: exit {p.returncode}: {p.stderr}")
        return p, [l for l in p.stdout.splitlines() if re.match(r"epoch \d+/\d+  step \d+/\d+", l)]

    _, debug = progress_lines("--log-level", "debug")
    if [int(re.search(r"step (\d+)/", l).group(1)) for l in debug] != list(range(1, STEPS + 1)):
        failures.append(f"debug: expected a line per step, got {debug}")
    elif not re.search(r"samples/s  ETA \d+:\d\d  loss \d+\.\d{4}  split \d+/\d+%$", debug[-1]):
        failures.append(f"debug: line without rate, ETA, loss or split: {debug[-1]!r}")
    _, info = progress_lines()
    if not (1 <= len(info) < STEPS) or f"step {STEPS}/{STEPS}" not in info[-1]:
        failures.append(f"info: expected the first and last steps (a line every 10 s), got {info}")
    for extra in (("--log-level", "warn"), ("--quiet",)):
        p, lines = progress_lines(*extra)
        if p.stdout:
            failures.append(f"{extra}: expected no output, got {p.stdout!r}")
    p = subprocess.run(base + ["--log-level", "loud"], capture_output=True, text=True, timeout=60)
    if p.returncode != USAGE_ERROR or len(p.stderr.splitlines()) != 1:
        failures.append(f"--log-level loud: exit {p.returncode}, stderr {p.stderr!r}")
    for f in failures:
        print("progress_test: FAIL:", f, file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"progress_test: ok: debug {len(debug)} lines, info {len(info)}")


if __name__ == "__main__":
    main()

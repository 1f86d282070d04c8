#!/usr/bin/env python3
"""`hetrain run --trace`: a short real run (3 worker processes, one emulated
4x slower, equal split) writes a Chrome trace-event file that parses as JSON, names a row
per worker, and holds compute, allreduce, optimizer and allocation spans for
every worker on every step, with the slow worker's compute the longest."""
import argparse
import collections
import json
import os
import subprocess
import sys

WORKERS, STEPS = 3, 30


def fail(msg):
    print(f"trace_run_test: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    trace = os.path.join(a.work, "trace.json")
    if os.path.exists(trace):
        os.remove(trace)
    cmd = [a.hetrain, "run", "-n", str(WORKERS), "--model", "mlp", "--data", "synthetic", "--synthetic-train",
           "2000", "--synthetic-test", "200", "--threads", "1", "-b", "96", "--max-steps", str(STEPS),
           "--epochs", "2", "--speeds", "1,1,0.25", "--sample-cost-ms", "0.2", "--policy", "equal",
           "--quiet", "--trace", trace]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"hetrain run exited {p.returncode}: {p.stderr.strip()}")
    doc = json.load(open(trace))
    events = doc["traceEvents"]
    rows = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    if rows != {i: f"rank {i}" for i in range(WORKERS)}:
        fail(f"rows {rows}")
    spans = collections.defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            if e["dur"] < 0 or e["pid"] != 0:
                fail(f"bad span {e}")
            spans[(e["tid"], e["name"])].append(e)
    for rank in range(WORKERS):
        for name in ("compute", "optimizer", "allocation"):
            steps = sorted(e["args"]["step"] for e in spans[(rank, name)])
            if steps != list(range(STEPS)):
                fail(f"rank {rank} {name}: steps {steps}")
        if not spans[(rank, "allreduce")]:
            fail(f"rank {rank} has no allreduce span")
    compute = {r: sum(e["dur"] for e in spans[(r, "compute")]) for r in range(WORKERS)}
    if max(compute, key=compute.get) != 2:
        fail(f"the emulated slow worker (rank 2) should compute longest: {compute}")
    if len(spans[(0, "wait")]) < STEPS // 2:
        fail(f"fast rank 0 waited on only {len(spans[(0, 'wait')])} of {STEPS} steps")
    # An unwritable trace path fails at once, before training: one line, exit code 3.
    p = subprocess.run(cmd[:-1] + ["/nonexistent/dir/trace.json"], capture_output=True, text=True, timeout=300)
    if p.returncode != 3 or len(p.stderr.splitlines()) != 1 or "cannot write /nonexistent/dir/trace.json" not in p.stderr:
        fail(f"unwritable trace: exit {p.returncode}, stderr {p.stderr!r}")
    print(f"trace_run_test: ok: {len(events)} events, {WORKERS} rows, compute us per rank {compute}")


if __name__ == "__main__":
    main()

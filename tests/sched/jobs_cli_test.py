#!/usr/bin/env python3
"""hetrain plan --jobs / sim --jobs end to end (the real binary).

bad-input: every row of the multi-job table in docs/errors.md: one line on
stderr, `hetrain: error: `, this exit code, this text.
ordering: on the example trace (examples/jobs.toml over examples/pool.toml),
from the --json output: the mixed-type planner beats the one-type-per-job
planner, and both beat FCFS, for every objective and solver named on the
command line: on average JCT and makespan, except under the makespan
objective, where the ordering holds on makespan only (HOLDS;
docs/scheduling.md says why average JCT does not).
"""
import argparse
import json
import os
import subprocess
import sys

POOL = """[[type]]
name = "gpu"
count = 2
[[type]]
name = "cpu"
count = 4
"""
JOB = """[[job]]
name = "a"
speeds = { gpu = 100, cpu = 10 }
global_batch = 64
steps = 100
"""

# Per objective, the metrics on which mixed < one-type < FCFS holds on the example trace.
HOLDS = {
    "min-avg-jct": ("avg_jct", "makespan"),
    "max-min-fair": ("avg_jct", "makespan"),
    "cost": ("avg_jct", "makespan"),
    "makespan": ("makespan",),
}

# (what, pool text or None for a missing file, jobs text, extra flags, exit code, message part)
CASES = [
    ("missing field", POOL, JOB.replace("global_batch = 64\n", ""), [], 3,
     "jobs.toml:1:1: key 'job[0].global_batch': missing (required)"),
    ("a job no machine can run", POOL, JOB.replace("gpu = 100, cpu = 10", "gpu = 0"), [], 3,
     "jobs.toml:3:10: key 'job[0].speeds': job 'a' has a positive speed on no machine type the pool has machines of"),
    ("negative count", POOL.replace("count = 4", "count = -4"), JOB, [], 3,
     "pool.toml:6:9: key 'type[1].count': expected an integer >= 0, got -4"),
    ("unknown machine type", POOL, JOB.replace("cpu = 10", "tpu = 10"), [], 3,
     "jobs.toml:3:29: key 'job[0].speeds.tpu': no machine type 'tpu' in the pool"),
    ("a pool without machines", POOL.replace("count = 2", "count = 0").replace("count = 4", "count = 0"), JOB, [],
     3, "pool.toml:1:1: key 'type': the pool holds no machines (every count is 0)"),
    ("TOML syntax error", POOL, "[[job]\n", [], 3, "jobs.toml:1:"),
    ("missing pool file", None, JOB, [], 3, "cannot read"),
    ("--jobs without --cluster", POOL, JOB, ["--no-cluster"], 2,
     "--jobs needs --cluster POOL.toml (the machine types and their counts)"),
    ("unknown objective", POOL, JOB, ["--objective", "fastest"], 2,
     "--objective 'fastest' (expected max-min-fair, min-avg-jct, makespan or cost with --jobs)"),
    ("unknown solver", POOL, JOB, ["--solver", "cplex"], 2, "--solver 'cplex' (expected auto, lp or greedy)"),
]


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def bad_input(args):
    failures = 0
    os.makedirs(args.work, exist_ok=True)
    for i, (what, pool, jobs, extra, code, says) in enumerate(CASES):
        d = os.path.join(args.work, f"case{i}")
        os.makedirs(d, exist_ok=True)
        pool_path, jobs_path = os.path.join(d, "pool.toml"), os.path.join(d, "jobs.toml")
        if pool is not None:
            open(pool_path, "w").write(pool)
        elif os.path.exists(pool_path):
            os.remove(pool_path)
        open(jobs_path, "w").write(jobs)
        for command in ("plan", "sim"):
            flags = [f for f in extra if f != "--no-cluster"]
            cluster = [] if "--no-cluster" in extra else ["--cluster", pool_path]
            r = run([args.hetrain, command, "--jobs", jobs_path, *cluster, *flags])
            lines = r.stderr.splitlines()
            ok = (r.returncode == code and len(lines) == 1 and lines[0].startswith("hetrain: error: ")
                  and says in lines[0])
            print(f"{'ok  ' if ok else 'FAIL'} {command} {what}: exit {r.returncode}: {r.stderr.strip()}")
            failures += not ok
    return failures


def ordering(args):
    failures = 0
    pool, jobs = os.path.join(args.examples, "pool.toml"), os.path.join(args.examples, "jobs.toml")
    os.makedirs(args.work, exist_ok=True)
    for objective, solver in [(o, s) for o in args.objectives.split(",") for s in args.solvers.split(",")]:
        out = os.path.join(args.work, f"{objective}-{solver}.json")
        r = run([args.hetrain, "sim", "--jobs", jobs, "--cluster", pool, "--objective", objective,
                 "--solver", solver, "--json", out, "-q"])
        if r.returncode != 0:
            print(f"FAIL {objective} {solver}: exit {r.returncode}: {r.stderr.strip()}")
            failures += 1
            continue
        doc = json.load(open(out))
        by = {s["name"]: s for s in doc["schedulers"]}
        for metric in HOLDS[objective]:
            m, o, f = by["mixed"][metric], by["one-type"][metric], by["fcfs"][metric]
            ok = m < o < f
            print(f"{'ok  ' if ok else 'FAIL'} {objective} {solver} {metric}: mixed {m / 3600:.3f} h < one-type "
                  f"{o / 3600:.3f} h < fcfs {f / 3600:.3f} h")
            failures += not ok
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--examples", help="the folder of pool.toml and jobs.toml (ordering)")
    ap.add_argument("--objectives", default=",".join(HOLDS))
    ap.add_argument("--solvers", default="auto,greedy", help="auto: the LP where built in")
    ap.add_argument("mode", choices=["bad-input", "ordering"])
    args = ap.parse_args()
    failures = bad_input(args) if args.mode == "bad-input" else ordering(args)
    print(f"{args.mode}: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""hetrain plan --jobs / sim --jobs end to end (the real binary).

bad-input: every row of the multi-job table in docs/errors.md: one line on
stderr, `hetrain: error: `, this exit code, this text.
examples: on the example pool and trace (examples/pool.toml, examples/jobs.toml),
for every objective and solver named on the command line, from the --json
output: `hetrain plan --jobs` plans every job within the pool's counts, and
`hetrain sim --jobs` finishes every job under each scheduler, after its
arrival, with the summary (average JCT, makespan, utilization) matching the
per-job numbers. No ordering between schedulers is asserted: the planner's
guarantees are per plan and are checked over random traces
(tests/sched/test_traces.cc; docs/scheduling.md, "On random traces").
"""
import argparse
import json
import os
import subprocess
import sys
import tomllib

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

OBJECTIVES = ("max-min-fair", "min-avg-jct", "makespan", "cost")
# Relative slack when the summary is recomputed from the per-job numbers (printing rounds nothing: JSON doubles).
SLACK = 1e-9

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


def check_plan(doc, counts, names):
    """Every plan of `hetrain plan --json` holds each job, within the pool's counts; the problems found."""
    problems = []
    for plan in doc["plans"]:
        if sorted(j["name"] for j in plan["jobs"]) != sorted(names):
            problems.append(f"plan {plan['name']}: jobs {[j['name'] for j in plan['jobs']]}")
        used = {}
        for j in plan["jobs"]:
            for t, k in j["machines"].items():
                used[t] = used.get(t, 0) + k
        problems += [f"plan {plan['name']}: {k} {t} of {counts.get(t, 0)}" for t, k in used.items()
                     if k > counts.get(t, 0)]
    return problems


def check_schedule(doc, arrivals):
    """Every scheduler of `hetrain sim --json` finishes every job after it arrives; the summary adds up."""
    problems = []
    for s in doc["schedulers"]:
        jobs = {j["name"]: j for j in s["jobs"]}
        if sorted(jobs) != sorted(arrivals):
            problems.append(f"{s['name']}: jobs {sorted(jobs)}")
            continue
        for name, j in jobs.items():
            if not (j["start"] >= arrivals[name] and j["finish"] > j["start"] and j["machine_seconds"] > 0
                    and abs(j["jct"] - (j["finish"] - arrivals[name])) <= SLACK * j["finish"]):
                problems.append(f"{s['name']} {name}: {j}")
        avg = sum(j["jct"] for j in jobs.values()) / len(jobs)
        last = max(j["finish"] for j in jobs.values())
        if abs(s["avg_jct"] - avg) > SLACK * avg or abs(s["makespan"] - last) > SLACK * last:
            problems.append(f"{s['name']}: avg_jct {s['avg_jct']} makespan {s['makespan']} against {avg} {last}")
        if not 0 < s["utilization"] <= 1 + SLACK:
            problems.append(f"{s['name']}: utilization {s['utilization']}")
    return problems


def examples(args):
    failures = 0
    pool, jobs = os.path.join(args.examples, "pool.toml"), os.path.join(args.examples, "jobs.toml")
    counts = {t["name"]: t["count"] for t in tomllib.load(open(pool, "rb"))["type"]}
    arrivals = {j["name"]: j.get("arrival", 0.0) for j in tomllib.load(open(jobs, "rb"))["job"]}
    os.makedirs(args.work, exist_ok=True)
    for objective, solver in [(o, s) for o in args.objectives.split(",") for s in args.solvers.split(",")]:
        flags = ["--jobs", jobs, "--cluster", pool, "--objective", objective, "--solver", solver]
        for command, check, scope in (("plan", check_plan, counts), ("sim", check_schedule, arrivals)):
            out = os.path.join(args.work, f"{command}-{objective}-{solver}.json")
            r = run([args.hetrain, command, *flags, "--json", out, *(["-q"] if command == "sim" else [])])
            if r.returncode != 0:
                problems = [f"exit {r.returncode}: {r.stderr.strip()}"]
            elif command == "plan":
                problems = check(json.load(open(out)), scope, list(arrivals))
            else:
                problems = check(json.load(open(out)), scope)
            print(f"{'ok  ' if not problems else 'FAIL'} {command} {objective} {solver}"
                  + "".join(f"\n     {p}" for p in problems))
            failures += bool(problems)
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--examples", help="the folder of pool.toml and jobs.toml (examples)")
    ap.add_argument("--objectives", default=",".join(OBJECTIVES))
    ap.add_argument("--solvers", default="auto,greedy", help="auto: the LP where built in")
    ap.add_argument("mode", choices=["bad-input", "examples"])
    args = ap.parse_args()
    failures = bad_input(args) if args.mode == "bad-input" else examples(args)
    print(f"{args.mode}: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

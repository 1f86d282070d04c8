#!/usr/bin/env python3
"""Every file under examples/ is run by a test, and `hetrain sim --cluster` and `hetrain plan` end to end.

Modes:
  sim       every cluster file (a TOML with [[group]]) through `hetrain sim` under equal, static and adaptive,
            with --json --splits: the invariants of a simulation, whatever its noise model (every step splits
            its batch exactly, within the memory caps; an epoch uses each of its samples once; the totals are
            the sums of the steps; the printed table is the JSON's);
  plan      every inventory (a cluster file with prices) through `hetrain plan` for time and cost: the
            recommended machines exist in the inventory, their shares sum to the global batch within the caps,
            total = steps x step, cost = hours x prices, rows ordered by the objective, the recommended first;
  jobs      every job trace with every pool through `hetrain plan --jobs` and `hetrain sim --jobs` under each
            objective: plans within the pool, every job finishes once, the summary rows are their jobs' sums;
  readme    every `build/hetrain ...` command of examples/README.md, run as written (exit 0, it prints);
  sweep     examples/sweep_add_slow.sh (36 simulations): a full table of percentages (CTest label slow);
  bad-input bad cluster files, inventories and flags: one line, `hetrain: error: `, exit 2 (usage) or 3 (file);
  covered   every file under examples/ is run by this test or named by another test under tests/.

Usage: examples_test.py --hetrain BIN --examples DIR --work DIR MODE
No ordering of the policies' speeds is asserted: that is a measurement (bench/, docs/benchmarks.md).
"""
import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

RUN_LIMIT_S = 300        # one command; a hang fails the test
SIM_STEPS = 150          # steps per policy for cluster files without dataset_samples
POLICIES = ["equal", "static", "adaptive"]
JOB_OBJECTIVES = ["max-min-fair", "min-avg-jct", "makespan", "cost"]
SCHEDULERS = {"mixed", "one-type", "fcfs"}
REL = 1e-9               # sums of the same doubles in another order
USAGE, DATA = 2, 3       # docs/errors.md
HERE = Path(__file__).resolve()
failures = []


def fail(msg):
    failures.append(msg)
    print(f"FAILED: {msg}", flush=True)


def close(a, b, rel=REL, abs_tol=0.0):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)


def run(args, cwd=None, expect=0):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=RUN_LIMIT_S, cwd=cwd)
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(map(str, args))}: still running after {RUN_LIMIT_S} s")
        return None
    if expect is not None and p.returncode != expect:
        fail(f"{' '.join(map(str, args))}: exit {p.returncode} (expected {expect}): {p.stderr.strip()[-1500:]}")
        return None
    return p


def kinds(examples):
    """The TOML examples by kind, from their contents (new files are picked up as they come)."""
    out = {"cluster": [], "inventory": [], "jobs": [], "pool": []}
    for f in sorted(examples.rglob("*.toml")):
        doc = tomllib.loads(f.read_text())
        if "job" in doc:
            out["jobs"].append((f, doc))
        elif "type" in doc:
            out["pool"].append((f, doc))
        elif "group" in doc:
            out["cluster"].append((f, doc))
            if any("price_per_hour" in g for g in doc["group"]):
                out["inventory"].append((f, doc))
    return out


def workers_of(doc):
    """(group name, count, max_local_batch or None) per group, in file order."""
    return [(g["name"], g.get("count", 1), g.get("max_local_batch") or None) for g in doc["group"]]


# --- hetrain sim --cluster ---------------------------------------------------

def sim_flags(doc, policy):
    flags = ["--policy", policy]
    if "dataset_samples" in doc:
        flags += ["--epochs", "1"]
    else:
        flags += ["--steps", str(SIM_STEPS)]
    return flags


def expected_batches(doc):
    """The batch of every step: B each, an epoch's short last batch, or SIM_STEPS of B."""
    b = doc["global_batch"]
    if "dataset_samples" not in doc:
        return [b] * SIM_STEPS
    n = doc["dataset_samples"]
    return [b] * (n // b) + ([n % b] if n % b else [])


def check_sim_policy(name, doc, p, out_row):
    groups = workers_of(doc)
    n_workers = sum(c for _, c, _ in groups)
    caps = [cap for _, c, cap in groups for _ in range(c)]
    batches = expected_batches(doc)
    steps = p["steps"]
    k = len(steps["seconds"])
    if k != len(batches):
        fail(f"{name}: {k} steps simulated, expected {len(batches)}")
        return
    for key in ("compute_seconds", "allreduce_seconds", "workers"):
        if len(steps[key]) != k:
            fail(f"{name}: steps.{key} has {len(steps[key])} entries for {k} steps")
            return
    alloc = p.get("allocation")
    if alloc is None or len(alloc) != k:
        fail(f"{name}: --splits wrote {None if alloc is None else len(alloc)} splits for {k} steps")
        return
    for s in range(k):
        split = alloc[s]
        if len(split) != n_workers or sum(split) != batches[s] or min(split) < 0:
            fail(f"{name}: step {s} splits {batches[s]} samples as {split}")
            return
        if any(cap is not None and x > cap for x, cap in zip(split, caps)):
            fail(f"{name}: step {s}: split {split} exceeds the memory caps {caps}")
            return
        gs, gw = p["group_samples"][s], p["group_workers"][s]
        if sum(gs) != batches[s] or any(w > c for w, (_, c, _) in zip(gw, groups)) or sum(gw) != steps["workers"][s]:
            fail(f"{name}: step {s}: group samples {gs} / workers {gw} do not add up (batch {batches[s]})")
            return
        t, c, a = steps["seconds"][s], steps["compute_seconds"][s], steps["allreduce_seconds"][s]
        if not (t > 0 and math.isfinite(t) and c >= 0 and a >= 0 and t >= c - 1e-12 and t >= a - 1e-12):
            fail(f"{name}: step {s}: {t} s for {c} s of compute and {a} s of allreduce")
            return
    if policy_of(p) == "equal":
        spread = max(max(x) - min(x) for x in alloc)
        if spread > 1:
            fail(f"{name}: the equal split differs by {spread} samples between workers")
    if not close(p["total_seconds"], sum(steps["seconds"]), rel=1e-9):
        fail(f"{name}: total {p['total_seconds']} s is not the sum of its steps, {sum(steps['seconds'])} s")
    if not 0 < p["balance_efficiency"] <= 1 + 1e-12:
        fail(f"{name}: balance efficiency {p['balance_efficiency']}")
    if p["moves"] < 0 or p["reverts"] < 0 or p["reverts"] > p["moves"]:
        fail(f"{name}: {p['moves']} moves, {p['reverts']} reverts")
    cols = out_row.split()
    if cols[:3] != [policy_of(p), str(steps["workers"][-1]), str(k)] or \
            not close(float(cols[3]), p["total_seconds"], rel=0, abs_tol=6e-5):
        fail(f"{name}: the printed row {out_row!r} is not the JSON's ({p['total_seconds']} s, {k} steps)")


def policy_of(p):
    return p["policy"]


def mode_sim(a):
    clusters = kinds(a.examples)["cluster"]
    if not clusters:
        fail(f"no cluster files under {a.examples}")
    for f, doc in clusters:
        for policy in POLICIES:
            name = f"{f.name} --policy {policy}"
            out = a.work / f"{f.stem}.{policy}.json"
            p = run([a.hetrain, "sim", "--cluster", f, *sim_flags(doc, policy), "--splits", "--json", out])
            if p is None:
                continue
            rows = [l for l in p.stdout.splitlines() if l.startswith(policy + " ")]
            trace = json.loads(out.read_text())
            if trace["global_batch"] != doc["global_batch"] or len(trace["policies"]) != 1 or not rows:
                fail(f"{name}: {len(trace['policies'])} policies in the JSON, {len(rows)} table rows, "
                     f"global batch {trace['global_batch']}")
                continue
            before = len(failures)
            check_sim_policy(name, doc, trace["policies"][0], rows[0])
            if len(failures) == before:
                    print(f"ok: sim {name}: {len(trace['policies'][0]['steps']['seconds'])} steps, every split exact, "
                      f"total {trace['policies'][0]['total_seconds']:.2f} s", flush=True)


# --- hetrain plan --inventory ------------------------------------------------

PLAN_EPOCHS = 90
ROW = re.compile(r"^(\d+|-)\s+(.+?)\s+(\d+)\s+(infeasible|[\d.]+)\s+(-|[\d.]+)\s+(-|[\d.]+)(  <- recommended)?$")


def parse_machines(text):
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"(\d+)x(\S+)", text)}


def check_plan(name, doc, objective, text, all_text):
    before = len(failures)
    groups = {g: (c, cap) for g, c, cap in workers_of(doc)}
    price = {g["name"]: g.get("price_per_hour", 0.0) for g in doc["group"]}
    b, n = doc["global_batch"], doc["dataset_samples"]
    head = re.search(r"^recommended \((fastest|cheapest)\): (.+)$", text, re.M)
    pred = re.search(r"predicted ([\d.]+) s \(([\d.]+) h\) for (\d+) steps, ([\d.]+) s per step, cost ([\d.]+)", text)
    shares = re.search(r"as flags: --policy static --shares ([\d,]+)", text)
    if not (head and pred and shares):
        fail(f"{name}: the report lacks its recommendation, prediction or shares:\n{text[:800]}")
        return
    if head.group(1) != {"time": "fastest", "cost": "cheapest"}[objective]:
        fail(f"{name}: recommended ({head.group(1)}) under --objective {objective}")
    use = parse_machines(head.group(2))
    split = [int(x) for x in shares.group(1).split(",")]
    steps = int(pred.group(3))
    if steps != PLAN_EPOCHS * math.ceil(n / b):
        fail(f"{name}: {steps} steps for {PLAN_EPOCHS} epochs of {n} samples at B={b}")
    if any(g not in groups or k > groups[g][0] or k <= 0 for g, k in use.items()):
        fail(f"{name}: recommends {use}, not in the inventory {groups}")
    caps = [groups[g][1] for g in use if groups[g][1]]
    if len(split) != sum(use.values()) or sum(split) != b or min(split) < 0 or (caps and max(split) > min(caps)):
        fail(f"{name}: shares {split} for {use} (B={b}, caps {caps})")
    total, step, cost = float(pred.group(1)), float(pred.group(4)), float(pred.group(5))
    if not close(total, steps * step, rel=0, abs_tol=0.05 + steps * 5e-5) or not close(float(pred.group(2)), total / 3600, rel=0, abs_tol=0.006):
        fail(f"{name}: predicted {total} s is not {steps} steps x {step} s")
    hourly = sum(k * price[g] for g, k in use.items())
    if not close(cost, total / 3600 * hourly, rel=1e-3, abs_tol=0.006):
        fail(f"{name}: cost {cost} is not {total / 3600:.3f} h x {hourly} per hour")
    rows = [ROW.match(l) for l in all_text.splitlines()]
    rows = [r for r in rows if r]
    if not rows or rows[0].group(7) is None or parse_machines(rows[0].group(2)) != use:
        fail(f"{name}: the first row of the table is not the recommendation")
        return
    feasible = [r for r in rows if r.group(4) != "infeasible"]
    key = 5 if objective == "time" else 6
    values = [float(r.group(key)) for r in feasible]
    if values != sorted(values):
        fail(f"{name}: the rows are not ordered by {objective}: {values[:10]}")
    if feasible and rows.index(feasible[-1]) != len(feasible) - 1:
        fail(f"{name}: an infeasible row comes before a feasible one")
    for r in feasible:
        u = parse_machines(r.group(2))
        if int(r.group(3)) != sum(u.values()) or any(k > groups[g][0] for g, k in u.items()):
            fail(f"{name}: row {r.group(0)!r} uses machines the inventory does not have")
        if not close(float(r.group(5)), steps * float(r.group(4)), rel=0, abs_tol=0.05 + steps * 5e-7):
            fail(f"{name}: row {r.group(0)!r}: total is not {steps} x its step")
    more = re.search(r"\.\.\. and (\d+) more", text)
    shown = len([l for l in text.splitlines() if ROW.match(l)])
    if (int(more.group(1)) if more else 0) + shown != len(rows):
        fail(f"{name}: {shown} rows shown + {more.group(1) if more else 0} more != {len(rows)} with --all")
    if len(failures) == before:
        print(f"ok: plan {name}: {head.group(2)}, shares sum to {b}, {steps} steps, {len(rows)} candidates "
              "in order", flush=True)


def mode_plan(a):
    inventories = kinds(a.examples)["inventory"]
    if not inventories:
        fail(f"no inventory (a cluster file with price_per_hour) under {a.examples}")
    for f, doc in inventories:
        for objective in ("time", "cost"):
            cmd = [a.hetrain, "plan", "--inventory", f, "--epochs", str(PLAN_EPOCHS), "--objective", objective]
            p, p_all = run(cmd), run([*cmd, "--all"])
            if p and p_all:
                check_plan(f"{f.name} --objective {objective}", doc, objective, p.stdout, p_all.stdout)


# --- hetrain plan/sim --jobs -------------------------------------------------

def check_job_plan(name, jobs, pool, doc):
    counts = {t["name"]: t["count"] for t in pool["type"]}
    price = {t["name"]: t.get("price_per_hour", 0.0) for t in pool["type"]}
    names = sorted(j["name"] for j in jobs["job"])
    plans = {p["name"]: p for p in doc["plans"]}
    if doc["objective"] != name.split()[-1] or "mixed" not in plans:
        fail(f"{name}: objective {doc['objective']}, plans {sorted(plans)}")
        return
    for pname, p in plans.items():
        used = {}
        for j in p["jobs"]:
            for t, k in j["machines"].items():
                used[t] = used.get(t, 0) + k
            if j["step_seconds"] <= 0 and j["machines"]:
                fail(f"{name}: {pname}: {j['name']} has a step of {j['step_seconds']} s")
        if sorted(j["name"] for j in p["jobs"]) != names:
            fail(f"{name}: {pname} plans {len(p['jobs'])} jobs, the trace has {len(names)}")
        if any(t not in counts or k > counts[t] for t, k in used.items()):
            fail(f"{name}: {pname} uses {used}, the pool has {counts}")
        if p["machines_used"] != sum(used.values()):
            fail(f"{name}: {pname} says {p['machines_used']} machines used, its jobs use {sum(used.values())}")
        if not close(p["cost_per_hour"], sum(k * price[t] for t, k in used.items()), rel=1e-9, abs_tol=1e-9):
            fail(f"{name}: {pname} cost/hour {p['cost_per_hour']} is not its machines' prices")
        shares = [j["share"] for j in p["jobs"]]
        if shares and (not close(p["sum_of_shares"], sum(shares), rel=1e-9, abs_tol=1e-12)
                       or not close(p["least_share"], min(shares), rel=1e-9, abs_tol=1e-12)):
            fail(f"{name}: {pname}: least/sum of shares {p['least_share']}/{p['sum_of_shares']} "
                 f"are not its jobs' {min(shares)}/{sum(shares)}")


def check_job_sim(name, jobs, doc):
    arrival = {j["name"]: j.get("arrival", 0) for j in jobs["job"]}
    scheds = {s["name"]: s for s in doc["schedulers"]}
    if set(scheds) != SCHEDULERS:
        fail(f"{name}: schedulers {sorted(scheds)}, expected {sorted(SCHEDULERS)}")
        return
    for sname, s in scheds.items():
        js = s["jobs"]
        if sorted(j["name"] for j in js) != sorted(arrival):
            fail(f"{name}: {sname} finished {len(js)} jobs of {len(arrival)}")
            continue
        for j in js:
            a0 = arrival[j["name"]]
            if not (j["start"] >= a0 - 1e-9 and j["finish"] > j["start"] and close(j["jct"], j["finish"] - a0, 1e-9, 1e-6)):
                fail(f"{name}: {sname}: {j['name']} arrives {a0}, starts {j['start']}, ends {j['finish']}, "
                     f"JCT {j['jct']}")
        jct = [j["jct"] for j in js]
        checks = {
            "avg_jct": (s["avg_jct"], sum(jct) / len(jct)),
            "makespan": (s["makespan"], max(j["finish"] for j in js) - min(arrival.values())),
            "cost": (s["cost"], sum(j["cost"] for j in js)),
            "moves": (s["moves"], sum(j["moves"] for j in js)),
        }
        for key, (got, want) in checks.items():
            if not close(got, want, rel=1e-9, abs_tol=1e-6):
                fail(f"{name}: {sname} {key} {got} is not its jobs' {want}")
        if not (min(jct) <= s["p90_jct"] <= max(jct) and 0 < s["utilization"] <= 1 + 1e-9 and 0 < s["jain"] <= 1 + 1e-9):
            fail(f"{name}: {sname}: p90 {s['p90_jct']}, utilization {s['utilization']}, Jain {s['jain']}")
    if scheds["fcfs"]["moves"] != 0:
        fail(f"{name}: FCFS moved jobs {scheds['fcfs']['moves']} times")


def mode_jobs(a):
    k = kinds(a.examples)
    if not k["jobs"] or not k["pool"]:
        fail(f"no job trace or no pool under {a.examples}")
    for jf, jobs in k["jobs"]:
        for pf, pool in k["pool"]:
            for objective in JOB_OBJECTIVES:
                name = f"{jf.name} on {pf.name} --objective {objective}"
                before = len(failures)
                out = a.work / f"{jf.stem}.{pf.stem}.{objective}"
                p = run([a.hetrain, "plan", "--jobs", jf, "--cluster", pf, "--objective", objective,
                         "--json", f"{out}.plan.json"])
                if p:
                    check_job_plan(name, jobs, pool, json.loads(Path(f"{out}.plan.json").read_text()))
                p = run([a.hetrain, "sim", "--jobs", jf, "--cluster", pf, "--objective", objective,
                         "--json", f"{out}.sim.json", "--quiet"])
                if p:
                    check_job_sim(name, jobs, json.loads(Path(f"{out}.sim.json").read_text()))
                if len(failures) == before:
                    print(f"ok: jobs {name}: plans within the pool, every job finishes, summaries add up", flush=True)


# --- examples/README.md, examples/*.sh ---------------------------------------

def readme_commands(examples):
    cmds = re.findall(r"`(build/hetrain [^`]+)`", (examples / "README.md").read_text())
    return [shlex.split(c) for c in cmds]


def mode_readme(a):
    root = a.examples.parent
    cmds = readme_commands(a.examples)
    if not cmds:
        fail("examples/README.md names no build/hetrain command")
    for argv in cmds:
        p = run([a.hetrain, *argv[1:]], cwd=root)
        if p and not p.stdout.strip():
            fail(f"{' '.join(argv)}: printed nothing")
        elif p:
            print(f"ok: {' '.join(argv)}: exit 0, {len(p.stdout.splitlines())} lines", flush=True)


def mode_sweep(a):
    root = a.examples.parent
    sweep = a.examples / "sweep_add_slow.sh"
    p = run(["bash", sweep, a.hetrain], cwd=root)
    if p:
        rows = [l for l in p.stdout.splitlines() if re.match(r"^\| [\d.e-]+ \| \d+ \|", l)]
        latencies = {r.split("|")[1].strip() for r in rows}
        cells = [c.strip() for r in rows for c in r.strip("|").split("|")[2:]]
        if len(rows) != 15 or len(latencies) != 3 or not all(re.fullmatch(r"[+-]\d+\.\d%", c) for c in cells):
            fail(f"sweep_add_slow.sh: {len(rows)} rows over {len(latencies)} latencies:\n{p.stdout[-1500:]}")
        else:
            print(f"ok: sweep_add_slow.sh: {len(rows)} rows, 3 latencies x 5 speeds, every change a percentage",
                  flush=True)


# --- bad input ----------------------------------------------------------------

GOOD_NETWORK = '[network]\nbandwidth = 1e9\nlatency = 1e-5\n'
GROUP = '[[group]]\nname = "a"\ncount = 2\nspeed = {speed}\noverhead = 0.01\n'
BAD_FILES = {
    "not_toml.toml": "global_batch = \n",
    "no_gradient.toml": "global_batch = 64\n" + GOOD_NETWORK + GROUP.format(speed=10),
    "negative_speed.toml": "global_batch = 64\ngradient_bytes = 1000\n" + GOOD_NETWORK + GROUP.format(speed=-1),
    "no_group.toml": "global_batch = 64\ngradient_bytes = 1000\n" + GOOD_NETWORK,
    "unknown_key.toml": "global_batch = 64\ngradient_bytes = 1000\nbogus = 3\n" + GOOD_NETWORK + GROUP.format(speed=10),
}


def mode_bad_input(a):
    ex = a.examples
    for fname, text in BAD_FILES.items():
        (a.work / fname).write_text(text)
    inventory = next((f for f, _ in kinds(ex)["inventory"]), None)
    cluster = next((f for f, _ in kinds(ex)["cluster"]), None)
    cases = [(["sim"], USAGE, "needs --cluster"), (["plan"], USAGE, "needs --inventory"),
             (["sim", "--cluster", "/nonexistent/c.toml", "--steps", "5"], DATA, "/nonexistent/c.toml"),
             (["plan", "--inventory", "/nonexistent/i.toml"], DATA, "/nonexistent/i.toml"),
             (["sim", "--cluster", cluster, "--steps", "5", "--policy", "fastest"], USAGE, "fastest"),
             (["sim", "--cluster", cluster, "--steps", "5", "--policy", "static", "--shares", "1,2,3,4,5,6,7,8,9"],
              USAGE, "--shares"),
             (["sim", "--cluster", cluster], USAGE, "--steps"),
             (["sim", "--cluster", cluster, "--steps", "5", "--json", "/proc/nope/t.json"], DATA, "/proc/nope"),
             (["plan", "--inventory", inventory, "--objective", "fastest"], USAGE, "fastest"),
             (["plan", "--inventory", inventory, "--epochs", "0"], USAGE, "--epochs")]
    cases += [(["sim", "--cluster", a.work / f, "--steps", "5"], DATA, f) for f in BAD_FILES]
    cases += [(["plan", "--inventory", a.work / f], DATA, f) for f in BAD_FILES]
    for args, code, text in cases:
        if None in args:
            fail("no example cluster file or inventory to misuse")
            continue
        p = run([a.hetrain, *args], expect=None)
        if p is None:
            continue
        lines = p.stderr.splitlines()
        label = " ".join(str(x) for x in args)
        if p.returncode != code or len(lines) != 1 or not lines[0].startswith("hetrain: error: ") or \
                str(text) not in lines[0] or p.stdout.strip():
            fail(f"{label}: exit {p.returncode} (expected {code}), stdout {p.stdout[:200]!r}, stderr {p.stderr!r}")
        else:
            print(f"ok: {label}: exit {code}: {lines[0]}", flush=True)


# --- covered ------------------------------------------------------------------

def mode_covered(a):
    """Run here: the TOML files (by kind), README.md's commands, sweep_add_slow.sh. Anything else must be named
    (by its path under examples/, or its file name) in another test's file under tests/."""
    k = kinds(a.examples)
    run_here = {f for kind in k.values() for f, _ in kind} | {a.examples / "README.md",
                                                               a.examples / "sweep_add_slow.sh"}
    tests = [f for f in HERE.parents[1].rglob("*") if f.is_file() and f != HERE]
    texts = {f: f.read_text(errors="replace") for f in tests}
    missing = []
    for f in sorted(p for p in a.examples.rglob("*") if p.is_file()):
        if f in run_here or f.name.startswith("."):  # .clang-tidy: lint settings, not an example
            continue
        rel = f.relative_to(a.examples.parent).as_posix()
        by = [t for t, text in texts.items() if rel in text or re.search(rf"\b{re.escape(f.name)}\b", text)]
        if by:
            print(f"ok: {rel}: run by {', '.join(sorted(str(t.relative_to(HERE.parents[2])) for t in by))}")
        else:
            missing.append(rel)
    for rel in missing:
        fail(f"{rel} is run by no test (run it in a test under tests/, or in examples_test.py)")


MODES = {"sim": mode_sim, "plan": mode_plan, "jobs": mode_jobs, "readme": mode_readme, "sweep": mode_sweep,
         "bad-input": mode_bad_input, "covered": mode_covered}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("mode", choices=sorted(MODES))
    a = ap.parse_args()
    a.hetrain = os.path.abspath(a.hetrain)
    a.examples = Path(a.examples).resolve()
    a.work = Path(a.work).resolve() / a.mode
    a.work.mkdir(parents=True, exist_ok=True)
    MODES[a.mode](a)
    if failures:
        print(f"FAILED: {len(failures)} check(s) in mode {a.mode}")
        sys.exit(1)
    print(f"ok: examples {a.mode}")


if __name__ == "__main__":
    main()

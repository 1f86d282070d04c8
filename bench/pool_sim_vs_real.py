#!/usr/bin/env python3
"""The same small trace, simulated and real: reads a finished run of
tests/pool/pool_slurm_test.py (its --work folder: the controller's state with
each job's arrival and end, the pool file, the jobs' flags), simulates the
trace with `hetrain sim --jobs` (the same planner, objective, round and
restart cost as the controller) and prints per job the real and simulated
JCT, their ratio, and both orders of completion.

Usage: pool_sim_vs_real.py --hetrain BIN --work DIR [--restart-seconds S ...]
"""
import argparse
import json
import subprocess
import sys
import tomllib
from pathlib import Path


def trace(work, state):
    """The spool's jobs as a `hetrain plan --jobs` file, arriving when the controller saw them."""
    out = ""
    for f in sorted((work / "spool").glob("*.toml")):
        doc = tomllib.loads(f.read_text())
        j = doc["job"][0]
        speeds = ", ".join(f"{t} = {v}" for t, v in j["speeds"].items())
        out += (f'[[job]]\nname = "{j["name"]}"\nspeeds = {{ {speeds} }}\nglobal_batch = {j["global_batch"]}\n'
                f'steps = {j["steps"]}\narrival = {state[j["name"]]["arrived"]:.3f}\n\n')
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--round-seconds", type=float, default=30.0)  # the test's controller
    ap.add_argument("--restart-seconds", type=float, nargs="+", default=[3.0])
    a = ap.parse_args()
    work = Path(a.work)
    state = json.loads((work / "spool" / ".pool" / "state.json").read_text())["jobs"]
    (work / "trace.toml").write_text(trace(work, state))
    real = {n: js["ended"] - js["arrived"] for n, js in state.items()}
    real_order = sorted(real, key=lambda n: state[n]["ended"])
    print(f"real: completion order {' '.join(real_order)}")
    for restart in a.restart_seconds:
        out = work / f"sim_{restart:g}.json"
        r = subprocess.run([a.hetrain, "sim", "--jobs", str(work / "trace.toml"), "--cluster", str(work / "pool.toml"),
                            "--schedulers", "mixed", "--round-seconds", str(a.round_seconds), "--restart-seconds",
                            str(restart), "--json", str(out), "-q"], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            sys.exit(f"hetrain sim failed: {r.stderr}")
        jobs = {j["name"]: j for j in json.loads(out.read_text())["schedulers"][0]["jobs"]}
        order = sorted(jobs, key=lambda n: jobs[n]["finish"])
        print(f"simulated, restart {restart:g} s: completion order {' '.join(order)} "
              f"({'the same' if order == real_order else 'differs'})")
        print("  job  real JCT (s)  sim JCT (s)  real/sim  real moves  sim moves")
        for n in sorted(real):
            print(f"  {n:3s}  {real[n]:12.1f}  {jobs[n]['jct']:11.1f}  {real[n] / jobs[n]['jct']:8.2f}  "
                  f"{state[n]['generation'] - 1:10d}  {jobs[n]['moves']:9d}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""`hetrain report` from the command line: a report of the fixture runs is
written; every kind of bad input is one line on stderr and exit code 3 (data)
or 2 (usage), and leaves no output file."""
import argparse
import os
import subprocess
import sys

DATA_ERROR, USAGE_ERROR = 3, 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    good = os.path.join(a.fixtures, "equal.json")
    not_json = os.path.join(a.work, "not.json")
    open(not_json, "w").write("this is not json\n")
    not_metrics = os.path.join(a.work, "other.json")
    open(not_metrics, "w").write('{"name": "something else"}\n')
    out = os.path.join(a.work, "out.html")
    failures = []

    def run(args):
        if os.path.exists(out):
            os.remove(out)
        return subprocess.run([a.hetrain, "report", *args, "-o", out], capture_output=True, text=True)

    p = run([good, os.path.join(a.fixtures, "adaptive.json")])
    if p.returncode != 0 or "<svg id=\"compare-time\"" not in open(out).read():
        failures.append(f"good input: exit {p.returncode}, stderr {p.stderr!r}")
    cases = [
        ([good, "/nonexistent/run.json"], DATA_ERROR, "cannot read /nonexistent/run.json"),
        ([not_json], DATA_ERROR, "is not JSON"),
        ([not_metrics], DATA_ERROR, "is not a hetrain metrics file: no 'world_size'"),
        ([], USAGE_ERROR, "runs is required"),
    ]
    for args, code, text in cases:
        p = run(args)
        lines = p.stderr.splitlines()
        if (p.returncode != code or len(lines) != 1 or not lines[0].startswith("hetrain: error: ")
                or text not in lines[0] or os.path.exists(out)):
            failures.append(f"{args}: exit {p.returncode} (want {code}), stderr {p.stderr!r}, "
                            f"output written: {os.path.exists(out)}")
    for f in failures:
        print("cli_test: FAIL:", f, file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"cli_test: ok: good input and {len(cases)} kinds of bad input")


if __name__ == "__main__":
    main()

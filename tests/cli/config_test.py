#!/usr/bin/env python3
"""`--config FILE`: flags from TOML, the command line overriding them, and bad
config files as one-line usage errors (exit code 2).

Real runs, kept tiny: 2 workers, the mlp on synthetic data, a few steps."""
import argparse
import json
import os
import subprocess
import sys

USAGE_ERROR = 2
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)

    def write(name, text):
        path = os.path.join(a.work, name)
        open(path, "w").write(text)
        return path

    def hetrain(*args):
        return subprocess.run([a.hetrain, *args], capture_output=True, text=True, timeout=300)

    metrics = os.path.join(a.work, "m.json")
    base = write("run.toml", f'''# a run described in a file
nproc = 2
model = "mlp"
data = "synthetic"
synthetic-train = 800
synthetic-test = 100
threads = 1
global-batch = 40
max-steps = 6
speeds = [1, 0.5]
policy = "static"
shares = [2, 1]
quiet = true
metrics = "{metrics}"
''')
    # 1. Everything from the file.
    p = hetrain("run", "--config", base)
    check(p.returncode == 0, f"config only: exit {p.returncode}: {p.stderr}")
    check(p.stdout == "", f"quiet = true should silence the run: {p.stdout!r}")
    if p.returncode == 0:
        d = json.load(open(metrics))
        check(d["model"] == "mlp" and d["world_size"] == 2 and d["policy"] == "static",
              f"config only: {d['model']} {d['world_size']} {d['policy']}")
        first = d["allocation"][0]
        check(len(d["allocation"]) == 6 and sum(first) == 40 and first[0] > first[1],
              f"config only: static 2:1 split of 40 expected, got {d['allocation']}")
        check(d["speeds"] == [1, 0.5], f"config only: speeds {d['speeds']}")
    # 2. Command-line flags override the file, whichever side of --config they stand.
    if os.path.exists(metrics):
        os.remove(metrics)
    p = hetrain("run", "--max-steps", "3", "--config", base, "--shares", "1,1", "-b", "32", "--model", "cnn")
    check(p.returncode == 0, f"override: exit {p.returncode}: {p.stderr}")
    if p.returncode == 0:
        d = json.load(open(metrics))
        check(len(d["allocation"]) == 3 and d["model"] == "cnn" and d["allocation"][0] == [16, 16],
              f"override: {d['model']} {d['allocation']}")
    # 3. A [run] section works as well as top-level keys.
    if os.path.exists(metrics):
        os.remove(metrics)
    section = write("section.toml", open(base).read().replace("# a run described in a file", "[run]"))
    p = hetrain("run", "--config", section, "--max-steps", "2")
    check(p.returncode == 0 and os.path.exists(metrics) and len(json.load(open(metrics))["allocation"]) == 2,
          f"[run] section: exit {p.returncode}: {p.stderr}")

    # 4. Bad config files: one line, exit 2, naming the problem; no training starts.
    bad = [
        ([os.path.join(a.work, "missing.toml")], "missing.toml"),
        ([write("typo.toml", 'modle = "mlp"\n')], "unknown key 'modle'"),
        ([write("value.toml", 'epochs = "three"\n')], "--epochs"),
        ([write("garbage.toml", "this is not toml {{{\n")], "unknown key"),
        ([write("policy.toml", 'policy = "fastest"\n')], "fastest"),
    ]
    for args, text in bad:
        p = hetrain("run", "--config", *args)
        lines = p.stderr.splitlines()
        check(p.returncode == USAGE_ERROR and len(lines) == 1 and lines[0].startswith("hetrain: error: ")
              and text in lines[0], f"bad config {args}: exit {p.returncode}, stderr {p.stderr!r}")
    # 5. The help says how.
    p = hetrain("run", "--help")
    check(p.returncode == 0 and "--config run.toml" in p.stdout, "run --help does not mention --config")

    for f in failures:
        print("config_test: FAIL:", f, file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"config_test: ok: 3 good configs, {len(bad)} bad ones")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Allocation benchmark (issues 16, 26): two hetrain binaries' equal / static / adaptive, and PyTorch DDP.

One invocation runs every scenario x policy x binary on real local processes, --reps times (default 5;
identical: --identical-reps), interleaved: every repetition runs every scenario with every cell, the
policies' order rotating from one repetition to the next and each policy's two binaries back to back, which
first alternating. --binary is the binary under test ("new", default build/hetrain), --baseline the one it is
judged against ("base": main's 414595a, built by bench/allocation_baseline.sh). It prints medians:

  scenario      workers model            B    steps heterogeneity
  identical     4       cnn              256  60    none
  cpu-slow      4       cnn              256  60    rank 3 emulated 4x slower on the host CPUs (--speeds 1,1,1,0.25)
  cgroup        4       TorchScript mlp  256  100   rank 3 held to 0.25 CPU by a cgroup CPU quota (root)
  device        4       mlp              64   100   emulated devices (--sample-cost-ms 1), rank 3 4x slower
  device-slow   4       mlp              64   100   device, and rank 1 4x slower from 40% of the steps on
  mixed6        6       mlp              384  100   --speeds 1,0.8,0.5,0.5,1,0.3 on the host CPUs, rank 1 4x
                                                    slower from 40%
  mixed6-device 6       mlp              384  100   mixed6 on emulated devices (--sample-cost-ms 1), its
                                                    slowdown kept
  recovery      4       cnn              512  60    host CPUs, ranks 1-3 4x slower from 20% of the steps,
                                                    back to full speed at 50% (--slowdown R@S:0.25,R@S2:1)
  commbound     4       resnet (3.5M)    16   40    rank 3 emulated 4x slower; a 14 MB allreduce per step
                                                    against 4 samples of compute per worker

Policies: equal (B/N each), static with the true initial shares (in proportion to the speeds above; cgroup
4,4,4,1), adaptive, and PyTorch DDP (bench/ddp_peer.py) on the same model, data, batch, steps and emulation.
The cgroup scenario's TorchScript mlp (784-256-10, as hetrain's mlp) is exported once with --torch-python and
loaded by hetrain and DDP alike, so both train the same parameters from the same start.

Table columns, per scenario x policy, for each binary: seconds = training time of the steps (evaluation
excluded, the same samples in the same order for every hetrain policy); new/base = the new binary's median
seconds over the baseline's (for equal and static, whose code both binaries share, it measures the noise);
x equal, x DDP = seconds over that reference's median (x equal against the same binary's equal); balance
efficiency (hetrain's metric); split moves and reverts (median per run: the metrics' policy_moves /
policy_reverts where present, else counted from the per-step splits).
Then per scenario: the ratios of the runs of each repetition (adaptive/equal per binary, new/base per policy),
adaptive's moves and final splits, the largest spread of equal-speed workers' shares over the second half of
the steps, the steps to follow the last speed change (every share within 10% or one sample of the new
speed-proportional split for 3 steps: bench/allocation_stats.py), the median wall time of the steps after the
last speed change (steps[].end_seconds), and "ideal" = steps x B / sum_i v_i + comm (v_i each worker's measured
compute speed, comm the last-arriving worker's wait summed over the steps, in the new adaptive's runs).
Last, PASS/FAIL/SKIP per target of issue 26's point 1 (bench/allocation_checks.py).

All runs train on the full Fashion-MNIST training set and evaluate on its first 1,000 test samples.
--json writes every run's numbers and metrics (after every repetition, whole: a stopped bench leaves the
repetitions so far); --from-json prints the tables of such a file again. A run that fails or outlives
--run-timeout stops the benchmark with its command and the end of its stderr.
Usage (root for the cgroup scenario):

  python3 bench/allocation_bench.py --binary NEW --baseline OLD [--reps 5] [--identical-reps 5]
      [--scenarios a,b] [--policies equal,static,adaptive,ddp] [--steps N] [--json FILE] [--from-json FILE]
"""
import argparse
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import allocation_checks
import allocation_report as report
from allocation_cgroup import CpuQuota
from allocation_scenarios import BY_NAME, SCENARIOS, csv, emulation_flags, scenario_from_dict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH = os.path.join(ROOT, "bench", "launch_local.sh")
PEER = os.path.join(ROOT, "bench", "ddp_peer.py")
POLICIES = ["equal", "static", "adaptive", "ddp"]
DEFAULT_REPS = 5           # runs per cell: medians of at least 5 (issue 26)
QUOTA_CPUS = 0.25          # the cgroup scenario's quota, in CPUs
COLLECTIVE_TIMEOUT_S = 120  # workers give up on a dead peer after this
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
# The end-of-run evaluation is outside the timed steps but not outside the bench's own duration (the resnet's
# pass over 10,000 samples on oversubscribed cores outlasts its timed steps): every run evaluates on 1,000.
TEST_SAMPLES = 1000
IDX_IMAGES_HEADER, IDX_LABELS_HEADER = 16, 8  # bytes before the data in idx3 / idx1 files
STDERR_TAIL_CHARS = 2000   # of a failed run's stderr, shown in the error

EXPORT_MLP = r"""
import sys, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(28 * 28, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 10))
torch.jit.script(model).save(sys.argv[1])
"""


class BenchError(Exception):
    pass


def command(sc, policy, binary, steps, files):
    """The worker command of one run: the DDP peer, or `binary` (a hetrain executable) with `policy`."""
    model = files["script"] if sc.model == "script" else sc.model
    flags = ["--model", model, "--data", files["data"]] + emulation_flags(sc, steps)
    if policy == "ddp":
        return [files["torch_python"], PEER, "--timeout", str(COLLECTIVE_TIMEOUT_S)] + flags
    cmd = [binary, "worker", "-q", "--policy", policy, "--lr-schedule", "constant",
           "--timeout", str(COLLECTIVE_TIMEOUT_S)] + flags
    if policy == "static":
        cmd += ["--shares", csv(sc.speeds)]
    return cmd


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(sc, cmd, out, quota, timeout_s):
    """Runs the workers; returns the metrics document or raises BenchError with what went wrong."""
    env = dict(os.environ)
    throttled = 0
    if sc.cgroup_rank >= 0:
        env.update(CGROUP=quota.path, CGROUP_RANK=str(sc.cgroup_rank))
        throttled = quota.throttled_periods()
    full = [LAUNCH, str(sc.workers), str(free_port())] + cmd + ["--metrics", out]
    # A session of its own, so a run past its time is killed with every worker it started.
    p = subprocess.Popen(full, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        _, err = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
        raise BenchError(f"no result after {timeout_s} s (killed)\n  {' '.join(full)}\n{err[-STDERR_TAIL_CHARS:]}")
    except BaseException:  # Ctrl-C: the workers are in a session of their own and would outlive the bench
        os.killpg(p.pid, signal.SIGKILL)
        raise
    if p.returncode != 0:
        raise BenchError(f"exit status {p.returncode}\n  {' '.join(full)}\n{err[-STDERR_TAIL_CHARS:]}")
    if sc.cgroup_rank >= 0 and quota.throttled_periods() == throttled:
        raise BenchError(f"rank {sc.cgroup_rank} was never throttled by the quota in {quota.path}: "
                         f"it did not run in the cgroup\n  {' '.join(full)}")
    try:
        with open(out) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise BenchError(f"no metrics from\n  {' '.join(full)}\n({e})") from None


def make_data_dir(tmp):
    """The full training set (linked) and the first TEST_SAMPLES test samples, in the layout of --data DIR."""
    d = os.path.join(tmp, "data")
    os.makedirs(d)
    for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"):
        os.symlink(os.path.join(FASHION_MNIST, name), os.path.join(d, name))
    for name, header, size in (("t10k-images-idx3-ubyte.gz", IDX_IMAGES_HEADER, 28 * 28),
                               ("t10k-labels-idx1-ubyte.gz", IDX_LABELS_HEADER, 1)):
        with gzip.open(os.path.join(FASHION_MNIST, name)) as f:
            raw = f.read(header + TEST_SAMPLES * size)
        # The count is the big-endian 32-bit word after the magic number.
        data = raw[:4] + TEST_SAMPLES.to_bytes(4, "big") + raw[8:]
        with gzip.open(os.path.join(d, name), "wb") as f:
            f.write(data)
    return d


def export_script_model(a, path):
    p = subprocess.run([a.torch_python, "-c", EXPORT_MLP, path], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise BenchError(f"exporting the TorchScript mlp with {a.torch_python}: {p.stderr.strip()[-1000:]}")


def rep_order(policies, binaries, rep):
    """(policy, binary) of one scenario's runs in repetition `rep`: the policies' order rotates from one
    repetition to the next (the machine's state drifts; a fixed order biases the pairs), and each hetrain
    policy's binaries run back to back, which of them first alternating, so each new/base pair ran side by
    side and neither binary always runs first. DDP runs once (it does not depend on the binary)."""
    shift = rep % len(policies)
    flip = binaries[::-1] if rep % 2 else binaries
    order = []
    for policy in policies[shift:] + policies[:shift]:
        order += [(policy, None)] if policy == "ddp" else [(policy, b) for b in flip]
    return order


def run_matrix(a, scenarios, tmp, quota):
    """Every repetition runs every scenario with every policy and binary (rep_order)."""
    files = {"script": os.path.join(tmp, "mlp.pt"), "data": make_data_dir(tmp), "torch_python": a.torch_python}
    if any(sc.model == "script" for sc in scenarios):
        export_script_model(a, files["script"])
    runs = []
    reps = {sc.name: max(a.reps, a.identical_reps if sc.name == "identical" else 0) for sc in scenarios}
    for rep in range(max(reps.values())):
        for sc in (sc for sc in scenarios if rep < reps[sc.name]):
            steps = a.steps or sc.steps
            for policy, binary in rep_order(a.policies, list(a.binaries), rep):
                out = os.path.join(tmp, f"{sc.name}-{policy}-{binary}-{rep}.json")
                cmd = command(sc, policy, a.binaries.get(binary), steps, files)
                t0 = time.monotonic()
                try:
                    doc = launch(sc, cmd, out, quota, a.run_timeout)
                except BenchError as e:
                    raise BenchError(f"{sc.name} / {policy} / {binary or '-'} / repetition {rep}: {e}") from None
                runs.append(report.summarise(sc, policy, binary, rep, steps, doc))
                runs[-1]["run_seconds"] = time.monotonic() - t0
                print(f"rep {rep} {sc.name:13s} {policy:8s} {binary or '-':4s} {runs[-1]['seconds']:7.2f} s "
                      f"(run {runs[-1]['run_seconds']:5.1f} s)", file=sys.stderr, flush=True)
        if a.json:  # the repetitions so far, should the bench be stopped
            write_json(a.json, {"argv": sys.argv, "binaries": a.binaries, "complete": False,
                                "scenarios": [sc.__dict__ for sc in scenarios], "runs": runs})
    return runs


def executable(path, flag):
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise SystemExit(f"allocation_bench: {flag} {path}: no executable there (build it: bench/allocation_"
                         "baseline.sh builds the baseline)")
    return os.path.abspath(path)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", "--hetrain", dest="binary", default=os.path.join(ROOT, "build", "hetrain"),
                   help="the hetrain binary under test (\"new\")")
    p.add_argument("--baseline", default="", help="the hetrain binary it is judged against (\"base\"); "
                   "without it only the new binary runs and the new/base targets are SKIP")
    p.add_argument("--reps", type=int, default=DEFAULT_REPS, help="repetitions per cell (medians)")
    p.add_argument("--identical-reps", type=int, default=DEFAULT_REPS, help="repetitions of the identical scenario")
    p.add_argument("--steps", type=int, default=0, help="steps of every scenario (default: each its own)")
    p.add_argument("--scenarios", default=",".join(sc.name for sc in SCENARIOS))
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--json", default="", help="write every run's numbers here")
    p.add_argument("--from-json", default="", help="print the tables of a --json file again, running nothing")
    p.add_argument("--run-timeout", type=float, default=600, help="seconds one run may take before it is killed")
    p.add_argument("--torch-python", default="/usr/bin/python3", help="a Python with python3-torch (DDP, export)")
    a = p.parse_args()
    a.policies = a.policies.split(",")
    unknown = [n for n in a.scenarios.split(",") if n not in BY_NAME] + [x for x in a.policies if x not in POLICIES]
    if unknown:
        raise SystemExit(f"allocation_bench: unknown scenario or policy {', '.join(unknown)} "
                         f"(scenarios {', '.join(BY_NAME)}; policies {', '.join(POLICIES)})")
    if a.reps < 1 or a.identical_reps < 0 or a.steps < 0:
        raise SystemExit("allocation_bench: --reps must be >= 1, --identical-reps and --steps >= 0")
    if not a.from_json:
        a.binaries = {"new": executable(a.binary, "--binary")}
        if a.baseline:
            a.binaries["base"] = executable(a.baseline, "--baseline")
    return a, [BY_NAME[n] for n in a.scenarios.split(",")]


def print_all(scenarios, runs):
    """The tables and the targets; returns them for --json."""
    summary = {sc.name: report.scenario_summary(sc, runs) for sc in scenarios}
    report.print_legend(scenarios, runs)
    report.print_table(scenarios, summary)
    report.print_details(scenarios, runs, summary)
    result = allocation_checks.checks(scenarios, runs, summary)
    print("\nIssue 26's targets (What must show, point 1; new binary, the baseline's value in brackets):")
    for c in result:
        verdict = {True: "PASS", False: "FAIL", None: "SKIP"}[c["ok"]]
        print(f"  {verdict}  {c['check']}: {c['detail']}")
    return {"scenarios": summary, "checks": result}


def reprint(a):
    """--from-json: the runs summarised again from their metrics, each scenario as the file defines it (the
    current definition where it has none), so a file from an older version of this script reads the same; runs
    without a binary are the new binary's."""
    wanted = a.scenarios.split(",")
    try:
        with open(a.from_json) as f:
            saved = json.load(f)
        defined = {d["name"]: scenario_from_dict(d) for d in saved.get("scenarios", [])}
        by_name = {n: defined.get(n, BY_NAME[n]) for n in wanted}
        runs = [report.summarise(by_name[r["scenario"]], r["policy"], r.get("binary") or "new", r["rep"],
                                 r["steps"], r["metrics"]) for r in saved["runs"] if r["scenario"] in by_name]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise SystemExit(f"allocation_bench: {a.from_json} is not a --json file of this bench ({e!r})")
    print_all([by_name[n] for n in wanted if any(r["scenario"] == n for r in runs)], runs)


def write_json(path, doc):
    """Written whole or not at all: a half-written file would read as a shorter run."""
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)


def main():
    a, scenarios = parse_args()
    if a.from_json:
        reprint(a)
        return
    quota = CpuQuota(QUOTA_CPUS)
    started = time.monotonic()
    try:
        if any(sc.cgroup_rank >= 0 for sc in scenarios):
            quota.up()
        with tempfile.TemporaryDirectory() as tmp:
            runs = run_matrix(a, scenarios, tmp, quota)
    except BenchError as e:
        raise SystemExit(f"allocation_bench: FAILED: {e}")
    finally:
        quota.down()
    summary = print_all(scenarios, runs)
    print(f"\n{len(runs)} runs in {time.monotonic() - started:.0f} s")
    if a.json:
        write_json(a.json, {"argv": sys.argv, "binaries": a.binaries, "complete": True,
                            "scenarios": [sc.__dict__ for sc in scenarios], "summary": summary, "runs": runs})


if __name__ == "__main__":
    main()

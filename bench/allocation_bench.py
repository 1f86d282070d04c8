#!/usr/bin/env python3
"""Allocation benchmark matrix (issue 16): hetrain's equal / static / adaptive against PyTorch DDP.

One invocation runs every scenario x policy on real local processes, repeated --reps times (identical:
--identical-reps) in interleaved order, the policies' order rotating from one repetition to the next, and
prints medians:

  scenario    workers  model              B    steps  heterogeneity
  identical   4        cnn                256  60     none
  cpu-slow    4        cnn                256  60     rank 3 emulated 4x slower (--speeds 1,1,1,0.25)
  cgroup      4        TorchScript mlp    256  100    rank 3 held to 0.25 CPU by a cgroup CPU quota (root)
  device      4        mlp                64   100    emulated devices (--sample-cost-ms 1), rank 3 4x slower
  device-slow 4        mlp                64   100    device, and rank 1 4x slower from 40% of the steps on
  mixed6      6        mlp                384  100    --speeds 1,0.8,0.5,0.5,1,0.3, rank 1 4x slower from 40%
  commbound   4        resnet (3.5M)      16   40     rank 3 emulated 4x slower; a 14 MB allreduce per step
                                                      against 4 samples of compute per worker

Policies: equal (B/N each), static with the true shares (in proportion to the speeds above; cgroup 4,4,4,1),
adaptive, and PyTorch DDP (bench/ddp_peer.py) on the same model, data, batch, steps and emulation. The
cgroup scenario's TorchScript mlp (784-256-10, as hetrain's mlp) is exported once with --torch-python and
loaded by hetrain and DDP alike, so both train the same parameters from the same start.

Columns: seconds = training time of the steps (evaluation excluded, the same samples in the same order for
every hetrain policy); x equal, x ideal, x DDP = seconds over that reference's median seconds; balance
efficiency (hetrain's metric); split moves and reverts (median per run: the metrics' policy_moves /
policy_reverts where present, else counted from the per-step splits, a revert being a move back to the split
before the previous move).
"ideal" = steps x B / sum_i v_i + comm, with v_i each worker's compute speed (samples per compute second)
and comm the run's communication time (the sum over steps of the wait of the worker that arrived last: the
allreduce alone), both measured in the same scenario's adaptive runs (median over them). Under a mid-run
slowdown v_i is the run's average.
"Steps to follow" (device-slow, mixed6): steps after the slowdown until every worker's share is within 10%
(or one sample) of the new speed-proportional split and stays there 3 steps (bench/allocation_stats.py).

Then per scenario the adaptive / equal ratio of each repetition (with equal's median step: the slowest
worker's compute and the exposed allreduce), and PASS/FAIL for the issue's targets (bench/allocation_report.py).
All runs train on the full Fashion-MNIST training set and evaluate on its first 1,000 test samples.
--json writes every run's numbers and metrics; --from-json prints the tables of such a file again.
A run that fails or outlives --run-timeout stops the benchmark with its command and the end of its stderr.
Usage (root for the cgroup scenario):

  python3 bench/allocation_bench.py [--reps 3] [--identical-reps 5] [--scenarios a,b] [--steps N]
                                    [--policies equal,static,adaptive,ddp] [--json FILE] [--from-json FILE]
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
from dataclasses import dataclass

import allocation_report as report
from allocation_cgroup import CpuQuota

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH = os.path.join(ROOT, "bench", "launch_local.sh")
PEER = os.path.join(ROOT, "bench", "ddp_peer.py")
POLICIES = ["equal", "static", "adaptive", "ddp"]
LR = "2e-3"                # Adam, constant: the same for hetrain and DDP
SLOWDOWN_AT = 0.4          # a mid-run slowdown starts after this fraction of the steps
SLOWDOWN_FACTOR = 4.0      # and makes the worker this many times slower
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


@dataclass(frozen=True)
class Scenario:
    name: str
    model: str                  # mlp | cnn | resnet | script (the exported TorchScript mlp)
    batch: int
    steps: int
    speeds: tuple               # true relative speeds at the start (static's shares)
    sample_cost_ms: float = 0.0
    slowdown_rank: int = -1     # -1: none; else this rank becomes SLOWDOWN_FACTOR x slower mid-run
    cgroup_rank: int = -1       # -1: none; else this rank runs under the CPU quota (speeds not emulated)
    follow_limit: int = 0       # target: steps within which the split follows the slowdown

    @property
    def workers(self):
        return len(self.speeds)

    def slowdown_step(self, steps):
        return round(SLOWDOWN_AT * steps)

    def speeds_after(self):
        """True speeds after the slowdown."""
        s = list(self.speeds)
        if self.slowdown_rank >= 0:
            s[self.slowdown_rank] /= SLOWDOWN_FACTOR
        return s


SLOW = (1, 1, 1, 0.25)
SCENARIOS = [
    Scenario("identical", "cnn", 256, 60, (1, 1, 1, 1)),
    Scenario("cpu-slow", "cnn", 256, 60, SLOW),
    Scenario("cgroup", "script", 256, 100, SLOW, cgroup_rank=3),
    Scenario("device", "mlp", 64, 100, SLOW, sample_cost_ms=1.0),
    Scenario("device-slow", "mlp", 64, 100, SLOW, sample_cost_ms=1.0, slowdown_rank=1, follow_limit=5),
    Scenario("mixed6", "mlp", 384, 100, (1, 0.8, 0.5, 0.5, 1, 0.3), slowdown_rank=1, follow_limit=10),
    Scenario("commbound", "resnet", 16, 40, SLOW),
]


class BenchError(Exception):
    pass


def csv(values):
    return ",".join(f"{v:g}" for v in values)


def emulation_flags(sc, steps):
    """Flags shared by hetrain and the DDP peer: model, batch, steps and the emulated heterogeneity."""
    f = ["-b", str(sc.batch), "--max-steps", str(steps), "--lr", LR]
    if sc.cgroup_rank < 0 and min(sc.speeds) < 1:
        f += ["--speeds", csv(sc.speeds)]
    if sc.sample_cost_ms > 0:
        f += ["--sample-cost-ms", f"{sc.sample_cost_ms:g}"]
    if sc.slowdown_rank >= 0:
        new = sc.speeds[sc.slowdown_rank] / SLOWDOWN_FACTOR
        f += ["--slowdown", f"{sc.slowdown_rank}@{sc.slowdown_step(steps)}:{new:g}"]
    return f


def command(sc, policy, steps, a, files):
    model = files["script"] if sc.model == "script" else sc.model
    flags = ["--model", model, "--data", files["data"]] + emulation_flags(sc, steps)
    if policy == "ddp":
        return [a.torch_python, PEER, "--timeout", str(COLLECTIVE_TIMEOUT_S)] + flags
    cmd = [a.hetrain, "worker", "-q", "--policy", policy, "--lr-schedule", "constant",
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


def run_matrix(a, scenarios, tmp, quota):
    """Every repetition runs every scenario (that still needs it) with every policy, order rotating."""
    files = {"script": os.path.join(tmp, "mlp.pt"), "data": make_data_dir(tmp)}
    if any(sc.model == "script" for sc in scenarios):
        export_script_model(a, files["script"])
    runs = []
    reps = {sc.name: max(a.reps, a.identical_reps if sc.name == "identical" else 0) for sc in scenarios}
    for rep in range(max(reps.values())):
        for sc in (sc for sc in scenarios if rep < reps[sc.name]):
            steps = a.steps or sc.steps
            # The order rotates with the repetition, so no policy always runs first (the machine's state
            # drifts; a fixed order biases the pairs).
            shift = rep % len(a.policies)
            for policy in a.policies[shift:] + a.policies[:shift]:
                out = os.path.join(tmp, f"{sc.name}-{policy}-{rep}.json")
                t0 = time.monotonic()
                try:
                    doc = launch(sc, command(sc, policy, steps, a, files), out, quota, a.run_timeout)
                except BenchError as e:
                    raise BenchError(f"{sc.name} / {policy} / repetition {rep}: {e}") from None
                runs.append(report.summarise(sc, policy, rep, steps, doc))
                print(f"rep {rep} {sc.name:11s} {policy:8s} {runs[-1]['seconds']:7.2f} s "
                      f"(run {time.monotonic() - t0:5.1f} s)", file=sys.stderr, flush=True)
    return runs


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3, help="repetitions per scenario (medians)")
    p.add_argument("--identical-reps", type=int, default=5, help="repetitions of the identical scenario")
    p.add_argument("--steps", type=int, default=0, help="steps of every scenario (default: each its own)")
    p.add_argument("--scenarios", default=",".join(sc.name for sc in SCENARIOS))
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--json", default="", help="write every run's numbers here")
    p.add_argument("--from-json", default="", help="print the tables of a --json file again, running nothing")
    p.add_argument("--run-timeout", type=float, default=600, help="seconds one run may take before it is killed")
    p.add_argument("--hetrain", default=os.path.join(ROOT, "build", "hetrain"))
    p.add_argument("--torch-python", default="/usr/bin/python3", help="a Python with python3-torch (DDP, export)")
    a = p.parse_args()
    by_name = {sc.name: sc for sc in SCENARIOS}
    unknown = [n for n in a.scenarios.split(",") if n not in by_name]
    a.policies = a.policies.split(",")
    unknown += [p for p in a.policies if p not in POLICIES]
    if unknown:
        sys.exit(f"allocation_bench: unknown scenario or policy {', '.join(unknown)} "
                 f"(scenarios {', '.join(by_name)}; policies {', '.join(POLICIES)})")
    if not os.access(a.hetrain, os.X_OK) and not a.from_json:
        sys.exit(f"allocation_bench: no hetrain binary at {a.hetrain} (build it, or pass --hetrain)")
    return a, [by_name[n] for n in a.scenarios.split(",")]


def main():
    a, scenarios = parse_args()
    if a.from_json:
        with open(a.from_json) as f:
            saved = json.load(f)["runs"]
        by_name = {sc.name: sc for sc in scenarios}
        # Summarised again from the metrics, so a file from an older version of this script reads the same.
        runs = [report.summarise(by_name[r["scenario"]], r["policy"], r["rep"], r["steps"], r["metrics"])
                for r in saved if r["scenario"] in by_name]
        report.print_all([sc for sc in scenarios if any(r["scenario"] == sc.name for r in runs)], runs)
        return
    quota = CpuQuota(QUOTA_CPUS)
    try:
        if any(sc.cgroup_rank >= 0 for sc in scenarios):
            quota.up()
        with tempfile.TemporaryDirectory() as tmp:
            runs = run_matrix(a, scenarios, tmp, quota)
    except BenchError as e:
        sys.exit(f"allocation_bench: FAILED: {e}")
    finally:
        quota.down()
    summary = report.print_all(scenarios, runs)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"argv": sys.argv, "scenarios": [sc.__dict__ for sc in scenarios], "summary": summary,
                       "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()

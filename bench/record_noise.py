"""Records the step-to-step noise of real runs on this machine, for the simulator to replay.

Runs short real training jobs (hetrain worker under bench/launch_local.sh, as bench/allocation_bench.py
does) with a fixed split (--policy equal, so nothing but the machine changes a worker's time), in three
regimes of heterogeneity:
  devices  4 workers, emulated devices (--sample-cost-ms: each step sleeps b x the cost, off the CPU)
  host     4 workers on the host CPUs, plain (they share this machine's cores with whatever else runs)
  quota    4 workers, rank 3 held to 0.25 CPU by a cgroup CPU quota (root; bench/allocation_cgroup.py)
and writes, per regime, FILE = OUT/REGIME.csv: '#' lines saying how it was recorded, a header naming the
ranks, then one row per step of each worker's compute seconds (the metrics' steps.compute_seconds) divided
by that worker's median compute seconds at the same local batch. The first --skip steps (lazy
initialisation, first touches of memory) are left out, and so are steps whose local batch was seen fewer
than --min-same times (the epoch's short last batch). The simulator reads these files (noise_kind = "trace",
docs/simulation.md).

Usage: python3 bench/record_noise.py [--hetrain build/hetrain] [--out examples/noise] [--steps 200]
                                     [--regimes devices,host,quota]
"""
import argparse
import datetime
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile

import allocation_cgroup
from allocation_cgroup import CpuQuota

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH = os.path.join(ROOT, "bench", "launch_local.sh")
WORKERS = 4
QUOTA_CPUS = 0.25        # the quota regime's CPUs for rank 3, as bench/allocation_bench.py's cgroup scenario
QUOTA_RANK = 3
CGROUP_NAME = "hetrain_noise"  # its own cgroup, so a concurrent allocation benchmark keeps its own
SAMPLE_COST_MS = 1.0     # the devices regime: emulated milliseconds per sample
SYNTHETIC_TEST = 64      # test samples: the end-of-run evaluation is not what is recorded
COLLECTIVE_TIMEOUT_S = 120
RUN_TIMEOUT_S = 600      # a run of --steps short steps takes well under a minute on 2 cores
# regime -> (global batch, extra flags)
REGIMES = {
    "devices": (64, ["--sample-cost-ms", f"{SAMPLE_COST_MS:g}"]),
    "host": (256, []),
    "quota": (256, []),
}


class RecordError(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(a, regime, metrics):
    batch, extra = REGIMES[regime]
    return [LAUNCH, str(WORKERS), str(free_port()), a.hetrain, "worker", "-q", "--model", "mlp",
            "--data", "synthetic", "--synthetic-train", str(batch * (a.steps + 1)),
            "--synthetic-test", str(SYNTHETIC_TEST), "--epochs", "1",
            "--policy", "equal", "-b", str(batch), "--max-steps", str(a.steps),
            "--timeout", str(COLLECTIVE_TIMEOUT_S), "--metrics", metrics] + extra


def run(cmd, env):
    """Runs the workers; raises RecordError with what went wrong."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        _, err = p.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise RecordError(f"no result after {RUN_TIMEOUT_S} s (killed): {' '.join(cmd)}")
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        raise
    if p.returncode != 0:
        raise RecordError(f"exit status {p.returncode}: {' '.join(cmd)}\n{err[-2000:]}")


def ratios(doc, skip, min_same):
    """Per step kept, per rank: compute seconds / that rank's median at the same local batch."""
    alloc, compute = doc["allocation"], doc["steps"]["compute_seconds"]
    n = len(alloc[0])
    by_batch = {}
    for k in range(skip, len(alloc)):
        for i in range(n):
            by_batch.setdefault((i, alloc[k][i]), []).append(compute[k][i])
    medians = {key: statistics.median(v) for key, v in by_batch.items() if len(v) >= min_same}
    rows = []
    for k in range(skip, len(alloc)):
        keys = [(i, alloc[k][i]) for i in range(n)]
        if all(key in medians and medians[key] > 0 for key in keys):
            rows.append([compute[k][i] / medians[keys[i]] for i in range(n)])
    return rows


def record(a, regime, tmp):
    metrics = os.path.join(tmp, f"{regime}.json")
    cmd = command(a, regime, metrics)
    env = dict(os.environ)
    quota = None
    if regime == "quota":
        allocation_cgroup.NAME = CGROUP_NAME
        quota = CpuQuota(QUOTA_CPUS)
        quota.up()
        env.update(CGROUP=quota.path, CGROUP_RANK=str(QUOTA_RANK))
    try:
        load = os.getloadavg()[0]
        run(cmd, env)
    finally:
        if quota is not None:
            quota.down()
    try:
        with open(metrics) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise RecordError(f"no metrics from {' '.join(cmd)} ({e})") from None
    rows = ratios(doc, a.skip, a.min_same)
    if len(rows) < 2:
        raise RecordError(f"{regime}: only {len(rows)} steps left to record")
    out = os.path.join(a.out, f"{regime}.csv")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    shown = " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd[3:])
    head = [f"# hetrain noise trace, regime '{regime}': per step, each rank's compute seconds / its median at "
            f"the same local batch",
            f"# recorded {when} on {platform.node()} ({os.cpu_count()} CPUs, load average {load:.2f} at the "
            f"start) by bench/record_noise.py",
            f"# run: {shown}" + (f" (rank {QUOTA_RANK} in a cgroup of {QUOTA_CPUS} CPU)" if quota else ""),
            f"# steps {a.skip}..{len(doc['allocation']) - 1} kept where every rank's batch was seen at least "
            f"{a.min_same} times: {len(rows)} rows"]
    with open(out + ".tmp", "w") as f:
        f.write("\n".join(head) + "\n" + ",".join(f"rank{i}" for i in range(len(rows[0]))) + "\n")
        for r in rows:
            f.write(",".join(f"{v:.4f}" for v in r) + "\n")
    os.replace(out + ".tmp", out)
    flat = sorted(v for r in rows for v in r)
    print(f"{regime}: {len(rows)} steps -> {out}; ratios p50 {flat[len(flat) // 2]:.3f} "
          f"p90 {flat[int(0.9 * len(flat))]:.3f} p99 {flat[int(0.99 * len(flat))]:.3f} max {flat[-1]:.3f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hetrain", default=os.path.join(ROOT, "build", "hetrain"))
    p.add_argument("--out", default=os.path.join(ROOT, "examples", "noise"))
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--skip", type=int, default=5, help="first steps left out")
    p.add_argument("--min-same", type=int, default=5, help="fewest steps at one local batch for a median")
    p.add_argument("--regimes", default=",".join(REGIMES))
    a = p.parse_args()
    regimes = a.regimes.split(",")
    unknown = [r for r in regimes if r not in REGIMES]
    if unknown:
        raise SystemExit(f"record_noise: unknown regime(s) {','.join(unknown)} (expected {','.join(REGIMES)})")
    if not os.access(a.hetrain, os.X_OK):
        raise SystemExit(f"record_noise: {a.hetrain} is not an executable (build hetrain first)")
    if a.steps <= a.skip + 2:
        raise SystemExit(f"record_noise: --steps {a.steps} leaves nothing after --skip {a.skip}")
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for regime in regimes:
            try:
                record(a, regime, tmp)
            except RecordError as e:
                raise SystemExit(f"record_noise: {e}")


if __name__ == "__main__":
    main()

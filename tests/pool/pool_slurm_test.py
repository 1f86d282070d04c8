#!/usr/bin/env python3
"""`hetrain pool` on a real multi-node Slurm on one machine: slurmctld and one
slurmd per network namespace (own host name and address), nodes tagged with
their machine type as a feature (node0, node1: fast; node2: slow), speeds
emulated per type on the hetrain side (--speeds from the node's type).

Jobs (synthetic data, well under a minute each) are dropped into the spool
over time. The controller places them; the planner (max-min fair, nothing
forced) moves a job when the next one arrives (stop with a checkpoint,
resubmit, resume); every job finishes. Checked per job: every sample of the
epoch used exactly once across all its submissions, and its final loss equal
to an uninterrupted `hetrain run -n 1` with the same seed within
LOSS_TOLERANCE (relative): the allocation changes the order in which the
gradient is summed, never the maths.

The controller is killed twice on the way and restarted (right after an
sbatch, before its state records it; right after a scancel, before the
resubmission): no job is lost (all finish) or duplicated (Slurm's job ids
count the submissions: exactly one per generation the state records).

Root, `ip netns`, slurm-wlm and munge are needed: outside CI a missing one
skips (exit 77, printed); under CI (CI non-empty) it fails with the reason.
Every daemon and namespace is removed at the end, also on failure, on SIGTERM
or SIGINT and past TOTAL_LIMIT (under CTest's TIMEOUT, which kills with
SIGKILL); what a run killed outright left is removed by the next one.

Usage: pool_slurm_test.py --hetrain BIN --work DIR
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from slurm_cluster import exit_on_signals, munged, stop_all, write_conf  # noqa: E402  tests/cli/slurm_cluster.py

SKIP = 77
TYPES = ["fast", "fast", "slow"]          # node0..node2
EMULATE = {"fast": 1.0, "slow": 0.25}     # --speeds by type
SAMPLE_COST_MS = 4.0                      # emulated device time per sample at speed 1
BATCH = 48
# Samples/s of one node of each type for the planner: 1 / (sample cost / speed),
# what the emulation makes them.
SPEEDS = {t: 1000.0 / SAMPLE_COST_MS * s for t, s in EMULATE.items()}
# (name, seconds after the start it arrives, training samples)
JOBS = [("a", 0, 5760), ("b", 5, 3840), ("c", 10, 2880), ("d", 15, 1920)]
SEED = 5
FLAGS = ["--model", "mlp", "--data", "synthetic", "--synthetic-test", "200", "-b", str(BATCH), "--epochs", "1",
         "--threads", "1", "--timeout", "60", "--log-level", "warn", "--optimizer", "sgd", "--lr", "0.002",
         "--sample-cost-ms", str(SAMPLE_COST_MS)]
# Relative: another split and world size sum each gradient in another order
# (about 1e-7 per step here, tests/cli/slurm_preempt_test.py).
LOSS_TOLERANCE = 1e-5
UP_LIMIT = 60        # seconds for the cluster to report its nodes idle
RUN_LIMIT = 600      # seconds for all jobs to finish
COMMAND_LIMIT = 30   # seconds any Slurm command may take

TOTAL_LIMIT = 840     # seconds for the whole test: under CTest's TIMEOUT (900), which kills with SIGKILL
KILL_LIMIT = 10      # seconds for processes to be gone after SIGKILL


def fail(msg):
    print(f"FAILED: {msg}", flush=True)
    sys.exit(1)


def skip_or_fail(why):
    if os.environ.get("CI"):
        fail(f"prerequisite missing under CI: {why}")
    print(f"SKIPPED: {why}", flush=True)
    sys.exit(SKIP)


class Cluster:
    """Namespaces, munged, slurmctld and three slurmd; all removed on exit,
    whatever ends the test (exit_on_signals). The names derive from the work
    folder, so a run that was killed outright (SIGKILL: nothing could clean up)
    is cleaned up by the next run in the same folder (clean_leftovers)."""

    def __init__(self, work):
        self.w = work.resolve() / "slurm"  # absolute: how clean_leftovers knows our munged by its command line
        digest = int(hashlib.sha1(str(work.resolve()).encode()).hexdigest()[:8], 16)
        self.tag = f"hp{digest % 100000:05d}"
        self.addr = f"10.{201 + digest % 50}.{digest % 250}"
        self.procs, self.netns = [], []

    def ns(self, k):
        return f"{self.tag}n{k}"

    def names(self):
        return [f"{self.tag}br", *(self.ns(k) for k in range(len(TYPES)))]

    def sh(self, *cmd):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=COMMAND_LIMIT)
        if r.returncode != 0:
            fail(f"{' '.join(cmd)}: {r.stderr.strip()}")

    def clean_leftovers(self):
        """What a killed earlier run in this folder left: its namespaces with every process in them
        (daemons, job steps), and its munged (in the root namespace: found by its pid file)."""
        existing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                                  timeout=COMMAND_LIMIT).stdout.split()
        left = [ns for ns in self.names() if ns in existing]
        pid_file = self.w / "munged.pid"
        munge = int(pid_file.read_text().split()[0]) if pid_file.is_file() else None
        if munge and str(self.w) not in cmdline(munge):
            munge = None  # the pid was reused: not ours
        if left or munge:
            print(f"cleaning up after an earlier run: namespaces {left}, munged {munge}", flush=True)
        self.kill_in(left, [munge] if munge else [])
        for ns in left:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=COMMAND_LIMIT)

    @staticmethod
    def kill_in(namespaces, extra, spare=()):
        """SIGKILL to every process in `namespaces` and to `extra`, except `spare`; waits until they are gone."""
        pids = set(extra)
        for ns in namespaces:
            r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=COMMAND_LIMIT)
            pids |= set(map(int, r.stdout.split()))
        pids -= set(spare)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + KILL_LIMIT
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
            time.sleep(0.1)

    def make_namespaces(self):
        br = f"{self.tag}br"
        r = subprocess.run(["ip", "netns", "add", br], capture_output=True, text=True, timeout=COMMAND_LIMIT)
        if r.returncode != 0:
            skip_or_fail(f"network namespaces not allowed here: {r.stderr.strip()}")
        self.netns.append(br)
        self.sh("ip", "-n", br, "link", "add", "br0", "type", "bridge")
        self.sh("ip", "-n", br, "link", "set", "br0", "up")
        for k in range(len(TYPES)):
            ns = self.ns(k)
            self.netns.append(ns)  # before it exists: a signal now still removes it
            self.sh("ip", "netns", "add", ns)
            self.sh("ip", "-n", ns, "link", "add", "veth0", "type", "veth", "peer", "name", f"p{k}", "netns", br)
            self.sh("ip", "-n", br, "link", "set", f"p{k}", "master", "br0", "up")
            self.sh("ip", "-n", ns, "addr", "add", f"{self.addr}.{k + 1}/24", "dev", "veth0")
            self.sh("ip", "-n", ns, "link", "set", "veth0", "up")
            self.sh("ip", "-n", ns, "link", "set", "lo", "up")

    def in_node(self, k, cmd):
        """cmd inside node k: its network namespace and host name (nsenter --net, as platform.md says)."""
        inner = f"hostname node{k}; exec " + " ".join(f"'{c}'" for c in cmd)
        return ["nsenter", f"--net=/var/run/netns/{self.ns(k)}", "unshare", "--uts", "sh", "-c", inner]

    def start(self, name, cmd):
        self.procs.append(subprocess.Popen(cmd, env=self.env, stdout=subprocess.DEVNULL,
                                           stderr=open(self.w / f"{name}.err", "w")))

    def __enter__(self):
        if os.geteuid() != 0:
            skip_or_fail("not root (network namespaces and Slurm's daemons need it)")
        for b in ("ip", "nsenter", "unshare", "munged", "slurmctld", "slurmd", "sbatch"):
            if shutil.which(b) is None:
                skip_or_fail(f"{b} not found (scripts/setup.sh --test installs slurm-wlm and munge)")
        nodes = "\n".join(f"NodeName=node{k} NodeAddr={self.addr}.{k + 1} CPUs=2 RealMemory=1000 Feature={t} "
                          f"State=UNKNOWN" for k, t in enumerate(TYPES))
        specific = (f"SlurmctldHost=node0({self.addr}.1)\nSlurmdSpoolDir={self.w}/spool/%n\n"
                    f"SlurmdPidFile={self.w}/slurmd.%n.pid\nSlurmdLogFile={self.w}/slurmd.%n.log\nMinJobAge=600\n"
                    f"{nodes}\nPartitionName=pool Nodes=node[0-2] Default=YES MaxTime=INFINITE State=UP "
                    "OverSubscribe=EXCLUSIVE")
        self.conf, key = write_conf(self.w, "hetrainpool", specific)
        self.env = {k: v for k, v in os.environ.items() if k not in ("MASTER_ADDR", "MASTER_PORT")}
        self.env["SLURM_CONF"] = str(self.conf)
        try:
            self.make_namespaces()
            self.start("munged", munged(self.w, key))
            time.sleep(0.5)
            self.start("slurmctld", self.in_node(0, ["slurmctld", "-D", "-f", str(self.conf)]))
            for k in range(len(TYPES)):
                self.start(f"slurmd{k}", self.in_node(k, ["slurmd", "-D", "-f", str(self.conf), "-N", f"node{k}"]))
            self.wait_up()
        except BaseException:
            self.__exit__()
            raise
        return self

    def run(self, cmd, **kw):
        """A command in node0's namespace (where slurmctld listens)."""
        return subprocess.run(self.in_node(0, cmd), env=self.env, capture_output=True, text=True,
                              timeout=COMMAND_LIMIT, **kw)

    def wait_up(self):
        deadline = time.monotonic() + UP_LIMIT
        while time.monotonic() < deadline:
            r = self.run(["sinfo", "-N", "-h", "-o", "%N %t %f"])
            rows = r.stdout.split("\n") if r.returncode == 0 else []
            if sum(1 for row in rows if " idle " in row) == len(TYPES):
                print("ok: cluster up:", "; ".join(x for x in rows if x), flush=True)
                return
            time.sleep(0.5)
        logs = "".join(f"--- {f.name}\n{f.read_text()[-1200:]}" for f in self.w.glob("*.log"))
        fail(f"the namespace cluster did not come up in {UP_LIMIT} s (sinfo: {r.stdout} {r.stderr})\n{logs}")

    def __exit__(self, *exc):
        # Jobs still running (a failed test) are cancelled; whatever is left in
        # our namespaces after that (job steps outlive slurmd, the controller) is killed.
        try:
            if self.procs and self.netns:
                self.run(["scancel", "--user=root"])
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline and self.run(["squeue", "-h", "-o", "%i"]).stdout.strip():
                    time.sleep(0.5)
        except (OSError, subprocess.SubprocessError):
            pass  # the daemons are gone or stuck: what is left is killed below
        existing = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                                      timeout=COMMAND_LIMIT).stdout.split())
        ours = [ns for ns in self.netns if ns in existing]
        self.kill_in(ours, [], spare={p.pid for p in self.procs})
        stop_all(self.procs)
        for ns in reversed(ours):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=COMMAND_LIMIT)


def cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def job_file(spool, work, name, samples):
    flags = [*FLAGS, "--seed", str(SEED), "--synthetic-train", str(samples),
             "--sample-log", str(work / "samples" / f"{name}.%g"), "--metrics", str(work / "metrics" / f"{name}.%g.json")]
    speeds = ", ".join(f"{t} = {v}" for t, v in SPEEDS.items())
    emulate = ", ".join(f"{t} = {v}" for t, v in EMULATE.items())
    text = (f'[[job]]\nname = "{name}"\nspeeds = {{ {speeds} }}\nglobal_batch = {BATCH}\n'
            f"steps = {samples // BATCH}\n\n[run]\nflags = {json.dumps(flags)}\n"
            f'checkpoint = "{work / "ck" / name}"\nemulate = {{ {emulate} }}\n')
    tmp = spool / f".{name}.tmp"
    tmp.write_text(text)
    tmp.rename(spool / f"{name}.toml")  # a job file appears whole


def pool_toml(path):
    types = "".join(f'[[type]]\nname = "{t}"\ncount = {TYPES.count(t)}\n\n' for t in dict.fromkeys(TYPES))
    path.write_text(types)


def controller(cluster, hetrain, spool, pool, log, *extra):
    cmd = [hetrain, "pool", "--spool", str(spool), "--cluster", str(pool), "--hetrain", hetrain,
           "--poll-seconds", "0.5", "--round-seconds", "30", "--restart-seconds", "3",
           "--max-seconds", str(RUN_LIMIT), *extra]
    return subprocess.Popen(cluster.in_node(0, cmd), env=cluster.env, stdout=open(log, "a"), stderr=subprocess.STDOUT)


def drop_due(spool, work, t0, dropped):
    for name, at, samples in JOBS:
        if name not in dropped and time.monotonic() - t0 >= at:
            job_file(spool, work, name, samples)
            dropped.add(name)


def run_controller_until(proc, spool, work, t0, dropped, expect_code, what):
    deadline = time.monotonic() + RUN_LIMIT
    while proc.poll() is None:
        drop_due(spool, work, t0, dropped)
        if time.monotonic() > deadline:
            proc.kill()
            fail(f"controller ({what}) still running after {RUN_LIMIT} s")
        time.sleep(0.2)
    if proc.returncode != expect_code:
        fail(f"controller ({what}): exit code {proc.returncode}, expected {expect_code}:\n"
             f"{(work / 'pool.log').read_text()[-4000:]}")
    print(f"ok: controller ({what}) exited {proc.returncode} at {time.monotonic() - t0:.1f} s", flush=True)


def check_job(hetrain, work, name, samples, js):
    ids, gens = [], sorted(work.joinpath("samples").glob(f"{name}.*.rank*"))
    for f in gens:
        for line in f.read_text().splitlines():
            epoch, step, *row = map(int, line.split())
            ids += row
    if sorted(ids) != list(range(samples)):
        fail(f"{name}: {len(ids)} samples used over {js['generation']} submissions, "
             f"{len(ids) - len(set(ids))} twice, {samples - len(set(ids))} never")
    final = json.loads((work / "metrics" / f"{name}.{js['generation']}.json").read_text())
    ref_path = work / f"ref_{name}.json"
    r = subprocess.run([hetrain, "run", "-n", "1", *FLAGS, "--seed", str(SEED), "--synthetic-train", str(samples),
                        "--metrics", str(ref_path)], capture_output=True, text=True, timeout=RUN_LIMIT)
    if r.returncode != 0:
        fail(f"{name}: the uninterrupted reference run failed: {r.stderr}")
    ref = json.loads(ref_path.read_text())
    got, want = final["steps"]["loss"][-1], ref["steps"]["loss"][-1]
    diff = abs(got - want) / abs(want)
    if diff > LOSS_TOLERANCE:
        fail(f"{name}: final loss {got!r} vs the uninterrupted run's {want!r} (relative {diff:.2e})")
    print(f"ok: {name}: {js['generation']} submissions, every one of {samples} samples once, final loss "
          f"{got:.7f} vs uninterrupted {want:.7f} (relative {diff:.1e} <= {LOSS_TOLERANCE}), "
          f"JCT {js['ended'] - js['arrived']:.1f} s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--no-crash", action="store_true",
                    help="never kill the controller (bench/pool_sim_vs_real.py compares such a run with the simulator)")
    a = ap.parse_args()
    hetrain, work = os.path.abspath(a.hetrain), Path(a.work)
    exit_on_signals(TOTAL_LIMIT)
    if os.geteuid() == 0 and shutil.which("ip"):
        Cluster(work).clean_leftovers()
    shutil.rmtree(work, ignore_errors=True)
    spool = work / "spool"
    for d in ("spool", "samples", "metrics", "ck"):
        (work / d).mkdir(parents=True)
    pool = work / "pool.toml"
    pool_toml(pool)
    with Cluster(work) as cluster:
        t0, dropped = time.monotonic(), set()
        drop_due(spool, work, t0, dropped)
        log = work / "pool.log"
        # Killed right after its first sbatch, then right after its first scancel; then to the end.
        for point in [] if a.no_crash else ["sbatch", "scancel"]:
            run_controller_until(controller(cluster, hetrain, spool, pool, log, "--crash-after", point),
                                 spool, work, t0, dropped, 70, f"crash after {point}")
        # --until-done ends once every job it knows is done: again until all have arrived and ended.
        while True:
            run_controller_until(controller(cluster, hetrain, spool, pool, log, "--until-done"),
                                 spool, work, t0, dropped, 0, "until done")
            known = json.loads((spool / ".pool" / "state.json").read_text())["jobs"]
            if len(dropped) == len(JOBS) and len(known) == len(JOBS):
                break
        ids = cluster.run(["squeue", "-h", "-o", "%i"]).stdout.split()
        last = cluster.run(["scontrol", "show", "job"]).stdout
    print((work / "pool.log").read_text(), flush=True)
    state = json.loads((spool / ".pool" / "state.json").read_text())["jobs"]
    if ids:
        fail(f"jobs still in squeue after the controller finished: {ids}")
    submissions = sum(js["generation"] for js in state.values())
    job_ids = [int(x.split("=")[1]) for x in last.split() if x.startswith("JobId=")]
    if sorted(job_ids) != list(range(1, submissions + 1)):
        fail(f"Slurm ran jobs {sorted(job_ids)}; the controller recorded {submissions} submissions "
             "(a job submitted twice, or one lost)")
    print(f"ok: {submissions} submissions for {len(state)} jobs, Slurm job ids 1..{submissions}: none twice", flush=True)
    moved = [n for n, js in state.items() if js["generation"] > 1]
    if not moved:
        fail("the planner moved no job")
    for name, _, samples in JOBS:
        js = state.get(name)
        if js is None or js["status"] != "done":
            fail(f"{name}: not done: {js}")
        check_job(hetrain, work, name, samples, js)
    print(f"ok: moved by the planner: {moved}", flush=True)


if __name__ == "__main__":
    main()

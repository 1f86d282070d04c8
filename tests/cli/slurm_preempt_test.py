#!/usr/bin/env python3
"""Stop on request (docs/errors.md, exit code 6), end to end with real
processes: a signal mid-epoch makes every worker stop after the same step,
rank 0 writes the checkpoint, and the run exits 6 well within Slurm's
default KillWait (30 s); resuming from that checkpoint on any number of
workers trains every sample of the epoch exactly once and ends where an
uninterrupted run with the same seed ends.

Modes:
  run   SIGTERM to `hetrain run -n 3` itself (passed on to its workers);
        resumed on 3 workers (the same arithmetic: the final loss and test
        metric bitwise equal), and, from the same checkpoint, on 2 workers,
        that run stopped again by SIGTERM to one worker only, and resumed on
        4: every sample once across the three runs. SIGUSR1 to one worker
        of `hetrain run --max-restarts 2`: stopped, not restarted.
  torchrun  SIGTERM to torchrun's agent (--max_restarts 2): it passes the
        signal on, the workers stop with a checkpoint, the agent exits 1 (its
        SignalException) without restarting; resumed on 3 workers, bitwise.
  srun  `srun -n 3 hetrain worker` on a one-node Slurm (the real daemons),
        stopped by `scancel --signal=TERM JOB`; resumed with `hetrain run -n 2`.
        Then the same while the job starts: `scancel --signal=TERM` from the
        moment every task has TERM blocked or caught (repeated, as `hetrain
        pool` does, since a request before the job step exists reaches
        nobody), the tasks started as the pool's job script starts them (`env
        --block-signal`): exit 6 within KillWait, then resumed (or started
        again) to the end. Before that moment (slurmstepd has forked a task,
        `env` has not yet blocked the signal) a request kills the task as
        signals do: Slurm's window, not hetrain's, and the pool's controller
        takes that exit as the stop too (pool/state.h).
  startup  A stop while the workers start, outside Slurm: SIGTERM to
        `hetrain run -n 3` at delays from 0 to 2 s after it listens (its
        workers before exec, while libtorch loads, data, rendezvous, first
        steps), each run
        resuming the last: every one exits 6 within KillWait and leaves no
        process, and the chain trains every sample once and ends bitwise where
        an uninterrupted run ends. Then the case that hung: ranks 0 and 1 of 3
        waiting in the rendezvous for a rank 2 that never comes get SIGTERM:
        both exit 6 at once, not at --timeout.

Usage: slurm_preempt_test.py --hetrain BIN --work DIR MODE
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from launchers_test import (TORCHRUN, SlurmCluster, descendants, environ, fail, free_port,  # noqa: E402
                            logged_steps, read_log, run_modes)

TRAIN_SAMPLES = 1920  # 40 steps of B = 48
BATCH = 48
# Emulated device time per sample (ms): steps of ~0.1 s, so the signal lands
# mid-epoch and the whole run stays short.
FLAGS = ["--model", "mlp", "--data", "synthetic", "--synthetic-train", str(TRAIN_SAMPLES),
         "--synthetic-test", "200", "-b", str(BATCH), "--epochs", "1", "--seed", "11",
         "--threads", "1", "--timeout", "30", "--log-level", "warn", "--sample-cost-ms", "5",
         # A small learning rate keeps the loss far from 0 (synthetic data is easy), so the
         # final loss compares something.
         "--optimizer", "sgd", "--lr", "0.002"]
STOPPED = 6             # docs/errors.md
KILL_WAIT = 30          # Slurm's default KillWait (s): SIGKILL follows SIGTERM after it
SIGNAL_AFTER_STEP = 8   # the signal is sent once a rank has logged this step
RUN_LIMIT = 240         # seconds any run may take before the test fails
# Resumed on another number of workers, each step's gradient is summed in
# another order (float addition is not associative): ~1e-7 relative per step,
# grown over 40 SGD steps. Measured here: 7e-8 between 3 and 2 workers
# (each run prints its own); the same bound as tests/train/test_equivalence.cc.
CROSS_WORLD_TOLERANCE = 1e-5  # relative


def start(cmd, log, env=None):
    return subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def finish(proc, name, log):
    try:
        return proc.wait(timeout=RUN_LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        fail(f"{name}: still running after {RUN_LIMIT} s\n{Path(log).read_text()[-3000:]}")


def run_to_end(cmd, work, name, env=None):
    log = work / f"{name}.log"
    code = finish(start(cmd, log, env), name, log)
    if code != 0:
        fail(f"{name}: exit code {code}: {' '.join(map(str, cmd))}\n{log.read_text()[-3000:]}")


def stop_midway(cmd, work, name, send, env=None, after=SIGNAL_AFTER_STEP, code_expected=STOPPED):
    """Starts `cmd`, calls send(proc) once step `after` is logged,
    and checks the exit: code 6 within KillWait, one line naming the checkpoint."""
    log, prefix = work / f"{name}.log", work / f"{name}_samples"
    proc = start(cmd, log, env)
    deadline = time.monotonic() + RUN_LIMIT
    while logged_steps(prefix) < after:
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            fail(f"{name}: the run ended or stalled before step {after}\n{log.read_text()[-3000:]}")
        time.sleep(0.02)
    what = send(proc)
    t0 = time.monotonic()
    code = finish(proc, name, log)
    seconds = time.monotonic() - t0
    out = log.read_text()
    if code != code_expected:
        fail(f"{name}: exit code {code} after {what}, expected {code_expected}\n{out[-3000:]}")
    if seconds >= KILL_WAIT:
        fail(f"{name}: took {seconds:.1f} s to stop after {what}: Slurm would have killed it at {KILL_WAIT} s")
    if "stopped on request" not in out or "hetrain: error" in out:
        fail(f"{name}: no stop message, or an error, after {what}:\n{out[-3000:]}")
    print(f"ok: {name}: {what} after step {after}: exit code {code} in {seconds:.2f} s "
          f"({out.strip().splitlines()[-1]})", flush=True)


def steps_of(prefix):
    """{step: [sample ids]} over every rank of one run (epoch 0: a one-epoch run)."""
    steps = {}
    for f in prefix.parent.glob(prefix.name + ".rank*"):
        for epoch, step, ids in read_log(f):
            if epoch != 0:
                fail(f"{f}: epoch {epoch} in a one-epoch run")
            steps.setdefault(step, []).extend(ids)
    return steps


def checkpoint_step(doc):
    resumed = doc.get("resumed_from")
    if resumed is None:
        fail("a resumed run's metrics say nothing of its checkpoint")
    return resumed["step"]


def check_exactly_once(chain, name):
    """chain: [(sample-log prefix, first step that counts, first step that does not)]:
    each run's steps up to the checkpoint the next one resumed from."""
    ids = []
    for prefix, begin, end in chain:
        steps = steps_of(prefix)
        if begin not in steps or (end is not None and end - 1 not in steps):
            fail(f"{name}: {prefix.name} did not train steps {begin}..{end}: it logged {sorted(steps)}")
        for step, row in steps.items():
            if step >= begin and (end is None or step < end):
                ids += row
    if sorted(ids) != list(range(TRAIN_SAMPLES)):
        dup = len(ids) - len(set(ids))
        fail(f"{name}: {len(ids)} samples used, {dup} twice, {TRAIN_SAMPLES - len(set(ids))} never")
    cuts = [c[2] for c in chain[:-1]]
    print(f"ok: {name}: stopped at steps {cuts}; every one of the epoch's {TRAIN_SAMPLES} samples "
          f"used exactly once", flush=True)


def final(path):
    doc = json.loads(Path(path).read_text())
    return doc["steps"]["loss"][-1], doc["evals"][-1]["test_" + doc["metric"]], doc


def compare(name, got_path, ref_path, tolerance):
    got, ref = final(got_path), final(ref_path)
    for what, a, b in (("last step's loss", got[0], ref[0]), ("test metric", got[1], ref[1])):
        diff = abs(a - b) / max(abs(b), 1e-12)
        if diff > tolerance:
            fail(f"{name}: {what} {a!r} vs the uninterrupted run's {b!r} (relative {diff:.2e} > {tolerance})")
        print(f"ok: {name}: {what} {a!r} vs uninterrupted {b!r} (relative difference {diff:.2e}, "
              f"allowed {tolerance})", flush=True)


def hetrain_run(hetrain, n, name, work, *extra):
    return [hetrain, "run", "-n", str(n), *FLAGS, "--sample-log", str(work / f"{name}_samples"),
            "--metrics", str(work / f"{name}.json"), *extra]


def worker_pid(root, rank):
    for p in descendants(root):
        if environ(p).get("RANK") == str(rank):
            return p
    return None


def mode_run(hetrain, work):
    ref, ck = work / "ref.json", work / "ck"
    run_to_end([hetrain, "run", "-n", "3", *FLAGS, "--metrics", str(ref)], work, "uninterrupted")

    def sigterm_launcher(proc):
        proc.send_signal(signal.SIGTERM)
        return "SIGTERM to hetrain run"
    stop_midway(hetrain_run(hetrain, 3, "first", work, "--checkpoint", str(ck)), work, "first", sigterm_launcher)
    if not (ck / "checkpoint.pt").is_file() or list(ck.glob("*.tmp*")):
        fail(f"first: no complete checkpoint in {ck}: {sorted(p.name for p in ck.iterdir())}")
    ck2 = work / "ck2"
    shutil.copytree(ck, ck2)

    # The same world size: the same arithmetic, bitwise.
    run_to_end(hetrain_run(hetrain, 3, "resumed3", work, "--resume", str(ck)), work, "resumed3")
    cut = checkpoint_step(json.loads((work / "resumed3.json").read_text()))
    check_exactly_once([(work / "first_samples", 0, cut), (work / "resumed3_samples", cut, None)], "3 -> 3")
    compare("3 -> 3", work / "resumed3.json", ref, 0.0)

    # Another world size, stopped again by one worker's SIGUSR1, then 4 workers.
    def sigterm_one_worker(proc):
        pid = worker_pid(proc.pid, 1)
        if pid is None:
            fail("second: no rank 1 worker to signal")
        os.kill(pid, signal.SIGTERM)
        return "SIGTERM to rank 1 only"
    stop_midway(hetrain_run(hetrain, 2, "second", work, "--resume", str(ck2), "--checkpoint", str(ck2)), work,
                "second", sigterm_one_worker, after=cut + SIGNAL_AFTER_STEP)
    run_to_end(hetrain_run(hetrain, 4, "third", work, "--resume", str(ck2)), work, "third")
    cut2 = checkpoint_step(json.loads((work / "third.json").read_text()))
    check_exactly_once([(work / "first_samples", 0, cut), (work / "second_samples", cut, cut2),
                        (work / "third_samples", cut2, None)], "3 -> 2 -> 4")
    compare("3 -> 2 -> 4", work / "third.json", ref, CROSS_WORLD_TOLERANCE)

    # A stop is not a failure: --max-restarts does not start it again, even
    # when the request came to a worker, not to the launcher.
    def sigusr1_rank0(proc):
        pid = worker_pid(proc.pid, 0)
        if pid is None:
            fail("norestart: no rank 0 worker to signal")
        os.kill(pid, signal.SIGUSR1)
        return "SIGUSR1 to rank 0 of hetrain run --max-restarts 2"
    stop_midway(hetrain_run(hetrain, 2, "norestart", work, "--checkpoint", str(work / "ck3"), "--max-restarts",
                            "2"), work, "norestart", sigusr1_rank0)
    if list(work.glob("norestart_samples.attempt*")):
        fail("norestart: the launcher restarted the workers after a stop on request")
    print("ok: --max-restarts 2: no restart after the stop", flush=True)


def mode_torchrun(hetrain, work):
    ref, ck = work / "ref.json", work / "ck"
    run_to_end([hetrain, "run", "-n", "3", *FLAGS, "--metrics", str(ref)], work, "uninterrupted")
    port = free_port()
    cmd = [*TORCHRUN, "--nproc_per_node", "3", "--max_restarts", "2", "--master_addr", "127.0.0.1",
           "--master_port", str(port), "--log_dir", str(work / "torchrun_logs"), "--no_python", hetrain, "worker",
           *FLAGS, "--checkpoint", str(ck), "--sample-log", str(work / "first_samples")]

    def sigterm_agent(proc):
        proc.send_signal(signal.SIGTERM)
        return "SIGTERM to torchrun"
    # torchrun's agent turns the signal into a SignalException: exit code 1.
    stop_midway(cmd, work, "first", sigterm_agent, code_expected=1)
    if list(work.glob("first_samples.attempt*")):
        fail("torchrun: the agent restarted the workers after a stop on request")
    run_to_end(hetrain_run(hetrain, 3, "resumed3", work, "--resume", str(ck)), work, "resumed3")
    cut = checkpoint_step(json.loads((work / "resumed3.json").read_text()))
    check_exactly_once([(work / "first_samples", 0, cut), (work / "resumed3_samples", cut, None)],
                       "torchrun 3 -> run 3")
    compare("torchrun 3 -> run 3", work / "resumed3.json", ref, 0.0)


def shielded_tasks(job):
    """How many of Slurm job `job`'s tasks a SIGTERM no longer kills: TERM blocked (`env --block-signal`,
    inherited by hetrain's exec) or caught (hetrain's handler), read from /proc (one node: all are here)."""
    term = 1 << (signal.SIGTERM - 1)
    ranks = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        env = environ(status.parent.name)
        if env.get("SLURM_JOB_ID") != job or "SLURM_PROCID" not in env or "SLURM_STEP_ID" not in env:
            continue
        try:
            masks = {k: int(v, 16) for k, v in (x.split(":") for x in status.read_text().splitlines()
                                                  if x.startswith(("SigBlk:", "SigCgt:")))}
        except OSError:
            continue
        if (masks.get("SigBlk", 0) | masks.get("SigCgt", 0)) & term:
            ranks.add(env["SLURM_PROCID"])
    return len(ranks)


def srun_stopped_at_start(hetrain, work, env, ref):
    """scancel --signal=TERM from the moment every task is shielded, repeated until srun ends."""
    ck, log = work / "ck_start", work / "srun_start.log"
    proc = start(["srun", "--overcommit", "-n", "3", "env", "--block-signal=TERM,USR1,INT", hetrain, "worker",
                  *FLAGS, "--checkpoint", str(ck), "--sample-log", str(work / "srun_start_samples")], log, env)
    t0, deadline = None, time.monotonic() + RUN_LIMIT
    while proc.poll() is None and time.monotonic() < deadline:
        rows = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"], env=env, capture_output=True,
                              text=True, timeout=30).stdout.split()
        # ours: the newest (the earlier job may still be completing)
        if rows and (t0 or shielded_tasks(max(rows, key=int)) == 3):
            t0 = t0 or time.monotonic()
            subprocess.run(["scancel", "--signal=TERM", max(rows, key=int)], env=env, capture_output=True,
                           timeout=30)
        time.sleep(RESIGNAL if t0 else 0.002)
    if t0 is None:
        os.killpg(proc.pid, signal.SIGKILL)
        fail(f"srun at start: the job never ran\n{log.read_text()[-3000:]}")
    said = stop_run(proc, "srun_start", log, "scancel --signal=TERM while the job starts", t0)
    print(f"ok: srun -n 3, scancel --signal=TERM every {RESIGNAL} s once every task blocks or catches it: "
          f"{said}", flush=True)
    run_to_end(hetrain_run(hetrain, 2, "srun_start_end", work, *resume_flags(ck)), work, "srun_start_end")
    check_chain(work, ["srun_start", "srun_start_end"], ref, CROSS_WORLD_TOLERANCE, "srun stopped at start -> run 2")


def mode_srun(hetrain, work):
    ref, ck = work / "ref.json", work / "ck"
    run_to_end([hetrain, "run", "-n", "3", *FLAGS, "--metrics", str(ref)], work, "uninterrupted")
    with SlurmCluster(work, fail, free_port) as cluster:
        env = {k: v for k, v in cluster.env.items() if k not in ("MASTER_ADDR", "MASTER_PORT")}

        def scancel(proc):
            jobs = subprocess.run(["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True,
                                  timeout=30).stdout.split()
            if len(jobs) != 1:
                fail(f"srun: expected one job in squeue, got {jobs}")
            subprocess.run(["scancel", "--signal=TERM", jobs[0]], env=env, check=True, timeout=30)
            return f"scancel --signal=TERM {jobs[0]}"
        stop_midway(["srun", "--overcommit", "-n", "3", hetrain, "worker", *FLAGS, "--checkpoint", str(ck),
                     "--sample-log", str(work / "first_samples")], work, "first", scancel, env=env)
        srun_stopped_at_start(hetrain, work, env, ref)
    run_to_end(hetrain_run(hetrain, 2, "resumed2", work, "--resume", str(ck)), work, "resumed2")
    cut = checkpoint_step(json.loads((work / "resumed2.json").read_text()))
    check_exactly_once([(work / "first_samples", 0, cut), (work / "resumed2_samples", cut, None)], "srun 3 -> 2")
    compare("srun 3 -> run 2", work / "resumed2.json", ref, CROSS_WORLD_TOLERANCE)


# --- a stop while the workers start -----------------------------------------

# Seconds after `hetrain run` listens at which SIGTERM is sent: from before its
# workers exist to their first steps (which phase each hits depends on the
# machine; each run prints it).
STARTUP_DELAYS = [0.0, 0.02, 0.1, 0.3, 0.6, 1.0, 2.0]
RESIGNAL = 0.5  # seconds between requests while a Slurm job starts (the pool: 5)


def gone(proc):
    """True once nothing of the process group the run started is left."""
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return True
    return False


def stop_run(proc, name, log, what, t0):
    """The exit of a run asked to stop at t0: 6, within KillWait, nothing left; the stop's line."""
    code = finish(proc, name, log)
    seconds = time.monotonic() - t0
    out = log.read_text()
    deadline = time.monotonic() + KILL_WAIT
    while not gone(proc) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not gone(proc):
        os.killpg(proc.pid, signal.SIGKILL)
        fail(f"{name}: processes left after {what}")
    if code != STOPPED or seconds >= KILL_WAIT or "hetrain: error" in out:
        fail(f"{name}: exit code {code} {seconds:.1f} s after {what} (expected {STOPPED} within {KILL_WAIT} s)"
             f"\n{out[-3000:]}")
    line = [x for x in out.splitlines() if "stopped on request" in x]
    if not line:
        fail(f"{name}: no stop message after {what}:\n{out[-3000:]}")
    return f"exit {code} in {seconds:.2f} s ({line[0].strip()})"


def wait_listening(proc, name, log):
    """Until `hetrain run` itself catches SIGTERM (/proc's SigCgt): before, while libtorch loads, a signal ends
    it as signals do (docs/errors.md); its workers are what this test is about."""
    deadline = time.monotonic() + RUN_LIMIT
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            status = ""
        caught = [int(x.split()[1], 16) for x in status.splitlines() if x.startswith("SigCgt:")]
        if caught and caught[0] >> (signal.SIGTERM - 1) & 1:
            return
        time.sleep(0.002)
    fail(f"{name}: hetrain run never caught SIGTERM\n{log.read_text()[-3000:]}")


def resume_flags(ck):
    return ["--resume", str(ck)] if (ck / "checkpoint.pt").is_file() else []


def check_chain(work, names, ref, tolerance, what):
    """Every sample once over the chain's sample logs; the last run ends where the uninterrupted one does."""
    ids = []
    for name in names:
        for f in work.glob(f"{name}_samples.rank*"):
            for _, _, row in read_log(f):
                ids += row
    if sorted(ids) != list(range(TRAIN_SAMPLES)):
        fail(f"{what}: {len(ids)} samples used, {len(ids) - len(set(ids))} twice, "
             f"{TRAIN_SAMPLES - len(set(ids))} never")
    print(f"ok: {what}: every one of the epoch's {TRAIN_SAMPLES} samples used exactly once", flush=True)
    compare(what, work / f"{names[-1]}.json", ref, tolerance)


def listening_with_clients(port, clients):
    """True once /proc/net/tcp shows `port` listening and `clients` connections to it (no junk sent)."""
    rows = [line.split() for table in ("tcp", "tcp6")
            for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]]
    hexport = f"{port:04X}"
    listening = any(r[1].endswith(":" + hexport) and r[3] == "0A" for r in rows)
    connected = sum(1 for r in rows if r[2].endswith(":" + hexport) and r[3] == "01")
    return listening and connected >= clients


def stop_with_a_peer_missing(hetrain, work):
    port = free_port()
    flags = [f for f in FLAGS]
    flags[flags.index("--timeout") + 1] = "60"  # the stop must not wait for it
    procs = []
    for rank in (0, 1):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "3",
               "LOCAL_WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        procs.append(start([hetrain, "worker", *flags, "--checkpoint", str(work / "ck_missing")],
                           work / f"missing{rank}.log", env=env))
    deadline = time.monotonic() + RUN_LIMIT
    while not listening_with_clients(port, 2):  # both ranks' store clients
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
            fail("missing peer: ranks 0 and 1 did not reach the rendezvous")
        time.sleep(0.05)
    time.sleep(1.0)  # into the wait for rank 2
    t0 = time.monotonic()
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for rank, p in enumerate(procs):
        said = stop_run(p, f"missing{rank}", work / f"missing{rank}.log", "SIGTERM in the rendezvous", t0)
        print(f"ok: rank {rank} of 3, rank 2 never started: SIGTERM in the rendezvous: {said}", flush=True)


def mode_startup(hetrain, work):
    ref, ck = work / "ref.json", work / "ck"
    run_to_end([hetrain, "run", "-n", "3", *FLAGS, "--metrics", str(ref)], work, "uninterrupted")
    names = []
    for i, delay in enumerate(STARTUP_DELAYS):
        name = f"start{i}"
        log = work / f"{name}.log"
        proc = start(hetrain_run(hetrain, 3, name, work, "--checkpoint", str(ck), *resume_flags(ck)), log)
        wait_listening(proc, name, log)
        time.sleep(delay)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        said = stop_run(proc, name, log, f"SIGTERM {delay} s after the start", t0)
        print(f"ok: {name}: SIGTERM to hetrain run -n 3 {delay} s after its start: {said}", flush=True)
        names.append(name)
    names.append("last")
    run_to_end(hetrain_run(hetrain, 3, "last", work, "--checkpoint", str(ck), *resume_flags(ck)), work, "last")
    check_chain(work, names, ref, 0.0, "stops while starting, 3 workers")
    stop_with_a_peer_missing(hetrain, work)


MODES = {"run": mode_run, "torchrun": mode_torchrun, "srun": mode_srun, "startup": mode_startup}


if __name__ == "__main__":
    run_modes(MODES, __doc__)

#!/usr/bin/env python3
"""The real launchers, end to end (docs/launching.md): torchrun's two
rendezvous modes, mpirun, restarts that resume (torchrun --max_restarts,
hetrain run --max-restarts, torchrun --nnodes 2:3 losing a node) and junk on
the store port. Nothing here sets a launcher's variables by hand: each mode
runs the launcher itself and compares the final loss with `hetrain run -n 3`
on the same seed (allocation never changes results).

Usage: launchers_test.py --hetrain BIN --work DIR MODE
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from slurm_cluster import SlurmCluster  # tests/cli/slurm_cluster.py, beside this file

# Debian's torchrun 1.13 crashes on Python 3.11 before starting anything
# unless its output is redirected.
TORCHRUN = ["/usr/bin/python3", "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1"]
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
WORKERS = 3
TRAIN_SAMPLES = 1920  # 40 steps of B = 48
BATCH = 48
# Small and deterministic: one thread per worker, synthetic data.
FLAGS = ["--model", "mlp", "--data", "synthetic", "--synthetic-train", str(TRAIN_SAMPLES),
         "--synthetic-test", "200", "-b", str(BATCH), "--epochs", "1", "--seed", "7",
         "--threads", "1", "--timeout", "30", "--log-level", "warn"]
RUN_LIMIT = 240        # seconds any launcher run may take before the test fails
LOSS_TOLERANCE = 1e-6  # relative: the same maths, reduced in the same order
# Restart tests: slow steps (emulated device time) so the kill lands mid-epoch.
SLOW = ["--sample-cost-ms", "3", "--checkpoint-every", "4"]
KILL_AFTER_STEP = 14   # the victim dies once a rank has logged this step
# A run resumed on the same workers with the same split (the equal policy) does the uninterrupted run's float
# operations: its losses are bitwise the same. Resumed on another number of workers (--nnodes 2:3 losing a
# node) it splits each batch differently, so its float sums round differently from the cut on: every step's
# loss agrees to this relative tolerance, not bitwise. The measured gap over the remaining steps is about
# 1e-7 (float32 rounding, docs/launching.md); 1e-5 leaves a margin of 100 and still fails on a wrong sample, a
# skipped step or a lost optimizer state, each of which moves the loss by 1e-3 or more.
RESHAPED_TOLERANCE = 1e-5
# --nnodes 2:3: seconds the rendezvous waits for a third node once two have
# joined; long enough for three agents started together on a loaded host.
LAST_CALL = 5


def fail(msg):
    print(f"FAILED: {msg}", flush=True)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, work, name, env=None, limit=RUN_LIMIT):
    """Runs a launcher to completion; its output lands in work/name.log."""
    log = work / f"{name}.log"
    with open(log, "w") as out:
        try:
            p = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=limit, env=env,
                               start_new_session=True)
        except subprocess.TimeoutExpired:
            fail(f"{name}: still running after {limit} s: {' '.join(cmd)}\n{log.read_text()[-3000:]}")
    if p.returncode != 0:
        fail(f"{name}: exit code {p.returncode}: {' '.join(cmd)}\n{log.read_text()[-3000:]}")
    return log.read_text()


def final_loss(path):
    doc = json.loads(Path(path).read_text())
    return doc["epochs"][-1]["train_loss"], doc


def reference(hetrain, work):
    """The final loss of `hetrain run -n 3` (run once per test)."""
    if not (work / "ref.json").exists():
        run([hetrain, "run", "-n", str(WORKERS), *FLAGS, "--metrics", str(work / "ref.json")], work, "reference")
    return final_loss(work / "ref.json")[0]


def check_same_loss(name, got, ref, world=WORKERS, doc=None):
    if abs(got - ref) > LOSS_TOLERANCE * abs(ref):
        fail(f"{name}: final loss {got!r} differs from hetrain run -n 3's {ref!r}")
    if doc is not None and doc["world_size"] != world:
        fail(f"{name}: world_size {doc['world_size']} in the metrics, expected {world}")
    print(f"ok: {name}: final loss {got:.6f} == hetrain run -n 3's {ref:.6f}", flush=True)


def torchrun(hetrain, work, name, rdzv):
    port = free_port()
    cmd = [*TORCHRUN, "--nproc_per_node", str(WORKERS), "--log_dir", str(work / f"{name}_logs"), *rdzv(port),
           "--no_python", hetrain, "worker", *FLAGS, "--metrics", str(work / f"{name}.json")]
    run(cmd, work, name)
    loss, doc = final_loss(work / f"{name}.json")
    check_same_loss(name, loss, reference(hetrain, work), doc=doc)


def mode_torchrun_static(hetrain, work):
    torchrun(hetrain, work, "torchrun_static",
             lambda p: ["--rdzv_backend", "static", "--master_addr", "127.0.0.1", "--master_port", str(p)])


def mode_torchrun_c10d(hetrain, work):
    torchrun(hetrain, work, "torchrun_c10d",
             lambda p: ["--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{p}", "--nnodes", "1",
                        "--rdzv_id", f"c10d{p}"])


def mode_mpirun(hetrain, work):
    if shutil.which("mpirun") is None:
        fail("mpirun not found (scripts/setup.sh --test installs openmpi-bin)")
    # No MASTER_ADDR, no MASTER_PORT: one host, the port from the job id.
    env = {k: v for k, v in os.environ.items() if k not in ("MASTER_ADDR", "MASTER_PORT")}
    run([*MPIRUN, "-np", str(WORKERS), hetrain, "worker", *FLAGS, "--metrics", str(work / "mpirun.json")],
        work, "mpirun", env=env)
    loss, doc = final_loss(work / "mpirun.json")
    check_same_loss("mpirun -np 3", loss, reference(hetrain, work), doc=doc)


# --- restarts ---------------------------------------------------------------

def descendants(pid):
    """Every process below `pid` (ours only: the tree this test started)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        out += [int(k) for k in kids]
        todo += [int(k) for k in kids]
    return out


def environ(pid):
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0") if "=" in kv)


def hetrain_worker(hetrain, root, rank):
    """The pid of the first attempt's worker of `rank` under `root`."""
    for p in descendants(root):
        env = environ(p)
        if env.get("RANK") == str(rank) and env.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
            try:
                if os.path.realpath(f"/proc/{p}/exe") == os.path.realpath(hetrain):
                    return p
            except OSError:
                pass
    return None


def logged_steps(prefix):
    """The highest step any rank has logged to PREFIX.rank* (a restart's attempts log elsewhere)."""
    best = -1
    for f in prefix.parent.glob(prefix.name + ".rank*"):
        lines = f.read_text().splitlines()
        if lines:
            best = max(best, int(lines[-1].split()[1]))
    return best


def wait_and_kill(proc, victim_of, prefix, name):
    deadline = time.monotonic() + RUN_LIMIT
    while logged_steps(prefix) < KILL_AFTER_STEP:
        if proc.poll() is not None or time.monotonic() > deadline:
            fail(f"{name}: the run ended or stalled before step {KILL_AFTER_STEP}")
        time.sleep(0.05)
    victims = victim_of()
    if not victims or None in victims:
        fail(f"{name}: no worker process to kill")
    for v in victims:
        os.kill(v, signal.SIGKILL)
    print(f"ok: {name}: SIGKILL to {victims} after step {logged_steps(prefix)}", flush=True)


def read_log(path):
    rows = []
    for line in path.read_text().splitlines():
        epoch, step, *ids = map(int, line.split())
        rows.append((epoch, step, ids))
    return rows


def check_exactly_once(prefix, doc, name):
    """The samples that reached the final model: the first attempt's steps
    before the checkpoint it resumed from, then every step of the restart."""
    resumed = doc.get("resumed_from")
    if doc.get("restarts") != 1 or resumed is None:
        fail(f"{name}: the metrics show no restart and resume: restarts={doc.get('restarts')}, "
             f"resumed_from={resumed}")
    cut = resumed["step"]
    ids, first_steps, later_steps = [], set(), set()
    for f in prefix.parent.glob(prefix.name + ".rank*"):
        for _, step, row in read_log(f):
            if step < cut:
                ids += row
                first_steps.add(step)
    for f in prefix.parent.glob(prefix.name + ".attempt1.rank*"):
        for _, step, row in read_log(f):
            ids += row
            later_steps.add(step)
    if min(later_steps) != cut:
        fail(f"{name}: the restart began at step {min(later_steps)}, its checkpoint says {cut}")
    if sorted(ids) != list(range(TRAIN_SAMPLES)):
        dup = len(ids) - len(set(ids))
        fail(f"{name}: {len(ids)} samples used, {dup} twice, {TRAIN_SAMPLES - len(set(ids))} never")
    print(f"ok: {name}: restarted once, resumed at step {cut} (written by {resumed['world_size']} workers), "
          f"{len(ids)} samples, each of the epoch's {TRAIN_SAMPLES} exactly once", flush=True)


def uninterrupted(hetrain, work):
    """The restart tests' run, never interrupted: `hetrain run -n 3` with the same flags and seed."""
    path = work / "whole.json"
    if not path.exists():
        run([hetrain, "run", "-n", str(WORKERS), *FLAGS, *SLOW, "--checkpoint", str(work / "whole_ck"),
             "--metrics", str(path)], work, "uninterrupted")
    return json.loads(path.read_text())


def check_same_end(hetrain, work, name, doc, tolerance=0.0):
    """The resumed run's steps (from its checkpoint on) have the losses of the same steps of the uninterrupted
    run: bitwise (tolerance 0) when it resumed on the same number of workers, and so has the final loss and
    the final test accuracy."""
    whole = uninterrupted(hetrain, work)
    got, want = doc["steps"]["loss"], whole["steps"]["loss"]
    cut = doc["resumed_from"]["step"]
    if len(want) != TRAIN_SAMPLES // BATCH or len(got) != len(want) - cut:
        fail(f"{name}: {len(got)} steps after resuming at step {cut}; the uninterrupted run has {len(want)}")
    if tolerance == 0.0 and doc["allocation"] != whole["allocation"][cut:]:
        fail(f"{name}: resumed on the same workers, but its splits differ from the uninterrupted run's")
    worst = max(abs(g - w) / abs(w) for g, w in zip(got, want[cut:]))
    if worst > tolerance:
        first = next(i for i, (g, w) in enumerate(zip(got, want[cut:])) if abs(g - w) > tolerance * abs(w))
        fail(f"{name}: step {cut + first}'s loss {got[first]!r} differs from the uninterrupted run's "
             f"{want[cut + first]!r} (largest relative gap {worst:.3g}, allowed {tolerance:g}); final loss "
             f"{got[-1]!r} vs {want[-1]!r}")
    acc, want_acc = doc["epochs"][-1]["test_accuracy"], whole["epochs"][-1]["test_accuracy"]
    if tolerance == 0.0 and acc != want_acc:
        fail(f"{name}: final test accuracy {acc} differs from the uninterrupted run's {want_acc}")
    how = "bitwise" if tolerance == 0.0 else f"within {worst:.2g} relative (allowed {tolerance:g})"
    print(f"ok: {name}: steps {cut}-{len(want) - 1} after the resume have the uninterrupted run's losses "
          f"{how}; final loss {got[-1]:.9g} vs {want[-1]:.9g}", flush=True)


def restart_run(hetrain, work, name, cmd_of, victim_of):
    prefix, ck = work / f"{name}_samples", work / f"{name}_ck"
    metrics = work / f"{name}.json"
    args = ["worker", *FLAGS, *SLOW, "--checkpoint", str(ck), "--sample-log", str(prefix),
            "--metrics", str(metrics)]
    log = work / f"{name}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd_of(args), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_and_kill(proc, lambda: victim_of(proc.pid), prefix, name)
            code = proc.wait(timeout=RUN_LIMIT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            fail(f"{name}: still running {RUN_LIMIT} s after the kill\n{log.read_text()[-3000:]}")
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    if code != 0:
        fail(f"{name}: exit code {code} after the restart\n{log.read_text()[-3000:]}")
    _, doc = final_loss(metrics)
    check_exactly_once(prefix, doc, name)
    check_same_end(hetrain, work, name, doc)
    return doc


def mode_torchrun_restart(hetrain, work):
    port = free_port()
    restart_run(hetrain, work, "torchrun_restart",
                lambda args: [*TORCHRUN, "--nproc_per_node", str(WORKERS), "--max_restarts", "1",
                              "--master_addr", "127.0.0.1", "--master_port", str(port),
                              "--log_dir", str(work / "logs"), "--no_python", hetrain, *args],
                lambda root: [hetrain_worker(hetrain, root, 1)])


def mode_run_restart(hetrain, work):
    def cmd_of(args):
        return [hetrain, "run", "-n", str(WORKERS), "--max-restarts", "1", *args[1:]]
    restart_run(hetrain, work, "run_restart", cmd_of, lambda root: [hetrain_worker(hetrain, root, 2)])


def mode_torchrun_elastic(hetrain, work):
    """Three torchrun agents (three 'nodes' of one worker each), --nnodes 2:3;
    the third node dies, agent and worker, and never comes back."""
    port = free_port()
    name = "torchrun_elastic"
    prefix, ck, metrics = work / f"{name}_samples", work / f"{name}_ck", work / f"{name}.json"
    args = ["worker", *FLAGS, *SLOW, "--checkpoint", str(ck), "--sample-log", str(prefix),
            "--metrics", str(metrics)]
    agents, logs = [], []
    try:
        for node in range(WORKERS):
            logs.append(open(work / f"{name}{node}.log", "w"))
            cmd = [*TORCHRUN, "--nnodes", "2:3", "--nproc_per_node", "1", "--max_restarts", "1",
                   "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{port}", "--rdzv_id", f"el{port}",
                   # Node 0 hosts the rendezvous store: left to whichever agent binds first, the node
                   # killed below could host it on a slow machine, and the survivors lose the store.
                   "--rdzv_conf", f"join_timeout=60,last_call_timeout={LAST_CALL},is_host={int(node == 0)}",
                   "--log_dir", str(work / f"logs{node}"),
                   "--no_python", hetrain, *args]
            agents.append(subprocess.Popen(cmd, stdout=logs[-1], stderr=subprocess.STDOUT,
                                           start_new_session=True))
        dead = agents[2]
        wait_and_kill(dead, lambda: [dead.pid] + descendants(dead.pid), prefix, name)
        for node in (0, 1):
            code = agents[node].wait(timeout=RUN_LIMIT)
            if code != 0:
                fail(f"{name}: node {node}'s torchrun exited {code}\n"
                     f"{(work / f'{name}{node}.log').read_text()[-3000:]}")
    except subprocess.TimeoutExpired:
        fail(f"{name}: still running {RUN_LIMIT} s after the kill")
    finally:
        for a in agents:
            if a.poll() is None:
                os.killpg(a.pid, signal.SIGKILL)
        for f in logs:
            f.close()
    _, doc = final_loss(metrics)
    if doc["world_size"] != 2:
        fail(f"{name}: finished on {doc['world_size']} workers, expected 2")
    if doc.get("resumed_from", {}).get("world_size") != WORKERS:
        fail(f"{name}: the first group was not of 3 nodes: resumed_from={doc.get('resumed_from')}")
    check_exactly_once(prefix, doc, name)
    check_same_end(hetrain, work, name, doc, RESHAPED_TOLERANCE)
    print(f"ok: {name}: finished on 2 nodes after losing the third", flush=True)


# --- junk on the store port -------------------------------------------------

PARTIAL_TIMEOUT = 10  # the workers' --timeout in the half-request phase, seconds
EXIT_GRACE = 20       # on top of it: the connect watch's 10 s grace (docs/errors.md), start-up, teardown; seconds


def junk_run(hetrain, work, name, flags, junk, port=None):
    """A `hetrain run -n 3` on a known port while `junk(port, rng, held)`
    is called every 20 ms; returns (exit code, stderr, seconds, held)."""
    port = port or free_port()
    cmd = [hetrain, "run", "-n", str(WORKERS), "--master-port", str(port), *flags,
           "--metrics", str(work / f"{name}.json")]
    rng, held = random.Random(18), []
    start = time.monotonic()
    with open(work / f"{name}.log", "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, text=True, start_new_session=True)
        while proc.poll() is None and time.monotonic() - start < RUN_LIMIT:
            try:
                junk(port, rng, held)
            except OSError:
                pass  # not listening yet, or it closed us: both fine
            time.sleep(0.02)
        try:
            _, err = proc.communicate(timeout=max(1, RUN_LIMIT - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            fail(f"{name}: the run hung past {RUN_LIMIT} s")
    for s in held:
        s.close()
    return proc.returncode, err, time.monotonic() - start, len(held)


def random_bytes_or_silence(port, rng, held):
    s = socket.create_connection(("127.0.0.1", port), timeout=1)
    if rng.random() < 0.5:
        s.sendall(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 512))))
        s.close()
    else:
        held.append(s)  # half-open: connected and silent until the run ends


def half_request(port, rng, held):
    if len(held) < 8:
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
        s.sendall(bytes([rng.randint(0, 8)]) + bytes(rng.getrandbits(8) for _ in range(3)))
        held.append(s)  # a request cut short, then silence


def mode_store_fuzz(hetrain, work):
    """Junk on the store's port while a run trains. Random bytes and silent
    connections: the run finishes unharmed, with the same loss. Requests cut
    short and held open (they stall c10d's one-threaded store server): the
    run finishes, or fails with `hetrain: error:` lines only, within its
    --timeout plus start-up; it never hangs."""
    code, err, secs, held = junk_run(hetrain, work, "junk", [*FLAGS, "--sample-cost-ms", "2"],
                                     random_bytes_or_silence)
    if code != 0:
        fail(f"store fuzz: random bytes and silent connections broke the run (exit {code}):\n{err[-3000:]}")
    loss, doc = final_loss(work / "junk.json")
    check_same_loss("store fuzz (random bytes, silent connections)", loss, reference(hetrain, work), doc=doc)
    print(f"ok: store fuzz: unharmed by random bytes and {held} silent connections ({secs:.1f} s)")
    flags = [f if f != "30" else str(PARTIAL_TIMEOUT) for f in FLAGS]  # --timeout
    code, err, secs, held = junk_run(hetrain, work, "partial", flags, half_request)
    lines = [l for l in err.splitlines() if l.strip()]
    if secs > PARTIAL_TIMEOUT + EXIT_GRACE:
        fail(f"store fuzz: {secs:.1f} s with half requests held open (--timeout {PARTIAL_TIMEOUT})")
    if code != 0 and (not lines or any(not l.startswith("hetrain: error: ") for l in lines)):
        fail(f"store fuzz: exit {code} without clear error lines:\n{err[-3000:]}")
    outcome = "finished" if code == 0 else f"failed ({code}): {' | '.join(lines)}"
    print(f"ok: store fuzz: {held} half requests held open: {outcome} in {secs:.1f} s")
    second_job(hetrain, work)


def second_job(hetrain, work):
    """A second `hetrain run` on a running job's port: it fails with clear
    lines within its timeout, and the first job finishes with its loss."""
    port = free_port()
    second = {}

    def start_second_once_listening(port, rng, held):
        if second:
            return
        socket.create_connection(("127.0.0.1", port), timeout=1).close()  # raises until it listens
        cmd = [hetrain, "run", "-n", str(WORKERS), "--master-port", str(port),
               *[f if f != "30" else str(PARTIAL_TIMEOUT) for f in FLAGS]]
        second["start"] = time.monotonic()
        second["result"] = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_LIMIT)
        second["secs"] = time.monotonic() - second["start"]

    # Slow steps (about 10 s of training): the second job starts and fails
    # while the first still holds the port.
    code, err, secs, _ = junk_run(hetrain, work, "first_job", [*FLAGS, "--sample-cost-ms", "15"],
                                  start_second_once_listening, port=port)
    if code != 0:
        fail(f"store fuzz: a second job on its port broke the first (exit {code}):\n{err[-3000:]}")
    loss, doc = final_loss(work / "first_job.json")
    check_same_loss("store fuzz (a second job on the port)", loss, reference(hetrain, work), doc=doc)
    if "result" not in second:
        fail("store fuzz: the second job never started")
    r = second["result"]
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    if r.returncode == 0 or not lines or any(not l.startswith("hetrain: error: ") for l in lines) or \
            "already in use" not in r.stderr:
        fail(f"store fuzz: the second job on the same port: exit {r.returncode}, stderr:\n{r.stderr[-3000:]}")
    if second["secs"] > PARTIAL_TIMEOUT + EXIT_GRACE:
        fail(f"store fuzz: the second job took {second['secs']:.1f} s to fail")
    print(f"ok: store fuzz: a second job on the port failed in {second['secs']:.1f} s ({lines[0]}); "
          f"the first finished unharmed")


# --- Slurm ------------------------------------------------------------------

def mode_slurm(hetrain, work):
    ref = reference(hetrain, work)
    sbatch_script = Path(__file__).resolve().parents[2] / "examples" / "slurm.sbatch"
    with SlurmCluster(work, fail, free_port) as cluster:
        # More tasks than CPUs need --overcommit, or the job waits forever.
        env = {k: v for k, v in cluster.env.items() if k not in ("MASTER_ADDR", "MASTER_PORT")}
        run(["srun", "--overcommit", "-n", str(WORKERS), hetrain, "worker", *FLAGS,
             "--metrics", str(work / "srun.json")], work, "srun", env=env)
        loss, doc = final_loss(work / "srun.json")
        check_same_loss("srun -n 3", loss, ref, doc=doc)
        env["HETRAIN"] = hetrain
        run(["sbatch", "--wait", "--overcommit", "-n", str(WORKERS), f"--output={work}/sbatch.out",
             str(sbatch_script), *FLAGS, "--metrics", str(work / "sbatch.json")], work, "sbatch", env=env)
        loss, doc = final_loss(work / "sbatch.json")
        check_same_loss("sbatch examples/slurm.sbatch", loss, ref, doc=doc)


MODES = {
    "torchrun-static": mode_torchrun_static,
    "torchrun-c10d": mode_torchrun_c10d,
    "mpirun": mode_mpirun,
    "torchrun-restart": mode_torchrun_restart,
    "run-restart": mode_run_restart,
    "torchrun-elastic": mode_torchrun_elastic,
    "store-fuzz": mode_store_fuzz,
    "slurm": mode_slurm,
}


def run_modes(modes, doc):
    """The command line of a test script with modes: --hetrain BIN --work DIR MODE; MODE runs in DIR/MODE."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("mode", choices=sorted(modes))
    a = ap.parse_args()
    work = Path(a.work) / a.mode
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    modes[a.mode](os.path.abspath(a.hetrain), work)


if __name__ == "__main__":
    run_modes(MODES, __doc__)

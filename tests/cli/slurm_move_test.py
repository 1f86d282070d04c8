#!/usr/bin/env python3
"""Moving a batch job through Slurm's own commands, as a controller would
(docs/scheduling.md, "Running plans on Slurm"): `sbatch` a job whose script
resumes from its checkpoint folder when one is there, stop it mid-epoch with
`scancel --signal=TERM JOB` (its tasks stop after a step with a checkpoint,
exit code 6), learn its end without sacct (squeue, then `scontrol show job`),
and submit it again on another number of workers: the second job resumes, and
across both every sample of the epoch is used once and the final loss is the
uninterrupted run's (relative tolerance in slurm_preempt_test.py). Then a
plain `scancel JOB` (Slurm's own cancel and preemption): stopped after a step
with a checkpoint too.

Real daemons: a one-node Slurm the test starts and stops (launchers_test.py).
Usage: slurm_move_test.py --hetrain BIN --work DIR
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from launchers_test import SlurmCluster, fail, free_port, logged_steps
from slurm_preempt_test import (CROSS_WORLD_TOLERANCE, FLAGS, KILL_WAIT, SIGNAL_AFTER_STEP, STOPPED,
                                check_exactly_once, checkpoint_step, compare, run_to_end)

POLL = 0.2          # seconds between squeue polls
JOB_LIMIT = 240     # seconds a job may take from submission to its end
COMMAND_LIMIT = 30  # seconds any Slurm command may take

# What a controller submits: the job's training flags, a checkpoint folder
# every node sees, and --resume when that folder holds a checkpoint.
SCRIPT = """#!/bin/bash
set -euo pipefail
ck={ck}
resume=()
if [ -f "$ck/checkpoint.pt" ]; then resume=(--resume "$ck"); fi
exec srun {hetrain} worker "$@" --checkpoint "$ck" "${{resume[@]}}"
"""


def slurm(env, *cmd):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=COMMAND_LIMIT)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)}: exit code {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def submit(env, work, name, tasks, script, *flags):
    out = slurm(env, "sbatch", "--parsable", "--overcommit", "-n", str(tasks), f"--job-name={name}",
                f"--output={work}/{name}.out", str(script), *flags)
    return out.strip().split(";")[0]


def wait_end(env, job):
    """Seconds until `job` leaves squeue, and its exit code from scontrol."""
    t0 = time.monotonic()
    while slurm(env, "squeue", "-h", "-j", job, "-o", "%i").strip():
        if time.monotonic() - t0 > JOB_LIMIT:
            fail(f"job {job} still in squeue after {JOB_LIMIT} s")
        time.sleep(POLL)
    seconds = time.monotonic() - t0
    m = re.search(r"\bExitCode=(\d+):(\d+)", slurm(env, "scontrol", "show", "job", job))
    if m is None:
        fail(f"scontrol show job {job}: no ExitCode")
    return seconds, int(m.group(1))


def cancel_plainly(env, work, hetrain):
    """Slurm's own cancel (what preemption with PreemptMode=CANCEL does):
    SIGTERM to every process of the job, SIGKILL after KillWait. The run
    still stops after a step with its checkpoint written."""
    ck = work / "ck_cancel"
    script = work / "job_cancel.sh"
    script.write_text(SCRIPT.format(ck=ck, hetrain=hetrain))
    script.chmod(0o755)
    job = submit(env, work, "cancelled", 3, script, *FLAGS, "--sample-log", str(work / "cancelled_samples"))
    deadline = time.monotonic() + JOB_LIMIT
    while logged_steps(work / "cancelled_samples") < SIGNAL_AFTER_STEP:
        if time.monotonic() > deadline:
            fail(f"job {job} did not reach step {SIGNAL_AFTER_STEP}")
        time.sleep(POLL / 4)
    slurm(env, "scancel", job)
    seconds, code = wait_end(env, job)
    out = (work / "cancelled.out").read_text()
    if not (ck / "checkpoint.pt").is_file() or "stopped on request" not in out or seconds >= KILL_WAIT:
        fail(f"plain scancel {job}: after {seconds:.1f} s, checkpoint: {(ck / 'checkpoint.pt').is_file()}:\n{out[-3000:]}")
    print(f"ok: plain scancel {job} after step {SIGNAL_AFTER_STEP}: out of squeue in {seconds:.2f} s "
          f"(ExitCode {code}), checkpoint written", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    hetrain, work = os.path.abspath(a.hetrain), Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ref, ck = work / "ref.json", work / "ck"
    run_to_end([hetrain, "run", "-n", "3", *FLAGS, "--metrics", str(ref)], work, "uninterrupted")
    script = work / "job.sh"
    script.write_text(SCRIPT.format(ck=ck, hetrain=hetrain))
    script.chmod(0o755)
    with SlurmCluster(work, fail, free_port) as cluster:
        env = {k: v for k, v in cluster.env.items() if k not in ("MASTER_ADDR", "MASTER_PORT")}
        first = submit(env, work, "first", 3, script, *FLAGS, "--sample-log", str(work / "first_samples"))
        deadline = time.monotonic() + JOB_LIMIT
        while logged_steps(work / "first_samples") < SIGNAL_AFTER_STEP:
            if time.monotonic() > deadline:
                fail(f"job {first} did not reach step {SIGNAL_AFTER_STEP}:\n{(work / 'first.out').read_text()}")
            time.sleep(POLL / 4)
        slurm(env, "scancel", "--signal=TERM", first)
        seconds, code = wait_end(env, first)
        if code != STOPPED or seconds >= KILL_WAIT:
            fail(f"job {first}: exit code {code} after {seconds:.1f} s, expected {STOPPED} within {KILL_WAIT} s:\n"
                 f"{(work / 'first.out').read_text()[-3000:]}")
        if not (ck / "checkpoint.pt").is_file():
            fail(f"job {first} stopped without a checkpoint in {ck}")
        print(f"ok: scancel --signal=TERM {first} after step {SIGNAL_AFTER_STEP}: out of squeue in {seconds:.2f} s, "
              f"exit code {code}, checkpoint written", flush=True)
        second = submit(env, work, "second", 2, script, *FLAGS, "--sample-log", str(work / "second_samples"),
                        "--metrics", str(work / "second.json"))
        seconds, code = wait_end(env, second)
        if code != 0:
            fail(f"job {second} (the resubmission): exit code {code}:\n{(work / 'second.out').read_text()[-3000:]}")
        print(f"ok: resubmitted as {second} on 2 workers: ended with exit code 0 in {seconds:.1f} s", flush=True)
        cancel_plainly(env, work, hetrain)
    cut = checkpoint_step(json.loads((work / "second.json").read_text()))
    check_exactly_once([(work / "first_samples", 0, cut), (work / "second_samples", cut, None)],
                       "sbatch 3 -> scancel --signal=TERM -> sbatch 2")
    compare("sbatch 3 -> sbatch 2", work / "second.json", ref, CROSS_WORLD_TOLERANCE)


if __name__ == "__main__":
    main()

"""Slurm for the tests, every file under the test's work folder and nothing in /etc touched: the one slurm.conf
template, munged, and the one-node cluster of tests/cli/launchers_test.py (mode slurm) and
slurm_preempt_test.py (mode srun). tests/pool/pool_slurm_test.py builds its multi-node cluster on the same
parts. A test that uses them turns SIGTERM, SIGINT and its own overall limit into an exception
(exit_on_signals), so that its cluster's __exit__ stops every daemon whatever ends it."""
import os
import shutil
import signal
import socket
import subprocess
import time

# What every test cluster shares; `specific` adds the host, ports, per-node
# files, nodes and partition.
SLURM_CONF = """ClusterName={name}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={work}/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
StateSaveLocation={work}/state
SlurmctldPidFile={work}/slurmctld.pid
SlurmctldLogFile={work}/slurmctld.log
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
{specific}
"""
SLURM_UP_LIMIT = 60  # seconds for the one-node cluster to report its node idle
STOP_LIMIT = 10      # seconds a daemon gets to end after SIGTERM, then after SIGKILL


def write_conf(work, name, specific):
    """work/slurm.conf and its folders; the munge key beside it. Returns (conf, key)."""
    for d in ("state", "spool"):
        (work / d).mkdir(parents=True)
    work.chmod(0o755)
    key = work / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = work / "slurm.conf"
    conf.write_text(SLURM_CONF.format(name=name, work=work, specific=specific))
    return conf, key


def munged(work, key):
    """munged in the foreground, its socket, pid and log in `work`."""
    return ["munged", "-F", "--force", f"--socket={work}/munge.sock", f"--key-file={key}",
            f"--log-file={work}/munged.log", f"--pid-file={work}/munged.pid", f"--seed-file={work}/munged.seed"]


def stop_all(procs):
    """SIGTERM, then SIGKILL for whatever has not ended within STOP_LIMIT; every wait bounded."""
    for p in reversed(procs):
        if p.poll() is None:
            p.terminate()
    for p in reversed(procs):
        try:
            p.wait(timeout=STOP_LIMIT)
        except subprocess.TimeoutExpired:
            p.kill()
            try:
                p.wait(timeout=STOP_LIMIT)
            except subprocess.TimeoutExpired:
                pass  # unkillable (in the kernel): nothing more a test can do


def exit_on_signals(limit_seconds=None):
    """SIGTERM, SIGINT and an overall limit if given (SIGALRM, below CTest's TIMEOUT, which kills with SIGKILL
    and leaves nothing a chance to clean up) raise SystemExit in the main thread: `with` blocks clean up."""
    def on_signal(sig, _frame):
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):
            signal.signal(s, signal.SIG_IGN)  # the clean-up itself is not cut short
        why = "its time limit" if sig == signal.SIGALRM else signal.Signals(sig).name
        print(f"FAILED: stopped by {why}; stopping the cluster", flush=True)
        raise SystemExit(1)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):
        signal.signal(s, on_signal)
    if limit_seconds:
        signal.alarm(int(limit_seconds))


class SlurmCluster:
    """A one-node Slurm (munged, slurmctld, slurmd in the foreground), all of
    its files under `work`: nothing in /etc is touched, and every daemon is
    stopped on exit."""

    def __init__(self, work, fail, free_port):
        self.work = work / "slurm"
        self.procs = []
        self.fail, self.free_port = fail, free_port  # the calling test's

    def __enter__(self):
        w = self.work
        host = socket.gethostname()
        specific = (f"SlurmctldHost={host}\nSlurmctldPort={self.free_port()}\nSlurmdPort={self.free_port()}\n"
                    f"SlurmdSpoolDir={w}/spool\nSlurmdPidFile={w}/slurmd.pid\nSlurmdLogFile={w}/slurmd.log\n"
                    f"NodeName={host} CPUs={os.cpu_count()} State=UNKNOWN\n"
                    f"PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES")
        conf, key = write_conf(w, "hetrain", specific)
        exit_on_signals()  # SIGTERM, SIGINT: __exit__ still stops the daemons
        self.env = {**os.environ, "SLURM_CONF": str(conf)}
        try:
            self.start(munged(w, key))
            time.sleep(0.5)
            self.start(["slurmctld", "-D", "-f", str(conf)])
            self.start(["slurmd", "-D", "-f", str(conf)])
            self.wait_up()
        except BaseException:
            self.__exit__()
            raise
        return self

    def wait_up(self):
        deadline = time.monotonic() + SLURM_UP_LIMIT
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True, text=True,
                                   timeout=SLURM_UP_LIMIT)
            if state.stdout.strip() == "idle":
                return
            time.sleep(0.5)
        logs = "".join(f.read_text()[-1500:] for f in self.work.glob("*.log"))
        self.fail(f"slurm: the one-node cluster did not come up in {SLURM_UP_LIMIT} s "
                  f"(sinfo: {state.stdout.strip()} {state.stderr.strip()})\n{logs}")

    def start(self, cmd):
        if shutil.which(cmd[0]) is None:
            self.fail(f"slurm: {cmd[0]} not found (scripts/setup.sh --test installs slurm-wlm and munge)")
        self.procs.append(subprocess.Popen(cmd, env=getattr(self, "env", None), stdout=subprocess.DEVNULL,
                                           stderr=open(self.work / f"{cmd[0]}.err", "w")))

    def __exit__(self, *exc):
        stop_all(self.procs)

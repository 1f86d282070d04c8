"""A one-node Slurm cluster for tests/cli/launchers_test.py (mode slurm): munged, slurmctld and slurmd in
the foreground, every file under the test's work folder."""
import os
import shutil
import socket
import subprocess
import time


SLURM_CONF = """ClusterName=hetrain
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={work}/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
StateSaveLocation={work}/state
SlurmdSpoolDir={work}/spool
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/slurmctld.log
SlurmdLogFile={work}/slurmd.log
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""
SLURM_UP_LIMIT = 60  # seconds for the one-node cluster to report its node idle


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
        for d in ("state", "spool"):
            (w / d).mkdir(parents=True)
        w.chmod(0o755)
        key = w / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        conf = w / "slurm.conf"
        conf.write_text(SLURM_CONF.format(host=socket.gethostname(), work=w, ctld_port=self.free_port(),
                                          d_port=self.free_port(), cpus=os.cpu_count()))
        self.env = {**os.environ, "SLURM_CONF": str(conf)}
        self.start(["munged", "-F", "--force", f"--socket={w}/munge.sock", f"--key-file={key}",
                    f"--log-file={w}/munged.log", f"--pid-file={w}/munged.pid", f"--seed-file={w}/munged.seed"])
        time.sleep(0.5)
        self.start(["slurmctld", "-D", "-f", str(conf)])
        self.start(["slurmd", "-D", "-f", str(conf)])
        deadline = time.monotonic() + SLURM_UP_LIMIT
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True, text=True)
            if state.stdout.strip() == "idle":
                return self
            time.sleep(0.5)
        logs = "".join(f.read_text()[-1500:] for f in w.glob("*.log"))
        self.fail(f"slurm: the one-node cluster did not come up in {SLURM_UP_LIMIT} s "
             f"(sinfo: {state.stdout.strip()} {state.stderr.strip()})\n{logs}")

    def start(self, cmd):
        if shutil.which(cmd[0]) is None:
            self.fail(f"slurm: {cmd[0]} not found (scripts/setup.sh --test installs slurm-wlm and munge)")
        self.procs.append(subprocess.Popen(cmd, env=getattr(self, "env", None), stdout=subprocess.DEVNULL,
                                           stderr=open(self.work / f"{cmd[0]}.err", "w")))

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()

"""A cgroup CPU quota for one benchmark worker: real heterogeneity, not emulated.

cgroup v1 (a `cpu` controller mount: cpu.cfs_period_us / cpu.cfs_quota_us) or
v2 (a cgroup2 mount whose cgroup.controllers lists `cpu`: cpu.max), whichever
the machine has, v1 first. Needs root. bench/launch_local.sh moves the worker
into the cgroup's cgroup.procs (the same file in both versions).
"""
import os

NAME = "hetrain_bench"
PERIOD_US = 100000  # the scheduler's quota period, microseconds (the kernel's default)


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _find_cpu_controller():
    """("v1", mount) or ("v2", mount) of a hierarchy with the cpu controller, or None."""
    v2 = None
    with open("/proc/mounts") as f:
        for line in f:
            _, mount, fstype, opts = line.split()[:4]
            if fstype == "cgroup" and "cpu" in opts.split(","):
                return "v1", mount
            if fstype == "cgroup2" and v2 is None:
                try:
                    with open(os.path.join(mount, "cgroup.controllers")) as c:
                        if "cpu" in c.read().split():
                            v2 = ("v2", mount)
                except OSError:
                    pass
    return v2


class CpuQuota:
    def __init__(self, cpus):
        self.cpus = cpus
        self.path = ""

    def up(self):
        """Creates the cgroup with its quota; raises SystemExit saying why it cannot."""
        if os.geteuid() != 0:
            raise SystemExit("allocation_bench: the cgroup scenario needs root (it creates a cgroup with a CPU "
                             "quota); run as root or leave it out of --scenarios")
        found = _find_cpu_controller()
        if found is None:
            raise SystemExit("allocation_bench: no cgroup cpu controller mounted (v1 `cpu` or v2 with `cpu` in "
                             "cgroup.controllers); leave the cgroup scenario out of --scenarios")
        version, mount = found
        self.path = os.path.join(mount, NAME)
        quota_us = int(self.cpus * PERIOD_US)
        try:
            if version == "v2":
                _write(os.path.join(mount, "cgroup.subtree_control"), "+cpu")
            os.makedirs(self.path, exist_ok=True)
            if version == "v1":
                _write(os.path.join(self.path, "cpu.cfs_period_us"), str(PERIOD_US))
                _write(os.path.join(self.path, "cpu.cfs_quota_us"), str(quota_us))
            else:
                _write(os.path.join(self.path, "cpu.max"), f"{quota_us} {PERIOD_US}")
        except OSError as e:
            raise SystemExit(f"allocation_bench: cannot set a CPU quota in {self.path} (cgroup {version}): {e}")

    def stat(self):
        """cpu.stat as a dict: nr_periods, nr_throttled (v1 and v2), throttled_time ns (v1), throttled_usec (v2)."""
        with open(os.path.join(self.path, "cpu.stat")) as f:
            return {key: int(value) for key, value in (line.split() for line in f if line.strip())}

    def throttled_periods(self):
        """How many quota periods so far ended with the cgroup throttled (cpu.stat's nr_throttled, v1 and v2)."""
        return self.stat().get("nr_throttled", 0)

    def down(self):
        """Removes the cgroup (its workers have exited)."""
        if self.path and os.path.isdir(self.path):
            try:
                os.rmdir(self.path)
            except OSError as e:
                print(f"allocation_bench: could not remove {self.path}: {e}")

"""The scenarios of bench/allocation_bench.py and the worker flags that emulate them (no processes here).

A scenario's speed changes are events (rank, fraction of the steps, new speed): `--slowdown
RANK@STEP:SPEED,...` for hetrain and the DDP peer alike, STEP = round(fraction x steps).
"""
from dataclasses import dataclass

LR = "2e-3"                # Adam, constant: the same for hetrain and DDP
SLOWDOWN_AT = 0.4          # a mid-run slowdown starts after this fraction of the steps
SLOWDOWN_FACTOR = 4.0      # and makes the worker this many times slower
# recovery: three of four workers 4x slower from 20% of the steps, back to full speed at 50%, so half the
# run follows the recovery (the held-out run of issue 26 that adaptive did not follow).
RECOVERY_SLOW_AT, RECOVERY_AT, RECOVERY_RANKS = 0.2, 0.5, (1, 2, 3)
# Its global batch: large enough that a split left behind costs more than the noise. A cnn worker's step on
# the 2 shared cores is roughly 11 ms + 0.14 ms per sample (docs/benchmarks.md, cpu-slow), so after the
# recovery a split stuck at 90% on one worker takes about 11 + 0.9 B x 0.14 ms against equal's two workers per
# core, 2 x (11 + B / 4 x 0.14): 1.08x equal's step at B = 256, 1.3x at 512.
RECOVERY_BATCH = 512


@dataclass(frozen=True)
class Scenario:
    name: str
    model: str                  # mlp | cnn | resnet | script (the exported TorchScript mlp)
    batch: int
    steps: int
    speeds: tuple               # true relative speeds at the start (static's shares)
    sample_cost_ms: float = 0.0
    events: tuple = ()          # ((rank, fraction of the steps, new speed), ...): mid-run speed changes
    cgroup_rank: int = -1       # -1: none; else this rank runs under the CPU quota (speeds not emulated)
    follow_limit: int = 0       # steps within which the split should follow the last change (shown, not checked)

    @property
    def workers(self):
        return len(self.speeds)

    def event_steps(self, steps):
        """((rank, step, speed), ...) of the events in a run of `steps` steps."""
        return tuple((rank, round(at * steps), speed) for rank, at, speed in self.events)

    def change_step(self, steps):
        """The step of the last speed change (None without events): the metrics after a change start there."""
        return max((step for _, step, _ in self.event_steps(steps)), default=None)

    def speeds_after(self):
        """True speeds after every event."""
        s = list(self.speeds)
        for rank, _, speed in sorted(self.events, key=lambda e: e[1]):
            s[rank] = speed
        return s

    def emulation(self):
        """In words, how the heterogeneity is made (for the legend)."""
        how = []
        if self.cgroup_rank >= 0:
            how.append(f"rank {self.cgroup_rank} in a cgroup CPU quota")
        elif min(self.speeds) < 1:
            how.append("--speeds")
        how.append(f"--sample-cost-ms {self.sample_cost_ms:g}" if self.sample_cost_ms else "host CPUs")
        return how


def slowdown(rank, speeds):
    """One event: `rank` SLOWDOWN_FACTOR x slower from SLOWDOWN_AT of the steps."""
    return ((rank, SLOWDOWN_AT, speeds[rank] / SLOWDOWN_FACTOR),)


SLOW = (1, 1, 1, 0.25)
MIXED6 = (1, 0.8, 0.5, 0.5, 1, 0.3)
RECOVERY = (tuple((r, RECOVERY_SLOW_AT, 1 / SLOWDOWN_FACTOR) for r in RECOVERY_RANKS)
            + tuple((r, RECOVERY_AT, 1.0) for r in RECOVERY_RANKS))
# The emulated devices' cost per sample (ms at speed 1), device's and mixed6-device's alike: the device's time
# dominates the step (mixed6-device: 384 / 4.1 = 94 ms per worker balanced against a few ms of mlp on the host).
DEVICE_COST_MS = 1.0
SCENARIOS = [
    Scenario("identical", "cnn", 256, 60, (1, 1, 1, 1)),
    Scenario("cpu-slow", "cnn", 256, 60, SLOW),
    Scenario("cgroup", "script", 256, 100, SLOW, cgroup_rank=3),
    Scenario("device", "mlp", 64, 100, SLOW, sample_cost_ms=DEVICE_COST_MS),
    Scenario("device-slow", "mlp", 64, 100, SLOW, sample_cost_ms=DEVICE_COST_MS, events=slowdown(1, SLOW),
             follow_limit=5),
    Scenario("mixed6", "mlp", 384, 100, MIXED6, events=slowdown(1, MIXED6), follow_limit=10),
    Scenario("mixed6-device", "mlp", 384, 100, MIXED6, sample_cost_ms=DEVICE_COST_MS,
             events=slowdown(1, MIXED6), follow_limit=10),
    Scenario("recovery", "cnn", RECOVERY_BATCH, 60, (1, 1, 1, 1), events=RECOVERY),
    Scenario("commbound", "resnet", 16, 40, SLOW),
]
BY_NAME = {sc.name: sc for sc in SCENARIOS}


def scenario_from_dict(d):
    """A Scenario from its __dict__ in a --json file, as that run defined it (a file of the one-binary version
    of the bench has slowdown_rank instead of events)."""
    d = dict(d)
    rank = d.pop("slowdown_rank", -1)
    if rank >= 0:
        d["events"] = slowdown(rank, d["speeds"])
    d["speeds"] = tuple(d["speeds"])
    d["events"] = tuple(tuple(e) for e in d.get("events", ()))
    return Scenario(**d)


def csv(values):
    return ",".join(f"{v:g}" for v in values)


def emulation_flags(sc, steps):
    """Flags shared by hetrain and the DDP peer: model, batch, steps and the emulated heterogeneity."""
    f = ["-b", str(sc.batch), "--max-steps", str(steps), "--lr", LR]
    if sc.cgroup_rank < 0 and min(sc.speeds) < 1:
        f += ["--speeds", csv(sc.speeds)]
    if sc.sample_cost_ms > 0:
        f += ["--sample-cost-ms", f"{sc.sample_cost_ms:g}"]
    if sc.events:
        f += ["--slowdown", ",".join(f"{rank}@{step}:{speed:g}" for rank, step, speed in sc.event_steps(steps))]
    return f

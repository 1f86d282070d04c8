"""What bench/allocation_bench.py reads from one run's metrics JSON.

A run's document is hetrain's `--metrics` file (README, "Metrics") or
bench/ddp_peer.py's smaller one (no per-step records). Per-step records are
read from `allocation` + `steps.{compute,wait,end}_seconds` (one list per field,
index = step) or from `steps` as a list of per-step objects with `local_batch`,
`compute_seconds`, `wait_seconds`, `end_seconds`, whichever the file has.
"""
import statistics

FOLLOW_TOLERANCE = 0.10   # a worker's share counts as followed within 10% of its target share...
FOLLOW_FLOOR_SAMPLES = 1  # ...or within one sample: integer splits cannot round closer than that
FOLLOW_HOLD_STEPS = 3     # and the split must stay there this many steps: a passing crossing is not following
ROUNDING_SAMPLES = 1      # shares of equal-speed workers one sample apart are the rounding of whole samples


def train_seconds(doc):
    """Training time of the run, evaluation excluded."""
    return sum(e["train_seconds"] for e in doc["epochs"])


def step_field(doc, name):
    """Per step, one value per rank of `name` (local_batch, compute_seconds, wait_seconds); [] if absent."""
    steps = doc.get("steps")
    if isinstance(steps, list):
        return [s[name] for s in steps] if all(name in s for s in steps) else []
    if name == "local_batch":
        return doc.get("allocation", [])
    if isinstance(steps, dict):
        return steps.get(name, [])
    return []


def full_splits(doc, batch):
    """(step, split) of every step that took a full global batch: an epoch's last, shorter batch scales the
    split without the policy moving."""
    return [(k, s) for k, s in enumerate(step_field(doc, "local_batch")) if sum(s) == batch]


def count_moves(splits):
    """(moves, reverts) of a sequence of splits: a move is a change of split; a revert is a move back to the
    split that preceded the previous move."""
    moves = reverts = 0
    history = []  # the distinct splits in the order the policy took them
    for s in splits:
        s = list(s)
        if history and s == history[-1]:
            continue
        if history:
            moves += 1
            if len(history) >= 2 and s == history[-2]:
                reverts += 1
        history.append(s)
    return moves, reverts


def moves_and_reverts(doc, batch):
    """The policy's own counts when the metrics carry them, else counted from the per-step splits."""
    moves, reverts = count_moves(s for _, s in full_splits(doc, batch))
    return doc.get("policy_moves", moves), doc.get("policy_reverts", reverts)


def proportional_split(speeds, batch):
    """The split in proportion to the speeds (real numbers: the target, not a rounding of it)."""
    total = sum(speeds)
    return [batch * s / total for s in speeds]


def within(split, target):
    return all(abs(b - p) <= max(FOLLOW_TOLERANCE * p, FOLLOW_FLOOR_SAMPLES) for b, p in zip(split, target))


def steps_to_follow(splits, target, start):
    """Steps after `start` (the step a worker's speed changed) until the split is within tolerance of `target`
    and stays so for FOLLOW_HOLD_STEPS steps (or to the end of the run); None if it never gets there."""
    for k in range(start, len(splits)):
        if all(within(s, target) for s in splits[k:k + FOLLOW_HOLD_STEPS]):
            return k - start
    return None


def identical_spread(split, speeds):
    """Largest max/min - 1 of the shares among workers of equal true speed (0 if none are equal). Shares one
    sample apart count as 0: a split of whole samples cannot do better (16 over three equal workers is
    6, 5, 5), as in the simulator's property test."""
    groups = {}
    for rank, s in enumerate(speeds):
        groups.setdefault(s, []).append(split[rank])
    spread = 0.0
    for shares in groups.values():
        if len(shares) > 1 and max(shares) - min(shares) > ROUNDING_SAMPLES:
            spread = max(spread, max(shares) / max(min(shares), 1) - 1.0)
    return spread


def ideal_seconds(doc, batch):
    """steps x B / sum_i v_i + comm: v_i worker i's measured compute speed over the run (samples per compute
    second), comm the sum over steps of the last-arriving worker's wait (the allreduce alone)."""
    speed = sum(w["samples"] / w["compute_seconds"] for w in doc["workers"] if w["compute_seconds"] > 0)
    waits = step_field(doc, "wait_seconds")
    comm = sum(min(ws) for ws in waits if ws)
    return len(step_field(doc, "local_batch")) * batch / speed + comm


def step_seconds(doc):
    """Each step's wall time: the difference of consecutive `end_seconds` (rank 0's clock, evaluations left
    out), or, in a file without them, the slowest worker's compute + wait of the step (the step's critical
    path: every worker's compute + wait ends with the same allreduce)."""
    ends = step_field(doc, "end_seconds")
    if ends:
        return [e - p for p, e in zip([0.0] + ends[:-1], ends)]
    computes, waits = step_field(doc, "compute_seconds"), step_field(doc, "wait_seconds")
    return [max(c + w for c, w in zip(cs, ws)) for cs, ws in zip(computes, waits)]


def median_step_after(doc, start):
    """Median wall time of the steps from `start` on (the step of a speed change; None if the run has none)."""
    after = step_seconds(doc)[start:]
    return statistics.median(after) if after else None


def max_spread_from(splits, speeds, start):
    """identical_spread's largest value over the splits from `start` on (0 if there are none)."""
    return max((identical_spread(s, speeds) for s in splits[start:]), default=0.0)


def paired_ratios(num, den):
    """num[rep] / den[rep] for every repetition both dicts ({rep: seconds}) hold, in repetition order: runs of
    the same repetition ran side by side, so their ratio cancels the machine's drift between repetitions."""
    return [num[k] / den[k] for k in sorted(num) if k in den and num[k] is not None and den[k]]


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

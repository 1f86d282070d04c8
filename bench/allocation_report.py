"""What bench/allocation_bench.py makes of its runs: one summary per run, medians per cell, the tables.

A cell is a policy run by one binary: "adaptive/new", "adaptive/base" (the --baseline binary), ...; DDP
does not depend on the binary and is one cell, "ddp". The targets are checked in bench/allocation_checks.py.
"""
import math
import statistics

import allocation_stats as stats

HETRAIN_POLICIES = ("equal", "static", "adaptive")
BINARIES = ("new", "base")
NEVER = math.inf  # steps to follow of a run whose split never followed


def cell(policy, binary):
    return "ddp" if policy == "ddp" else f"{policy}/{binary}"


def summarise(sc, policy, binary, rep, steps, doc):
    """One run's raw numbers (the metrics document included) for the tables and --json."""
    r = {"scenario": sc.name, "policy": policy, "binary": None if policy == "ddp" else binary, "rep": rep,
         "steps": steps, "seconds": stats.train_seconds(doc), "test_accuracy": doc["epochs"][-1]["test_accuracy"],
         "metrics": doc}
    if policy == "ddp":
        return r
    splits = stats.step_field(doc, "local_batch")
    moves, reverts = stats.moves_and_reverts(doc, sc.batch)
    computes, waits = stats.step_field(doc, "compute_seconds"), stats.step_field(doc, "wait_seconds")
    r.update(balance_efficiency=doc["balance_efficiency"], moves=moves, reverts=reverts,
             step_compute_ms=1e3 * statistics.median(max(c) for c in computes),
             step_comm_ms=1e3 * statistics.median(min(w) for w in waits),
             ideal_seconds=stats.ideal_seconds(doc, sc.batch), final_split=splits[-1],
             identical_spread=stats.identical_spread(splits[-1], sc.speeds_after()),
             late_spread=stats.max_spread_from(splits, sc.speeds_after(), len(splits) // 2))
    change = sc.change_step(steps)
    if change is not None:
        target = stats.proportional_split(sc.speeds_after(), sc.batch)
        r["follow_steps"] = stats.steps_to_follow(splits, target, change)
        after = stats.median_step_after(doc, change)
        r["after_step_ms"] = None if after is None else 1e3 * after
    return r


def runs_of(runs, sc, name):
    """The runs of one cell of one scenario."""
    return [r for r in runs if r["scenario"] == sc.name and cell(r["policy"], r.get("binary") or "new") == name]


def median_of(runs, sc, name, key):
    return stats.median_or_none([r.get(key) for r in runs_of(runs, sc, name)])


def by_rep(runs, sc, name, key="seconds"):
    return {r["rep"]: r.get(key) for r in runs_of(runs, sc, name)}


def _ratio(x, y):
    return None if x is None or not y else x / y


def cell_summary(runs, sc, name, secs):
    """Medians of one cell; x_equal against the same binary's equal."""
    binary = name.split("/")[1] if "/" in name else None
    out = {"seconds": secs[name], "repetitions": len(runs_of(runs, sc, name)),
           "x_equal": _ratio(secs[name], secs.get(cell("equal", binary or "new"))),
           "x_ddp": _ratio(secs[name], secs.get("ddp"))}
    if binary:
        for key in ("balance_efficiency", "moves", "reverts", "after_step_ms"):
            out[key] = median_of(runs, sc, name, key)
    return out


def scenario_summary(sc, runs):
    """Medians per cell, the new/base ratios per policy, and steps to follow a change."""
    names = [cell(p, b) for p in HETRAIN_POLICIES for b in BINARIES] + ["ddp"]
    secs = {n: median_of(runs, sc, n, "seconds") for n in names}
    out = {"cells": {n: cell_summary(runs, sc, n, secs) for n in names if secs[n] is not None},
           "new_over_base": {}, "ideal_seconds": median_of(runs, sc, "adaptive/new", "ideal_seconds")}
    for p in HETRAIN_POLICIES:
        new, base = cell(p, "new"), cell(p, "base")
        if secs[new] is not None and secs[base] is not None:
            pairs = stats.paired_ratios(by_rep(runs, sc, new), by_rep(runs, sc, base))
            out["new_over_base"][p] = {"ratio": secs[new] / secs[base], "pairs": pairs}
    if sc.events:
        out["follow_steps"] = {}
        for b in BINARIES:
            follow = [r["follow_steps"] for r in runs_of(runs, sc, cell("adaptive", b))]
            if follow:
                median = statistics.median(NEVER if f is None else f for f in follow)
                out["follow_steps"][b] = {"runs": follow, "median": "never" if median == NEVER else median}
    return out


def _fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def print_legend(scenarios, runs):
    print("\n| scenario | workers | model | B | steps | speeds (true, at the start) | emulation | speed changes "
          "(rank@step:speed) | repetitions |")
    print("|---|---|---|---|---|---|---|---|---|")
    for sc in scenarios:
        mine = [r for r in runs if r["scenario"] == sc.name]
        steps = mine[0]["steps"] if mine else sc.steps
        changes = " ".join(f"{r}@{k}:{s:g}" for r, k, s in sc.event_steps(steps)) or "none"
        model = "TorchScript mlp" if sc.model == "script" else sc.model
        print(f"| {sc.name} | {sc.workers} | {model} | {sc.batch} | {steps} | {','.join(f'{s:g}' for s in sc.speeds)}"
              f" | {'; '.join(sc.emulation())} | {changes} | {len({r['rep'] for r in mine})} |")


def print_table(scenarios, summary):
    print("\n| scenario | policy | seconds new | seconds base | new/base | x equal new | x equal base | x DDP new "
          "| efficiency new | efficiency base | moves new | moves base | reverts new | reverts base |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for sc in scenarios:
        s = summary[sc.name]
        for p in HETRAIN_POLICIES + ("ddp",):
            new, base = s["cells"].get(cell(p, "new"), {}), s["cells"].get(cell(p, "base"), {})
            if not new and not base:
                continue
            ratio = s["new_over_base"].get(p, {}).get("ratio")
            cols = [_fmt(new.get("seconds")), _fmt(base.get("seconds")), _fmt(ratio, ".3f"),
                    _fmt(new.get("x_equal")), _fmt(base.get("x_equal")), _fmt(new.get("x_ddp"))]
            for key, spec in (("balance_efficiency", ".3f"), ("moves", "g"), ("reverts", "g")):
                cols += [_fmt(new.get(key), spec), _fmt(base.get(key), spec)]
            print(f"| {sc.name} | {p} | " + " | ".join(cols) + " |")


def _pairs_text(pairs):
    return " ".join(f"{x:.3f}" for x in pairs) + (f" (median {statistics.median(pairs):.3f})" if pairs else "-")


def print_details(scenarios, runs, summary):
    print("\nPer scenario, each ratio of runs of the same repetition (they ran side by side):")
    for sc in scenarios:
        s, parts = summary[sc.name], []
        for b in BINARIES:
            pairs = stats.paired_ratios(by_rep(runs, sc, cell("adaptive", b)), by_rep(runs, sc, cell("equal", b)))
            adaptive = runs_of(runs, sc, cell("adaptive", b))
            if pairs:
                parts.append(f"adaptive/equal ({b}) {_pairs_text(pairs)}")
            if adaptive:
                parts.append(f"{b} adaptive's moves {[r['moves'] for r in adaptive]}, reverts "
                             f"{[r['reverts'] for r in adaptive]}, final split (last repetition) "
                             f"{adaptive[-1]['final_split']}, largest spread of equal-speed workers' shares "
                             f"over the second half {max(r['late_spread'] for r in adaptive):.3f}")
            if b in s.get("follow_steps", {}):
                follow = ["never" if f is None else f for f in s["follow_steps"][b]["runs"]]
                parts.append(f"{b} adaptive's steps to follow the last change {follow}")
        for p, r in s["new_over_base"].items():
            parts.append(f"{p} new/base {_pairs_text(r['pairs'])}")
        if sc.events:
            after = {n: c["after_step_ms"] for n, c in s["cells"].items() if c.get("after_step_ms") is not None}
            parts.append("median step after the last change (ms): "
                         + ", ".join(f"{n} {v:.1f}" for n, v in after.items()))
        equal = cell("equal", "new")
        if runs_of(runs, sc, equal):
            parts.append(f"new equal's median step: slowest compute {median_of(runs, sc, equal, 'step_compute_ms'):.1f}"
                         f" ms, exposed allreduce {median_of(runs, sc, equal, 'step_comm_ms'):.1f} ms")
        if s["ideal_seconds"] is not None:
            parts.append(f"ideal (new adaptive's runs) {s['ideal_seconds']:.2f} s")
        print(f"- {sc.name}: " + "; ".join(parts))

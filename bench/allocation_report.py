"""The tables and the PASS/FAIL list of bench/allocation_bench.py (issue 16's targets)."""
import math
import statistics

import allocation_stats as stats

NEVER = math.inf  # steps to follow of a run whose split never followed

# Issue 16's targets.
MAX_OVER_BEST_FIXED = 1.03      # adaptive / min(equal, static), every scenario
DEVICE_MAX_RATIO, DEVICE_MIN_EFFICIENCY = 0.36, 0.93
CPU_MAX_RATIO, CPU_MIN_EFFICIENCY = 0.55, 0.8
CGROUP_MIN_DDP_RATIO = 1.65     # DDP / adaptive
IDENTICAL_MAX_RATIO, IDENTICAL_MIN_REPS = 1.01, 5
MAX_IDENTICAL_SPREAD = 0.05     # max/min - 1 of the final shares of workers of equal speed


def summarise(sc, policy, rep, steps, doc):
    """One run's raw numbers (the metrics document included) for the tables and --json."""
    r = {"scenario": sc.name, "policy": policy, "rep": rep, "steps": steps, "seconds": stats.train_seconds(doc),
         "test_accuracy": doc["epochs"][-1]["test_accuracy"], "metrics": doc}
    if policy == "ddp":
        return r
    splits = stats.step_field(doc, "local_batch")
    moves, reverts = stats.moves_and_reverts(doc, sc.batch)
    computes, waits = stats.step_field(doc, "compute_seconds"), stats.step_field(doc, "wait_seconds")
    r.update(balance_efficiency=doc["balance_efficiency"], moves=moves, reverts=reverts,
             step_compute_ms=1e3 * statistics.median(max(c) for c in computes),
             step_comm_ms=1e3 * statistics.median(min(w) for w in waits),
             ideal_seconds=stats.ideal_seconds(doc, sc.batch), final_split=splits[-1],
             identical_spread=stats.identical_spread(splits[-1], sc.speeds_after()))
    if sc.slowdown_rank >= 0:
        target = stats.proportional_split(sc.speeds_after(), sc.batch)
        r["follow_steps"] = stats.steps_to_follow(splits, target, sc.slowdown_step(steps))
    return r


def _runs(runs, sc, policy):
    return [r for r in runs if r["scenario"] == sc.name and r["policy"] == policy]


def _median(runs, sc, policy, key):
    values = [r[key] for r in _runs(runs, sc, policy)]
    return statistics.median(values) if values else None


def _fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def _ratio(x, y):
    return None if x is None or y is None else x / y


def scenario_summary(sc, runs):
    """Medians per policy and the ratios the checks read."""
    secs = {p: _median(runs, sc, p, "seconds") for p in ("equal", "static", "adaptive", "ddp")}
    hetrain = "adaptive" if _runs(runs, sc, "adaptive") else "equal"
    ideal = _median(runs, sc, hetrain, "ideal_seconds")
    out = {"seconds": secs, "ideal_seconds": ideal, "policies": {}}
    for p in ("equal", "static", "adaptive", "ddp"):
        if secs[p] is None:
            continue
        out["policies"][p] = {
            "seconds": secs[p], "x_equal": _ratio(secs[p], secs["equal"]), "x_ideal": _ratio(secs[p], ideal),
            "x_ddp": _ratio(secs[p], secs["ddp"]),
            "balance_efficiency": None if p == "ddp" else _median(runs, sc, p, "balance_efficiency"),
            "moves": None if p == "ddp" else _median(runs, sc, p, "moves"),
            "reverts": None if p == "ddp" else _median(runs, sc, p, "reverts")}
    adaptive = _runs(runs, sc, "adaptive")
    if sc.slowdown_rank >= 0 and adaptive:
        out["follow_steps"] = [r["follow_steps"] for r in adaptive]
        median = statistics.median(NEVER if f is None else f for f in out["follow_steps"])
        out["follow_median"] = "never" if median == NEVER else median
    return out


def print_legend(scenarios, runs):
    print("\n| scenario | workers | model | B | steps | speeds (true) | emulation | repetitions |")
    print("|---|---|---|---|---|---|---|---|")
    for sc in scenarios:
        mine = [r for r in runs if r["scenario"] == sc.name]
        steps = mine[0]["steps"] if mine else sc.steps
        how = []
        if sc.cgroup_rank >= 0:
            how.append(f"rank {sc.cgroup_rank} in a cgroup CPU quota")
        elif min(sc.speeds) < 1:
            how.append("--speeds")
        if sc.sample_cost_ms:
            how.append(f"--sample-cost-ms {sc.sample_cost_ms:g}")
        if sc.slowdown_rank >= 0:
            how.append(f"rank {sc.slowdown_rank} 4x slower from step {sc.slowdown_step(steps)}")
        reps = len({r["rep"] for r in mine})
        model = "TorchScript mlp" if sc.model == "script" else sc.model
        print(f"| {sc.name} | {sc.workers} | {model} | {sc.batch} | {steps} | "
              f"{','.join(f'{s:g}' for s in sc.speeds)} | {'; '.join(how) or 'none'} | {reps} |")


def print_table(scenarios, summary):
    print("\n| scenario | policy | seconds | x equal | x ideal | x DDP | balance efficiency | split moves | reverts |")
    print("|---|---|---|---|---|---|---|---|---|")
    for sc in scenarios:
        for p, s in summary[sc.name]["policies"].items():
            print(f"| {sc.name} | {p} | {s['seconds']:.2f} | {_fmt(s['x_equal'])} | {_fmt(s['x_ideal'])} "
                  f"| {_fmt(s['x_ddp'])} | {_fmt(s['balance_efficiency'], '.3f')} | {_fmt(s['moves'], 'g')} "
                  f"| {_fmt(s['reverts'], 'g')} |")


def print_pairs(scenarios, runs, summary):
    print("\nAdaptive / equal per repetition (each pair ran in the same repetition), adaptive's moves, reverts "
          "and final split:")
    for sc in scenarios:
        adaptive = {r["rep"]: r for r in _runs(runs, sc, "adaptive")}
        equal = {r["rep"]: r for r in _runs(runs, sc, "equal")}
        pairs = [adaptive[k]["seconds"] / equal[k]["seconds"] for k in sorted(adaptive) if k in equal]
        if not adaptive:
            continue
        line = (f"- {sc.name}: {' '.join(f'{x:.3f}' for x in pairs) or '-'}"
                + (f" (median {statistics.median(pairs):.3f})" if pairs else "")
                + f"; moves {[r['moves'] for r in adaptive.values()]}"
                + f", reverts {[r['reverts'] for r in adaptive.values()]}"
                + f"; final split (last repetition) {adaptive[max(adaptive)]['final_split']}")
        if equal:
            line += (f"; equal's median step: slowest compute {_median(runs, sc, 'equal', 'step_compute_ms'):.1f} ms,"
                     f" exposed allreduce {_median(runs, sc, 'equal', 'step_comm_ms'):.1f} ms")
        if "follow_steps" in summary[sc.name]:
            follow = ["never" if f is None else f for f in summary[sc.name]["follow_steps"]]
            line += f"; steps to follow the slowdown {follow}"
        print(line)


def _check(label, ok, detail):
    return {"check": label, "ok": ok, "detail": detail}


def _missing(label, what):
    return _check(label, None, f"not measured ({what} not run)")


def checks(scenarios, runs, summary):
    """The issue's targets, each PASS / FAIL / SKIP (not measured in this invocation)."""
    by = {sc.name: sc for sc in scenarios}
    out = []
    for sc in scenarios:
        s = summary[sc.name]["seconds"]
        label = f"1 {sc.name}: adaptive <= {MAX_OVER_BEST_FIXED} x min(equal, static)"
        if None in (s["adaptive"], s["equal"], s["static"]):
            out.append(_missing(label, "adaptive, equal or static"))
            continue
        r = s["adaptive"] / min(s["equal"], s["static"])
        out.append(_check(label, r <= MAX_OVER_BEST_FIXED, f"{r:.3f}"))
    out += _ratio_checks(by, summary)
    out += _identical_checks(by, runs, summary)
    for name in ("device-slow", "mixed6"):
        f = summary.get(name, {}).get("follow_median")
        if f is None:
            out.append(_missing(f"6 {name}: split follows the slowdown", name + " adaptive"))
        else:
            label = f"6 {name}: split follows the slowdown within {by[name].follow_limit} steps"
            ok = f != "never" and f <= by[name].follow_limit
            out.append(_check(label, ok, f"median {f}" + (" steps" if f != "never" else "")))
    return out


def _ratio_checks(by, summary):
    out = []
    for name, num, den, op, bound, min_eff, n in (
            ("device", "adaptive", "equal", "<=", DEVICE_MAX_RATIO, DEVICE_MIN_EFFICIENCY, 2),
            ("cpu-slow", "adaptive", "equal", "<=", CPU_MAX_RATIO, CPU_MIN_EFFICIENCY, 3),
            ("cgroup", "ddp", "adaptive", ">=", CGROUP_MIN_DDP_RATIO, None, 4)):
        label = f"{n} {name}: {num}/{den} {op} {bound}" + (f", efficiency >= {min_eff}" if min_eff else "")
        if name not in by or summary[name]["seconds"][num] is None or summary[name]["seconds"][den] is None:
            out.append(_missing(label, f"{name} {num} or {den}"))
            continue
        r = summary[name]["seconds"][num] / summary[name]["seconds"][den]
        ok = r <= bound if op == "<=" else r >= bound
        detail = f"{r:.3f}"
        if min_eff:
            eff = summary[name]["policies"]["adaptive"]["balance_efficiency"]
            ok = ok and eff >= min_eff
            detail += f", efficiency {eff:.3f}"
        out.append(_check(label, ok, detail))
    return out


def _identical_checks(by, runs, summary):
    out = []
    label = f"5 identical: adaptive/equal <= {IDENTICAL_MAX_RATIO} (median of >= {IDENTICAL_MIN_REPS})"
    s = summary.get("identical", {}).get("seconds", {})
    if s.get("adaptive") is None or s.get("equal") is None:
        out.append(_missing(label, "identical adaptive or equal"))
    else:
        reps = len(_runs(runs, by["identical"], "adaptive"))
        r = s["adaptive"] / s["equal"]
        ok = r <= IDENTICAL_MAX_RATIO and reps >= IDENTICAL_MIN_REPS
        out.append(_check(label, ok, f"{r:.3f} over {reps} repetitions"))
    # Beyond the issue's rows: every scenario's workers of equal true speed (at the end) keep equal shares.
    for sc in by.values():
        spreads = [r["identical_spread"] for r in _runs(runs, sc, "adaptive")]
        if not spreads or len(set(sc.speeds_after())) == sc.workers:
            continue  # no two workers of equal speed
        label = (f"5 {sc.name}: final shares of equal-speed workers within {MAX_IDENTICAL_SPREAD:.0%} "
                 "(or one sample) in every run")
        out.append(_check(label, max(spreads) <= MAX_IDENTICAL_SPREAD,
                          "spread " + " ".join(f"{x:.3f}" for x in spreads)))
    return out


def print_all(scenarios, runs):
    summary = {sc.name: scenario_summary(sc, runs) for sc in scenarios}
    print_legend(scenarios, runs)
    print_table(scenarios, summary)
    print_pairs(scenarios, runs, summary)
    result = checks(scenarios, runs, summary)
    print("\nIssue 16's targets:")
    for c in result:
        verdict = {True: "PASS", False: "FAIL", None: "SKIP"}[c["ok"]]
        print(f"  {verdict}  {c['check']}: {c['detail']}")
    return {"scenarios": summary, "checks": result}

#!/usr/bin/env python3
"""Unit tests of the pure parts of bench/allocation_bench.py (no processes, no torch): its per-run statistics,
the two-binary ratios and issue 26's checks. Run: python3 bench/test_allocation_stats.py"""
import argparse
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import allocation_bench as bench  # noqa: E402
import allocation_checks as checks  # noqa: E402
import allocation_report as report  # noqa: E402
import allocation_stats as stats  # noqa: E402
from allocation_scenarios import BY_NAME, emulation_flags, scenario_from_dict  # noqa: E402


class CountMoves(unittest.TestCase):
    def test_no_change_is_no_move(self):
        self.assertEqual(stats.count_moves([[16, 16]] * 5), (0, 0))

    def test_a_move_back_to_the_split_before_is_a_revert(self):
        splits = [[16, 16], [20, 12], [20, 12], [16, 16], [24, 8], [16, 16]]
        # moves: ->[20,12], ->[16,16] (revert), ->[24,8], ->[16,16] (revert)
        self.assertEqual(stats.count_moves(splits), (4, 2))

    def test_moving_on_is_not_a_revert(self):
        self.assertEqual(stats.count_moves([[16, 16], [20, 12], [24, 8], [26, 6]]), (3, 0))

    def test_policy_counts_win_over_counting(self):
        doc = {"allocation": [[16, 16], [20, 12]], "policy_moves": 7, "policy_reverts": 3}
        self.assertEqual(stats.moves_and_reverts(doc, 32), (7, 3))

    def test_partial_batch_is_not_a_move(self):
        doc = {"allocation": [[16, 16], [16, 16], [8, 8], [16, 16]]}
        self.assertEqual(stats.moves_and_reverts(doc, 32), (0, 0))


class StepRecords(unittest.TestCase):
    def test_both_layouts(self):
        columns = {"allocation": [[1, 2]], "steps": {"wait_seconds": [[0.1, 0.2]]}}
        rows = {"steps": [{"local_batch": [1, 2], "wait_seconds": [0.1, 0.2]}]}
        for doc in (columns, rows):
            self.assertEqual(stats.step_field(doc, "local_batch"), [[1, 2]])
            self.assertEqual(stats.step_field(doc, "wait_seconds"), [[0.1, 0.2]])

    def test_ideal_adds_the_last_arrivals_wait(self):
        doc = {"workers": [{"samples": 100, "compute_seconds": 1.0}, {"samples": 300, "compute_seconds": 1.0}],
               "allocation": [[10, 30]] * 4, "steps": {"wait_seconds": [[0.5, 0.25]] * 4}}
        # 4 steps x 40 samples / 400 samples/s + 4 x 0.25 s
        self.assertAlmostEqual(stats.ideal_seconds(doc, 40), 0.4 + 1.0)


class Follow(unittest.TestCase):
    target = stats.proportional_split([1, 0.25, 1, 0.25], 64)  # 25.6, 6.4, 25.6, 6.4

    def test_counts_steps_from_the_change(self):
        before, after = [20, 20, 20, 4], [26, 6, 26, 6]
        splits = [before] * 10 + [[22, 12, 22, 8]] * 2 + [after] * 10
        self.assertEqual(stats.steps_to_follow(splits, self.target, 10), 2)

    def test_a_passing_crossing_does_not_count(self):
        before, after = [20, 20, 20, 4], [26, 6, 26, 6]
        splits = [before] * 10 + [after] + [before] * 3 + [after] * 10
        self.assertEqual(stats.steps_to_follow(splits, self.target, 10), 4)

    def test_never(self):
        self.assertIsNone(stats.steps_to_follow([[20, 20, 20, 4]] * 20, self.target, 10))

    def test_tolerance_is_ten_percent_or_one_sample(self):
        self.assertTrue(stats.within([28, 6, 24, 6], self.target))
        self.assertFalse(stats.within([29, 5, 24, 6], self.target))


class IdenticalSpread(unittest.TestCase):
    def test_only_equal_speeds_are_compared(self):
        self.assertAlmostEqual(stats.identical_spread([40, 42, 40, 6], [1, 1, 1, 0.25]), 0.05)
        self.assertEqual(stats.identical_spread([30, 20, 10, 4], [1, 0.8, 0.5, 0.25]), 0.0)

    def test_one_sample_apart_is_rounding(self):
        self.assertEqual(stats.identical_spread([6, 5, 5, 0], [1, 1, 1, 0.25]), 0.0)
        self.assertAlmostEqual(stats.identical_spread([7, 5, 4, 0], [1, 1, 1, 0.25]), 0.75)
        self.assertAlmostEqual(stats.identical_spread([86, 85, 0, 85], [1, 1, 1, 0.25]), 85.0)


class StepTimes(unittest.TestCase):
    def test_from_end_seconds(self):
        doc = {"steps": {"end_seconds": [0.5, 0.75, 1.25, 1.5]}}
        self.assertEqual(stats.step_seconds(doc), [0.5, 0.25, 0.5, 0.25])
        self.assertEqual(stats.median_step_after(doc, 2), 0.375)

    def test_without_end_seconds_the_slowest_compute_plus_wait(self):
        doc = {"steps": [{"compute_seconds": [0.1, 0.3], "wait_seconds": [0.25, 0.0]},
                         {"compute_seconds": [0.2, 0.2], "wait_seconds": [0.0, 0.0]}]}
        self.assertEqual(stats.step_seconds(doc), [0.35, 0.2])

    def test_no_steps_after(self):
        self.assertIsNone(stats.median_step_after({"steps": {"end_seconds": [1.0, 2.0]}}, 2))


class Scenarios(unittest.TestCase):
    def test_recovery_slows_then_restores(self):
        sc = BY_NAME["recovery"]
        flags = emulation_flags(sc, 20)
        self.assertEqual(flags[flags.index("--slowdown") + 1], "1@4:0.25,2@4:0.25,3@4:0.25,1@10:1,2@10:1,3@10:1")
        self.assertNotIn("--speeds", flags)
        self.assertEqual(sc.change_step(20), 10)
        self.assertEqual(sc.speeds_after(), [1, 1, 1, 1])

    def test_mixed6_device_keeps_the_slowdown_on_emulated_devices(self):
        sc = BY_NAME["mixed6-device"]
        flags = emulation_flags(sc, 100)
        self.assertIn("--sample-cost-ms", flags)
        self.assertEqual(flags[flags.index("--slowdown") + 1], "1@40:0.2")
        self.assertEqual(sc.speeds_after(), [1, 0.2, 0.5, 0.5, 1, 0.3])

    def test_a_json_files_definition_round_trips(self):
        sc = BY_NAME["recovery"]
        saved = json.loads(json.dumps(sc.__dict__))  # tuples come back as lists
        self.assertEqual(scenario_from_dict(saved), sc)

    def test_a_one_binary_files_slowdown_rank_is_an_event(self):
        old = {"name": "mixed6", "model": "mlp", "batch": 384, "steps": 100, "speeds": [1, 0.8, 0.5, 0.5, 1, 0.3],
               "sample_cost_ms": 0.0, "slowdown_rank": 1, "cgroup_rank": -1, "follow_limit": 10}
        self.assertEqual(scenario_from_dict(old), BY_NAME["mixed6"])


class RepOrder(unittest.TestCase):
    def test_every_cell_once_pairs_side_by_side_and_alternating(self):
        policies = ["equal", "static", "adaptive", "ddp"]
        for rep in range(6):
            order = bench.rep_order(policies, ["new", "base"], rep)
            self.assertEqual(sorted(order, key=str), sorted([(p, b) for p in policies[:3] for b in ("new", "base")]
                                                           + [("ddp", None)], key=str))
            i = order.index(("adaptive", "new"))
            first = "base" if rep % 2 else "new"
            self.assertEqual(order[i if first == "new" else i - 1], ("adaptive", first))
            self.assertEqual(abs(order.index(("adaptive", "base")) - i), 1)
        firsts = [bench.rep_order(policies, ["new", "base"], r)[0][0] for r in range(4)]
        self.assertEqual(firsts, policies)

    def test_one_binary(self):
        self.assertEqual(bench.rep_order(["equal", "adaptive"], ["new"], 1), [("adaptive", "new"), ("equal", "new")])


def run_doc(seconds, steps=10, batch=64, workers=4, efficiency=0.95, step_after=None, change=None):
    """A metrics document of a run that took `seconds`; its steps from `change` on take `step_after` seconds."""
    step = [seconds / steps] * steps
    if change is not None:
        step[change:] = [step_after] * (steps - change)
    ends = [sum(step[:k + 1]) for k in range(steps)]
    share = batch // workers
    return {"epochs": [{"train_seconds": seconds, "test_accuracy": 0.8}], "balance_efficiency": efficiency,
            "allocation": [[share] * workers] * steps,
            "steps": {"compute_seconds": [[0.01] * workers] * steps, "wait_seconds": [[0.001] * workers] * steps,
                      "end_seconds": ends},
            "workers": [{"samples": share * steps, "compute_seconds": 0.1}] * workers}


def summarised(sc, cells, reps=5, extra=None):
    """runs of `cells` {(policy, binary): seconds or [seconds per rep]} in scenario `sc`; `extra` {(policy,
    binary): run_doc's keyword arguments}."""
    runs = []
    for (policy, binary), secs in cells.items():
        for rep in range(reps):
            s = secs[rep] if isinstance(secs, list) else secs
            kw = (extra or {}).get((policy, binary), {})
            runs.append(report.summarise(sc, policy, binary, rep, 10, run_doc(s, batch=sc.batch,
                                                                            workers=sc.workers, **kw)))
    return runs, {sc.name: report.scenario_summary(sc, runs)}


def verdict(result, prefix):
    [c] = [c for c in result if c["check"].startswith(prefix)]
    return c["ok"]


class TwoBinaries(unittest.TestCase):
    sc = BY_NAME["device"]

    def check(self, new_adaptive, base_adaptive=2.0):
        cells = {("equal", "new"): 6.0, ("equal", "base"): 6.0, ("adaptive", "new"): new_adaptive,
                 ("adaptive", "base"): base_adaptive}
        runs, summary = summarised(self.sc, cells)
        return summary, checks.checks([self.sc], runs, summary)

    def test_ratio_is_new_over_base_medians(self):
        summary, _ = self.check([2.0, 2.2, 2.1, 9.0, 2.1], [2.0, 2.0, 2.0, 2.0, 2.0])
        r = summary["device"]["new_over_base"]["adaptive"]
        self.assertAlmostEqual(r["ratio"], 1.05)
        self.assertEqual(len(r["pairs"]), 5)
        self.assertAlmostEqual(r["pairs"][3], 4.5)
        self.assertAlmostEqual(summary["device"]["new_over_base"]["equal"]["ratio"], 1.0)

    def test_over_five_percent_slower_fails(self):
        self.assertFalse(verdict(self.check(2.12)[1], "1 device: new adaptive"))
        self.assertTrue(verdict(self.check(2.08)[1], "1 device: new adaptive"))

    def test_without_the_baseline_it_is_skipped_not_passed(self):
        runs, summary = summarised(self.sc, {("equal", "new"): 6.0, ("adaptive", "new"): 2.0})
        self.assertIsNone(verdict(checks.checks([self.sc], runs, summary), "1 device: new adaptive"))

    def test_device_ratio_and_efficiency(self):
        # 2.0 / 6.0 = 0.333 <= 0.36 with efficiency 0.95: pass; 2.4 / 6.0 = 0.4: fail
        self.assertTrue(verdict(self.check(2.0)[1], "1 device: adaptive/equal"))
        self.assertFalse(verdict(self.check(2.4)[1], "1 device: adaptive/equal"))
        cells = {("equal", "new"): 6.0, ("adaptive", "new"): 2.0}
        runs, summary = summarised(self.sc, cells, extra={("adaptive", "new"): {"efficiency": 0.9}})
        self.assertFalse(verdict(checks.checks([self.sc], runs, summary), "1 device: adaptive/equal"))


class Recovery(unittest.TestCase):
    sc = BY_NAME["recovery"]

    def check(self, adaptive_after, equal_after=0.1):
        kw = {("adaptive", "new"): {"change": 5, "step_after": adaptive_after},
              ("equal", "new"): {"change": 5, "step_after": equal_after}}
        # The whole runs take the same time: only the steps after the recovery differ.
        runs, summary = summarised(self.sc, {("equal", "new"): 3.0, ("adaptive", "new"): 3.0}, extra=kw)
        return checks.checks([self.sc], runs, summary), summary

    def test_slower_after_the_recovery_fails(self):
        result, summary = self.check(0.15)
        self.assertFalse(verdict(result, "1 recovery: adaptive's"))
        self.assertAlmostEqual(summary["recovery"]["cells"]["adaptive/new"]["after_step_ms"], 150.0)

    def test_as_fast_passes(self):
        self.assertTrue(verdict(self.check(0.1)[0], "1 recovery: adaptive's"))
        self.assertTrue(verdict(self.check(0.09)[0], "1 recovery: adaptive's"))


class Identical(unittest.TestCase):
    sc = BY_NAME["identical"]

    def test_needs_five_repetitions(self):
        cells = {("equal", "new"): 2.0, ("adaptive", "new"): 2.0}
        runs, summary = summarised(self.sc, cells, reps=5)
        self.assertTrue(verdict(checks.checks([self.sc], runs, summary), "1 identical: adaptive/equal"))
        runs, summary = summarised(self.sc, cells, reps=4)
        self.assertFalse(verdict(checks.checks([self.sc], runs, summary), "1 identical: adaptive/equal"))

    def test_slower_than_two_percent_fails(self):
        runs, summary = summarised(self.sc, {("equal", "new"): 2.0, ("adaptive", "new"): 2.05})
        self.assertFalse(verdict(checks.checks([self.sc], runs, summary), "1 identical: adaptive/equal"))


class Matrix(unittest.TestCase):
    """run_matrix with the processes replaced: which command each cell runs, and in what order."""

    def run_fake(self, scenarios, reps):
        calls = []

        def fake_launch(sc, cmd, out, quota, timeout_s):
            calls.append((sc.name, cmd))
            return run_doc(1.0, batch=sc.batch, workers=sc.workers)

        saved = bench.launch, bench.make_data_dir
        bench.launch, bench.make_data_dir = fake_launch, lambda tmp: "/data"
        try:
            a = argparse.Namespace(reps=reps, identical_reps=0, steps=10, json="", run_timeout=1.0,
                                   torch_python="/py", policies=["equal", "adaptive", "ddp"],
                                   binaries={"new": "/bin/new", "base": "/bin/base"})
            runs = bench.run_matrix(a, scenarios, "/tmp", None)
        finally:
            bench.launch, bench.make_data_dir = saved
        return calls, runs

    def test_every_repetition_runs_every_cell_with_its_own_binary(self):
        scenarios = [BY_NAME["device"], BY_NAME["recovery"]]
        calls, runs = self.run_fake(scenarios, reps=2)
        self.assertEqual(len(calls), 2 * 2 * 5)  # repetitions x scenarios x (2 policies x 2 binaries + DDP)
        for r, (name, cmd) in zip(runs, calls):
            self.assertEqual(r["scenario"], name)
            expected = {"new": "/bin/new", "base": "/bin/base", None: "/py"}[r["binary"]]
            self.assertEqual(cmd[0], expected)
            if r["policy"] != "ddp":
                self.assertEqual(cmd[cmd.index("--policy") + 1], r["policy"])
        # Repetition by repetition: the first repetition's runs of both scenarios before the second's.
        self.assertEqual([r["rep"] for r in runs], [0] * 10 + [1] * 10)
        recovery = [cmd for name, cmd in calls if name == "recovery"]
        self.assertTrue(all("1@2:0.25,2@2:0.25,3@2:0.25,1@5:1,2@5:1,3@5:1" in c for c in recovery))


if __name__ == "__main__":
    unittest.main()

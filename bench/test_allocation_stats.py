#!/usr/bin/env python3
"""Unit tests of bench/allocation_stats.py (no processes, no torch): python3 bench/test_allocation_stats.py"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import allocation_stats as stats  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()

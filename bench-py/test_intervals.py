"""Unit tests of bench-py/intervals.py (run by tests/it/bench_clients.rs):
python3 -m unittest discover -s bench-py -p 'test_intervals.py'."""

import random
import unittest

from intervals import Interval, coverage


class IntervalTest(unittest.TestCase):
    def test_ten_rounds_give_the_second_and_ninth(self):
        # P(B <= 1) = 11/1024 for n = 10: [x(2), x(9)] covers 97.85%; [x(3), x(8)] 89%.
        iv = Interval([float(i) for i in range(10, 0, -1)])
        self.assertEqual((iv.lo, iv.hi), (2.0, 9.0))
        self.assertAlmostEqual(iv.confidence, 1 - 2 * 11 / 1024)
        self.assertEqual(iv.median, 5.5)

    def test_too_few_rounds_say_what_their_interval_is_worth(self):
        iv = Interval([1.0, 3.0, 2.0])
        self.assertEqual((iv.lo, iv.hi), (1.0, 3.0))
        self.assertAlmostEqual(iv.confidence, 0.75)
        self.assertFalse(iv.confident())
        self.assertEqual(iv.verdict(10.0), "UNSURE")
        self.assertEqual(Interval([2.0]).confidence, 0.0)

    def test_six_rounds_are_the_fewest_for_95_percent(self):
        self.assertLess(coverage(5, 1), 0.95)
        self.assertGreaterEqual(coverage(6, 1), 0.95)

    def test_the_interval_covers_the_true_median_as_often_as_it_says(self):
        # Rounds from a skewed law with a known median of 1.0 (a log-normal): over many
        # runs of 10 rounds the interval must hold 1.0 in at least 95% of them (97.85%
        # expected); an interval one order statistic too narrow holds it in 89%.
        rng = random.Random(39)
        for n in (6, 10, 15):
            hits = 0
            trials = 4000
            for _ in range(trials):
                iv = Interval([rng.lognormvariate(0.0, 0.3) for _ in range(n)])
                hits += iv.lo <= 1.0 <= iv.hi
            self.assertGreaterEqual(hits / trials, 0.95, f"n={n}: {hits}/{trials}")
            self.assertGreaterEqual(Interval([0.0] * n).confidence, 0.95)

    def test_verdicts_need_the_whole_interval(self):
        rounds = [1.00, 1.02, 1.03, 1.04, 1.06, 1.08]
        iv = Interval(rounds)
        self.assertEqual(iv.verdict(1.10), "PASS")
        self.assertEqual(iv.verdict(1.05), "UNSURE")
        self.assertEqual(iv.verdict(0.99), "MISS")
        self.assertTrue(iv.within(0.05))
        self.assertFalse(iv.within(0.01))


if __name__ == "__main__":
    unittest.main()

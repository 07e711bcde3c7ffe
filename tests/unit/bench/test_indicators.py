"""bench.indicators: a plan's predictions set against the simulator."""

import testtools

from bench import indicators
from contention.sim import generate


class TestIndicatorsBench(testtools.TestCase):

    def test_a_planned_cluster_is_measured_against_its_twin(self):
        # The first clusters of the evaluation's family until one plans.
        for item in generate.family(19, small=8):
            row = indicators.run_one(item, 'numa_aware_swap',
                                     'sensitivity_cost')
            if row is not None:
                break
        self.assertIsNotNone(row)
        predicted_mean, predicted_worst, mean, worst = row
        # The harm check keeps its own prediction within the bound.
        self.assertGreaterEqual(predicted_worst, -5.0 - 1e-6)
        self.assertLessEqual(max(predicted_worst, worst), 0.0)
        # A plan that moves something changes what the VMs measure.
        self.assertNotEqual(0.0, mean)

    def test_summary_counts_directions_and_misses(self):
        rows = [(2.0, -1.0, 5.0, -1.5),      # same direction
                (0.05, 0.0, -0.02, -0.5),    # both flat
                (1.0, -1.0, -2.0, -4.0),     # opposite; worst missed
                (0.5, 0.0, 0.0, 0.0)]        # predicted a change, none
        s = indicators.summary(rows)
        self.assertEqual(4, s['plans'])
        self.assertEqual(2, s['agree'])
        self.assertEqual(1, s['opposite'])
        self.assertEqual(1, s['worst_under'])
        self.assertAlmostEqual((3.0 + 0.07 + 3.0 + 0.5) / 4, s['mean_mae'])
        self.assertAlmostEqual((-3.0 + 0.07 + 3.0 + 0.5) / 4,
                               s['mean_bias'])

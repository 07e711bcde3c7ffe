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

    def test_a_refused_move_is_judged_alone_by_the_simulator(self):
        # gen-small-001's first audit drops moves for harm_bound; each,
        # run alone, lowers some VM: the check was right about these.
        item = generate.family(19, small=2)[1]
        rows = indicators.refusals_one(item, 'numa_aware_swap',
                                       'sensitivity_cost')
        self.assertTrue(rows)
        for reason, worst, mean, named in rows:
            self.assertEqual('harm_bound', reason)
            self.assertLess(worst, 0.0)
            # the skip names the VM it protects; no VM falls further
            self.assertIsNotNone(named)
            self.assertGreaterEqual(named, worst)

    def test_refusals_split_into_harmful_paying_and_neither(self):
        # (reason, worst VM, mean, the VM the skip names), in %
        rows = [('harm_bound', -12.0, 0.3, -12.0),  # harmful, to that VM
                ('harm_bound', -2.0, 0.5, 1.0),     # harmless, pays over
                ('harm_bound', -1.0, 0.1, -1.0),    # 0.2 %; the next a little
                ('numa_remote', 0.0, -0.1, None)]   # neither; names none
        cells = {c['reason']: c for c in indicators.refusal_summary(
            rows, 5.0)}
        self.assertEqual(['all', 'harm_bound', 'numa_remote'],
                         sorted(cells))
        hb = cells['harm_bound']
        self.assertEqual((3, 1, 2, 1), (hb['dropped'], hb['harmful'],
                                        hb['paid'], hb['paid_over']))
        self.assertAlmostEqual(0.3, hb['paid_median'])
        self.assertEqual((4, 1, 2), (cells['all']['dropped'],
                                     cells['all']['harmful'],
                                     cells['all']['paid']))
        self.assertEqual(0, cells['numa_remote']['paid'])
        self.assertEqual((3, 1, 1), (hb['named'], hb['named_harmed'],
                                     hb['named_unharmed']))
        self.assertEqual(0, cells['numa_remote']['named'])

    def test_a_skip_names_the_vm_it_protects(self):
        uuid = '51158160-d5d9-571d-893b-0f87e7bf4d81'
        found = indicators._NAMED.match(
            'harm_bound: %s has sensitivity 0.40 and would face new '
            'co-runner LLC misses' % uuid)
        self.assertEqual(uuid, found.group(1))
        self.assertIsNone(indicators._NAMED.match(
            'infeasible_step: node 1 would hold 49152 MiB of 32768'))

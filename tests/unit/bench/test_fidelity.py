"""The fidelity bench's verdicts and the doc section it generates."""

import os
import tempfile

import testtools

from bench import fidelity


class TestVerdicts(testtools.TestCase):

    def test_value_within_direction_or_contradiction(self):
        self.assertEqual(fidelity.WITHIN, fidelity.judge_value(0.17, 0.20))
        self.assertEqual(fidelity.DIRECTION,
                         fidelity.judge_value(0.17, 0.40))
        self.assertEqual(fidelity.CONTRADICTS,
                         fidelity.judge_value(0.17, -0.02))
        self.assertEqual(fidelity.WITHIN,
                         fidelity.judge_value(-0.534, -0.60))

    def test_order_must_be_strict(self):
        order = ('low_cost', 'random', 'local')
        self.assertEqual(fidelity.ORDER, fidelity.judge_order(
            order, {'low_cost': 3.0, 'random': 2.0, 'local': 1.0}))
        # Ties are not an order: baselines that never act tie.
        self.assertEqual(fidelity.CONTRADICTS, fidelity.judge_order(
            order, {'low_cost': 2.0, 'random': 2.0, 'local': 2.0}))
        self.assertEqual(fidelity.DIRECTION, fidelity.judge_order(
            order, {'low_cost': 3.0, 'random': 1.0, 'local': 2.0}))

    def test_calibrated_rows_do_not_count_as_validation(self):
        rows = [fidelity.Row('a', 'r', '1', 'e', '1', fidelity.WITHIN),
                fidelity.Row('b', 'r', '1', 'e', '1', fidelity.WITHIN,
                             calibrates='X'),
                fidelity.Row('c', 'r', '1', 'e', '', fidelity.CANNOT,
                             'why')]
        n, counts = fidelity.summary(rows)
        self.assertEqual(2, n)
        self.assertEqual(1, counts[fidelity.WITHIN])
        text = fidelity.markdown(rows)
        self.assertIn('within 25 % (calibrated here)', text)
        self.assertIn('1 more calibrated a mechanism constant', text)


class TestWriteDoc(testtools.TestCase):

    def test_replaces_only_between_the_markers(self):
        fd, path = tempfile.mkstemp(suffix='.md')
        os.close(fd)
        self.addCleanup(os.unlink, path)
        with open(path, 'w') as fh:
            fh.write('head\n%s\nold\n%s\ntail\n' % (fidelity.BEGIN,
                                                    fidelity.END))
        self.assertTrue(fidelity.write_doc('new table', path))
        with open(path) as fh:
            text = fh.read()
        self.assertEqual('head\n%s\nnew table\n%s\ntail\n'
                         % (fidelity.BEGIN, fidelity.END), text)

    def test_missing_markers_leave_the_file_alone(self):
        fd, path = tempfile.mkstemp(suffix='.md')
        os.close(fd)
        self.addCleanup(os.unlink, path)
        with open(path, 'w') as fh:
            fh.write('no markers\n')
        self.assertFalse(fidelity.write_doc('x', path))
        with open(path) as fh:
            self.assertEqual('no markers\n', fh.read())


class TestExperiments(testtools.TestCase):

    def test_merlin_figure_2_local_hurts_more_than_remote(self):
        f2 = fidelity.merlin_fig2()
        self.assertEqual({'local', 'remote_split', 'merlin'}, set(f2))
        vold = {case: v for case, (v, _) in f2.items()}
        self.assertGreater(vold['local'], vold['remote_split'])
        self.assertGreater(vold['remote_split'], vold['merlin'])
        self.assertGreater(vold['merlin'], 0.0)
        # Matrix-Multiplication's memory stays on node 1: moved away from
        # it, MM pays the remote latency.
        self.assertGreater(f2['merlin'][1], f2['local'][1])

    def test_merlin_policy_rows_are_run_not_pending(self):
        rows = fidelity.rows_merlin_policy()
        run = [r for r in rows if r.verdict != fidelity.CANNOT]
        self.assertEqual(4, len(run))
        self.assertIn('Merlin has the lowest L3 MPKI and CPI in every mix',
                      [r.result for r in run])
        for row in run:
            self.assertTrue(row.simulated)
            self.assertNotIn('not yet a simulator policy', row.why)

    def test_downward_class_moves_are_counted_per_reading(self):
        # merlin-mix1: 7 VMs over its 60 epochs; the workloads' phases
        # move some classes down (the figure the Table 1 causes quote)
        moves, readings = fidelity.downward_moves('merlin-mix1')
        self.assertEqual(7 * 60, readings)
        self.assertGreater(moves, 0)
        self.assertLess(moves, readings / 10)

    def test_liu_interconnect_pairs_slow_each_other(self):
        one, _, _ = fidelity.liu_case('D', 2)
        four, _, _ = fidelity.liu_case('D', 8)
        self.assertLess(four, one)

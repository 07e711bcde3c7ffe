"""Which landing NUMA nodes are saturated (the contention filter's verdict)."""

import testtools

from contention import classify
from contention.perfmodel import features
from contention.perfmodel import saturation


def cell(mpki=0.0, levels=(None, None, None, None)):
    llc, mc, ic, remote = levels
    return features.CellState(cpus=8, co_mpki_sum=mpki, llc_level=llc,
                              mc_level=mc, ic_level=ic, remote_level=remote)


class TestSaturatedNodes(testtools.TestCase):

    def test_defaults_are_merlins_trigger_and_half_the_levels(self):
        self.assertEqual(classify.DEFAULT_THRESHOLDS.node_mpki_trigger,
                         saturation.MPKI_THRESHOLD)
        self.assertEqual(100.0, saturation.MPKI_THRESHOLD)
        self.assertEqual(6, saturation.OVERHEAD_THRESHOLD)

    def test_mpki_above_the_threshold_saturates(self):
        cells = {0: cell(100.0), 1: cell(100.5), 2: cell(30.0)}
        # strictly above: 100 itself is not saturated
        self.assertEqual([1], saturation.saturated_nodes(cells, (0, 1, 2)))
        self.assertEqual([0, 1], saturation.saturated_nodes(
            cells, (0, 1, 2), mpki_threshold=50))

    def test_overhead_level_above_the_threshold_saturates(self):
        cells = {0: cell(10.0, (2, 2, 1, 1)), 1: cell(10.0, (3, 2, 1, 1))}
        self.assertEqual(6, saturation.overhead_level(cells[0]))
        self.assertEqual([1], saturation.saturated_nodes(cells, (0, 1)))
        self.assertEqual([], saturation.saturated_nodes(
            cells, (0, 1), overhead_threshold=7))

    def test_unknown_levels_give_no_overhead_verdict(self):
        # one unknown level: not summed as zero, not read as saturated
        cells = {0: cell(10.0, (3, 3, 3, None)), 1: cell(150.0)}
        self.assertIsNone(saturation.overhead_level(cells[0]))
        self.assertEqual([], saturation.saturated_nodes(cells, (0,)))
        # the MPKI test still applies to a node without levels
        self.assertEqual([1], saturation.saturated_nodes(cells, (0, 1)))

    def test_only_the_landing_nodes_are_judged(self):
        cells = {0: cell(150.0), 1: cell(0.0)}
        self.assertEqual([], saturation.saturated_nodes(cells, (1,)))
        self.assertEqual([], saturation.saturated_nodes(cells, ()))

    def test_missing_cell_has_no_telemetry_and_passes(self):
        self.assertEqual([], saturation.saturated_nodes({}, (0, 1)))
        self.assertEqual([1], saturation.saturated_nodes(
            {1: cell(101.0)}, (0, 1)))

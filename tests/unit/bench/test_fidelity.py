"""The fidelity bench's verdicts and the doc section it generates."""

import collections
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

    def test_ranking_allows_ties_in_the_paper(self):
        paper = {'local': 36, 'random': 22, 'low_cost': 20, 'merlin': 20}
        self.assertEqual(fidelity.ORDER, fidelity.judge_ranking(
            paper, {'local': 9, 'random': 5, 'low_cost': 1, 'merlin': 2}))
        # Random not above Low-cost: the paper's top is still above both
        # of its lowest.
        self.assertEqual(fidelity.DIRECTION, fidelity.judge_ranking(
            paper, {'local': 9, 'random': 1, 'low_cost': 1, 'merlin': 2}))
        # Nobody acts: not even the direction holds.
        self.assertEqual(fidelity.CONTRADICTS, fidelity.judge_ranking(
            paper, dict.fromkeys(paper, 0)))

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

    def test_liu_allocator_keeps_memory_local_while_nodes_are_idle(self):
        # Figure 2(C): VMs 1-4 each on their own socket, every socket idle
        # when its VM is created: the allocator keeps all of it local,
        # where NUMA-aware placement put VMs 2-4's on the next socket.
        placed = fidelity.liu_overhead_aware(
            [fidelity.liu_pins('C', k)[0] for k in range(1, 7)])
        for cpu, memory in placed[:4]:
            self.assertEqual({cpu: 1.0}, memory)
        for _, memory in placed:
            self.assertAlmostEqual(1.0, sum(memory.values()))
        # From the fifth VM no node is idle: its memory is spread.
        self.assertGreater(len(placed[4][1]), 1)
        self.assertGreater(fidelity.liu_mean(placed[:4]),
                           fidelity.liu_case('C', 4)[0])

    def test_liu_layouts_fit_hosts_of_other_sizes(self):
        # Section 6.4 runs 2 and 8 sockets: every VM of every case lands
        # on a node the host has, and the 8-socket allocator spreads over
        # more than the first four.
        for sockets in (2, 8):
            for case in 'ABCD':
                for k in range(1, 9):
                    cpu, memory = fidelity.liu_pins(case, k, sockets)
                    self.assertTrue(0 <= cpu < sockets)
                    self.assertTrue(0 <= memory < sockets)
        pins = [fidelity.liu_pins('A', k, 8)[0] for k in range(1, 9)]
        placed = fidelity.liu_overhead_aware(pins, 8)
        used = set().union(*(memory for _, memory in placed))
        self.assertEqual(set(range(8)), used)

    def test_numa_aware_spills_at_random_only_when_a_node_is_full(self):
        pins = [fidelity.liu_pins('B', k) for k in range(1, 9)]
        # 4 GiB: VMs 1-4 on node 0, 5-8 on node 3, as Figure 2(B).
        small = fidelity.liu_numa_aware(pins, 4096, seed=0)
        self.assertEqual([{0: 1.0}] * 4 + [{3: 1.0}] * 4,
                         [memory for _, memory in small])
        # 32 GiB: two fill a 64 GiB node; the rest land where there is
        # room, the same for the same seed.
        big = fidelity.liu_numa_aware(pins, 32768, seed=0)
        per_node = collections.Counter(
            node for _, memory in big for node in memory)
        self.assertEqual(2, per_node[0])
        self.assertLessEqual(max(per_node.values()), 2)
        self.assertEqual(big, fidelity.liu_numa_aware(pins, 32768, seed=0))

    def test_vcpu_migration_moves_vcpus_to_their_memory(self):
        # Figure 2(D): every VM's memory on the other socket of its pair.
        pins = [fidelity.liu_pins('D', k) for k in range(1, 5)]
        moved = fidelity.liu_vcpu_migration(pins)
        for (cpu, memory), (new_cpu, new_memory) in zip(pins, moved):
            self.assertEqual(memory, new_memory)
            self.assertEqual(memory, new_cpu)
        self.assertGreater(fidelity.liu_mean(moved), fidelity.liu_mean(pins))

    def test_figure9_row_shows_the_allocator_split(self):
        row = fidelity.liu_figure9_row()
        self.assertEqual('20 % / 40 % / 20 % / 20 %', row.simulated)
        self.assertIn('power-of-two', row.why)

    def test_liu_table3_is_run(self):
        row = fidelity.liu_table3_row()
        self.assertNotEqual(fidelity.CANNOT, row.verdict)
        self.assertEqual(3, row.simulated.count('%'))

    def test_liu_indicators_read_local_and_remote_vms(self):
        # Figure 2(C) with 2 VMs: VM 1's memory is local, VM 2's remote.
        _, _, sol = fidelity.liu_case('C', 2)
        counters = fidelity.liu_counters(
            sol, [fidelity.liu_pins('C', k) for k in (1, 2)])
        self.assertGreater(counters['IPC ratio'], 1.0)
        self.assertTrue(0.0 < counters['cycle loss'] < 1.0)
        self.assertTrue(0.0 < counters['hit rate'] < 1.0)
        # Without a local VM there is no ratio.
        _, _, sol = fidelity.liu_case('D', 2)
        self.assertIsNone(fidelity.liu_counters(
            sol, [fidelity.liu_pins('D', k) for k in (1, 2)])['IPC ratio'])

    def test_liu_correlations_leave_out_undefined_indicators(self):
        # Case D has no local VM: three indicators, no IPC ratio.
        r = fidelity.liu_correlations('D', (2, 4, 6, 8))
        self.assertEqual({'hit rate', 'cycle loss', 'IPC'}, set(r))
        for value in r.values():
            self.assertTrue(0.0 <= value <= 1.0)

    def test_liu_allocator_rows_are_run_not_pending(self):
        rows = [r for r in fidelity.rows_liu()
                if r.source.startswith('Liu & Li 6.1')]
        self.assertEqual(10, len(rows))  # 9 Figure 7-8 rows and Figure 9
        pending = [r for r in rows if r.verdict == fidelity.CANNOT]
        # Only the IPC ratio beside Figure 7(c): one IPC per VM, and the
        # allocator splits a VM's memory.
        self.assertEqual(['Liu & Li 6.1, Figure 7(c)'],
                         [r.source for r in pending])
        self.assertIn('IPC ratio', pending[0].result)
        for row in rows:
            if row not in pending:
                self.assertTrue(row.simulated)


def table_verdicts(text):
    """[(source, result, verdict)] of the rows of a fidelity table."""
    cells = [line.strip('| ').split(' | ') for line in text.splitlines()
             if line.startswith('| ') and not line.startswith('| source ')]
    return [(c[0], c[1], c[5]) for c in cells]


class TestDoc(testtools.TestCase):

    def test_the_doc_shows_the_verdicts_the_bench_gives_now(self):
        # A change to the simulator or a strategy that moves a verdict
        # must regenerate the table: python -m bench.fidelity.
        with open(fidelity.DOC, encoding='utf-8') as fh:
            doc = fh.read()
        table = doc.split(fidelity.BEGIN, 1)[1].split(fidelity.END, 1)[0]
        now = fidelity.markdown(fidelity.all_rows())
        self.assertEqual(table_verdicts(now), table_verdicts(table))

"""``contention-sim demo`` end to end.

Runs the demo as a separate process (as an operator would; it configures
Watcher's global options, which must not leak into other tests) and reads
the report it writes. Its figures are simulated; what is checked is that
the improvement it reports is real on the emulated cluster.
"""

import json
import os
import subprocess
import sys
import tempfile

import testtools

from tests.functional import services

SCENARIO = os.path.join(os.path.dirname(__file__), 'data',
                        'demo-small.yaml')


class TestDemo(testtools.TestCase):

    def run_demo(self, *extra, scenario=SCENARIO):
        """Run the demo on ``scenario`` (None: the embedded default)."""
        out = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ['rm', '-rf', out])
        where = ['--scenario', scenario] if scenario else []
        proc = subprocess.run(
            [sys.executable, '-m', 'contention.sim.cmd', 'demo'] + where
            + ['--new-instances', '2', '--seed', '3',
               '--output-dir', out] + list(extra),
            capture_output=True, text=True, timeout=600)
        return proc, out

    def test_demo_reports_a_real_improvement(self):
        # On the embedded default (Ahn et al.'s WL1, what `make demo`
        # runs). On the small scenario the harm check drops every repair
        # but a memory move onto the node of a VM left remote, and refuses
        # that too (doc/watcher.md, "NUMA repair"): its plan is empty.
        proc, out = self.run_demo('--no-plot', scenario=None)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        for stage in ('cluster', 'telemetry', 'nova', 'watcher', 'report'):
            self.assertIn('[simulated] %s' % stage, proc.stdout)
        with open(os.path.join(out, 'result.json')) as f:
            result = json.load(f)
        self.assertTrue(result['simulated'])
        # The worst-case start is imbalanced: the plan must act on it.
        self.assertGreater(len(result['plan']['actions']), 0)
        self.assertEqual(len(result['plan']['actions']), result['applied'])
        # The improvement reported is recomputed from the per-VM figures.
        vms = result['vms']
        before = sum(v['perf_before'] for v in vms) / len(vms)
        after = sum(v['perf_after'] for v in vms) / len(vms)
        self.assertAlmostEqual(before, result['totals']['perf_mean_before'])
        self.assertAlmostEqual(after, result['totals']['perf_mean_after'])
        # The plan repairs NUMA affinity and eases contention: every VM
        # counts, and the worst off gains too. (The LLC-miss spread between
        # sockets may rise: taking vCPUs to their memory can group the
        # memory-bound ones; performance is what the plan is judged by.)
        self.assertGreater(after, before + 0.01)
        self.assertGreater(min(v['perf_after'] for v in vms),
                           min(v['perf_before'] for v in vms))
        self.assertIn('socket_spread_after', result['totals'])
        # The plan's predicted change of the VMs' performance and the
        # one measured agree in direction (issue 19 item 4).
        predicted = {i['name']: i['value']
                     for i in result['plan']['indicators']}
        self.assertGreater(predicted['predicted_mean_performance_change'],
                           0)
        self.assertGreater(result['totals']['perf_change_mean'], 0)
        self.assertLessEqual(
            predicted['predicted_worst_performance_change'], 0)
        # Nova placed every new instance; telemetry went through the store.
        placements = result['nova']['placements']
        self.assertEqual(2, len(placements))
        self.assertTrue(all(p['host'] for p in placements))
        self.assertIn('ContentionWeigher', ' '.join(
            result['nova']['weighers']))
        self.assertGreater(result['telemetry']['reports'], 0)
        with open(os.path.join(out, 'report.txt')) as f:
            self.assertIn('simulated', f.read())

    def test_real_broker_and_postgresql_store(self):
        db = self.useFixture(services.PostgresDatabase())
        proc, out = self.run_demo('--no-plot', '--store', db.url,
                                  '--transport-url', services.RABBIT_URL)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        with open(os.path.join(out, 'result.json')) as f:
            result = json.load(f)
        self.assertIn('postgresql', result['telemetry']['store'])
        self.assertIn('rabbit://', result['telemetry']['transport'])
        self.assertNotIn(':guest@', proc.stdout)
        self.assertGreater(result['telemetry']['reports'], 0)

    def test_failing_stage_is_named(self):
        proc, _ = self.run_demo('--no-plot', '--store',
                                'postgresql+psycopg2://nobody@127.0.0.1:1/x')
        self.assertEqual(1, proc.returncode)
        self.assertIn('stage telemetry failed', proc.stderr)

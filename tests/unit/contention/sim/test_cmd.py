"""contention-sim: subcommands, labels, JSON, errors."""

import contextlib
import io
import json

from oslotest import base

from contention.sim import cmd


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cmd.main(argv)
    return status, out.getvalue(), err.getvalue()


class TestCmd(base.BaseTestCase):

    def test_scenarios_lists_shipped(self):
        status, out, _ = _run(['scenarios'])
        self.assertEqual(0, status)
        self.assertIn('ahn-wl6', out)
        self.assertIn('merlin-mix3', out)

    def test_evaluate_text_is_labelled_simulated(self):
        status, out, _ = _run(['evaluate', '--scenario', 'ahn-wl6',
                               '--policy', 'none', '--epochs', '2'])
        self.assertEqual(0, status)
        self.assertTrue(out.startswith('[simulated]'))
        self.assertIn('totals [simulated]', out)
        self.assertIn('platform efficiency', out)
        self.assertIn('gobmk-1', out)

    def test_evaluate_compares_with_the_baseline(self):
        status, out, _ = _run(['evaluate', '--scenario', 'ahn-wl6',
                               '--policy', 'random', '--epochs', '2',
                               '--seed', '4'])
        self.assertEqual(0, status)
        self.assertIn('against the baseline [simulated] (policy none, same '
                      'seed and epochs):', out)
        # The VM the policy made worst, by name, with its own change.
        line = [x for x in out.splitlines()
                if 'largest fall of one VM' in x][0]
        self.assertRegex(line, r'(gobmk|hmmer|namd|sjeng|povray|tonto)'
                               r'-\d+, [-+]\d+\.\d %|none fell')
        status, out, _ = _run(['evaluate', '--scenario', 'ahn-wl6',
                               '--policy', 'random', '--epochs', '2',
                               '--baseline', ''])
        self.assertNotIn('against the baseline', out)

    def test_help_lists_the_policies(self):
        err = io.StringIO()
        with contextlib.redirect_stdout(err):
            self.assertRaises(SystemExit, cmd.main, ['evaluate', '--help'])
        text = ' '.join(err.getvalue().split())
        self.assertIn('cache_aware_swap', text)
        self.assertIn('oracle', text)

    def test_evaluate_json(self):
        status, out, _ = _run(['evaluate', '--scenario', 'ahn-wl6',
                               '--policy', 'random', '--epochs', '2',
                               '--seed', '4', '--json'])
        data = json.loads(out)
        self.assertTrue(data['simulated'])
        self.assertEqual(4, data['seed'])
        self.assertEqual(32, len(data['vms']))
        self.assertEqual('none', data['baseline']['policy'])
        self.assertEqual(4, data['baseline']['seed'])
        fall = data['largest_fall']
        base = {vm['uuid']: vm['perf_mean'] for vm in data['baseline']['vms']}
        mine = {vm['uuid']: vm['perf_mean'] for vm in data['vms']}
        self.assertIn(fall['uuid'], base)
        self.assertAlmostEqual(
            min(mine[u] / base[u] - 1 for u in base), fall['change'])

    def test_errors_exit_2_with_message(self):
        status, _, err = _run(['evaluate', '--scenario', 'nope',
                               '--policy', 'none'])
        self.assertEqual(2, status)
        self.assertIn('nope', err)

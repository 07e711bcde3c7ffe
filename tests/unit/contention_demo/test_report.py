"""The demo's report formatting, on hand-made results."""

import os
import tempfile

import testtools

from contention_demo import report


def result(actions=()):
    vm = dict(name='vm-1', profile='milc', host_before='node-0',
              socket_before=0, host_after='node-1', socket_after=1,
              misses_before=30e6, misses_after=10e6, perf_before=0.5,
              perf_after=0.8)
    still = dict(vm, name='vm-2', host_after='node-0', socket_after=0,
                 perf_before=0.9, perf_after=0.9)
    return dict(
        simulated=True, scenario='tiny', description='a test', seed=7,
        telemetry=dict(agents=2, transport='fake://', store='sqlite://',
                       reports=6),
        nova=dict(weighers=['nova.scheduler.weights.ram.RAMWeigher',
                            'nova_filters.weigher.ContentionWeigher'],
                  model_note='no model: neutral',
                  placements=[dict(name='new-1', host='node-1', contention={
                      'node-0': dict(score=0.5, neutral='no model'),
                      'node-1': dict(score=0.5, neutral='no model')})]),
        vms=[vm, still],
        sockets=[dict(host='node-0', socket=0, misses_before=40e6,
                      misses_after=20e6, vms_before=2, vms_after=1)],
        totals=dict(perf_change_mean=30.0, perf_change_worst=0.0,
                    perf_mean_before=0.7, perf_mean_after=0.85,
                    perf_min_before=0.5, perf_min_after=0.8,
                    socket_spread_before=0.9, socket_spread_after=0.3),
        plan=dict(uuid='plan-1', state='RECOMMENDED', status_message='1 '
                  'action(s)', global_efficacy=[dict(
                      name='llc_miss_spread_reduction', value=66.7,
                      unit='%')],
                  actions=list(actions),
                  indicators=[dict(name='swaps_count', value=1.0,
                                   unit=None, description=''),
                              dict(name='predicted_mean_performance_change',
                                   value=12.5, unit='%', description=''),
                              dict(name='predicted_worst_performance_change',
                                   value=-2.0, unit='%', description='')]),
        applied=len(actions), rejected=[])


class TestFormat(testtools.TestCase):

    def test_everything_labelled_and_shown(self):
        text = report.format_report(result([dict(
            index=1, uuid='a', type='contention_swap', parents=[],
            parameters={'resource_id': 'u1', 'partner_id': 'u2'})]))
        self.assertIn('[simulated]', text.splitlines()[0])
        self.assertIn('1. contention_swap partner_id=u2, resource_id=u1',
                      text)
        self.assertIn('llc_miss_spread_reduction 66.7 %', text)
        self.assertIn('new-1                  -> node-1', text)
        self.assertIn('node-0 0.50 (neutral)', text)
        self.assertIn('0.700 -> 0.850 (+21.4 %)', text)
        self.assertIn('0.900 -> 0.300', text)
        self.assertIn('40.0 -> 20.0', text)
        # Prediction and measurement side by side, on the same measures.
        self.assertRegex(text, r"mean change of the VMs' performance +"
                               r"\+12\.5% +\+30\.0%")
        self.assertRegex(text, r"worst change of one VM's performance +"
                               r"-2\.0% +\+0\.0%")

    def test_moved_vms_are_marked(self):
        lines = report.format_report(result()).splitlines()
        moved = [ln for ln in lines if ln.strip().startswith('vm-1 ')]
        still = [ln for ln in lines if ln.strip().startswith('vm-2 ')]
        self.assertTrue(moved[0].endswith('*'))
        self.assertFalse(still[0].endswith('*'))

    def test_empty_plan_says_none(self):
        self.assertIn('(none)', report.format_report(result()))

    def test_plot_writes_a_png(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest('matplotlib (the plot extra) is not installed')
        path = os.path.join(tempfile.mkdtemp(), 'p.png')
        self.assertEqual(path, report.plot(result(), path))
        with open(path, 'rb') as f:
            self.assertEqual(b'\x89PNG', f.read(4))


class TestVmLayout(testtools.TestCase):

    def test_grouped_by_host_after_the_plan_with_a_gap(self):
        vms = result()['vms'] + [dict(result()['vms'][1], name='vm-0',
                                      host_after='node-1', socket_after=0)]
        placed, spans = report.vm_layout(vms, gap=1.0)
        self.assertEqual([(0.0, 'vm-2'), (2.0, 'vm-0'), (3.0, 'vm-1')],
                         [(x, vm['name']) for x, vm in placed])
        self.assertEqual([(0.0, 0.0, 'node-0'), (2.0, 3.0, 'node-1')],
                         spans)

    def test_moved_is_host_or_socket(self):
        vm, still = result()['vms']
        self.assertTrue(report.moved(vm))
        self.assertFalse(report.moved(still))
        self.assertTrue(report.moved(dict(still, socket_after=1)))

"""The agent's sim source: real HostReports through the agent's loop."""

from oslo_config import cfg
from oslotest import base

from compute_agent import loop
from compute_agent import opts as agent_opts
from contention import report
from compute_agent.sources import sim as agent_source


def _conf(**sim):
    conf = cfg.ConfigOpts()
    agent_opts.register_opts(conf)
    conf([])
    src = agent_source.SimSource()
    from contention.sim import opts
    opts.register_opts(conf)
    for key, value in sim.items():
        conf.set_override(key, value, 'sim')
    return conf, src


class TestSimSource(base.BaseTestCase):

    def test_loop_builds_valid_reports(self):
        conf, src = _conf(scenario='ahn-wl1', host='node-1')
        clock = iter([100.0, 100.0, 110.0, 110.0])   # start, end
        collector = loop.Collector('node-1', [src], 10.0,
                                   clock=lambda: next(clock))
        collector.open(conf)
        first = collector.collect()
        self.assertIn('first_sample', first.instances[0].notes)
        second = collector.collect()
        again = report.HostReport.from_dict(second.to_dict())
        self.assertEqual('node-1', again.topology.hostname)
        self.assertEqual(8, len(again.instances))
        self.assertEqual('simulated', again.sources[0].reason)
        for rec in again.instances:
            self.assertIsNotNone(rec.metrics.ipc)
            self.assertIsNotNone(rec.merlin_class)
            self.assertEqual(1, len(rec.vcpu_cpus))
        self.assertTrue(all(n.mpki_sum is not None for n in again.nodes))

    def test_reports_the_simulated_cpu_quota(self):
        # merlin-mix1 caps matmul and wordcount at half of each vCPU.
        conf, src = _conf(scenario='merlin-mix1')
        collector = loop.Collector('westmere', [src], 10.0,
                                   clock=lambda: 100.0)
        collector.open(conf)
        rep = report.HostReport.from_dict(collector.collect().to_dict())
        quotas = {rec.image_id: rec.cpu_quota for rec in rep.instances}
        self.assertEqual({'voldemort': 1.0, 'matmul': 0.5,
                          'wordcount': 0.5}, quotas)

    def test_unknown_host_or_scenario_is_unavailable(self):
        conf, src = _conf(scenario='ahn-wl1', host='nope')
        src.open(conf)
        sample = src.collect(1.0)
        self.assertFalse(sample.status.available)
        self.assertIn('node-0', sample.status.reason)
        conf, src = _conf(scenario='no-such-scenario')
        src.open(conf)
        self.assertIn('no such file', src.collect(1.0).status.reason)

"""The agent's sim source: real HostReports through the agent's loop."""

from oslo_config import cfg
from oslotest import base

from compute_agent import actions
from compute_agent import cmd
from compute_agent import loop
from compute_agent import opts as agent_opts
from contention import report
from compute_agent.sources import sim as agent_source
from tests.unit.compute_agent import base as agent_base


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
        # Each cycle's start: the counters are of it (read_at).
        clock = agent_base.Clock(100.0)
        collector = loop.Collector('node-1', [src], 10.0, clock=clock)
        collector.open(conf)
        first = collector.collect()
        self.assertIn('first_sample', first.instances[0].notes)
        clock.advance(10.0)
        second = collector.collect()
        self.assertEqual(10.0, second.interval_s)
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


class TestSimHostActions(base.BaseTestCase):
    """With ``sources = sim`` the agent's re-pins act on the simulator."""

    def test_build_sends_the_local_actions_to_the_emulated_host(self):
        conf = cfg.ConfigOpts()
        cmd._register(conf)
        from contention.sim import opts
        opts.register_opts(conf)
        conf([])
        conf.set_override('sources', ['sim'], 'agent')
        conf.set_override('host', 'node-1', 'agent')
        conf.set_override('scenario', 'ahn-wl1', 'sim')
        collector, local = cmd.build(conf)
        self.assertIsInstance(local, actions.EmulatedActions)
        rep = collector.collect()
        rec = rep.instances[0]
        node = rep.topology.node_of_cpu(rec.vcpu_cpus[0])
        other = [n for n in rep.topology.node_ids if n != node][0]
        answer = local.repin_instance(rec.uuid, node=other,
                                      move_memory=True)
        self.assertEqual((True, [other]),
                         (answer['changed'], answer['memory_nodes']))
        moved = {r.uuid: r for r in collector.collect().instances}[rec.uuid]
        self.assertEqual({other}, {rep.topology.node_of_cpu(c)
                                   for c in moved.vcpu_cpus})
        self.assertEqual([other], list(moved.memory_mib_per_node))
        # An instance of another host of the scenario is not this agent's.
        state = collector.sources[0].sim.state
        elsewhere = [i.uuid for i in state.instances
                     if state.hosts[i.host].name != 'node-1'][0]
        self.assertRaisesRegex(actions.ActionError, 'not on host node-1',
                               local.repin_instance, elsewhere, node=other)

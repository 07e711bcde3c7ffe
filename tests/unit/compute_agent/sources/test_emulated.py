"""The emulated source: Nova's servers on this host, emulated counters."""

from oslo_config import cfg
from oslotest import base

from compute_agent import actions
from compute_agent import loop
from compute_agent import opts as agent_opts
from compute_agent.sources import emulated


def server(uuid, name, flavor='m1.small', vcpus=1, ram=1024):
    return {'id': uuid, 'name': name, 'tenant_id': 'p1',
            'image': {'id': 'img-1'},
            'flavor': {'original_name': flavor, 'vcpus': vcpus, 'ram': ram}}


class FakeNova(object):
    """host -> servers, as Nova's API would list them."""

    def __init__(self, by_host):
        self.by_host = by_host

    def __call__(self, host):
        return [emulated.server_from_api(s)
                for s in self.by_host.get(host, [])]


class TestEmulatedSource(base.BaseTestCase):

    @staticmethod
    def source(nova, host='cmp-1', **opts):
        conf = cfg.ConfigOpts()
        agent_opts.register_opts(conf)
        conf([], project='contention')
        conf.set_override('host', host, group='agent')
        src = emulated.EmulatedSource(list_servers=nova)
        emulated.register_opts(conf)
        for name, value in opts.items():
            conf.set_override(name, value, group='emulated')
        src.open(conf)
        return src

    def test_reports_novas_servers_with_growing_counters(self):
        nova = FakeNova({'cmp-1': [server('u-a', 'vm-a'),
                                   server('u-b', 'vm-b', flavor='m1.cpu')]})
        src = self.source(nova, profiles={'vm-a': 'milc', 'm1.cpu': 'namd'})
        first = src.collect(100.0)
        second = src.collect(110.0)
        self.assertTrue(second.status.available)
        self.assertEqual('emulated', second.status.reason)
        self.assertEqual(['u-a', 'u-b'],
                         [i.uuid for i in second.instances])
        a = second.instances[0]
        self.assertEqual(('vm-a', 'm1.small', 1, 1024, 'img-1', 'p1'),
                         (a.name, a.flavor, a.vcpus, a.memory_mib,
                          a.image_id, a.project_id))
        self.assertGreater(a.counters['cache_misses'],
                           first.instances[0].counters['cache_misses'])
        # milc misses the LLC far more per instruction than namd.
        b = second.instances[1]
        self.assertGreater(
            a.counters['cache_misses'] / a.counters['instructions'],
            b.counters['cache_misses'] / b.counters['instructions'])
        self.assertEqual('cmp-1', second.topology.hostname)

    def test_a_migration_restarts_the_counters(self):
        nova = FakeNova({'cmp-1': [server('u-a', 'vm-a')]})
        src = self.source(nova)
        before = src.collect(100.0).instances[0].incarnation
        nova.by_host['cmp-1'].append(server('u-c', 'vm-c'))
        after = src.collect(110.0)
        self.assertEqual(['u-a', 'u-c'], [i.uuid for i in after.instances])
        self.assertNotEqual(before, after.instances[0].incarnation)
        nova.by_host['cmp-1'] = []
        empty = src.collect(120.0)
        self.assertTrue(empty.status.available)
        self.assertEqual((), empty.instances)
        self.assertIsNotNone(empty.topology)

    def test_unknown_profile_is_reported_not_raised(self):
        src = self.source(FakeNova({}), profiles={'vm-a': 'nosuch'})
        sample = src.collect(100.0)
        self.assertFalse(sample.status.available)
        self.assertIn('nosuch not in the profile library', sample.status.reason)

    def test_nova_failure_is_reported(self):
        def broken(host):
            raise ConnectionError('keystone unreachable')
        sample = self.source(broken).collect(100.0)
        self.assertFalse(sample.status.available)
        self.assertIn('keystone unreachable', sample.status.reason)

    def test_a_slow_nova_does_not_change_the_rates(self):
        """The agent divides by the interval the counters were stepped over.

        Nova answers the listing in 0.1 s one cycle and 0.8 s the next (a
        loaded cloud): a CPU-bound server still uses all of its CPU, as
        the strategies must read it (under 97 % it is taken for a service
        answering requests).
        """
        clock = [1000.0]
        delays = iter([0.1, 0.8, 0.1, 1.5, 0.2] * 2)

        def slow(host):
            clock[0] += next(delays)
            return FakeNova({'cmp-1': [server('u-b', 'vm-b')]})(host)
        collector = loop.Collector(
            'cmp-1', [self.source(slow, default_profile='namd')], 5.0,
            clock=lambda: clock[0])
        utils = []
        for _ in range(5):
            report = collector.collect()
            utils.append(report.instances[0].metrics.cpu_util)
            clock[0] += 5.0
        self.assertIsNone(utils[0])
        for util in utils[1:]:
            self.assertAlmostEqual(1.0, util, places=6)

    def test_server_missing_a_field(self):
        self.assertRaisesRegex(ValueError, "server u-x: missing field "
                               "'flavor'", emulated.server_from_api,
                               {'id': 'u-x', 'name': 'x'})


UUID_A = '0b4d4c2e-0000-4000-8000-00000000000a'
UUID_B = '0b4d4c2e-0000-4000-8000-00000000000b'
UUID_C = '0b4d4c2e-0000-4000-8000-00000000000c'


class TestEmulatedActions(base.BaseTestCase):
    """A re-pin or a CPU cap changes what the emulated host reports."""

    def setUp(self):
        super().setUp()
        self.nova = FakeNova({'cmp-1': [server(UUID_A, 'vm-a'),
                                        server(UUID_B, 'vm-b')]})
        self.src = TestEmulatedSource.source(self.nova,
                                             default_profile='milc')
        self.sample = self.src.collect(100.0)
        self.local = actions.EmulatedActions(
            'cmp-1', self.src, lambda: self.sample.topology)
        self.now = 100.0

    def collect(self):
        self.now += 10.0
        self.sample = self.src.collect(self.now)
        return {i.uuid: i for i in self.sample.instances}

    def node_of(self, inst):
        nodes = {self.sample.topology.node_of_cpu(c) for c in inst.vcpu_cpus}
        self.assertEqual(1, len(nodes), inst.vcpu_cpus)
        return nodes.pop()

    def test_repin_moves_the_vcpus_and_the_reports_show_it(self):
        before = self.collect()[UUID_A]
        node = self.node_of(before)
        other = [n for n in self.sample.topology.node_ids if n != node][0]
        answer = self.local.repin_instance(UUID_A, node=other)
        self.assertTrue(answer['changed'])
        self.assertEqual(sorted(self.sample.topology.node(other).cpus),
                         answer['cpus'])
        self.assertIsNone(answer['memory_nodes'])
        after = self.collect()[UUID_A]
        self.assertEqual(other, self.node_of(after))
        # The memory stayed where it was: now remote.
        self.assertEqual([node], list(after.memory_mib_per_node))
        again = self.local.repin_instance(UUID_A, node=other)
        self.assertFalse(again['changed'])

    def test_repin_with_memory_and_it_lasts_past_an_arrival(self):
        node = self.node_of(self.collect()[UUID_B])
        other = [n for n in self.sample.topology.node_ids if n != node][0]
        cpus = ','.join(str(c) for c in self.sample.topology.node(
            other).cpus)
        answer = self.local.repin_instance(UUID_B, cpus=cpus,
                                           move_memory=True)
        self.assertEqual([other], answer['memory_nodes'])
        # Another server lands: the host is rebuilt, the re-pin holds.
        self.nova.by_host['cmp-1'].append(server(UUID_C, 'vm-c'))
        after = self.collect()
        self.assertEqual(3, len(after))
        self.assertEqual(other, self.node_of(after[UUID_B]))
        self.assertEqual([other], list(after[UUID_B].memory_mib_per_node))

    def test_an_arrival_is_re_pinned_before_the_next_collection(self):
        # Watcher's swap re-pins a server as soon as Nova says it landed.
        self.nova.by_host['cmp-1'].append(server(UUID_C, 'vm-c'))
        answer = self.local.repin_instance(UUID_C, node=1, move_memory=True)
        self.assertEqual([1], answer['memory_nodes'])
        after = self.collect()
        self.assertEqual(1, self.node_of(after[UUID_C]))

    def test_cpu_quota_caps_the_instance(self):
        self.assertIsNone(self.collect()[UUID_A].cpu_quota)
        answer = self.local.set_cpu_quota(UUID_A, 25000)
        self.assertTrue(answer['changed'])
        start = self.collect()
        end = self.collect()
        self.assertEqual(0.25, end[UUID_A].cpu_quota)

        def done(uuid):
            return (end[uuid].counters['instructions']
                    - start[uuid].counters['instructions'])
        # A quarter of its CPU retires far fewer instructions than the
        # same workload uncapped, over the same interval.
        self.assertLess(done(UUID_A), 0.5 * done(UUID_B))
        self.assertFalse(self.local.set_cpu_quota(UUID_A, 25000)['changed'])
        self.local.set_cpu_quota(UUID_A, -1)
        self.assertIsNone(self.collect()[UUID_A].cpu_quota)

    def test_refusals_name_what_is_wrong(self):
        self.assertRaisesRegex(actions.ActionError,
                               'instance %s is not on host cmp-1' % UUID_C,
                               self.local.repin_instance, UUID_C, node=0)
        self.assertRaisesRegex(actions.ActionError, 'no NUMA node 9',
                               self.local.repin_instance, UUID_A, node=9)
        self.assertRaisesRegex(actions.ActionError, 'not a uuid',
                               self.local.repin_instance, 'x', node=0)
        self.assertRaisesRegex(actions.ActionError, 'quota_us',
                               self.local.set_cpu_quota, UUID_A, 5)
        self.assertRaisesRegex(actions.ActionError, 'exactly one',
                               self.local.repin_instance, UUID_A)

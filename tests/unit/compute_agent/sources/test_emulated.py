"""The emulated source: Nova's servers on this host, emulated counters."""

from oslo_config import cfg
from oslotest import base

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

    def source(self, nova, host='cmp-1', **opts):
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

    def test_server_missing_a_field(self):
        self.assertRaisesRegex(ValueError, "server u-x: missing field "
                               "'flavor'", emulated.server_from_api,
                               {'id': 'u-x', 'name': 'x'})

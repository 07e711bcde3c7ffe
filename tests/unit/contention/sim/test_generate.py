"""The cluster generator: seeded, feasible by construction, spans the space."""

import collections
import dataclasses
import io
import os
from unittest import mock

import fixtures
import testtools

from contention import sim
from contention.sim import cmd
from contention.sim import generate
from contention.sim import hardware


def _load(spec, seed=3):
    return generate.scenario(spec, seed)


class TestGenerate(testtools.TestCase):

    def test_the_same_seed_gives_the_same_cluster(self):
        spec = generate.ClusterSpec(hosts=9, occupancy=0.8)
        self.assertEqual(generate.generate(spec, 5),
                         generate.generate(spec, 5))
        self.assertNotEqual(generate.generate(spec, 5)['instances'],
                            generate.generate(spec, 6)['instances'])

    def test_every_shipped_class_generates_a_cluster_that_fits(self):
        for name, hw in generate.shipped_classes().items():
            for placement in generate.PLACEMENTS:
                spec = generate.ClusterSpec(hosts=8, classes=(name,),
                                            occupancy=1.0,
                                            placement=placement)
                data = generate.generate(spec, 11)
                scen = generate.scenario(spec, 11)
                self.assertEqual(8, len(scen.hosts))
                cores = generate._socket_cores(hw)
                vcpus = collections.Counter()
                memory = collections.Counter()
                for inst in data['instances']:
                    prof = data['profiles'][inst['profile']]
                    vcpus[inst['host'], inst['socket']] += prof['vcpus']
                    memory[inst['host'], inst['memory_socket']] += (
                        prof['memory_mib'])
                # completely full: every usable socket's cores are taken
                self.assertEqual({cores}, set(vcpus.values()), name)
                node_mib = hw.memory_gib_per_node * 1024 * (
                    hw.nodes_per_socket)
                self.assertLessEqual(max(memory.values()), node_mib, name)
                # and the simulator accepts the placement as written
                sim.Simulator(scen)

    def test_full_hosts_are_full_in_ram_too(self):
        spec = generate.ClusterSpec(hosts=8, classes=('xeon-2s4c',),
                                    occupancy=1.0)
        scen = _load(spec)
        hw = scen.hardware['xeon-2s4c']
        total = sum(scen.profiles[i.profile].memory_mib
                    for i in scen.instances)
        self.assertEqual(8 * hw.nodes * hw.memory_gib_per_node * 1024,
                         total)

    def test_half_empty_leaves_room(self):
        spec = generate.ClusterSpec(hosts=20, classes=('xeon-2s4c',),
                                    occupancy=0.5)
        scen = _load(spec)
        used = sum(scen.profiles[i.profile].vcpus for i in scen.instances)
        self.assertLess(used, 0.65 * 20 * 8)
        self.assertGreater(used, 0.35 * 20 * 8)

    def test_worst_start_puts_memory_on_another_socket(self):
        spec = generate.ClusterSpec(hosts=8, placement='worst')
        data = generate.generate(spec, 4)
        for inst in data['instances']:
            self.assertNotEqual(inst['socket'], inst['memory_socket'])
        # within a flavor size, the heaviest instances come first
        order = [generate.heaviness(data['profiles'][i['profile']])
                 for i in data['instances']
                 if data['profiles'][i['profile']]['vcpus'] == 1]
        self.assertEqual(sorted(order, reverse=True), order)

    def test_flavors_stop_at_a_socket_until_the_simulator_spans(self):
        spec = generate.ClusterSpec(hosts=8, classes=('xeon-2s4c',),
                                    apps=30)
        data = generate.generate(spec, 2)
        sizes = {p['vcpus'] for p in data['profiles'].values()}
        self.assertLessEqual(max(sizes), 4)
        with mock.patch.object(generate, 'SPANNING', True):
            self.assertEqual(32, generate._flavor_cap(
                [hardware.HardwareClass('x')], 32))

    def test_mixed_clusters_mix_classes(self):
        names = tuple(generate.shipped_classes())
        spec = generate.ClusterSpec(hosts=12, classes=names)
        scen = _load(spec)
        self.assertEqual(set(names), {c for _, c in scen.hosts})

    def test_a_class_added_to_the_hardware_module_joins(self):
        extra = hardware.HardwareClass('test-4s8c', sockets=4,
                                       cores_per_node=8)
        with mock.patch.dict(generate._SHIPPED, clear=True), \
                mock.patch.object(hardware, 'TEST_CLASSES', {'x': extra},
                                  create=True):
            self.assertIn('test-4s8c', generate.shipped_classes())
            scen = _load(generate.ClusterSpec(hosts=8,
                                              classes=('test-4s8c',)))
            self.assertEqual(4, scen.hardware['test-4s8c'].sockets)

    def test_profiles_span_the_kinds(self):
        import numpy as np
        rng = np.random.default_rng(0)
        p = {k: generate.profile(k, rng) for k in generate.KINDS}
        self.assertGreater(p['streaming']['mr_min'],
                           p['cache_small']['mr_min'])
        self.assertGreater(p['cache_large']['working_set_mib'],
                           p['cache_small']['working_set_mib'])
        self.assertLess(p['cpu_bound']['llc_apki'], 3.01)
        self.assertEqual('latency', p['latency_low']['metric'])
        self.assertLess(p['latency_low']['cpu_demand'],
                        p['latency_high']['cpu_demand'])
        self.assertIn('phases', p['phased']['cpu_demand'])
        self.assertRaises(generate.GenerateError, generate.profile,
                          'nonsense', rng)

    def test_shared_fractions_span_0_to_1_and_move_nothing_else(self):
        spec = generate.ClusterSpec(hosts=12, apps=8, occupancy=0.9)
        data = generate.generate(spec, 11)
        shares = {n: p.pop('shared_fraction')
                  for n, p in data['profiles'].items()}
        for name, share in shares.items():
            self.assertTrue(0.0 <= share <= 1.0, name)
            if data['profiles'][name]['vcpus'] == 1:
                self.assertEqual(1.0, share)
        self.assertGreater(len(set(shares.values())), 1)
        # the draw has its own stream: without it, the same cluster
        with mock.patch.object(generate, 'shared_fractions'):
            self.assertEqual(data, generate.generate(spec, 11))

    def test_bad_requests_name_the_field(self):
        for field, value in (('hosts', 7), ('hosts', 1001),
                             ('occupancy', 0.3), ('placement', 'pack'),
                             ('classes', ('nope',))):
            spec = dataclasses.replace(generate.ClusterSpec(),
                                       **{field: value})
            exc = self.assertRaises(generate.GenerateError,
                                    generate.generate, spec, 1)
            self.assertTrue(str(exc).startswith(field), str(exc))

    def test_a_family_is_reproducible_and_extends(self):
        small = generate.family(3, small=3, medium=1)
        big = generate.family(3, small=5, medium=2, large=1)
        self.assertEqual(small, generate.family(3, small=3, medium=1))
        names = [n for _, _, n in big]
        for item in small:
            self.assertIn(item, big)
        self.assertIn('gen-large-000', names)
        for spec, _, name in big:
            low, high = generate.SIZES[name.split('-')[1]]
            self.assertTrue(low <= spec.hosts <= high)


class TestCommand(testtools.TestCase):

    def test_generate_writes_a_scenario_that_runs(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'g.yaml')
        with mock.patch('sys.stderr', io.StringIO()) as err:
            self.assertEqual(0, cmd.main([
                'generate', '--seed', '7', '--hosts', '8', '--occupancy',
                '1.0', '--placement', 'worst', '--output', path]))
        self.assertIn('[simulated]', err.getvalue())
        result = sim.run(path, 'none', epochs=1)
        self.assertEqual('gen-7', result.scenario)

    def test_generate_without_a_seed_is_an_error(self):
        with mock.patch('sys.stderr', io.StringIO()) as err:
            self.assertEqual(2, cmd.main(['generate', '--hosts', '8']))
        self.assertIn('--seed is required', err.getvalue())

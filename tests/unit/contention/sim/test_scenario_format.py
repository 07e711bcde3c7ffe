"""Scenario format versions, the writer, and shipped host classes."""

import dataclasses

from oslotest import base
import yaml

from contention.sim import scenario

V1 = """
name: old
profile_library: ahn-spec2006
hardware:
  box:
    sockets: 2
    cores_per_node: 4
    same_socket_distance: 12
    remote_distance: 30
hosts:
  - class: box
    count: 2
instances:
  - profile: milc
    count: 3
"""


class TestVersions(base.BaseTestCase):

    def test_format_1_loads_and_means_what_it_meant(self):
        scen = scenario.loads(V1, 'old.yaml')
        self.assertIn('milc', scen.profiles)
        hw = scen.hardware['box']
        self.assertEqual(((10, 30), (30, 10)), hw.distance_matrix())
        self.assertEqual(3, len(scen.instances))

    def test_migrate_rewrites_the_library_key(self):
        data = scenario.migrate(yaml.safe_load(V1))
        self.assertEqual(2, data['format'])
        self.assertEqual(['ahn-spec2006'], data['profile_libraries'])
        self.assertNotIn('profile_library', data)

    def test_format_2_refuses_format_1_keys(self):
        data = yaml.safe_load(V1)
        data['format'] = 2
        err = self.assertRaises(scenario.ScenarioError,
                                scenario.from_dict, data, 'new.yaml')
        self.assertIn('new.yaml', str(err))
        self.assertIn('profile_library', str(err))

    def test_unknown_format_names_the_field(self):
        data = dict(yaml.safe_load(V1), format=7)
        err = self.assertRaises(scenario.ScenarioError,
                                scenario.from_dict, data, 'x.yaml')
        self.assertEqual('format', err.field)


class TestWriter(base.BaseTestCase):

    def test_every_shipped_scenario_round_trips(self):
        for name in scenario.available():
            scen = scenario.load(name)
            back = scenario.loads(scenario.dump(scen), 'back.yaml')
            self.assertEqual(dataclasses.replace(scen, source='back.yaml'),
                             back, name)

    def test_written_file_is_format_2_and_self_contained(self):
        text = scenario.dump(scenario.load('ahn-wl1'))
        data = yaml.safe_load(text)
        self.assertEqual(scenario.FORMAT, data['format'])
        self.assertNotIn('profile_libraries', data)
        self.assertEqual(32, len(data['instances']))
        self.assertIn('simulated', text)

    def test_flavors_nodes_and_matrices_round_trip(self):
        data = {
            'format': 2, 'name': 'gen', 'placement': 'explicit',
            'hardware': {'amd': {'base': 'amd-2s-nps4',
                                 'mc_bandwidth_gbs_per_node':
                                     [41, 41, 41, 30, 41, 41, 41, 41]}},
            'hosts': [{'class': 'amd', 'names': ['a', 'b']}],
            'profiles': {'db': {'vcpus': 8, 'numa_nodes': 2,
                                'cpu_policy': 'dedicated',
                                'shared_fraction': 0.4}},
            'instances': [{'profile': 'db', 'host': 'a', 'nodes': [0, 1]},
                          {'profile': 'db', 'host': 'b', 'socket': 1,
                           'quota': 0.5, 'movable': False}],
        }
        scen = scenario.from_dict(data, 'gen')
        back = scenario.loads(scenario.dump(scen), 'gen')
        self.assertEqual(scen, back)
        self.assertEqual((0, 1), back.instances[0].nodes)
        self.assertEqual(30.0, back.hardware['amd'].node_mc_bandwidth()[3])
        self.assertEqual(2, back.profiles['db'].numa_nodes)
        self.assertEqual(0.4, back.profiles['db'].shared_fraction)


class TestHostClasses(base.BaseTestCase):

    def test_shipped_classes(self):
        self.assertEqual({'intel-2s', 'intel-2s-snc2', 'amd-2s-nps1',
                          'amd-2s-nps4', 'intel-4s'},
                         set(scenario.host_classes()))
        for name in scenario.host_classes():
            hw = scenario.hardware_class(name, {'base': name})
            self.assertEqual([], hw.problems(), name)
            self.assertEqual(hw.nodes, len(hw.distance_matrix()))

    def test_nps4_distances_and_ccx_domains(self):
        hw = scenario.hardware_class('x', {'base': 'amd-2s-nps4'})
        d = hw.distance_matrix()
        self.assertEqual((10, 11, 12, 32), (d[0][0], d[0][1], d[0][2],
                                            d[0][4]))
        self.assertEqual(4, hw.l3_domains_per_node)

    def test_override_beside_base(self):
        hw = scenario.hardware_class('x', {'base': 'intel-2s',
                                           'cores_per_node': 8,
                                           'perf': {'freq_ghz': 3.0}})
        self.assertEqual(8, hw.cores_per_node)
        self.assertEqual(3.0, hw.perf.freq_ghz)
        self.assertEqual(102, hw.perf.mc_bandwidth_gbs)

    def test_unknown_base_and_bad_matrix_name_the_field(self):
        bad = {'format': 2, 'name': 'b',
               'hardware': {'h': {'base': 'nope'}},
               'hosts': [{'class': 'h'}], 'instances': []}
        err = self.assertRaises(scenario.ScenarioError, scenario.from_dict,
                                bad, 'b.yaml')
        self.assertEqual('hardware.h.base', err.field)
        bad['hardware'] = {'h': {'sockets': 2, 'distances': [[10, 20]]}}
        err = self.assertRaises(scenario.ScenarioError, scenario.from_dict,
                                bad, 'b.yaml')
        self.assertEqual('hardware.h.distances', err.field)
        bad['hardware'] = {'h': {'sockets': 1, 'distances': [[12]]}}
        err = self.assertRaises(scenario.ScenarioError, scenario.from_dict,
                                bad, 'b.yaml')
        self.assertEqual('hardware.h.distances.0.0', err.field)

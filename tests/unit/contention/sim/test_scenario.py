"""Scenario files: the shipped ones load; bad ones say file and field."""

import os
import subprocess
import tempfile

from oslotest import base
import yaml

from contention.sim import scenario

SHIPPED = ('ahn-wl1', 'ahn-wl2', 'ahn-wl3', 'ahn-wl4', 'ahn-wl5', 'ahn-wl6',
           'epyc-nps4', 'full-hosts', 'merlin-mix1', 'merlin-mix2',
           'merlin-mix3')


def _minimal():
    return {
        'name': 'tiny',
        'hardware': {'small': {'sockets': 2, 'cores_per_node': 2}},
        'hosts': [{'class': 'small', 'count': 2}],
        'profiles': {'app': {'llc_apki': 3}},
        'instances': [{'profile': 'app', 'count': 3}],
    }


class TestShipped(base.BaseTestCase):

    def test_every_shipped_scenario_loads(self):
        self.assertEqual(SHIPPED, scenario.available())
        for name in SHIPPED:
            scen = scenario.load(name)
            self.assertEqual(name, scen.name)
            self.assertTrue(scen.instances)

    def test_ahn_mixes_have_the_papers_shape(self):
        for n in range(1, 7):
            scen = scenario.load('ahn-wl%d' % n)
            self.assertEqual(4, len(scen.hosts))
            hw = scen.hardware['xeon-2s4c']
            self.assertEqual((2, 4), (hw.sockets, hw.cores_per_node))
            self.assertEqual(32, len(scen.instances))
            counts = {}
            for inst in scen.instances:
                counts[inst.profile] = counts.get(inst.profile, 0) + 1
                self.assertEqual(1, scen.profiles[inst.profile].vcpus)
            self.assertEqual([8, 8, 8, 8], sorted(counts.values()))
        wl6 = scenario.load('ahn-wl6')
        self.assertEqual({'cpu-bound'},
                         {wl6.profiles[i.profile].kind
                          for i in wl6.instances})

    def test_shipped_files_say_they_are_synthetic_and_are_tracked(self):
        root = os.path.dirname(scenario.SCENARIO_DIR)
        tracked = subprocess.run(
            ['git', 'ls-files', 'scenarios'], cwd=root,
            capture_output=True, text=True).stdout.split()
        for name in SHIPPED:
            path = os.path.join(scenario.SCENARIO_DIR, name + '.yaml')
            with open(path) as fh:
                self.assertIn('SYNTHETIC', fh.read())
            if tracked:     # a git checkout: pbr ships tracked files only
                self.assertIn('scenarios/%s.yaml' % name, tracked)


class TestErrors(base.BaseTestCase):

    def _error(self, data):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'broken.yaml')
            with open(path, 'w') as fh:
                yaml.safe_dump(data, fh)
            return self.assertRaises(scenario.ScenarioError, scenario.load,
                                     path)

    def test_minimal_is_valid(self):
        scen = scenario.from_dict(_minimal(), 'tiny.yaml')
        self.assertEqual(3, len(scen.instances))

    def test_wrong_type_names_file_and_field(self):
        data = _minimal()
        data['profiles']['app']['llc_apki'] = -1
        exc = self._error(data)
        self.assertEqual('broken.yaml', exc.source)
        self.assertEqual('profiles.app.llc_apki', exc.field)
        self.assertIn('broken.yaml: profiles.app.llc_apki:', str(exc))

    def test_unknown_field_is_refused(self):
        data = _minimal()
        data['hardware']['small']['corez'] = 4
        exc = self._error(data)
        self.assertEqual('hardware.small', exc.field)
        self.assertIn('corez', str(exc))

    def test_unknown_profile_and_class(self):
        data = _minimal()
        data['instances'][0]['profile'] = 'nope'
        exc = self._error(data)
        self.assertEqual('instances.0.profile', exc.field)
        data = _minimal()
        data['hosts'][0]['class'] = 'big'
        exc = self._error(data)
        self.assertEqual('hosts.0.class', exc.field)

    def test_missing_required_and_bad_placement(self):
        data = _minimal()
        del data['hosts']
        exc = self._error(data)
        self.assertIn('hosts', str(exc))
        data = _minimal()
        data['placement'] = 'best'
        self.assertEqual('placement', self._error(data).field)
        data = _minimal()
        data['placement'] = 'explicit'
        self.assertEqual('instances.0', self._error(data).field)

    def test_bad_yaml_and_missing_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'bad.yaml')
            with open(path, 'w') as fh:
                fh.write('name: [unclosed\n')
            exc = self.assertRaises(scenario.ScenarioError,
                                    scenario.load, path)
            self.assertIn('bad.yaml', str(exc))
        exc = self.assertRaises(scenario.ScenarioError, scenario.load,
                                'no-such-scenario')
        self.assertIn('ahn-wl1', str(exc))

    def test_phases_and_reserved_nodes(self):
        data = _minimal()
        data['profiles']['app']['cpu_demand'] = {'phases': [[10, 0.5],
                                                            [20, 1.0]]}
        data['hardware']['small']['reserved_nodes'] = [5]
        exc = self.assertRaises(scenario.ScenarioError, scenario.from_dict,
                                data, 'x.yaml')
        self.assertEqual('hardware.small.reserved_nodes', exc.field)
        data['hardware']['small']['reserved_nodes'] = [0]
        scen = scenario.from_dict(data, 'x.yaml')
        prof = scen.profiles['app']
        self.assertEqual(0.5, prof.demand_at(5))
        self.assertEqual(1.0, prof.demand_at(15))
        self.assertEqual(0.5, prof.demand_at(31))

"""HostReport v1.x: round trips, and a clear error for each bad input."""

import copy
import dataclasses
import json
import math
import os
import re

import fixtures
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslotest import base

from contention import report
from contention import schema
from contention import topology_parse
from tests.unit.fixtures import example_report
from tests.unit.fixtures import hosts
from tests.unit.fixtures import strategies

DOC = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'doc',
                   'telemetry.md')


def _through_json(data):
    return json.loads(json.dumps(data, allow_nan=False))


class TestRoundTrip(base.BaseTestCase):

    @settings(max_examples=150, deadline=None)
    @given(strategies.host_reports())
    def test_to_dict_json_from_dict_is_identity(self, original):
        data = _through_json(original.to_dict())
        loaded = report.HostReport.from_dict(data)
        self.assertEqual(original, loaded)
        self.assertEqual(data, _through_json(loaded.to_dict()))
        try:
            fast = schema._fast_loader(report.HostReport)(data)
        except schema._GiveUp:
            return      # e.g. an integral number where a float is declared
        self.assertEqual(loaded, fast)

    @settings(max_examples=50, deadline=None)
    @given(strategies.topologies())
    def test_topology_round_trip(self, topology):
        data = _through_json(topology.to_dict())
        self.assertEqual(topology, topology.from_dict(data))

    @settings(max_examples=50, deadline=None)
    @given(strategies.host_reports(), st.data())
    def test_any_minor_version_of_1_loads(self, original, data):
        minor = data.draw(st.integers(0, 10 ** 6))
        loaded = _through_json(original.to_dict())
        loaded['version'] = '1.%d' % minor
        self.assertEqual('1.%d' % minor,
                         report.HostReport.from_dict(loaded).version)

    def test_a_1_0_report_without_cpu_quota_loads_uncapped(self):
        # What an agent older than schema 1.1 sends: the collector must
        # take it, with the field 1.1 added at its default.
        data = _through_json(example_report.example_report().to_dict())
        data['version'] = '1.0'
        for inst in data['instances']:
            del inst['cpu_quota']
        for loader in (report.HostReport.from_dict,
                       schema._fast_loader(report.HostReport)):
            loaded = loader(copy.deepcopy(data))
            self.assertEqual([None, None],
                             [i.cpu_quota for i in loaded.instances])
            self.assertEqual('1.0', loaded.version)

    def test_parsed_topologies_are_valid_in_reports(self):
        topo = topology_parse.from_capabilities_xml(
            hosts.capabilities_xml(hosts.AMD_EPYC_NPS4), 'h')
        original = report.HostReport(host='h', timestamp=1.0,
                                     interval_s=10.0, topology=topo,
                                     cache_miss_level='L2')
        self.assertEqual(original, report.HostReport.from_dict(
            _through_json(original.to_dict())))


class TestExampleInDoc(base.BaseTestCase):
    """doc/telemetry.md shows what the code builds, so it cannot go stale."""

    def _doc_example(self):
        with open(DOC) as handle:
            text = handle.read()
        match = re.search(r'<!-- example-report -->\s*```json\n(.*?)\n```',
                          text, re.S)
        self.assertIsNotNone(match, 'no example report in %s' % DOC)
        return match.group(1)

    def test_doc_example_loads_and_equals_the_builder(self):
        text = self._doc_example()
        loaded = report.HostReport.from_dict(json.loads(text))
        self.assertEqual(example_report.example_report(), loaded)
        # same text too, so the regeneration command is the way to update.
        self.assertEqual(example_report.example_json(), text)

    def test_an_agents_report_takes_the_fast_loader_whole(self):
        data = json.loads(self._doc_example())
        fast = schema._fast_loader(report.HostReport)(data)
        self.assertEqual(example_report.example_report(), fast)


class TestBadInput(base.BaseTestCase):
    """Each kind of bad input names the field path and the problem."""

    def setUp(self):
        super().setUp()
        topo = topology_parse.from_capabilities_xml(
            hosts.libvirt_test_capabilities(), 'compute-1')
        self.data = _through_json(
            example_report.example_report(topo).to_dict())
        self.instance = self.data['instances'][0]

    def assertInvalid(self, path, problem, data=None):
        exc = self.assertRaises(report.InvalidReport,
                                report.HostReport.from_dict,
                                self.data if data is None else data)
        self.assertEqual(path, exc.path)
        self.assertEqual(problem, exc.problem)
        self.assertEqual('%s: %s' % (path, problem), str(exc))

    def test_base_data_is_valid(self):
        self.assertEqual(2, len(report.HostReport.from_dict(
            self.data).instances))

    def test_not_an_object(self):
        self.assertInvalid('report', 'expected an object, got list', [])

    def test_missing_field(self):
        del self.data['host']
        self.assertInvalid('report.host', 'missing field')

    def test_missing_nested_field(self):
        del self.instance['uuid']
        self.assertInvalid('report.instances[0].uuid', 'missing field')

    def test_missing_version(self):
        del self.data['version']
        self.assertInvalid('report.version', 'missing or not a string')

    def test_wrong_type(self):
        self.instance['vcpus'] = '4'
        self.assertInvalid('report.instances[0].vcpus',
                           "expected an integer, got '4'")

    def test_wrong_container_type(self):
        self.instance['vcpu_cpus'] = 3
        self.assertInvalid('report.instances[0].vcpu_cpus',
                           'expected a list, got int')

    def test_nan(self):
        self.instance['metrics']['ipc'] = math.nan
        self.assertInvalid('report.instances[0].metrics.ipc',
                           'must be a finite number, got nan')

    def test_nan_from_json_text(self):
        # Python's json module accepts the non-standard NaN literal.
        text = json.dumps(self.data).replace('"mpki_sum": 7.5',
                                             '"mpki_sum": NaN')
        self.assertInvalid('report.nodes[0].mpki_sum',
                           'must be a finite number, got nan',
                           json.loads(text))

    def test_nan_where_an_integer_is_expected(self):
        self.instance['counters']['cycles'] = math.nan
        self.assertInvalid('report.instances[0].counters.cycles',
                           'expected an integer, got nan')

    def test_inf(self):
        self.data['timestamp'] = math.inf
        self.assertInvalid('report.timestamp',
                           'must be a finite number, got inf')

    def test_negative_infinity_in_a_dict(self):
        self.instance['memory_mib_per_node']['0'] = -math.inf
        self.assertInvalid("report.instances[0].memory_mib_per_node['0']",
                           'must be a finite number, got -inf')

    def test_negative_count(self):
        self.instance['counters']['cache_misses'] = -1
        self.assertInvalid('report.instances[0].counters.cache_misses',
                           'must be >= 0, got -1')

    def test_negative_count_in_classes(self):
        self.data['nodes'][0]['classes']['medium/medium'] = -2
        self.assertInvalid('report.nodes[0].classes',
                           'must be >= 0, got -2')

    def test_negative_node_load(self):
        self.data['nodes'][0]['miss_intensity'] = -3.0
        self.assertInvalid('report.nodes[0].miss_intensity',
                           'must be >= 0, got -3.0')
        self.data['nodes'][0]['miss_intensity'] = None
        self.data['nodes'][1]['cpu_demand'] = math.inf
        self.assertInvalid('report.nodes[1].cpu_demand',
                           'must be a finite number, got inf')

    def test_report_of_an_older_agent_has_no_node_loads(self):
        for node in self.data['nodes']:
            del node['miss_intensity'], node['cpu_demand']
        self.data['version'] = '1.2'
        loaded = report.HostReport.from_dict(self.data)
        self.assertEqual({None}, {n.miss_intensity for n in loaded.nodes})

    def test_negative_memory_per_node(self):
        self.instance['memory_mib_per_node']['0'] = -1.0
        self.assertInvalid('report.instances[0].memory_mib_per_node[0]',
                           'negative memory')

    def test_negative_cpu_quota(self):
        self.instance['cpu_quota'] = -0.5
        self.assertInvalid('report.instances[0].cpu_quota',
                           'must be >= 0, got -0.5')

    def test_zero_vcpus(self):
        self.instance['vcpus'] = 0
        self.assertInvalid('report.instances[0].vcpus',
                           'must be >= 1, got 0')

    def test_unknown_version(self):
        self.data['version'] = '2.0'
        self.assertInvalid('report.version', "unknown schema version '2.0' "
                           "(this reader knows 1.x)")

    def test_malformed_versions(self):
        for version in ('1', '1.0.1', 'one.zero', ' 1.0', '1.', '.1',
                        '\u00b2.0', '\u0661.\u0660'):
            self.data['version'] = version
            self.assertInvalid('report.version',
                               'malformed version %r' % version)

    def test_version_not_a_string(self):
        self.data['version'] = 1.0
        self.assertInvalid('report.version', 'missing or not a string')

    def test_cpu_not_in_topology(self):
        self.instance['vcpu_cpus'] = [0, 1, 2, 16]
        self.assertInvalid('report.instances[0].vcpu_cpus',
                           'CPU 16 is not in the topology')

    def test_cpuset_not_in_topology(self):
        self.instance['cpuset'] = [0, 99]
        self.assertInvalid('report.instances[0].cpuset',
                           'CPU 99 is not in the topology')

    def test_memory_on_unknown_node(self):
        self.instance['memory_mib_per_node'] = {'0': 2048.0, '7': 2048.0}
        self.assertInvalid('report.instances[0].memory_mib_per_node[7]',
                           'NUMA node 7 is not in the topology')

    def test_memory_node_key_not_an_integer(self):
        self.instance['memory_mib_per_node'] = {'node0': 2048.0}
        self.assertInvalid(
            "report.instances[0].memory_mib_per_node['node0']",
            'key must be an integer')

    def test_memory_node_keys_that_would_collapse(self):
        self.instance['memory_mib_per_node'] = {'0': 1.0, '00': 2.0}
        self.assertInvalid("report.instances[0].memory_mib_per_node['00']",
                           'key must be an integer')

    def test_aggregate_for_unknown_node(self):
        self.data['nodes'][1]['node'] = 5
        self.assertInvalid('report.nodes[1].node',
                           'NUMA node 5 is not in the topology')

    def test_aggregate_listed_twice(self):
        self.data['nodes'][1]['node'] = 0
        self.assertInvalid('report.nodes[1].node', 'node 0 listed twice')

    def test_instance_listed_twice(self):
        twin = copy.deepcopy(self.instance)
        self.data['instances'].append(twin)
        self.assertInvalid('report.instances[2].uuid',
                           'instance %s listed twice' % twin['uuid'])

    def test_more_placements_than_vcpus(self):
        self.instance['vcpu_cpus'] = [0, 1, 2, 3, 4]
        self.assertInvalid('report.instances[0].vcpu_cpus',
                           '5 entries for 4 vCPUs')

    def test_unknown_field(self):
        self.data['colour'] = 'blue'
        self.assertInvalid('report', 'unknown field(s) colour')

    def test_unknown_nested_field(self):
        self.instance['counters']['branch_misses'] = 3
        self.assertInvalid('report.instances[0].counters',
                           'unknown field(s) branch_misses')

    def test_bool_where_int_expected(self):
        self.instance['vcpus'] = True
        self.assertInvalid('report.instances[0].vcpus',
                           'expected an integer, got True')

    def test_bool_where_float_expected(self):
        self.data['interval_s'] = False
        self.assertInvalid('report.interval_s',
                           'expected a number, got False')

    def test_int_where_bool_expected(self):
        self.data['nodes'][0]['mc_ic_pressure'] = 1
        self.assertInvalid('report.nodes[0].mc_ic_pressure',
                           'expected true or false, got 1')

    def test_null_where_required(self):
        self.data['host'] = None
        self.assertInvalid('report.host', 'expected a string, got None')

    def test_bad_choice(self):
        self.instance['cpu_policy'] = 'exclusive'
        self.assertInvalid('report.instances[0].cpu_policy',
                           "must be one of 'shared', 'dedicated', 'mixed', "
                           "got 'exclusive'")

    def test_empty_host(self):
        self.data['host'] = ''
        self.assertInvalid('report.host', 'empty host name')

    def test_zero_interval(self):
        self.data['interval_s'] = 0
        self.assertInvalid('report.interval_s', 'must be positive')

    def test_distances_not_square(self):
        self.data['topology']['distances'] = [[10, 20]]
        self.assertInvalid('report.topology.distances',
                           'must be a 2x2 matrix')


class TestInconsistentTopology(base.BaseTestCase):
    """The topology inside a report must refer to its own parts."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # with caches, from a sysfs tree: build it once.
        cls.valid = _through_json(report.HostReport(
            host='h', timestamp=1.0, interval_s=10.0,
            topology=example_report.example_topology()).to_dict())

    def setUp(self):
        super().setUp()
        self.data = copy.deepcopy(self.valid)
        self.topo = self.data['topology']

    def assertInvalid(self, path, problem):
        exc = self.assertRaises(report.InvalidReport,
                                report.HostReport.from_dict, self.data)
        self.assertEqual((path, problem), (exc.path, exc.problem))

    def test_cpu_on_unknown_node(self):
        self.topo['cpus'][3]['node'] = 4
        self.assertInvalid('report.topology.cpus[3].node',
                           'NUMA node 4 is not in the topology')

    def test_cache_index_out_of_range(self):
        self.topo['cpus'][2]['l3'] = 40
        self.assertInvalid('report.topology.cpus[2].l3',
                           'no L3 cache at index 40')

    def test_cache_index_of_the_wrong_level(self):
        self.topo['cpus'][2]['l3'] = self.topo['cpus'][2]['l2']
        self.assertInvalid('report.topology.cpus[2].l3',
                           'no L3 cache at index 2')

    def test_cpu_listed_twice(self):
        self.topo['cpus'][5]['id'] = 4
        self.assertInvalid('report.topology.cpus[5].id',
                           'CPU 4 listed twice')

    def test_node_listed_twice(self):
        self.topo['nodes'][1]['id'] = 0
        self.assertInvalid('report.topology.nodes[1].id',
                           'node 0 listed twice')

    def test_node_claims_a_cpu_of_another_node(self):
        self.topo['nodes'][0]['cpus'].append(8)
        self.assertInvalid('report.topology.nodes[0].cpus',
                           'CPU 8 is not a CPU of node 0')

    def test_cache_of_unknown_cpu(self):
        self.topo['caches'][17]['cpus'].append(16)
        self.assertInvalid('report.topology.caches[17].cpus',
                           'CPU 16 is not in the topology')

    def test_sibling_unknown(self):
        self.topo['cpus'][0]['siblings'] = [0, 32]
        self.assertInvalid('report.topology.cpus[0].siblings',
                           'CPU 32 is not in the topology')


class TestTopologyMemo(base.BaseTestCase):
    """A topology already checked is reused, never confused or aliased."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(
            report, '_TOPOLOGIES', report._TopologyMemo()))
        self.data = _through_json(report.HostReport(
            host='h', timestamp=1.0, interval_s=10.0,
            topology=example_report.example_topology()).to_dict())

    def _renamed(self, name):
        data = copy.deepcopy(self.data)
        data['host'] = data['topology']['hostname'] = name
        return data

    def test_same_hardware_under_another_name_loads_equal(self):
        first = report.HostReport.from_dict(self.data)
        again = report.HostReport.from_dict(self._renamed('other'))
        self.assertEqual('other', again.topology.hostname)
        self.assertEqual(dataclasses.replace(first.topology,
                                             hostname='other'),
                         again.topology)
        self.assertEqual(again.topology.cpu(3), first.topology.cpu(3))

    def test_changing_the_dict_afterwards_cannot_pass_a_bad_topology(self):
        report.HostReport.from_dict(self.data)
        # The caller reuses its dict: the memo must not see the change.
        self.data['topology']['cpus'][3]['node'] = 4
        exc = self.assertRaises(report.InvalidReport,
                                report.HostReport.from_dict, self.data)
        self.assertEqual('report.topology.cpus[3].node', exc.path)

    def test_a_topology_that_failed_is_checked_again(self):
        bad = copy.deepcopy(self.data)
        bad['topology']['cpus'][5]['id'] = 4
        for _ in range(2):
            exc = self.assertRaises(report.InvalidReport,
                                    report.HostReport.from_dict, bad)
            self.assertEqual('report.topology.cpus[5].id', exc.path)

    def test_a_bad_host_name_in_a_known_topology_is_still_refused(self):
        report.HostReport.from_dict(self.data)
        self.data['topology']['hostname'] = 7
        exc = self.assertRaises(report.InvalidReport,
                                report.HostReport.from_dict, self.data)
        self.assertEqual(('report.topology.hostname',
                          'expected a string, got 7'),
                         (exc.path, exc.problem))

    def test_json_spellings_python_calls_equal_are_not_the_same(self):
        report.HostReport.from_dict(self.data)
        # True == 1 in Python; the full check refuses a boolean node id.
        cpus = self.data['topology']['cpus']
        index = next(i for i, cpu in enumerate(cpus) if cpu['node'] == 1)
        cpus[index]['node'] = True
        exc = self.assertRaises(report.InvalidReport,
                                report.HostReport.from_dict, self.data)
        self.assertEqual(('report.topology.cpus[%d].node' % index,
                          'expected an integer, got True'),
                         (exc.path, exc.problem))

    def test_nan_never_matches_the_null_it_is_written_as(self):
        self.data['topology']['cpus'][0]['l2'] = None
        report.HostReport.from_dict(self.data)
        self.data['topology']['cpus'][0]['l2'] = float('nan')
        exc = self.assertRaises(report.InvalidReport,
                                report.HostReport.from_dict, self.data)
        self.assertEqual('report.topology.cpus[0].l2', exc.path)

    def test_bounded(self):
        memo = report._TopologyMemo()
        topology = example_report.example_topology()
        for i in range(memo.MAX + 10):
            memo.put(dict(self.data['topology'], cpu_model='m%d' % i),
                     topology)
        self.assertEqual(memo.MAX, len(memo._known))

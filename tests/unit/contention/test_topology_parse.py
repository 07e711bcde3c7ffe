"""Host topology from libvirt capabilities XML and from sysfs."""

import os
import shutil
import socket
import tempfile

import fixtures
from hypothesis import given
from hypothesis import strategies as st
from oslotest import base

from contention import topology_parse as tp
from tests.unit.fixtures import hosts


def _sysfs(test, spec):
    root = test.useFixture(fixtures.TempDir()).path
    hosts.write_sysfs(spec, root)
    return root


class _SharedTree(object):
    """One sysfs tree per class: writing thousands of files is slow."""

    spec = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.root = tempfile.mkdtemp()
        hosts.write_sysfs(cls.spec, cls.root)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root)
        super().tearDownClass()


def _l3_per_node(topo):
    return {node.id: {topo.cpu(c).l3 for c in node.cpus}
            for node in topo.nodes}


class TestCpuList(base.BaseTestCase):

    def test_ranges_and_single_cpus(self):
        self.assertEqual((0, 1, 2, 3, 8, 10, 11),
                         tp.parse_cpulist('0-3,8,10-11'))

    def test_unsorted_and_overlapping_items_are_merged(self):
        self.assertEqual((1, 2, 3, 5), tp.parse_cpulist('5,1-3,2\n'))

    def test_blank_list_is_empty(self):
        self.assertEqual((), tp.parse_cpulist(' \n'))

    def test_malformed_lists_name_the_source(self):
        for text in ('0-', 'a', '1,,2', '1-2-3', '0-3:2', '-1'):
            exc = self.assertRaises(tp.TopologyError, tp.parse_cpulist,
                                    text, 'node0/cpulist')
            self.assertEqual('node0/cpulist', exc.path)
            self.assertIn('malformed CPU list', exc.problem)

    @given(st.sets(st.integers(0, 4096), max_size=64))
    def test_reads_what_the_kernel_writes(self, cpus):
        self.assertEqual(tuple(sorted(cpus)),
                         tp.parse_cpulist(hosts.cpulist(cpus) + '\n'))

    def test_limit_is_checked_before_a_range_is_expanded(self):
        self.assertEqual((0, 1, 2), tp.parse_cpulist('0-2', limit=3))
        exc = self.assertRaises(tp.TopologyError, tp.parse_cpulist,
                                '0-99999999',
                                'cpus', limit=40)
        self.assertIn('CPU 99999999 is beyond', exc.problem)
        # Ten-digit ids and huge lists are malformed, with short messages.
        exc = self.assertRaises(tp.TopologyError, tp.parse_cpulist,
                                '1' * 5000, 'cpus')
        self.assertLess(len(str(exc)), 300)

    def test_descending_range_is_refused(self):
        exc = self.assertRaises(tp.TopologyError, tp.parse_cpulist, '3-1')
        self.assertIn('descending range', exc.problem)


class TestLibvirtTestDriver(_SharedTree, base.BaseTestCase):
    """The XML libvirt's test:///default really returns."""

    spec = hosts.LIBVIRT_TEST

    def setUp(self):
        super().setUp()
        self.topo = tp.from_capabilities_xml(
            hosts.libvirt_test_capabilities(), 'testhost')

    def test_nodes_memory_and_cpus(self):
        self.assertEqual((0, 1), self.topo.node_ids)
        self.assertEqual(tuple(range(8)), self.topo.node(0).cpus)
        self.assertEqual(tuple(range(8, 16)), self.topo.node(1).cpus)
        self.assertEqual(2048, self.topo.node(0).memory_mib)
        self.assertEqual(4096, self.topo.node(1).memory_mib)

    def test_sockets_and_unique_cores(self):
        self.assertEqual((0, 1), self.topo.sockets)
        self.assertEqual(1, self.topo.node(1).socket)
        # core_id 0 exists on both sockets: the host-wide ids differ.
        self.assertNotEqual(self.topo.cpu(0).core, self.topo.cpu(8).core)
        self.assertEqual(16, len({c.core for c in self.topo.cpus}))

    def test_no_smt(self):
        self.assertTrue(all(c.siblings == (c.id,) for c in self.topo.cpus))

    def test_missing_distances_default_to_10_and_20(self):
        self.assertEqual(((10, 20), (20, 10)), self.topo.distances)

    def test_no_vendor_no_caches(self):
        self.assertEqual('unknown', self.topo.cpu_vendor)
        self.assertEqual('', self.topo.cpu_model)
        self.assertEqual((), self.topo.caches)
        self.assertIsNone(self.topo.cpu(3).l3)
        self.assertEqual('L3', self.topo.cache_miss_level)

    def test_hostname_defaults_to_this_machine(self):
        topo = tp.from_capabilities_xml(hosts.libvirt_test_capabilities())
        self.assertEqual(socket.gethostname(), topo.hostname)

    def test_sysfs_of_the_same_shape(self):
        topo = tp.from_sysfs(self.root, 'testhost')
        self.assertEqual(self.topo.nodes, topo.nodes)
        self.assertEqual(
            [(c.id, c.node, c.socket, c.core, c.siblings)
             for c in self.topo.cpus],
            [(c.id, c.node, c.socket, c.core, c.siblings) for c in topo.cpus])
        self.assertEqual('L3', topo.cache_miss_level)
        self.assertEqual(self.topo.distances, topo.distances)
        self.assertEqual('unknown', topo.cpu_vendor)  # no proc/cpuinfo
        self.assertEqual(2, len(topo.l3_domains()))
        self.assertEqual(16, len([c for c in topo.caches if c.level == 2]))

    def test_merge_takes_caches_from_sysfs(self):
        sysfs = tp.from_sysfs(self.root, 'other')
        merged = tp.merge(self.topo, sysfs)
        self.assertEqual('testhost', merged.hostname)
        self.assertEqual(sysfs.caches, merged.caches)
        self.assertEqual(tuple(range(8)), merged.caches[merged.cpu(5).l3].cpus)
        self.assertEqual((5,), merged.caches[merged.cpu(5).l2].cpus)
        self.assertEqual(8192, merged.caches[merged.cpu(5).l3].size_kib)


class _HostCase(_SharedTree):
    """Checks that hold for a spec, whichever parser read it."""

    def sysfs(self):
        return tp.from_sysfs(self.root, 'host1')

    def caps(self):
        return tp.from_capabilities_xml(hosts.capabilities_xml(self.spec),
                                        'host1')

    def parsed(self):
        return (self.sysfs(), self.caps())

    def test_both_parsers_agree_on_nodes_cpus_and_distances(self):
        sysfs, caps = self.parsed()
        self.assertEqual(sysfs.nodes, caps.nodes)
        self.assertEqual(sysfs.distances, caps.distances)
        self.assertEqual([(c.cpus, c.size_kib) for c in sysfs.l3_domains()],
                         [(c.cpus, c.size_kib) for c in caps.l3_domains()])
        self.assertEqual(
            [(c.id, c.node, c.socket, c.core, c.siblings) for c in sysfs.cpus],
            [(c.id, c.node, c.socket, c.core, c.siblings) for c in caps.cpus])

    def test_cores_are_unique_per_host(self):
        for topo in self.parsed():
            lay = hosts.Layout(self.spec)
            self.assertEqual(lay.cores, len({c.core for c in topo.cpus}))
            # the same sysfs core_id on the other socket is another core
            other = lay.cores_per_socket
            self.assertEqual(lay.core_id(0), lay.core_id(other))
            self.assertNotEqual(topo.cpu(0).core, topo.cpu(other).core)

    def test_caps_has_l3_only_and_merge_adds_l2(self):
        sysfs, caps = self.parsed()
        self.assertEqual({3}, {c.level for c in caps.caches})
        self.assertIsNone(caps.cpu(0).l2)
        merged = tp.merge(caps, sysfs)
        self.assertEqual(self.spec.libvirt_model, merged.cpu_model)
        self.assertEqual(sysfs.caches, merged.caches)
        self.assertEqual(sysfs.cpus, merged.cpus)
        for cpu in merged.cpus:
            self.assertEqual(cpu.siblings, merged.caches[cpu.l2].cpus)


class TestIntelTwoSocket(_HostCase, base.BaseTestCase):

    spec = hosts.INTEL_2S

    def test_nodes_and_sockets(self):
        for topo in self.parsed():
            self.assertEqual((0, 1), topo.node_ids)
            self.assertEqual((0, 1), topo.sockets)
            self.assertEqual(tuple(range(10)) + tuple(range(20, 30)),
                             topo.node(0).cpus)
            self.assertEqual(96000, topo.node(1).memory_mib)
            self.assertEqual((0,), topo.nodes_of_socket(0))

    def test_smt_siblings(self):
        for topo in self.parsed():
            self.assertEqual((0, 20), topo.cpu(20).siblings)
            self.assertEqual((19, 39), topo.cpu(19).siblings)
            self.assertEqual(topo.cpu(3).core, topo.cpu(23).core)

    def test_l2_per_core_l3_per_socket(self):
        topo = self.sysfs()
        l2 = [c for c in topo.caches if c.level == 2]
        self.assertEqual(20, len(l2))
        self.assertEqual((7, 27), topo.caches[topo.cpu(27).l2].cpus)
        self.assertEqual(1024, topo.caches[topo.cpu(27).l2].size_kib)
        self.assertEqual({0: {topo.cpu(0).l3}, 1: {topo.cpu(10).l3}},
                         _l3_per_node(topo))
        self.assertEqual(topo.node(1).cpus,
                         topo.caches[topo.cpu(10).l3].cpus)
        self.assertEqual(14080, topo.caches[topo.cpu(10).l3].size_kib)

    def test_distances(self):
        for topo in self.parsed():
            self.assertEqual(((10, 21), (21, 10)), topo.distances)

    def test_vendor_and_cache_miss_level(self):
        sysfs, caps = self.parsed()
        for topo in (sysfs, caps):
            self.assertEqual('intel', topo.cpu_vendor)
            self.assertEqual('L3', topo.cache_miss_level)
        self.assertEqual('Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz',
                         sysfs.cpu_model)
        self.assertEqual('Skylake-Server-IBRS', caps.cpu_model)

    def _set_online(self, text):
        with open(os.path.join(self.root, 'devices/system/cpu/online'),
                  'w') as handle:
            handle.write(text)

    def test_offline_cpus_are_left_out(self):
        self._set_online('0-38\n')
        self.addCleanup(self._set_online, '0-39\n')
        topo = tp.from_sysfs(self.root, 'host1')
        self.assertFalse(topo.has_cpu(39))
        self.assertEqual((19,), topo.cpu(19).siblings)
        self.assertEqual((19,), topo.caches[topo.cpu(19).l2].cpus)

    def test_merge_refuses_hosts_that_disagree(self):
        caps = tp.from_capabilities_xml(
            hosts.capabilities_xml(hosts.AMD_EPYC_NPS4), 'h')
        exc = self.assertRaises(tp.TopologyError, tp.merge, caps,
                                self.sysfs())
        self.assertEqual('merge(h)', exc.path)
        self.assertIn('libvirt reports nodes [0, 1, 2, 3, 4, 5, 6, 7], '
                      'sysfs [0, 1]', exc.problem)

    def test_merge_refuses_same_nodes_other_cpus(self):
        caps = tp.from_capabilities_xml(hosts.libvirt_test_capabilities(),
                                        'h')
        exc = self.assertRaises(tp.TopologyError, tp.merge, caps,
                                self.sysfs())
        self.assertIn('disagree on the CPUs', exc.problem)

    def test_merge_takes_vendor_from_sysfs_when_libvirt_has_none(self):
        xml = hosts.capabilities_xml(hosts.INTEL_2S).replace(
            '<vendor>Intel</vendor>', '')
        caps = tp.from_capabilities_xml(xml, 'h')
        self.assertEqual('unknown', caps.cpu_vendor)
        self.assertEqual('intel', tp.merge(caps, self.sysfs()).cpu_vendor)


class TestAmdEpycNps4(_HostCase, base.BaseTestCase):

    spec = hosts.AMD_EPYC_NPS4

    def test_eight_nodes_on_two_sockets(self):
        for topo in self.parsed():
            self.assertEqual(tuple(range(8)), topo.node_ids)
            self.assertEqual((0, 1), topo.sockets)
            self.assertEqual((4, 5, 6, 7), topo.nodes_of_socket(1))
            self.assertEqual(tuple(range(8)) + tuple(range(64, 72)),
                             topo.node(0).cpus)
            self.assertEqual(64, len(topo.cpus_of_socket(1)))

    def test_smt_siblings(self):
        for topo in self.parsed():
            self.assertEqual((63, 127), topo.cpu(63).siblings)

    def test_several_l3_domains_per_node(self):
        for topo in self.parsed():
            self.assertEqual(16, len(topo.l3_domains()))
            per_node = _l3_per_node(topo)
            self.assertEqual([2] * 8, [len(per_node[n]) for n in range(8)])
            ccx = topo.caches[topo.cpu(4).l3]
            self.assertEqual((4, 5, 6, 7, 68, 69, 70, 71), ccx.cpus)
            self.assertEqual(16384, ccx.size_kib)
            self.assertNotEqual(topo.cpu(3).l3, topo.cpu(4).l3)

    def test_l2_per_core(self):
        topo = self.sysfs()
        self.assertEqual((5, 69), topo.caches[topo.cpu(69).l2].cpus)
        self.assertEqual(64, len([c for c in topo.caches if c.level == 2]))

    def test_distances(self):
        for topo in self.parsed():
            self.assertEqual((10, 12, 12, 12, 32, 32, 32, 32),
                             topo.distances[0])
            self.assertEqual(12, topo.distance(5, 7))
            self.assertEqual(32, topo.distance(7, 0))

    def test_vendor_and_cache_miss_level(self):
        for topo in self.parsed():
            self.assertEqual('amd', topo.cpu_vendor)
            self.assertEqual('L2', topo.cache_miss_level)

    def test_merge_takes_distances_from_sysfs_when_libvirt_has_none(self):
        xml = hosts.capabilities_xml(self.spec, with_distances=False)
        caps = tp.from_capabilities_xml(xml, 'h')
        self.assertEqual(20, caps.distance(0, 1))
        self.assertEqual(12, tp.merge(caps, self.sysfs()).distance(0, 1))


class TestMalformedCapabilities(base.BaseTestCase):

    def _error(self, xml):
        return self.assertRaises(tp.TopologyError, tp.from_capabilities_xml,
                                 xml, 'h')

    def setUp(self):
        super().setUp()
        self.xml = hosts.capabilities_xml(hosts.INTEL_2S)

    def test_not_xml(self):
        exc = self._error('<capabilities><host>')
        self.assertEqual('capabilities', exc.path)
        self.assertIn('not well-formed XML', exc.problem)

    def test_wrong_root(self):
        exc = self._error('<domain/>')
        self.assertIn('root element is <domain>', exc.problem)

    def test_no_numa_topology(self):
        exc = self._error('<capabilities><host><cpu/></host></capabilities>')
        self.assertEqual('capabilities/host', exc.path)
        self.assertIn('no <topology><cells>', exc.problem)

    def test_bad_socket_id(self):
        exc = self._error(self.xml.replace("socket_id='1'", "socket_id='x'",
                                           1))
        self.assertEqual("capabilities/host/topology/cells/cell[@id='1']"
                         "/cpus/cpu[0]/@socket_id", exc.path)
        self.assertEqual("expected an integer, got 'x'", exc.problem)

    def test_missing_core_id(self):
        exc = self._error(self.xml.replace("core_id='0' ", '', 1))
        self.assertEqual("capabilities/host/topology/cells/cell[@id='0']"
                         "/cpus/cpu[0]", exc.path)
        self.assertEqual("missing attribute 'core_id'", exc.problem)

    def test_cell_without_memory(self):
        exc = self._error(self.xml.replace(
            "<memory unit='KiB'>98304000</memory>", '', 1))
        self.assertEqual("capabilities/host/topology/cells/cell[@id='0']",
                         exc.path)
        self.assertEqual('no <memory> element', exc.problem)

    def test_unknown_memory_unit(self):
        exc = self._error(self.xml.replace("memory unit='KiB'",
                                           "memory unit='parsec'", 1))
        self.assertIn("unknown size unit 'parsec'", exc.problem)

    def test_cpu_in_two_cells(self):
        exc = self._error(self.xml.replace("cpu id='10'", "cpu id='0'", 1))
        self.assertEqual('CPU 0 listed in nodes 0 and 1', exc.problem)

    def test_cell_listed_twice(self):
        exc = self._error(self.xml.replace("cell id='1'", "cell id='0'"))
        self.assertEqual('cell listed twice', exc.problem)

    def test_distance_to_unknown_node(self):
        exc = self._error(self.xml.replace("sibling id='1'",
                                           "sibling id='7'", 1))
        self.assertEqual('distance from node 0 to unknown node 7',
                         exc.problem)

    def test_overlapping_caches(self):
        exc = self._error(self.xml.replace("cpus='10-19,30-39'",
                                           "cpus='9-19,30-39'"))
        self.assertEqual('capabilities/host/cache/bank[1]', exc.path)
        self.assertIn('CPU 9 is in two L3 caches', exc.problem)

    def test_cpu_less_node_has_no_socket(self):
        xml = self.xml.replace(
            '</cells>', "<cell id='2'><memory unit='KiB'>1048576</memory>"
            "<cpus num='0'/></cell></cells>").replace(
            "<sibling id='1' value='21'/>",
            "<sibling id='1' value='21'/><sibling id='2' value='30'/>")
        xml = xml.replace("<sibling id='0' value='21'/>\n"
                          "            <sibling id='1' value='10'/>",
                          "<sibling id='0' value='21'/><sibling id='1' "
                          "value='10'/><sibling id='2' value='30'/>")
        exc = self._error(xml)
        self.assertEqual('no distance from node 2 to node 0', exc.problem)
        xml = xml.replace("<cpus num='0'/>",
                          "<distances><sibling id='0' value='30'/><sibling"
                          " id='1' value='30'/><sibling id='2' value='10'/>"
                          "</distances><cpus num='0'/>")
        topo = tp.from_capabilities_xml(xml, 'h')
        self.assertEqual(-1, topo.node(2).socket)
        self.assertEqual((), topo.node(2).cpus)
        self.assertEqual((0, 1), topo.sockets)
        self.assertEqual(30, topo.distance(2, 1))


class TestMalformedSysfs(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.root = _sysfs(self, hosts.LIBVIRT_TEST)

    def _path(self, relative):
        return os.path.join(self.root, 'devices/system', relative)

    def _write(self, relative, text):
        with open(self._path(relative), 'w') as handle:
            handle.write(text)

    def _error(self):
        return self.assertRaises(tp.TopologyError, tp.from_sysfs, self.root,
                                 'h')

    def test_not_a_sysfs_tree(self):
        exc = self.assertRaises(tp.TopologyError, tp.from_sysfs,
                                os.path.join(self.root, 'proc'), 'h')
        self.assertIn('missing directory', exc.problem)

    def test_missing_core_id(self):
        os.unlink(self._path('cpu/cpu3/topology/core_id'))
        exc = self._error()
        self.assertEqual(self._path('cpu/cpu3/topology/core_id'), exc.path)
        self.assertEqual('missing file', exc.problem)

    def test_non_integer_package_id(self):
        self._write('cpu/cpu3/topology/physical_package_id', 'zero\n')
        exc = self._error()
        self.assertEqual(
            self._path('cpu/cpu3/topology/physical_package_id'), exc.path)
        self.assertEqual("expected an integer, got 'zero'", exc.problem)

    def test_malformed_node_cpulist(self):
        self._write('node/node1/cpulist', '8-\n')
        exc = self._error()
        self.assertEqual(self._path('node/node1/cpulist'), exc.path)
        self.assertIn('malformed CPU list', exc.problem)

    def test_cpu_in_two_nodes(self):
        self._write('node/node1/cpulist', '7-15\n')
        exc = self._error()
        self.assertEqual('CPU 7 is also in node 0', exc.problem)

    def test_wrong_number_of_distances(self):
        self._write('node/node1/distance', '20 10 10\n')
        exc = self._error()
        self.assertEqual(self._path('node/node1/distance'), exc.path)
        self.assertEqual('3 distances for 2 nodes', exc.problem)

    def test_malformed_distance(self):
        self._write('node/node0/distance', '10 -21\n')
        exc = self._error()
        self.assertEqual("malformed distance '-21'", exc.problem)

    def test_meminfo_without_total(self):
        self._write('node/node0/meminfo', 'Node 0 MemFree: 12 kB\n')
        exc = self._error()
        self.assertEqual(self._path('node/node0/meminfo'), exc.path)
        self.assertEqual('no "MemTotal:" line', exc.problem)

    def test_missing_distances_default_to_10_and_20(self):
        os.unlink(self._path('node/node0/distance'))
        exc = self._error()
        self.assertIn('some nodes have a distance file', exc.problem)
        os.unlink(self._path('node/node1/distance'))
        topo = tp.from_sysfs(self.root, 'h')
        self.assertEqual(((10, 20), (20, 10)), topo.distances)

    def test_inconsistent_shared_cpu_list(self):
        self._write('cpu/cpu5/cache/index3/shared_cpu_list', '0-5\n')
        exc = self._error()
        self.assertIn('is in two L3 caches', exc.problem)
        self.assertIn('cache/index3', exc.path)

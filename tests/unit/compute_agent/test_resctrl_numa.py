"""The resctrl and numa_memory sources."""

import os
from unittest import mock

from compute_agent.sources import numa_memory
from compute_agent.sources import resctrl
from tests.unit.compute_agent import base

UUID_A = '11111111-2222-3333-4444-555555555555'
UUID_B = '66666666-7777-8888-9999-000000000000'


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


class TestResctrlLibvirt(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.source = resctrl.ResctrlSource(connection=mock.Mock(
            get=mock.Mock(return_value=self.conn)))
        self.source.open(self.conf)

    def test_monitor_stats_are_summed_over_banks_and_nodes(self):
        self.mount_resctrl()
        dom = self.conn.add(resctrl=True)
        dom.advance(10, mbps=200)
        sample = self.source.collect(0)
        self.assertTrue(sample.status.available)
        counters = sample.instances[0].counters
        self.assertEqual(4 * 1024 * 1024, counters['llc_occupancy_bytes'])
        self.assertEqual(dom.counters['mbm_total'],
                         counters['mbm_total_bytes'])
        self.assertEqual(dom.counters['mbm_local'],
                         counters['mbm_local_bytes'])

    def test_not_mounted_is_unavailable_with_the_fix(self):
        self.conn.add(resctrl=True)
        sample = self.source.collect(0)
        self.assertFalse(sample.status.available)
        self.assertIn('mount -t resctrl', sample.status.reason)
        self.assertEqual((), sample.instances)

    def test_no_monitors_is_unavailable_with_the_fix(self):
        self.mount_resctrl()
        self.conn.add(resctrl=False)
        sample = self.source.collect(0)
        self.assertFalse(sample.status.available)
        self.assertIn('<monitor>', sample.status.reason)
        self.assertIn('resctrl_mode = sysfs', sample.status.reason)

    def test_no_domains_on_a_capable_host_is_available(self):
        self.mount_resctrl()
        self.assertTrue(self.source.collect(0).status.available)

    def test_missing_bank_value_is_none(self):
        stats = {'cpu.cache.monitor.count': 1,
                 'cpu.cache.monitor.0.bank.count': 2,
                 'cpu.cache.monitor.0.bank.0.bytes': 10}
        self.assertEqual({'llc_occupancy_bytes': None},
                         resctrl.counters_from_stats(stats))
        self.assertEqual({}, resctrl.counters_from_stats({}))


class TestResctrlSysfs(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.conf.set_override('resctrl_mode', 'sysfs', 'agent')
        self.source = resctrl.ResctrlSource()
        self.source.open(self.conf)
        self.root = os.path.join(self.tmp, 'resctrl')

    def group(self, uuid, values, parent=''):
        for l3, (occ, local, total) in enumerate(values):
            d = os.path.join(self.root, parent, 'mon_groups', uuid,
                             'mon_data', 'mon_L3_%02d' % l3)
            _write(os.path.join(d, 'llc_occupancy'), '%s\n' % occ)
            _write(os.path.join(d, 'mbm_local_bytes'), '%s\n' % local)
            _write(os.path.join(d, 'mbm_total_bytes'), '%s\n' % total)

    def test_groups_summed_over_l3_domains(self):
        self.mount_resctrl()
        self.group(UUID_A, [(100, 10, 20), (50, 1, 2)])
        self.group(UUID_B, [(7, 'Unavailable', 3)], parent='COS1')
        self.group('not-an-instance', [(1, 1, 1)])
        sample = self.source.collect(0)
        self.assertTrue(sample.status.available)
        found = {i.uuid: i.counters for i in sample.instances}
        self.assertEqual({UUID_A, UUID_B}, set(found))
        self.assertEqual({'llc_occupancy_bytes': 150, 'mbm_local_bytes': 11,
                          'mbm_total_bytes': 22}, found[UUID_A])
        self.assertIsNone(found[UUID_B]['mbm_local_bytes'])
        self.assertEqual(3, found[UUID_B]['mbm_total_bytes'])

    def test_no_groups_is_unavailable(self):
        self.mount_resctrl()
        sample = self.source.collect(0)
        self.assertFalse(sample.status.available)
        self.assertIn('mon_groups', sample.status.reason)

    def test_not_mounted(self):
        self.assertIn('L3_MON', self.source.collect(0).status.reason)


NUMA_MAPS = """\
7f0000000000 default anon=262144 dirty=262144 N0=200000 N1=62144 \
kernelpagesize_kB=4
7f8000000000 bind:1 file=/dev/hugepages/libvirt/qemu/1-inst/qemu_back_mem \
huge dirty=512 N1=512 kernelpagesize_kB=2048
55d0c0a00000 default file=/usr/bin/qemu-system-x86_64 mapped=100 N0=100 \
kernelpagesize_kB=4
"""

NUMA_STAT = """\
anon N0=1073741824 N1=536870912
file N0=104857600 N1=0
kernel_stack N0=65536 N1=0
shmem N0=0 N1=0
anon_thp N0=1048576 N1=0
"""


class TestNumaMemory(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.proc = os.path.join(self.tmp, 'proc')
        self.qemu(4242, UUID_A)
        _write(os.path.join(self.proc, '1', 'cmdline'), 'init\0')
        _write(os.path.join(self.proc, 'self', 'cmdline'), 'x\0')
        self.source = numa_memory.NumaMemorySource()
        self.conf.set_override('numa_memory_refresh', 1, 'agent')

    def qemu(self, pid, uuid):
        d = os.path.join(self.proc, str(pid))
        _write(os.path.join(d, 'cmdline'),
               '\0'.join(['/usr/bin/qemu-system-x86_64', '-name',
                          'guest=instance-1', '-uuid', uuid, '-smp', '2',
                          '']))
        _write(os.path.join(d, 'numa_maps'), NUMA_MAPS)
        _write(os.path.join(d, 'cgroup'),
               '0::/machine.slice/machine-qemu\\x2d1\\x2dinst.scope/'
               'libvirt/vcpu0\n')
        _write(os.path.join(self.tmp, 'cg', 'machine.slice',
                            'machine-qemu\\x2d1\\x2dinst.scope',
                            'memory.numa_stat'), NUMA_STAT)

    def test_numa_maps_counts_every_page_size(self):
        self.source.open(self.conf)
        sample = self.source.collect(0)
        self.assertTrue(sample.status.available)
        [inst] = sample.instances
        self.assertEqual(UUID_A, inst.uuid)
        per_node = inst.memory_mib_per_node
        # Not the 100 pages of the QEMU binary: page cache, not guest RAM.
        self.assertAlmostEqual(200000 * 4 / 1024, per_node[0])
        # 62144 small pages and 512 hugepages of 2 MiB.
        self.assertAlmostEqual(62144 * 4 / 1024 + 1024, per_node[1])

    def test_numa_stat_counts_anon_only(self):
        self.conf.set_override('numa_memory_method', 'numa_stat', 'agent')
        self.source.open(self.conf)
        [inst] = self.source.collect(0).instances
        self.assertEqual({0: 1024.0, 1: 512.0}, inst.memory_mib_per_node)

    def test_guest_ram_backends_count_other_files_do_not(self):
        text = '\n'.join([
            '7f01 default anon=10 dirty=10 N0=10 kernelpagesize_kB=4',
            '7f02 default file=/memfd:pc.ram\\040(deleted) dirty=20 N0=20 '
            'kernelpagesize_kB=4',
            '7f03 bind:0 file=/dev/hugepages/libvirt/qemu/1-i/ram huge '
            'dirty=1 N0=1 kernelpagesize_kB=2048',
            '7f04 default file=/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0 '
            'mapped=300 mapmax=4 N0=300 kernelpagesize_kB=4',
            '7f05 default file=/usr/share/qemu/bios-256k.bin mapped=64 '
            'N0=64 kernelpagesize_kB=4',
            '7f06 default heap anon=5 dirty=5 N0=5 kernelpagesize_kB=4',
        ])
        self.assertEqual({0: (10 + 20 + 512 + 5) * 4 / 1024},
                         numa_memory.parse_numa_maps(text))

    def test_numa_stat_on_cgroup_v1_is_unavailable_with_the_fix(self):
        self.conf.set_override('numa_memory_method', 'numa_stat', 'agent')
        _write(os.path.join(self.proc, '4242', 'cgroup'),
               '4:memory:/machine/qemu-1-inst.libvirt-qemu\n'
               '1:cpu:/machine/qemu-1-inst.libvirt-qemu/emulator\n0::/\n')
        self.source.open(self.conf)
        sample = self.source.collect(0)
        self.assertFalse(sample.status.available)
        self.assertIn('cgroup v2', sample.status.reason)
        self.assertIn('numa_maps', sample.status.reason)

    def test_numa_stat_without_the_memory_controller(self):
        self.conf.set_override('numa_memory_method', 'numa_stat', 'agent')
        os.unlink(os.path.join(self.tmp, 'cg', 'machine.slice',
                               'machine-qemu\\x2d1\\x2dinst.scope',
                               'memory.numa_stat'))
        self.source.open(self.conf)
        sample = self.source.collect(0)
        self.assertFalse(sample.status.available)
        self.assertIn('memory controller', sample.status.reason)

    def test_placement_read_again_every_refresh_cycles(self):
        self.conf.set_override('numa_memory_refresh', 3, 'agent')
        self.source.open(self.conf)
        maps = os.path.join(self.proc, '4242', 'numa_maps')
        first = self.source.collect(0).instances[0].memory_mib_per_node
        self.source.collect(0)
        _write(maps, '7f00 default anon=256 N1=256 kernelpagesize_kB=4\n')
        seen = [self.source.collect(0).instances[0].memory_mib_per_node
                for _ in range(3)]
        # UUID_A's slot (crc32 of the uuid, modulo 3) is the third cycle.
        self.assertEqual([first, first, {1: 1.0}], seen)
        # A new QEMU process (a new pid for the uuid) is read at once.
        os.rename(os.path.join(self.proc, '4242'),
                  os.path.join(self.proc, '4343'))
        _write(os.path.join(self.proc, '4343', 'numa_maps'),
               '7f00 default anon=512 N0=512 kernelpagesize_kB=4\n')
        self.assertEqual({0: 2.0}, self.source.collect(0).instances[0]
                         .memory_mib_per_node)

    def test_process_gone_is_skipped(self):
        self.qemu(4343, UUID_B)
        os.unlink(os.path.join(self.proc, '4343', 'numa_maps'))
        self.source.open(self.conf)
        sample = self.source.collect(0)
        self.assertEqual([UUID_A], [i.uuid for i in sample.instances])
        self.assertTrue(sample.status.available)

    def test_permission_denied_is_unavailable_with_the_fix(self):
        self.source.open(self.conf)
        with mock.patch.object(self.source, '_read',
                               side_effect=PermissionError(13, 'denied')):
            sample = self.source.collect(0)
        self.assertFalse(sample.status.available)
        self.assertIn('CAP_SYS_PTRACE', sample.status.reason)
        self.assertEqual((), sample.instances)

    def test_cgroup_of_the_domain_scope(self):
        self.assertEqual(
            '/machine.slice/machine-qemu\\x2d1.scope',
            numa_memory.domain_cgroup(
                '0::/machine.slice/machine-qemu\\x2d1.scope/libvirt/emu\n'))
        self.assertIsNone(numa_memory.domain_cgroup('1:cpu:/x\n'))
        # Hybrid: a unified entry, but memory is the v1 controller's.
        self.assertIsNone(numa_memory.domain_cgroup(
            '4:memory:/machine/qemu-1-i.libvirt-qemu\n'
            '0::/machine/qemu-1-i.libvirt-qemu/emulator\n'))

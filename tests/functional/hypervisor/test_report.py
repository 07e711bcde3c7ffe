"""The agent's report on real QEMU guests, checked against the host.

Every figure the report gives is compared with what ``/proc``, the
cgroups and libvirt (``virsh``) say about the same guests: Nova's
metadata, the CPU policy, the placement and affinity of each vCPU thread,
the CPU cap and the utilisation under it, the memory per NUMA node, and
the honest "unavailable" of what this host cannot count.
"""

import subprocess
import time

from tests.functional.hypervisor import base


class TestReport(base.HypervisorCase):

    def test_report_matches_proc_cgroups_and_virsh(self):
        capped = self.guest(
            'capped', vcpupin={0: '0-1'}, emulatorpin='0-1', quota_us=30000,
            numa_nodeset='0', flavor='m1.capped',
            extra_specs={'hw:cpu_policy': 'shared',
                         'quota:cpu_quota': '30000'})
        pinned = self.guest(
            'pinned', busy=False, vcpupin={0: '1'}, emulatorpin='0',
            numa_nodeset='0', flavor='m1.pinned',
            extra_specs={'hw:cpu_policy': 'dedicated'})
        self.wait_idle(pinned)
        a_tid = self.vcpu_threads(self.qemu_pid(capped.UUIDString()))[0]
        collector, _ = self.build()
        collector.collect()
        ran_before = self.thread_cpu_ns(a_tid)
        time.sleep(3)
        ran = self.thread_cpu_ns(a_tid) - ran_before
        report = collector.collect()

        a = report.instance(capped.UUIDString())
        b = report.instance(pinned.UUIDString())
        # Nova's metadata, from <nova:instance>.
        self.assertEqual('vm-' + capped.name(), a.name)
        self.assertEqual(('m1.capped', 1, 32), (a.flavor, a.vcpus,
                                                a.memory_mib))
        self.assertEqual(('shared', 'dedicated'), (a.cpu_policy,
                                                   b.cpu_policy))
        self.assertIsNotNone(a.project_id)
        self.assertIsNotNone(a.image_id)

        # Affinity and placement, against each vCPU thread in /proc.
        b_tid = self.vcpu_threads(self.qemu_pid(b.uuid))[0]
        self.assertEqual('0-1', self.status_field(a_tid,
                                                  'Cpus_allowed_list'))
        self.assertEqual((), a.cpuset)         # every CPU of this host
        self.assertEqual('1', self.status_field(b_tid, 'Cpus_allowed_list'))
        self.assertEqual((1,), b.cpuset)
        self.assertEqual((1,), b.vcpu_cpus)
        self.assertEqual(1, self.last_cpu(b_tid))
        self.assertIn(a.vcpu_cpus[0], (0, 1))
        vcpuinfo = subprocess.run(
            ['virsh', '-c', self.libvirtd.uri, 'vcpuinfo', pinned.name()],
            capture_output=True, text=True, check=True).stdout
        self.assertRegex(vcpuinfo, r'CPU:\s+1\n')
        self.assertRegex(vcpuinfo, r'CPU Affinity:\s+-y\n')

        # The cap, from the live CFS parameters, and the time under it.
        self.assertEqual(30000, self.cfs_quota_us(a_tid))
        self.assertAlmostEqual(0.3, a.cpu_quota)
        self.assertIsNone(b.cpu_quota)
        # What the vCPU thread ran over (nearly) the same interval; the
        # 2 CPUs of the machine are shared, so the guest may get less
        # than its cap, never more.
        self.assertAlmostEqual(ran / 1e9 / report.interval_s,
                               a.metrics.cpu_util, delta=0.04)
        self.assertLess(a.metrics.cpu_util, 0.33)
        self.assertGreater(a.metrics.cpu_util, 0.02)
        self.assertLess(b.metrics.cpu_util, 0.02)

        # Memory per node: the guest's own pages, not QEMU's files.
        for rec in (a, b):
            mine = self.guest_memory_mib(self.qemu_pid(rec.uuid))
            self.assertEqual(set(mine), set(rec.memory_mib_per_node))
            for node, mib in mine.items():
                self.assertAlmostEqual(mib, rec.memory_mib_per_node[node],
                                       delta=2.0)
            self.assertLess(sum(rec.memory_mib_per_node.values()),
                            rec.memory_mib + 32)

        # What this host cannot count is null, and the status says why.
        sources = {s.name: s for s in report.sources}
        self.assertTrue(sources['libvirt'].available)
        self.assertIn('perf', sources['libvirt'].reason)
        self.assertIsNone(a.counters.instructions)
        self.assertIsNone(a.counters.cache_misses)
        self.assertFalse(sources['resctrl'].available)
        self.assertTrue(sources['resctrl'].reason)
        self.assertIsNone(a.counters.llc_occupancy_bytes)
        self.assertTrue(sources['numa_memory'].available)

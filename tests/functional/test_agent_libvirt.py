"""The agent against libvirt's test driver (in process, no daemon)."""

import json
import subprocess
import sys

import libvirt

from compute_agent import actions
from compute_agent import cmd
from compute_agent import loop
from compute_agent.sources import libvirt_source
from contention import report as report_mod
from tests.functional import agent_base


class TestLibvirtSourceOnTestDriver(agent_base.TestDriverCase):

    def collect(self):
        source = libvirt_source.LibvirtSource()
        source.open(self.conf)
        self.addCleanup(source.close)
        return source, source.collect(0)

    def test_topology(self):
        _, sample = self.collect()
        topo = sample.topology
        self.assertEqual(self.host, topo.hostname)
        self.assertEqual((0, 1), topo.node_ids)
        self.assertEqual(tuple(range(8)), topo.node(0).cpus)
        self.assertEqual(tuple(range(8, 16)), topo.node(1).cpus)
        self.assertEqual(10, topo.distance(0, 0))
        # The test driver names no CPU vendor.
        self.assertEqual('unknown', topo.cpu_vendor)

    def test_domains_placement_and_pinning(self):
        dom = self.define(vcpus=2, memory=768, flavor='m1.medium')
        dom.pinVcpu(0, (True, True, True, True, False, False, False, False))
        dom.pinVcpu(1, (False, False, True, False, True, False, False,
                        False))
        _, sample = self.collect()
        found = {i.uuid: i for i in sample.instances}
        self.assertIn('6695eb01-f6a4-8304-79aa-97f2502e193f', found)
        inst = found[dom.UUIDString()]
        self.assertEqual('vm-' + dom.name(), inst.name)
        self.assertEqual((2, 768, 'm1.medium'),
                         (inst.vcpus, inst.memory_mib, inst.flavor))
        self.assertTrue(inst.project_id.startswith('p-'))
        self.assertTrue(inst.image_id.startswith('i-'))
        self.assertEqual('shared', inst.cpu_policy)
        self.assertEqual(2, len(inst.vcpu_cpus))
        self.assertEqual(4, inst.vcpu_cpus[1])    # ran on its pinned CPU
        # Affinity is the union over the vCPUs.
        self.assertEqual((0, 1, 2, 3, 4), inst.cpuset)
        self.assertEqual(str(dom.ID()), inst.incarnation)
        # The test driver's scheduler parameters are only a weight: the
        # cap is unknown, not an error.
        self.assertIsNone(inst.cpu_quota)
        self.assertNotIn('cpu_quota_unavailable', inst.notes)

    def test_perf_events_enabled_live(self):
        dom = self.define()
        self.collect()
        events = dom.perfEvents()
        for event in ('instructions', 'cpu_cycles', 'cache_references',
                      'cache_misses'):
            self.assertTrue(events[event], event)

    def test_dedicated_pinning_is_recognised(self):
        dom = self.define(vcpus=2, pins={0: '2', 1: '3'})
        _, sample = self.collect()
        inst = {i.uuid: i for i in sample.instances}[dom.UUIDString()]
        self.assertEqual('dedicated', inst.cpu_policy)

    def test_report_over_two_cycles_is_valid_and_honest(self):
        self.define()
        collector = loop.Collector(self.host, loop.load_sources(
            ['libvirt', 'numa_memory']), 10.0)
        collector.open(self.conf)
        self.addCleanup(collector.close)
        collector.collect()
        report = report_mod.HostReport.from_dict(
            collector.collect().to_dict())
        self.assertEqual(self.host, report.host)
        status = {s.name: s for s in report.sources}
        self.assertTrue(status['libvirt'].available)
        # The test driver returns no counters: null, never zero.
        self.assertIn('no perf.* counters', status['libvirt'].reason)
        for record in report.instances:
            self.assertIsNone(record.counters.instructions)
            self.assertIsNone(record.counters.cpu_time_ns)
            self.assertIsNone(record.merlin_class)


class TestActionsOnTestDriver(agent_base.TestDriverCase):

    def setUp(self):
        super().setUp()
        collector, self.actions = cmd.build(self.conf)
        self.addCleanup(collector.close)
        collector.collect()     # reads the topology the actions check

    def test_repin_to_a_node_changes_the_domain(self):
        dom = self.define(vcpus=2)
        result = self.actions.repin_instance(dom.UUIDString(), node=0,
                                             move_memory=True)
        # The test driver reports CPUs 0, 2 and 4 online (getCPUMap).
        online = frozenset([0, 2, 4])
        self.assertEqual(sorted(online), result['cpus'])
        self.assertEqual([online, online], self.affinity(dom))
        params = dom.numaParameters(libvirt.VIR_DOMAIN_AFFECT_LIVE)
        self.assertEqual('0', params['numa_nodeset'])
        self.assertTrue(result['changed'])
        again = self.actions.repin_instance(dom.UUIDString(), node=0,
                                            move_memory=True)
        self.assertFalse(again['changed'])

    def test_repin_to_cpus_is_idempotent_and_stays_shared(self):
        dom = self.define(vcpus=2)
        uuid = dom.UUIDString()
        self.assertTrue(self.actions.repin_instance(uuid,
                                                    cpus='2')['changed'])
        self.assertEqual([frozenset([2])] * 2, self.affinity(dom))
        # Each vCPU is now pinned alone to CPU 2 in the live XML; the
        # instance is still Nova-shared and may be moved again.
        self.assertFalse(self.actions.repin_instance(uuid,
                                                     cpus=[2])['changed'])
        self.actions.repin_instance(uuid, cpus='0,4')
        self.assertEqual([frozenset([0, 4])] * 2, self.affinity(dom))

    def test_refusals_leave_the_domain_alone(self):
        dedicated = self.define(vcpus=2, pins={0: '2', 1: '4'})
        shared = self.define(vcpus=1)
        before = self.affinity(dedicated)
        exc = self.assertRaises(actions.ActionError,
                                self.actions.repin_instance,
                                dedicated.UUIDString(), node=0)
        self.assertIn('dedicated', str(exc))
        self.assertEqual(before, self.affinity(dedicated))
        for kwargs, message in ((dict(cpus='9'), 'outside the shared'),
                                (dict(node=1), 'no CPU in the shared'),
                                (dict(node=3), 'no NUMA node 3')):
            exc = self.assertRaises(actions.ActionError,
                                    self.actions.repin_instance,
                                    shared.UUIDString(), **kwargs)
            self.assertIn(message, str(exc))
        self.assertEqual([frozenset(range(8))], self.affinity(shared))

    def test_cpu_quota_on_a_driver_without_it_is_a_clear_error(self):
        # The test driver implements only the 'weight' scheduler
        # parameter, so the quota cannot change there; the agent must say
        # so rather than fail obscurely. The change itself is covered by
        # the unit tests' fake, which answers like the QEMU driver.
        dom = self.define()
        exc = self.assertRaises(actions.ActionError,
                                self.actions.set_cpu_quota,
                                dom.UUIDString(), 50000)
        self.assertIn('cannot set the CPU quota', str(exc))
        self.assertIn('unsupported flags', str(exc))


class TestOnceCommand(agent_base.TestDriverCase):

    def test_prints_a_valid_report(self):
        proc = subprocess.run(
            [sys.executable, '-c',
             'import sys; from compute_agent import cmd; '
             'sys.exit(cmd.main())', '--once', '--libvirt-uri',
             agent_base.TEST_URI],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        report = report_mod.HostReport.from_dict(json.loads(proc.stdout))
        self.assertEqual(['test'], [r.name for r in report.instances])
        self.assertEqual(['libvirt', 'resctrl', 'numa_memory'],
                         [s.name for s in report.sources])

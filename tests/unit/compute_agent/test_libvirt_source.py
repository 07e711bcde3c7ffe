"""The libvirt source against a fake connection shaped like the real API."""

import errno
import subprocess
import sys
import uuid

import fixtures
import libvirt
import testtools

from compute_agent import libvirt_connection
from compute_agent.sources import libvirt_source
from tests.unit.compute_agent import base
from tests.unit.compute_agent import fake_libvirt
from tests.unit.fixtures import hosts


class TestLibvirtSource(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.clock = base.Clock()
        self.opener = fake_libvirt.FakeOpener(self.conn)
        self.connection = libvirt_connection.LibvirtConnection(
            'qemu:///system', opener=self.opener, clock=self.clock)
        self.source = libvirt_source.LibvirtSource(
            connection=self.connection)

    def collect(self):
        self.source.open(self.conf)
        return self.source.collect(self.clock())

    def by_uuid(self, sample):
        return {inst.uuid: inst for inst in sample.instances}

    def test_topology_and_intel_miss_level(self):
        sample = self.collect()
        self.assertTrue(sample.status.available)
        topo = sample.topology
        self.assertEqual('compute-1', topo.hostname)
        self.assertEqual('intel', topo.cpu_vendor)
        self.assertEqual('L3', topo.cache_miss_level)
        self.assertEqual((0, 1), topo.node_ids)
        self.assertEqual(base.NODE0_CPUS, frozenset(topo.node(0).cpus))

    def test_the_operator_s_memory_bandwidth_is_each_node_s(self):
        self.assertEqual([None, None], [
            n.memory_bandwidth_bps for n in self.collect().topology.nodes])
        self.conf.set_override('memory_bandwidth_gbps', 25.6, 'agent')
        source = libvirt_source.LibvirtSource(connection=self.connection)
        source.open(self.conf)
        topo = source.collect(self.clock()).topology
        self.assertEqual([25.6e9, 25.6e9],
                         [n.memory_bandwidth_bps for n in topo.nodes])

    def test_amd_counts_l2(self):
        self.conn.capabilities = hosts.capabilities_xml(hosts.AMD_EPYC_NPS4)
        topo = self.collect().topology
        self.assertEqual('amd', topo.cpu_vendor)
        self.assertEqual('L2', topo.cache_miss_level)

    def test_topology_parsed_again_only_when_the_xml_changes(self):
        first = self.collect().topology
        self.assertIs(first, self.source.collect(0).topology)
        self.conn.capabilities = hosts.capabilities_xml(hosts.AMD_EPYC_NPS4)
        self.assertEqual('amd', self.source.collect(0).topology.cpu_vendor)

    def test_host_without_domains_is_available(self):
        sample = self.collect()
        self.assertTrue(sample.status.available, sample.status.reason)
        self.assertEqual((), sample.instances)
        self.assertIsNotNone(sample.topology)

    def test_new_host_uuid_is_not_a_topology_change(self):
        # libvirtd invents a host uuid at every start where there is no
        # DMI data; the topology is the same.
        logger = self.useFixture(fixtures.FakeLogger(
            name='compute_agent.sources.libvirt_source'))
        first = self.collect().topology
        self.conn.capabilities = self.conn.capabilities.replace(
            '<host>', '<host>\n    <uuid>%s</uuid>' % uuid.uuid4(), 1)
        self.assertIs(first, self.source.collect(0).topology)
        self.assertNotIn('changed', logger.output)
        self.conn.capabilities = hosts.capabilities_xml(hosts.AMD_EPYC_NPS4)
        self.assertEqual('amd', self.source.collect(0).topology.cpu_vendor)
        self.assertIn('Host topology changed', logger.output)

    def test_nova_metadata_and_placement(self):
        dom = self.conn.add(name='web-1', vcpus=2, memory_mib=4096,
                            cpus_on=[3, 13], xml_kwargs=dict(
                                flavor='m1.medium', image_id='img-1',
                                project_id='proj-1'))
        plain = self.conn.add(name='other', vcpus=1, memory_mib=512,
                              cpus_on=[5], affinity=[4, 5, 6],
                              xml_kwargs=dict(nova=False))
        found = self.by_uuid(self.collect())
        inst = found[dom.uuid]
        self.assertEqual('web-1', inst.name)
        self.assertEqual((2, 4096), (inst.vcpus, inst.memory_mib))
        self.assertEqual(('m1.medium', 'img-1', 'proj-1'),
                         (inst.flavor, inst.image_id, inst.project_id))
        self.assertEqual((3, 13), inst.vcpu_cpus)
        self.assertEqual((), inst.cpuset)      # may run anywhere
        self.assertEqual('shared', inst.cpu_policy)
        self.assertEqual(str(dom.id), inst.incarnation)
        other = found[plain.uuid]
        self.assertEqual('instance-other', other.name)
        self.assertIsNone(other.flavor)
        self.assertEqual((4, 5, 6), other.cpuset)

    def test_cpu_quota_is_the_live_cfs_cap_per_vcpu(self):
        capped = self.conn.add()
        capped.sched.update(vcpu_quota=25000, vcpu_period=100000)
        free = self.conn.add()      # vcpu_quota -1: no cap
        found = self.by_uuid(self.collect())
        self.assertEqual(0.25, found[capped.uuid].cpu_quota)
        self.assertIsNone(found[free.uuid].cpu_quota)
        self.assertEqual((libvirt_source.DELAY_WITH_THROTTLING,),
                         found[capped.uuid].notes)
        # What set_cpu_quota changes shows in the next cycle.
        capped.sched.update(vcpu_quota=-1)
        self.assertIsNone(self.by_uuid(
            self.source.collect(self.clock()))[capped.uuid].cpu_quota)

    def test_cpu_quota_from_scheduler_parameters(self):
        f = libvirt_source.cpu_quota_from_params
        self.assertEqual(1.5, f({'vcpu_quota': 150000,
                                 'vcpu_period': 100000}))
        for params in ({'vcpu_quota': -1, 'vcpu_period': 100000},
                       {'vcpu_quota': 0, 'vcpu_period': 100000},
                       {'vcpu_quota': 5000, 'vcpu_period': 0},
                       {'weight': 50},      # the test driver's only one
                       {}):
            self.assertIsNone(f(params), params)

    def test_cpu_quota_unreadable_is_null_and_noted(self):
        dom = self.conn.add()
        dom.advance(5)

        def refuse():
            dom.calls.append('schedulerParameters')
            raise fake_libvirt.error(libvirt.VIR_ERR_OPERATION_UNSUPPORTED,
                                     'Operation not supported')
        dom.schedulerParameters = refuse
        sample = self.collect()
        inst = self.by_uuid(sample)[dom.uuid]
        self.assertIsNone(inst.cpu_quota)
        self.assertEqual((libvirt_source.QUOTA_UNAVAILABLE,), inst.notes)
        self.assertEqual((2, 2048), (inst.vcpus, inst.memory_mib))
        self.assertTrue(sample.status.available)

    def test_domain_gone_while_reading_its_quota_is_left_out(self):
        keep = self.conn.add()
        gone = self.conn.add()
        self.conn.hooks[(gone.uuid, 'schedulerParameters')] = (
            fake_libvirt.FakeDomain.vanish)
        sample = self.collect()
        self.assertEqual([keep.uuid], [i.uuid for i in sample.instances])
        self.assertIn('domains_vanished_mid_collection:1', sample.events)

    def test_counters_are_the_cumulative_values(self):
        dom = self.conn.add(vcpus=2)
        self.collect()
        dom.advance(10)
        inst = self.by_uuid(self.source.collect(0))[dom.uuid]
        c = dom.counters
        self.assertEqual(c['instructions'], inst.counters['instructions'])
        self.assertEqual(c['cpu_cycles'], inst.counters['cycles'])
        self.assertEqual(c['cache_misses'], inst.counters['cache_misses'])
        self.assertEqual(c['cache_references'],
                         inst.counters['cache_references'])
        self.assertEqual(sum(dom.vcpu_time), inst.counters['cpu_time_ns'])
        self.assertEqual(sum(dom.vcpu_delay),
                         inst.counters['vcpu_delay_ns'])
        self.assertEqual((), inst.notes)

    def test_perf_enabled_once_per_domain_start(self):
        dom = self.conn.add()
        self.collect()
        self.source.collect(0)
        self.assertEqual(1, dom.calls.count('setPerfEvents'))
        self.assertTrue(dom.perf['cache_misses'])
        dom.restart()
        self.source.collect(0)
        self.assertEqual(2, dom.calls.count('setPerfEvents'))

    def test_no_perf_events_configured_leaves_domains_alone(self):
        self.conf.set_override('perf_events', [], 'agent')
        dom = self.conn.add()
        sample = self.collect()
        self.assertNotIn('setPerfEvents', dom.calls)
        # The counters are null, and the status says why.
        self.assertIsNone(sample.instances[0].counters['instructions'])
        self.assertIn(libvirt_source.PERF_OFF, sample.status.reason)

    def test_perf_problem_clears_once_perf_counts(self):
        self.conn.add(perf_supported=False)
        self.assertIn('perf events unavailable',
                      self.collect().status.reason)
        self.conn.domains = []
        self.conn.add()
        sample = self.source.collect(0)
        self.assertIsNotNone(sample.instances[0].counters['instructions'])
        self.assertNotIn('perf', sample.status.reason or '')

    def test_delay_of_a_capped_instance_is_null_and_noted(self):
        capped = self.conn.add()
        capped.sched.update(vcpu_quota=30000, vcpu_period=100000)
        free = self.conn.add()
        capped.advance(5)
        free.advance(5)
        found = self.by_uuid(self.collect())
        self.assertIsNone(found[capped.uuid].counters['vcpu_delay_ns'])
        self.assertIn(libvirt_source.DELAY_WITH_THROTTLING,
                      found[capped.uuid].notes)
        self.assertEqual(sum(free.vcpu_delay),
                         found[free.uuid].counters['vcpu_delay_ns'])

    def test_perf_unsupported_is_null_and_said(self):
        dom = self.conn.add(perf_supported=False)
        dom.advance(5)
        sample = self.collect()
        inst = self.by_uuid(sample)[dom.uuid]
        for name in ('instructions', 'cycles', 'cache_misses',
                     'cache_references'):
            self.assertIsNone(inst.counters[name], name)
        self.assertIsNotNone(inst.counters['cpu_time_ns'])
        self.assertTrue(sample.status.available)
        self.assertIn('perf events unavailable', sample.status.reason)
        self.assertIn('Operation not supported', sample.status.reason)

    def test_missing_perf_keys_in_stats_are_said(self):
        self.conn.add()
        self.conn.domains[0].setPerfEvents = lambda params, flags=0: 0
        sample = self.collect()
        self.assertIn(libvirt_source.NO_PERF_STATS, sample.status.reason)
        inst = sample.instances[0]
        self.assertIsNone(inst.counters['instructions'])

    def test_missing_vcpu_keys_fall_back_to_cpu_total(self):
        dom = self.conn.add(vcpu_stats=False)
        dom.advance(10)
        inst = self.collect().instances[0]
        self.assertEqual(dom.stats(libvirt.VIR_DOMAIN_STATS_CPU_TOTAL)
                         ['cpu.time'], inst.counters['cpu_time_ns'])
        self.assertIsNone(inst.counters['vcpu_delay_ns'])
        self.assertIn(libvirt_source.CPU_TIME_FROM_TOTAL, inst.notes)

    def test_partial_vcpu_keys_are_none_not_a_smaller_sum(self):
        stats = {'vcpu.current': 2, 'vcpu.maximum': 2,
                 'vcpu.0.time': 100, 'vcpu.0.delay': 1, 'vcpu.1.delay': 2}
        counters, notes = libvirt_source.counters_from_stats(stats, 2)
        self.assertIsNone(counters['cpu_time_ns'])
        self.assertEqual(3, counters['vcpu_delay_ns'])
        self.assertIsNone(counters['instructions'])
        self.assertEqual((), notes)

    def test_hot_unplugged_vcpu_numbers_need_not_be_contiguous(self):
        stats = {'vcpu.current': 2, 'vcpu.maximum': 4,
                 'vcpu.0.time': 100, 'vcpu.3.time': 50}
        counters, _ = libvirt_source.counters_from_stats(stats, 4)
        self.assertEqual(150, counters['cpu_time_ns'])

    def test_vcpu_not_running_has_no_placement(self):
        dom = self.conn.add(vcpus=2, cpus_on=[1, -1])
        inst = self.by_uuid(self.collect())[dom.uuid]
        self.assertIsNone(inst.vcpu_cpus)

    def test_domain_gone_before_its_xml_is_left_out(self):
        keep = self.conn.add()
        gone = self.conn.add()
        self.conn.hooks[(gone.uuid, 'XMLDesc')] = (
            fake_libvirt.FakeDomain.vanish)
        sample = self.collect()
        self.assertEqual([keep.uuid], [i.uuid for i in sample.instances])
        self.assertIn('domains_vanished_mid_collection:1', sample.events)

    def _stopping(self, dom, call):
        """``call`` on ``dom`` fails as while ``virsh destroy`` runs.

        On a persistent domain: VIR_ERR_OPERATION_INVALID, not NO_DOMAIN.
        """
        def refuse(*args, **kwargs):
            dom.calls.append(call)
            dom.active = False
            raise fake_libvirt.error(
                libvirt.VIR_ERR_OPERATION_INVALID,
                'Requested operation is not valid: domain is not running')
        setattr(dom, call, refuse)

    def test_persistent_domain_stopping_is_left_out_alone(self):
        for call in ('vcpus', 'schedulerParameters', 'setPerfEvents'):
            keep = self.conn.add()
            stopping = self.conn.add()
            self._stopping(stopping, call)
            sample = self.collect()
            self.assertTrue(sample.status.available, call)
            self.assertEqual([keep.uuid],
                             [i.uuid for i in sample.instances], call)
            self.assertIn('domains_vanished_mid_collection:1',
                          sample.events)
            self.conn.domains = []

    def test_qemu_gone_while_libvirt_still_lists_it_running(self):
        # Seen against libvirt 9.0 while virsh destroy ran: the domain is
        # still active, its QEMU process is not.
        keep = self.conn.add()
        stopping = self.conn.add()

        def gone(*args, **kwargs):
            exc = fake_libvirt.error(
                libvirt.VIR_ERR_SYSTEM_ERROR,
                'cannot get CPU affinity of process 7975: No such process')
            exc.err = exc.err[:7] + (errno.ESRCH, -1)
            raise exc
        stopping.vcpus = gone
        sample = self.collect()
        self.assertTrue(sample.status.available, sample.status.reason)
        self.assertEqual([keep.uuid], [i.uuid for i in sample.instances])
        self.assertIn('domains_vanished_mid_collection:1', sample.events)

    def _stopping_during_stats(self, while_it_waits=None):
        """(sample, keep, stopping): ``stopping`` stops as stats are read.

        Every call asking for it fails as libvirt fails it ("domain is
        not running"); ``while_it_waits(keep)`` runs while its own call
        waits for the destroy.
        """
        keep = self.conn.add()
        stopping = self.conn.add()
        keep.advance(1)
        real = self.conn.domainListGetStats

        def stats(doms, stats=0, flags=0):
            if stopping in doms:
                if while_it_waits is not None and doms == [stopping]:
                    while_it_waits(keep)
                stopping.active = False
                raise fake_libvirt.error(
                    libvirt.VIR_ERR_OPERATION_INVALID,
                    'Requested operation is not valid: domain is not '
                    'running')
            return real(doms, stats, flags)
        self.conn.domainListGetStats = stats
        return self.collect(), keep, stopping

    def test_stopping_domain_in_the_bulk_stats_call(self):
        sample, keep, stopping = self._stopping_during_stats()
        self.assertTrue(sample.status.available)
        found = self.by_uuid(sample)
        self.assertEqual(keep.counters['instructions'],
                         found[keep.uuid].counters['instructions'])
        self.assertIn(libvirt_source.VANISHED, found[stopping.uuid].notes)

    def test_after_a_blocked_call_the_others_are_read_again(self):
        # The others ran on while the stopping domain's own call waited:
        # the counters reported are of the end of the turn, not of
        # before that call.
        sample, keep, _ = self._stopping_during_stats(
            while_it_waits=lambda keep: keep.advance(2))
        self.assertEqual(keep.counters['instructions'],
                         self.by_uuid(sample)[keep.uuid]
                         .counters['instructions'])

    def test_operation_invalid_on_a_running_domain_is_an_error(self):
        dom = self.conn.add()

        def refuse():
            raise fake_libvirt.error(libvirt.VIR_ERR_OPERATION_INVALID,
                                     'Requested operation is not valid')
        dom.vcpus = refuse
        self.assertFalse(self.collect().status.available)

    def test_cpu_time_never_switches_to_the_domain_total(self):
        # A domain stopping between listing and stats loses its vCPU
        # stats but still has cpu.time (emulator threads included): its
        # cpu_time_ns is unknown, not a mix of the two counters.
        dom = self.conn.add()
        dom.advance(10)
        self.collect()
        dom.vcpu_stats = False
        inst = self.by_uuid(self.source.collect(0))[dom.uuid]
        self.assertIsNone(inst.counters['cpu_time_ns'])
        self.assertNotIn(libvirt_source.CPU_TIME_FROM_TOTAL, inst.notes)
        dom.restart()
        inst = self.by_uuid(self.source.collect(0))[dom.uuid]
        self.assertIn(libvirt_source.CPU_TIME_FROM_TOTAL, inst.notes)

    def _vanish_before_stats(self, mode):
        self.conn.stats_on_gone = mode
        keep = self.conn.add()
        gone = self.conn.add()
        self.conn.hooks[(gone.uuid, 'stats')] = (
            fake_libvirt.FakeDomain.vanish)
        keep.advance(1)
        sample = self.collect()
        found = self.by_uuid(sample)
        self.assertEqual((libvirt_source.VANISHED,), found[gone.uuid].notes)
        self.assertEqual({}, found[gone.uuid].counters)
        self.assertEqual(keep.counters['instructions'],
                         found[keep.uuid].counters['instructions'])
        self.assertTrue(sample.status.available)

    def test_domain_gone_between_listing_and_stats_skipped(self):
        self._vanish_before_stats('skip')

    def test_domain_gone_between_listing_and_stats_raising(self):
        # The bulk call fails for everyone; the source asks per domain,
        # then reads the one that answered again.
        self._vanish_before_stats('raise')
        self.assertEqual(4, self.conn.stats_calls)

    def test_malformed_domain_xml_skips_that_domain_only(self):
        keep = self.conn.add()
        bad = self.conn.add()
        bad.XMLDesc = lambda flags=0: '<domain><name>x</name>'
        sample = self.collect()
        self.assertEqual([keep.uuid], [i.uuid for i in sample.instances])
        self.assertIn('domains_with_malformed_xml:1', sample.events)

    def test_policy_from_persistent_pinning(self):
        dedicated = self.conn.add(vcpus=2, xml_kwargs=dict(
            vcpupin={0: '2', 1: '3'}))
        mixed = self.conn.add(vcpus=2, xml_kwargs=dict(
            vcpupin={0: '4', 1: '10-19'}))
        numa_shared = self.conn.add(vcpus=2, xml_kwargs=dict(
            vcpupin={0: '0-9', 1: '0-9'}))
        relocated = self.conn.add(vcpus=1, affinity=[7])   # live pin only
        found = self.by_uuid(self.collect())
        self.assertEqual('dedicated', found[dedicated.uuid].cpu_policy)
        self.assertEqual('mixed', found[mixed.uuid].cpu_policy)
        self.assertEqual('shared', found[numa_shared.uuid].cpu_policy)
        self.assertEqual('shared', found[relocated.uuid].cpu_policy)

    def test_dedicated_set_decides_the_policy(self):
        self.conf.set_override('dedicated_cpu_set', '2-3', 'agent')
        dom = self.conn.add(vcpus=2, xml_kwargs=dict(
            vcpupin={0: '2', 1: '8'}))
        self.assertEqual('mixed', self.collect().instances[0].cpu_policy)
        self.assertEqual(dom.uuid, self.conn.domains[0].uuid)

    def test_lost_connection_is_unavailable_then_reconnected(self):
        self.conn.add()
        self.assertTrue(self.collect().status.available)
        self.conn.alive = False
        sample = self.source.collect(0)
        self.assertFalse(sample.status.available)
        self.assertIn(libvirt_connection.DISCONNECTED, sample.events)
        self.assertEqual((), sample.instances)
        self.opener.failures = 1
        sample = self.source.collect(0)
        self.assertFalse(sample.status.available)
        self.assertIn('cannot connect to libvirt', sample.status.reason)
        self.clock.advance(5)
        sample = self.source.collect(0)
        self.assertTrue(sample.status.available)
        self.assertIn(libvirt_connection.RECONNECTED, sample.events)
        self.assertEqual(1, len(sample.instances))

    def test_other_libvirt_error_keeps_the_connection(self):
        self.conn.add()
        self.collect()
        self.conn.fail_next = fake_libvirt.error(
            libvirt.VIR_ERR_OPERATION_TIMEOUT, 'timed out')
        sample = self.source.collect(0)
        self.assertFalse(sample.status.available)
        self.assertIn('timed out', sample.status.reason)
        self.assertTrue(self.source.collect(0).status.available)
        self.assertEqual(1, self.opener.calls)


class TestConnectionBackoff(base.AgentTestCase):

    def test_wait_doubles_up_to_the_maximum(self):
        clock = base.Clock(0)
        opener = fake_libvirt.FakeOpener(self.conn)
        opener.failures = 10
        conn = libvirt_connection.LibvirtConnection(
            'qemu:///system', opener=opener, clock=clock, min_wait=1,
            max_wait=4)
        attempts = []
        for _ in range(12):
            try:
                conn.get()
            except libvirt_connection.Disconnected as exc:
                self.assertIn('cannot connect to libvirt', str(exc))
            attempts.append(opener.calls)
            clock.advance(1)
        # Attempts at t=0, 1, 3, 7, 11: waits 1, 2, 4, 4.
        self.assertEqual([1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5], attempts)


class TestLibvirtErrorsStayOffStderr(testtools.TestCase):

    def test_handled_errors_are_not_printed(self):
        # libvirt-python's default handler writes every error to the C
        # stderr, handled or not; the agent's connection routes them to
        # its debug log. A child process, to see the real file descriptor.
        code = '\n'.join([
            'import libvirt',
            'from compute_agent import libvirt_connection',
            "libvirt_connection.LibvirtConnection('test:///default')",
            "conn = libvirt.open('test:///default')",
            'try:',
            "    conn.lookupByName('no-such-domain')",
            'except libvirt.libvirtError as exc:',
            '    assert exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN',
            "print('ok')",
        ])
        proc = subprocess.run([sys.executable, '-c', code],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual('ok\n', proc.stdout, proc.stderr)
        self.assertNotIn('libvirt:', proc.stderr)

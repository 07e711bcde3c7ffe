"""The collection loop: sources -> deltas -> a valid HostReport."""

import fixtures

from compute_agent import libvirt_connection
from compute_agent import loop
from compute_agent.sources import base as source_base
from compute_agent.sources import libvirt_source
from compute_agent.sources import numa_memory
from compute_agent.sources import resctrl
from contention import report as report_mod
from tests.unit.compute_agent import base
from tests.unit.compute_agent import fake_libvirt


class _Static(source_base.Source):
    """A source returning what the test gives it."""

    def __init__(self, name, sample=None, error=None):
        self.name = name
        self.sample = sample
        self.error = error

    def collect(self, now):
        if self.error is not None:
            raise self.error
        return self.sample


class TestCollector(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.clock = base.Clock()
        self.opener = fake_libvirt.FakeOpener(self.conn)
        connection = libvirt_connection.LibvirtConnection(
            'qemu:///system', opener=self.opener, clock=self.clock)
        self.libvirt = libvirt_source.LibvirtSource(connection=connection)
        self.mount_resctrl()
        self.resctrl = resctrl.ResctrlSource(connection=connection)
        self.numa = numa_memory.NumaMemorySource()
        self.logger = self.useFixture(fixtures.FakeLogger(
            name='compute_agent.loop'))

    def collector(self, *extra):
        collector = loop.Collector(
            'compute-1', [self.libvirt, self.resctrl, self.numa] + list(extra),
            10.0, clock=self.clock)
        collector.open(self.conf)
        return collector

    def cycle(self, collector, doms, seconds=10, **kwargs):
        for dom in doms:
            dom.advance(seconds, **kwargs)
        self.clock.advance(seconds)
        report = collector.collect()
        # Whatever the agent builds, the collector must accept.
        return report_mod.HostReport.from_dict(report.to_dict())

    def test_first_cycle_has_no_deltas_then_exact_ones(self):
        dom = self.conn.add(vcpus=2, cpus_on=[1, 2], resctrl=True)
        collector = self.collector()
        first = self.cycle(collector, [dom]).instance(dom.uuid)
        self.assertIn('first_sample', first.notes)
        self.assertIsNone(first.counters.instructions)
        # The gauge needs no previous sample.
        self.assertEqual(4 * 1024 * 1024, first.counters.llc_occupancy_bytes)
        before = dict(dom.counters)
        report = self.cycle(collector, [dom], ipc=1.5, mpki=20, mf=0.7,
                            util=0.5)
        rec = report.instance(dom.uuid)
        self.assertEqual((), rec.notes)
        self.assertEqual(dom.counters['instructions']
                         - before['instructions'], rec.counters.instructions)
        self.assertAlmostEqual(1.5, rec.metrics.ipc, places=3)
        self.assertAlmostEqual(20, rec.metrics.mpki, places=2)
        self.assertAlmostEqual(0.7, rec.metrics.mf, places=2)
        self.assertAlmostEqual(0.5, rec.metrics.cpu_util, places=3)
        self.assertEqual('high/high', rec.merlin_class)
        self.assertAlmostEqual(100e6, rec.metrics.mem_bw_total_bps, places=0)
        self.assertEqual(10.0, report.interval_s)
        self.assertEqual('L3', report.cache_miss_level)
        node0 = report.nodes[0]
        self.assertEqual(1, node0.instances)
        self.assertAlmostEqual(20, node0.mpki_sum, places=2)

    def test_slow_cycle_measures_the_interval_its_counters_span(self):
        # A call blocked for 5 s (a domain being destroyed) delays the
        # stats; the guest, capped at 30 %, ran on meanwhile.
        dom = self.conn.add(vcpus=1, cpus_on=[1])
        collector = self.collector()
        self.cycle(collector, [dom], util=0.3)
        real = dom.vcpus

        def blocked():
            self.clock.advance(5)
            dom.advance(5, util=0.3)
            return real()
        dom.vcpus = blocked
        slow = self.cycle(collector, [dom], util=0.3)
        self.assertAlmostEqual(0.3, slow.instance(dom.uuid).metrics.cpu_util,
                               places=3)
        self.assertAlmostEqual(15.0, slow.interval_s)
        dom.vcpus = real
        after = self.cycle(collector, [dom], util=0.3)
        self.assertAlmostEqual(0.3,
                               after.instance(dom.uuid).metrics.cpu_util,
                               places=3)

    def test_a_slow_later_source_does_not_date_the_counters(self):
        # A source after libvirt can wait on a domain being destroyed
        # (20-90 ms in tests/functional/hypervisor): libvirt's counters
        # were read before that wait, so the next interval must not be
        # measured from its end, or a busy guest's CPU time reads as more
        # than its wall time and is refused as impossible.
        dom = self.conn.add(vcpus=1, cpus_on=[1])
        outer = self

        class Slow(_Static):
            def collect(self, now):
                if self.block:
                    outer.clock.advance(5)
                    dom.advance(5, util=1.0)
                return source_base.SourceSample(
                    status=source_base.SourceStatus(self.name, True),
                    instances=(source_base.InstanceSample(
                        uuid=dom.uuid, memory_mib_per_node={0: 512},
                        counters={'mbm_total_bytes': 0}),))

        slow = Slow('slow')
        slow.block = False
        collector = self.collector(slow)
        self.cycle(collector, [dom], util=1.0)
        slow.block = True
        self.cycle(collector, [dom], util=1.0)
        slow.block = False
        after = self.cycle(collector, [dom], util=1.0)
        rec = after.instance(dom.uuid)
        self.assertEqual((), rec.notes)
        self.assertAlmostEqual(1.0, rec.metrics.cpu_util, places=3)
        self.assertAlmostEqual(15.0, after.interval_s)

    def test_domain_restart_starts_again_and_says_so(self):
        dom = self.conn.add(vcpus=1)
        collector = self.collector()
        self.cycle(collector, [dom])
        self.cycle(collector, [dom])
        dom.restart()
        self.libvirt.collect(0)     # perf re-enabled on the new domain
        rec = self.cycle(collector, [dom]).instance(dom.uuid)
        self.assertIn(loop.RESTARTED, rec.notes)
        self.assertIn('first_sample', rec.notes)
        self.assertIsNone(rec.counters.instructions)
        rec = self.cycle(collector, [dom]).instance(dom.uuid)
        self.assertEqual((), rec.notes)
        self.assertIsNotNone(rec.counters.instructions)

    def test_counter_reset_without_restart_is_a_reset(self):
        dom = self.conn.add(vcpus=1)
        collector = self.collector()
        self.cycle(collector, [dom])
        self.cycle(collector, [dom])
        dom.reset_counters()        # e.g. perf events toggled off and on
        rec = self.cycle(collector, [dom]).instance(dom.uuid)
        self.assertIn('counter_reset:instructions', rec.notes)
        self.assertEqual(dom.counters['instructions'],
                         rec.counters.instructions)

    def test_vanished_domain_is_reported_and_forgotten(self):
        keep = self.conn.add()
        gone = self.conn.add()
        collector = self.collector()
        self.cycle(collector, [keep, gone])
        self.conn.hooks[(gone.uuid, 'stats')] = (
            fake_libvirt.FakeDomain.vanish)
        report = self.cycle(collector, [keep, gone])
        rec = report.instance(gone.uuid)
        self.assertIn(libvirt_source.VANISHED, rec.notes)
        self.assertIsNone(rec.counters.instructions)
        self.assertIsNotNone(report.instance(keep.uuid).counters.instructions)
        report = self.cycle(collector, [keep])
        self.assertEqual([keep.uuid], [r.uuid for r in report.instances])
        self.assertFalse(any(k[0] == gone.uuid
                             for k in collector._tracker.keys()))

    def test_unavailable_source_is_null_never_zero_and_logged_once(self):
        dom = self.conn.add()
        self.conf.set_override('resctrl_root',
                               self.tmp + '/not-mounted', 'agent')
        collector = self.collector()
        for _ in range(3):
            report = self.cycle(collector, [dom])
        status = {s.name: s for s in report.sources}
        self.assertFalse(status['resctrl'].available)
        self.assertIn('mount -t resctrl', status['resctrl'].reason)
        rec = report.instance(dom.uuid)
        self.assertIsNone(rec.counters.mbm_total_bytes)
        self.assertIsNone(rec.counters.llc_occupancy_bytes)
        self.assertIsNone(rec.metrics.mem_bw_total_bps)
        self.assertEqual(1, self.logger.output.count(
            'Source resctrl unavailable'))

    def test_libvirt_outage_logged_once_and_recovery_logged(self):
        dom = self.conn.add()
        collector = self.collector()
        self.cycle(collector, [dom])
        self.conn.alive = False
        self.opener.failures = 100
        # The lost connection, then the failed reconnection: two reasons.
        self.cycle(collector, [dom])
        self.cycle(collector, [dom])
        logged = self.logger.output.count('Source libvirt unavailable')
        for _ in range(4):
            report = self.cycle(collector, [dom])
        self.assertFalse(report.sources[0].available)
        self.assertEqual((), report.instances)      # no identity, no record
        self.assertEqual(logged, self.logger.output.count(
            'Source libvirt unavailable'))
        self.opener.failures = 0
        report = self.cycle(collector, [dom])
        self.assertIn(libvirt_connection.RECONNECTED, report.events)
        self.assertEqual([dom.uuid], [r.uuid for r in report.instances])
        self.assertIn('Source libvirt available', self.logger.output)

    def test_no_topology_until_libvirt_answers(self):
        self.opener.failures = 1
        collector = self.collector()
        self.assertRaises(loop.NoTopology, collector.collect)
        self.clock.advance(5)
        self.assertEqual('compute-1', collector.collect().host)

    def test_failing_source_does_not_stop_the_others(self):
        dom = self.conn.add()
        broken = _Static('broken', error=RuntimeError('bug'))
        collector = self.collector(broken)
        report = self.cycle(collector, [dom])
        status = {s.name: s for s in report.sources}
        self.assertFalse(status['broken'].available)
        self.assertEqual('internal error: bug', status['broken'].reason)
        self.assertEqual(1, len(report.instances))

    def test_placement_outside_topology_dropped_not_fatal(self):
        dom = self.conn.add()
        odd = _Static('odd', source_base.SourceSample(
            status=source_base.SourceStatus('odd', True),
            instances=(source_base.InstanceSample(
                uuid=dom.uuid, memory_mib_per_node={7: 10.0}),)))
        # The numa source would report nothing here; the odd one does.
        collector = self.collector(odd)
        rec = self.cycle(collector, [dom]).instance(dom.uuid)
        self.assertEqual({}, rec.memory_mib_per_node)
        self.assertIn('placement_outside_topology:memory_mib_per_node',
                      rec.notes)

    def test_cpu_quota_reaches_the_report(self):
        capped = self.conn.add(vcpus=2, cpus_on=[1, 2])
        capped.sched.update(vcpu_quota=50000, vcpu_period=100000)
        free = self.conn.add(vcpus=1, cpus_on=[3])
        report = self.cycle(self.collector(), [capped, free])
        self.assertEqual(0.5, report.instance(capped.uuid).cpu_quota)
        self.assertIsNone(report.instance(free.uuid).cpu_quota)

    def test_merge_first_non_none_wins_and_notes_add_up(self):
        a = source_base.SourceSample(
            status=source_base.SourceStatus('a', True),
            instances=(source_base.InstanceSample(
                uuid='u', name='x', counters={'instructions': 5,
                                              'cycles': None},
                notes=('n1',)),))
        b = source_base.SourceSample(
            status=source_base.SourceStatus('b', True),
            instances=(source_base.InstanceSample(
                uuid='u', name='y', vcpus=2,
                counters={'instructions': 7, 'cycles': 9},
                notes=('n2',)),))
        merged = loop.merge_samples([a, b])['u']
        self.assertEqual(('x', 2), (merged.name, merged.vcpus))
        self.assertEqual({'instructions': 5, 'cycles': 9}, merged.counters)
        self.assertEqual(('n1', 'n2'), merged.notes)

    def test_load_sources_by_entry_point(self):
        names = [s.name for s in loop.load_sources(['numa_memory',
                                                    'libvirt'])]
        self.assertEqual(['numa_memory', 'libvirt'], names)
        exc = self.assertRaises(ValueError, loop.load_sources,
                                ['libvirt', 'pmu'])
        self.assertIn('unknown source(s) pmu', str(exc))
        self.assertIn('resctrl', str(exc))

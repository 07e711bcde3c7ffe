"""Counter deltas -> metrics, node aggregates and a valid host report."""

import dataclasses
import json

from hypothesis import given
from hypothesis import settings
from oslotest import base

from contention import aggregate
from contention import classify
from contention import overhead
from contention import report
from contention import schema
from tests.unit.contention import topologies
from tests.unit.fixtures import strategies

TOPO = topologies.host()  # 2 nodes x 4 CPUs: node 0 = 0-3, node 1 = 4-7


def counters(**overrides):
    values = dict(instructions=10 ** 10, cycles=10 ** 10,
                  cache_references=10 ** 8, cache_misses=3 * 10 ** 7,
                  cpu_time_ns=18 * 10 ** 9, vcpu_delay_ns=10 ** 8,
                  mbm_local_bytes=2 * 10 ** 9, mbm_total_bytes=3 * 10 ** 9,
                  llc_occupancy_bytes=4 * 2 ** 20)
    values.update(overrides)
    return report.Counters(**values)


def record(uuid, vcpu_cpus, memory, vcpus=None, **counter_values):
    vcpus = vcpus or len(vcpu_cpus) or 1
    return report.InstanceRecord(
        uuid=uuid, name='instance-' + uuid, vcpus=vcpus,
        memory_mib=int(sum(memory.values())) or 1024,
        vcpu_cpus=tuple(vcpu_cpus), memory_mib_per_node=dict(memory),
        counters=counters(**counter_values))


def build(*records, **kwargs):
    return aggregate.build_report('host-a', 1767225600.0, 10.0, TOPO,
                                  records, **kwargs)


class TestDeriveMetrics(base.BaseTestCase):

    def derive(self, c, vcpus=2, vcpu_cpus=(0, 1), memory=None):
        return aggregate.derive_metrics(c, 10.0, vcpus, vcpu_cpus,
                                        memory or {0: 1024.0}, TOPO)

    def test_all_metrics(self):
        m = self.derive(counters(instructions=12 * 10 ** 9))
        self.assertAlmostEqual(1.2, m.ipc)
        self.assertAlmostEqual(2.5, m.mpki)
        self.assertAlmostEqual(0.3, m.mf)
        self.assertAlmostEqual(3e6, m.llc_misses_per_s)
        self.assertAlmostEqual(0.9, m.cpu_util)  # 18 s of 2 x 10 s
        self.assertAlmostEqual(2e8, m.mem_bw_local_bps)
        self.assertAlmostEqual(3e8, m.mem_bw_total_bps)
        self.assertEqual(0.0, m.remote_memory_ratio)

    def test_unavailable_counters_give_none(self):
        m = self.derive(report.Counters())
        self.assertEqual(report.Metrics(remote_memory_ratio=0.0), m)

    def test_zero_instructions(self):
        m = self.derive(counters(instructions=0))
        self.assertIsNone(m.mpki)
        self.assertEqual(0.0, m.ipc)

    def test_zero_cycles_and_references(self):
        m = self.derive(counters(cycles=0, cache_references=0))
        self.assertIsNone(m.ipc)
        self.assertIsNone(m.mf)
        self.assertIsNotNone(m.mpki)

    def test_remote_memory_ratio(self):
        m = self.derive(counters(), vcpu_cpus=(0, 5),
                        memory={0: 512.0, 1: 512.0})
        self.assertEqual(0.0, m.remote_memory_ratio)
        m = self.derive(counters(), vcpu_cpus=(4, 5),
                        memory={0: 768.0, 1: 256.0})
        self.assertEqual(0.75, m.remote_memory_ratio)

    def test_remote_memory_ratio_unknown_placement(self):
        self.assertIsNone(self.derive(counters(), vcpu_cpus=()).
                          remote_memory_ratio)
        self.assertIsNone(aggregate.derive_metrics(
            counters(), 10.0, 2, (0, 1), {}, TOPO).remote_memory_ratio)

    def test_bad_interval(self):
        for bad in (0, -1.0, float('nan'), None):
            self.assertRaises(ValueError, aggregate.derive_metrics,
                              counters(), bad, 2, (0,), {}, TOPO)


class TestVcpusPerNode(base.BaseTestCase):

    def test_counts_and_scales(self):
        r = record('a', (0, 1, 4), {0: 1.0})
        self.assertEqual({0: 2, 1: 1}, aggregate.vcpus_per_node(r, TOPO))
        r = record('b', (0, 4), {0: 1.0}, vcpus=4)
        self.assertEqual({0: 2.0, 1: 2.0}, aggregate.vcpus_per_node(r, TOPO))
        r = record('c', (), {0: 1.0}, vcpus=2)
        self.assertEqual({}, aggregate.vcpus_per_node(r, TOPO))


class TestBuildReport(base.BaseTestCase):

    def test_fills_metrics_class_and_report_fields(self):
        r = dataclasses.replace(record('a', (0, 1), {0: 2048.0}),
                                notes=('counter_reset:cycles',))
        src = (report.SourceStatus('libvirt', True),)
        out = build(r, sources=src, events=['libvirt_reconnected'])
        inst = out.instance('a')
        self.assertAlmostEqual(3.0, inst.metrics.mpki)
        self.assertEqual('medium/medium', inst.merlin_class)
        self.assertEqual(('counter_reset:cycles',), inst.notes)
        self.assertEqual(src, out.sources)
        self.assertEqual(('libvirt_reconnected',), out.events)
        self.assertEqual(('host-a', 1767225600.0, 10.0, 'L3', '1.4'),
                         (out.host, out.timestamp, out.interval_s,
                          out.cache_miss_level, out.version))

    def test_cache_miss_level_from_topology(self):
        topo = topologies.host(vendor='amd')
        out = aggregate.build_report('h', 1.0, 10.0, topo, [])
        self.assertEqual('L2', out.cache_miss_level)

    def test_metrics_given_are_replaced(self):
        r = dataclasses.replace(record('a', (0,), {0: 1.0}),
                                metrics=report.Metrics(mpki=999.0),
                                merlin_class='high/high')
        inst = build(r).instance('a')
        self.assertAlmostEqual(3.0, inst.metrics.mpki)
        self.assertEqual('medium/medium', inst.merlin_class)

    def test_instance_spanning_two_nodes(self):
        # 3 vCPUs on node 0, 1 on node 1: 3/4 and 1/4 of its sums.
        span = record('span', (0, 1, 2, 4), {0: 3072.0, 1: 1024.0})
        out = build(span)
        n0, n1 = out.nodes
        self.assertEqual((1, 1), (n0.instances, n1.instances))
        self.assertEqual((3.0, 1.0), (n0.vcpus, n1.vcpus))
        self.assertAlmostEqual(0.75 * 3.0, n0.mpki_sum)
        self.assertAlmostEqual(0.25 * 3.0, n1.mpki_sum)
        self.assertAlmostEqual(0.75 * 3e6, n0.llc_misses_per_s)
        self.assertAlmostEqual(0.25 * 3e8, n1.mem_bw_bps)
        self.assertEqual(3 * 2 ** 20, n0.llc_occupancy_bytes)
        self.assertEqual((3072.0, 1024.0), (n0.memory_mib, n1.memory_mib))
        self.assertAlmostEqual(0.3, n0.mf)
        self.assertEqual({'medium/medium': 1}, n0.classes)
        self.assertEqual({'medium/medium': 1}, n1.classes)
        m = out.instance('span').metrics
        load = m.mpki * m.ipc * m.cpu_util
        self.assertAlmostEqual(3 * load, n0.miss_intensity)
        self.assertAlmostEqual(load, n1.miss_intensity)
        self.assertAlmostEqual((3 * m.cpu_util, m.cpu_util),
                               (n0.cpu_demand, n1.cpu_demand))

    def test_node_load_unknown_without_mpki_busy_without_util(self):
        blind = record('blind', (0,), {0: 1.0}, cache_misses=None)
        seen = record('seen', (4,), {1: 1.0})
        n0, n1 = build(blind, seen).nodes
        self.assertIsNone(n0.miss_intensity)
        self.assertIsNotNone(n1.miss_intensity)
        unknown = dataclasses.replace(blind, counters=dataclasses.replace(
            blind.counters, cpu_time_ns=None))
        self.assertEqual(1.0, build(unknown).nodes[0].cpu_demand)

    def test_node_with_no_instances(self):
        out = build(record('a', (0, 1), {0: 1024.0}))
        n1 = out.nodes[1]
        self.assertEqual(report.NodeAggregate(
            node=1, instances=0, vcpus=0.0, memory_mib=0.0,
            overhead=report.NodeOverhead(0, 0, 0, 0), miss_intensity=0.0,
            cpu_demand=0.0), n1)

    def test_memory_counted_where_it_is_even_without_vcpus(self):
        out = build(record('a', (0, 1), {0: 1024.0, 1: 512.0}))
        self.assertEqual(0, out.nodes[1].instances)
        self.assertEqual(512.0, out.nodes[1].memory_mib)

    def test_mpki_sum_none_only_when_no_instance_had_mpki(self):
        blind = record('blind', (0,), {0: 1.0}, cache_misses=None)
        seen = record('seen', (4,), {1: 1.0})
        out = build(blind, seen)
        self.assertIsNone(out.nodes[0].mpki_sum)
        self.assertIsNone(out.nodes[0].mf)
        self.assertIsNone(out.nodes[0].llc_misses_per_s)
        self.assertEqual({}, out.nodes[0].classes)
        # Unknown, not "no pressure": nothing on the node had an MPKI.
        self.assertIsNone(out.nodes[0].mc_ic_pressure)
        self.assertIsNone(out.nodes[0].overhead)
        # A partial sum is kept: the measured instance's MPKI.
        both = build(blind, record('other', (1,), {0: 1.0}))
        self.assertAlmostEqual(3.0, both.nodes[0].mpki_sum)

    def test_mc_ic_pressure_over_the_trigger(self):
        hogs = [record(str(i), (i,), {0: 1.0}, instructions=10 ** 9,
                       cache_misses=3 * 10 ** 7) for i in range(4)]
        out = build(*hogs)  # 4 x 30 MPKI = 120 > 100
        self.assertAlmostEqual(120.0, out.nodes[0].mpki_sum)
        self.assertTrue(out.nodes[0].mc_ic_pressure)
        self.assertEqual({'high/medium': 4}, out.nodes[0].classes)
        relaxed = build(*hogs, thresholds=classify.Thresholds(
            node_mpki_trigger=150, mpki_high=40))
        self.assertFalse(relaxed.nodes[0].mc_ic_pressure)
        self.assertEqual({'medium/medium': 4}, relaxed.nodes[0].classes)

    def test_mf_is_miss_weighted(self):
        # 10 misses at MF 0.1, 90 misses at MF 0.9: (1 + 81) / 100.
        a = record('a', (0,), {0: 1.0}, cache_misses=10,
                   cache_references=100)
        b = record('b', (1,), {0: 1.0}, cache_misses=90,
                   cache_references=100)
        self.assertAlmostEqual(0.82, build(a, b).nodes[0].mf)

    def test_mf_with_no_misses(self):
        a = record('a', (0,), {0: 1.0}, cache_misses=0)
        self.assertEqual(0.0, build(a).nodes[0].mf)

    def test_overhead_from_overhead_module(self):
        r = record('a', (0, 1), {0: 1.0}, cycles=10 ** 9)
        th = overhead.OverheadThresholds(mc_cycle_loss=(0.1,))
        out = build(r, overhead_thresholds=th)
        # 3e7 misses x 60 / 1e9 cycles = 1.8 -> capped 1 > 0.1
        self.assertEqual(1, out.nodes[0].overhead.mc)
        self.assertEqual(3, build(r).nodes[0].overhead.mc)

    def test_unknown_cpu_is_rejected(self):
        error = self.assertRaises(report.InvalidReport, build,
                                  record('a', (0, 99), {0: 1.0}))
        self.assertEqual('instances[0].vcpu_cpus', error.path)
        self.assertIn('CPU 99', str(error))

    def test_unknown_node_is_rejected(self):
        error = self.assertRaises(report.InvalidReport, build,
                                  record('a', (0,), {0: 1.0}),
                                  record('b', (0,), {3: 1.0}))
        self.assertEqual('instances[1].memory_mib_per_node[3]', error.path)

    def test_round_trip(self):
        span = record('span', (0, 1, 2, 4), {0: 3072.0, 1: 1024.0})
        first = report.InstanceRecord(uuid='new', name='n', vcpus=2,
                                      memory_mib=512, vcpu_cpus=(5, 6),
                                      memory_mib_per_node={1: 512.0},
                                      notes=('first_sample',))
        out = build(span, first)
        data = json.loads(json.dumps(out.to_dict(), allow_nan=False))
        self.assertEqual(out, report.HostReport.from_dict(data))

    def test_node_occupancy_saturates_at_64_bits(self):
        # Each counter fits 64 bits; their sum on one node does not.
        big = schema.INT_MAX - 1
        out = build(record('a', (0,), {0: 512.0}, llc_occupancy_bytes=big),
                    record('b', (1,), {0: 512.0}, llc_occupancy_bytes=big))
        self.assertEqual(schema.INT_MAX, out.nodes[0].llc_occupancy_bytes)
        data = json.loads(json.dumps(out.to_dict(), allow_nan=False))
        self.assertEqual(out, report.HostReport.from_dict(data))

    @settings(max_examples=60, deadline=None)
    @given(strategies.host_reports())
    def test_any_valid_input_builds_a_valid_report(self, drawn):
        out = aggregate.build_report(
            drawn.host, drawn.timestamp, drawn.interval_s, drawn.topology,
            drawn.instances, sources=drawn.sources, events=drawn.events)
        data = json.loads(json.dumps(out.to_dict(), allow_nan=False))
        self.assertEqual(out, report.HostReport.from_dict(data))
        self.assertEqual(len(drawn.topology.nodes), len(out.nodes))
        placed = sum(1 for r in drawn.instances if r.vcpu_cpus)
        self.assertAlmostEqual(
            sum(r.vcpus for r in drawn.instances if r.vcpu_cpus),
            sum(n.vcpus for n in out.nodes))
        self.assertGreaterEqual(sum(n.instances for n in out.nodes), placed)

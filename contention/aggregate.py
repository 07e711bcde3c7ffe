"""Per-instance counter deltas -> a complete host report.

The agent (from libvirt and perf) and the simulator (from its model) both
end an interval with the same thing: instance records whose counters are
deltas over the interval (see :mod:`contention.counters`). This module
derives everything else the report carries, in one place, so a real host
and a simulated one can never disagree on what a metric means:

* per instance, the :class:`~contention.report.Metrics` (IPC, Merlin's
  MPKI and MF, CPU utilisation, bandwidth, remote memory ratio) and the
  Merlin class (:mod:`contention.classify`);
* per NUMA node, the :class:`~contention.report.NodeAggregate`: sums over
  the instances whose vCPUs ran there, each contributing in proportion to
  its vCPUs on the node (Merlin section 3.4 sums L3 MPKI per node; Ahn et
  al. sum LLC misses per socket), Merlin's MC/IC trigger, the classes
  present, and Liu & Li's overhead levels (:mod:`contention.overhead`).

``None`` stays ``None``: a sum over a node is None only when no instance
there had the value (a partial sum is a lower bound, which is what the
MC/IC trigger needs); a node's overhead is None when an instance touching
it could not be measured. Instances whose vCPU placement is unknown
(empty ``vcpu_cpus``) count on no node.
"""

import collections
import dataclasses
import math

from contention import classify
from contention import overhead
from contention import report
from contention import schema


def _ratio(numerator, denominator, scale=1.0):
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return scale * numerator / denominator


def _per_second(count, interval_s):
    return _ratio(count, interval_s)


def remote_memory_ratio(vcpu_cpus, memory_mib_per_node, topology):
    """Fraction of the memory on nodes none of the vCPUs ran on.

    None if the vCPU placement or the memory placement is unknown.
    """
    total = sum(memory_mib_per_node.values())
    if not vcpu_cpus or total <= 0:
        return None
    cpu_nodes = {topology.node_of_cpu(cpu) for cpu in vcpu_cpus}
    remote = sum(mib for node, mib in memory_mib_per_node.items()
                 if node not in cpu_nodes)
    return remote / total


def derive_metrics(counters, interval_s, vcpus, vcpu_cpus,
                   memory_mib_per_node, topology):
    """The :class:`~contention.report.Metrics` of one instance.

    Each metric is None when one of its inputs is (unavailable, never
    zero): IPC = instructions / cycles, MPKI and MF as Merlin section 3.1
    (:func:`contention.classify.mpki`, :func:`~contention.classify.
    memory_factor`), CPU utilisation = cpu_time / (interval x vCPUs)
    (Merlin's CPU sensitivity, section 3.2), bandwidths = resctrl MBM bytes
    per second.
    """
    if (isinstance(interval_s, bool)
            or not isinstance(interval_s, (int, float))
            or not math.isfinite(interval_s) or interval_s <= 0):
        raise ValueError('interval_s must be > 0, got %r' % (interval_s,))
    c = counters
    return report.Metrics(
        ipc=_ratio(c.instructions, c.cycles),
        mpki=classify.mpki(c.cache_misses, c.instructions),
        mf=classify.memory_factor(c.cache_misses, c.cache_references),
        llc_misses_per_s=_per_second(c.cache_misses, interval_s),
        cpu_util=_ratio(c.cpu_time_ns, interval_s * 1e9 * vcpus),
        mem_bw_local_bps=_per_second(c.mbm_local_bytes, interval_s),
        mem_bw_total_bps=_per_second(c.mbm_total_bytes, interval_s),
        remote_memory_ratio=remote_memory_ratio(
            vcpu_cpus, memory_mib_per_node, topology))


def vcpus_per_node(record, topology):
    """vCPUs of ``record`` per node, from where each last ran.

    When fewer vCPUs are listed than the instance has, the listed ones
    stand for all in proportion.
    """
    if not record.vcpu_cpus:
        return {}
    counts = collections.Counter(topology.node_of_cpu(cpu)
                                 for cpu in record.vcpu_cpus)
    scale = record.vcpus / len(record.vcpu_cpus)
    return {node: count * scale for node, count in counts.items()}


def _sum(pairs):
    """Sum of share x value over the pairs whose value is known."""
    known = [(share, value) for share, value in pairs if value is not None]
    if not known:
        return None
    return sum(share * value for share, value in known)


def _miss_weighted_mf(pairs):
    """Miss-weighted mean MF over (share, record) pairs."""
    known = [(share * r.counters.cache_misses, r.metrics.mf)
             for share, r in pairs
             if r.metrics.mf is not None and r.counters.cache_misses
             is not None]
    if not known:
        return None
    weight = sum(w for w, _ in known)
    if weight <= 0:
        return 0.0  # no misses at all: every MF was a measured 0
    return sum(w * mf for w, mf in known) / weight


#: The CPU utilisation an instance without a measured one counts with:
#: fully busy vCPUs, the assumption Nova's sizing makes.
NEUTRAL_CPU_UTIL = 1.0


def node_loads(topology, records):
    """{node: (miss intensity or None, busy vCPUs)} of ``records``.

    Each instance counts on a node with the vCPUs it last ran there
    (:func:`vcpus_per_node`): its miss intensity MPKI x IPC x cpu_util x
    those vCPUs, its CPU demand cpu_util x those vCPUs. A missing
    ``cpu_util`` counts as :data:`NEUTRAL_CPU_UTIL`; a missing MPKI or
    IPC makes the node's intensity unknown.
    """
    loads = {}
    for rec in records:
        m = rec.metrics
        util = NEUTRAL_CPU_UTIL if m.cpu_util is None else m.cpu_util
        for node, vcpus in vcpus_per_node(rec, topology).items():
            intensity, demand = loads.get(node, (0.0, 0.0))
            if intensity is not None:
                intensity = (None if None in (m.mpki, m.ipc)
                             else intensity + m.mpki * m.ipc * util * vcpus)
            loads[node] = (intensity, demand + util * vcpus)
    return loads


def node_aggregates(topology, records, thresholds=None,
                    overhead_thresholds=None):
    """One :class:`~contention.report.NodeAggregate` per topology node.

    ``records`` must already carry metrics and Merlin classes.
    """
    th = thresholds or classify.DEFAULT_THRESHOLDS
    oth = overhead_thresholds or overhead.DEFAULT_OVERHEAD_THRESHOLDS
    placements = [(r, vcpus_per_node(r, topology)) for r in records]
    overheads = overhead.node_overheads(topology, [
        overhead.Occupant(
            vcpus_per_node=per_node,
            memory_mib_per_node=dict(r.memory_mib_per_node),
            instructions=r.counters.instructions, cycles=r.counters.cycles,
            cache_references=r.counters.cache_references,
            cache_misses=r.counters.cache_misses)
        for r, per_node in placements], oth)
    loads = node_loads(topology, records)
    result = []
    for node in topology.node_ids:
        intensity, demand = loads.get(node, (0.0, 0.0))
        here = [(per_node[node] / r.vcpus, per_node[node], r)
                for r, per_node in placements if node in per_node]
        shares = [(share, r) for share, _, r in here]
        mpki_sum = _sum((s, r.metrics.mpki) for s, r in shares)
        occupancy = _sum((s, r.counters.llc_occupancy_bytes)
                         for s, r in shares)
        result.append(report.NodeAggregate(
            node=node,
            instances=len(here),
            vcpus=float(sum(v for _, v, _ in here)),
            mpki_sum=mpki_sum,
            llc_misses_per_s=_sum((s, r.metrics.llc_misses_per_s)
                                  for s, r in shares),
            mf=_miss_weighted_mf(shares),
            mem_bw_bps=_sum((s, r.metrics.mem_bw_total_bps)
                            for s, r in shares),
            # A sum of counters each within 64 bits may pass them (a
            # report can only carry 64-bit integers): it saturates.
            llc_occupancy_bytes=(None if occupancy is None
                                 else min(schema.INT_MAX,
                                          int(round(occupancy)))),
            memory_mib=float(sum(r.memory_mib_per_node.get(node, 0.0)
                                 for r in records)),
            overhead=overheads[node],
            mc_ic_pressure=classify.node_needs_mc_ic_relief(mpki_sum, th),
            classes=dict(collections.Counter(
                r.merlin_class for _, r in shares
                if r.merlin_class is not None)),
            miss_intensity=intensity, cpu_demand=demand))
    return tuple(result)


def _check_placement(records, topology):
    node_ids = set(topology.node_ids)
    for i, r in enumerate(records):
        path = 'instances[%d]' % i
        for cpu in r.vcpu_cpus:
            if not topology.has_cpu(cpu):
                raise report.InvalidReport(
                    path + '.vcpu_cpus', 'CPU %d of instance %s is not in '
                    'the topology of %s' % (cpu, r.uuid, topology.hostname))
        for node in r.memory_mib_per_node:
            if node not in node_ids:
                raise report.InvalidReport(
                    '%s.memory_mib_per_node[%r]' % (path, node),
                    'NUMA node %r of instance %s is not in the topology of '
                    '%s' % (node, r.uuid, topology.hostname))


def build_report(host, timestamp, interval_s, topology, instances, *,
                 sources=(), events=(), thresholds=None,
                 overhead_thresholds=None, nova_cpus=None):
    """A complete :class:`~contention.report.HostReport` for one interval.

    ``instances`` are :class:`~contention.report.InstanceRecord` with
    their counters (deltas) filled; their metrics and Merlin class are
    derived here (whatever they held is replaced), notes are kept.
    Raises :class:`~contention.report.InvalidReport` when an instance uses
    a CPU or node the topology does not have. ``nova_cpus``: the CPUs
    Nova places instances on, empty or None for all of them.
    """
    th = thresholds or classify.DEFAULT_THRESHOLDS
    _check_placement(instances, topology)
    records = []
    for r in instances:
        metrics = derive_metrics(r.counters, interval_s, r.vcpus,
                                 r.vcpu_cpus, r.memory_mib_per_node,
                                 topology)
        records.append(dataclasses.replace(
            r, metrics=metrics,
            merlin_class=classify.merlin_class(metrics.mpki, metrics.mf,
                                               th)))
    return report.HostReport(
        host=host,
        timestamp=timestamp,
        interval_s=interval_s,
        topology=topology,
        cache_miss_level=topology.cache_miss_level,
        sources=tuple(sources),
        nodes=node_aggregates(topology, records, th, overhead_thresholds),
        instances=tuple(records),
        nova_cpus=tuple(sorted(nova_cpus or ())),
        events=tuple(events))

"""One collection cycle: sources -> merged samples -> deltas -> HostReport.

The arithmetic is the core's: cumulative counters become interval deltas
in :class:`contention.counters.CounterTracker` (first sample, resets,
wrap-around, impossible rates), and :func:`contention.aggregate.build_report`
derives the metrics, Merlin classes and per-node aggregates. This module
only merges what the sources saw and keeps the state between cycles.
"""

import dataclasses
import time

from oslo_log import log as logging
import stevedore

from compute_agent.sources import base
from contention import aggregate
from contention import counters as counters_mod
from contention import report as report_mod

LOG = logging.getLogger(__name__)

NAMESPACE = 'contention.agent.sources'
RESTARTED = 'restarted'

_IDENTITY = ('name', 'vcpus', 'memory_mib', 'flavor', 'image_id',
             'project_id', 'cpu_policy', 'vcpu_cpus', 'cpuset',
             'memory_mib_per_node', 'cpu_quota', 'incarnation')


class NoTopology(Exception):
    """No source has reported the host topology yet, so no report."""


def load_sources(names):
    """Instantiate the named sources from the entry-point namespace."""
    missing = []
    manager = stevedore.NamedExtensionManager(
        NAMESPACE, names=list(names), invoke_on_load=True, name_order=True,
        on_missing_entrypoints_callback=missing.extend,
        on_load_failure_callback=_load_failed)
    if missing:
        raise ValueError('[agent] sources: unknown source(s) %s (known: %s)'
                         % (', '.join(sorted(missing)), ', '.join(
                             sorted(stevedore.ExtensionManager(
                                 NAMESPACE).names()))))
    return [ext.obj for ext in manager]


def _load_failed(manager, entrypoint, exc):
    raise ValueError('[agent] sources: cannot load %s (%s): %s'
                     % (entrypoint.name, entrypoint.value, exc))


def merge_samples(samples):
    """Merge the sources' instance samples by uuid, first source first.

    For each field the first non-None value wins; counters merge per
    counter the same way; notes add up.
    """
    merged = {}
    extra = {}
    for sample in samples:
        for inst in sample.instances:
            current = merged.get(inst.uuid)
            if current is None:
                merged[inst.uuid] = inst
                continue
            fields = extra.get(inst.uuid)
            if fields is None:
                fields = extra[inst.uuid] = {
                    'counters': dict(current.counters),
                    'notes': current.notes}
            for name in _IDENTITY:
                value = getattr(inst, name)
                if value is not None and fields.get(
                        name, getattr(current, name)) is None:
                    fields[name] = value
            counters = fields['counters']
            for name, value in inst.counters.items():
                if counters.get(name) is None:
                    counters[name] = value
            fields['notes'] += inst.notes
    for uuid, fields in extra.items():
        # One replace per instance, however many sources saw it.
        merged[uuid] = dataclasses.replace(merged[uuid], **fields)
    return merged


class Collector(object):
    """Runs the sources and keeps what must survive between cycles."""

    def __init__(self, host, sources, interval, clock=time.time,
                 thresholds=None, overhead_thresholds=None, nova_cpus=None):
        self.host = host
        self.sources = list(sources)
        self.interval = interval
        self._clock = clock
        #: ``[contention_thresholds]``: Merlin's class bins and Liu & Li's
        #: overhead levels (None: the papers' defaults).
        self.thresholds = thresholds
        self.overhead_thresholds = overhead_thresholds
        #: The CPUs Nova places instances on (None: all), reported.
        self.nova_cpus = nova_cpus
        self._tracker = counters_mod.CounterTracker()
        self._incarnations = {}
        self._topology = None
        self._last_time = None
        self._last_status = {}

    @property
    def topology(self):
        """The host topology of the last cycle (None before the first)."""
        return self._topology

    def open(self, conf):
        for source in self.sources:
            source.open(conf)

    def close(self):
        for source in self.sources:
            try:
                source.close()
            except Exception:
                LOG.exception('Closing source %s failed', source.name)

    def _run_source(self, source, now):
        try:
            sample = source.collect(now)
        except Exception as exc:
            # A bug or an unforeseen host condition in one source must not
            # stop the others or the loop.
            LOG.exception('Source %s failed', source.name)
            sample = base.SourceSample(status=base.SourceStatus(
                source.name, False, 'internal error: %s' % exc))
        status = sample.status
        previous = self._last_status.get(source.name)
        if previous != (status.available, status.reason):
            if not status.available:
                LOG.warning('Source %s unavailable: %s', source.name,
                            status.reason)
            elif previous is not None:
                LOG.info('Source %s available%s', source.name,
                         ': %s' % status.reason if status.reason else '')
            self._last_status[source.name] = (status.available,
                                              status.reason)
        return sample

    def collect(self, extra_events=()):
        """One cycle; returns a HostReport.

        Raises :class:`NoTopology` until a source has reported the host
        topology (libvirt unreachable since the start).
        """
        started = self._clock()
        runs = []   # (sample, end of the source's turn)
        for source in self.sources:
            sample = self._run_source(source, started)
            runs.append((sample, self._clock()))
        samples = [sample for sample, _ in runs]
        # The cumulative counters are read while the sources run, libvirt's
        # all at once at the end of its turn; a cycle slowed down before
        # or after that (a call blocked on a domain being destroyed, in
        # libvirt's turn or a later source's) must not measure its deltas
        # over a shorter interval than they span, or the next one over a
        # longer (:func:`_counted_at`). An emulating source steps its simulator to
        # ``started`` after asking Nova for the servers; measured to the
        # end of the run, an answer 0.7 s slower than the last one made a
        # CPU-bound server read as using 88 % of its CPU, which the
        # strategies take for a service answering requests.
        now = _counted_at(runs)
        if now is None:
            now = self._clock()
        for sample in samples:
            if sample.topology is not None:
                self._topology = sample.topology
                break
        if self._topology is None:
            raise NoTopology('no source reported the host topology: %s'
                             % '; '.join('%s: %s' % (s.status.name,
                                                     s.status.reason)
                                         for s in samples))
        interval = (now - self._last_time if self._last_time is not None
                    and now > self._last_time else self.interval)
        self._last_time = now
        merged = merge_samples(samples)
        records = []
        seen = set()
        for uuid, inst in merged.items():
            record = self._record(inst, now, self._topology)
            if record is not None:
                records.append(record)
                seen.add(uuid)
        self._forget(seen)
        events = [e for s in samples for e in s.events]
        events.extend(extra_events)
        return aggregate.build_report(
            self.host, now, interval, self._topology, records,
            sources=tuple(s.status for s in samples), events=tuple(events),
            thresholds=self.thresholds,
            overhead_thresholds=self.overhead_thresholds,
            nova_cpus=self.nova_cpus)

    def _record(self, inst, now, topology):
        if not inst.name or not inst.vcpus or inst.memory_mib is None:
            # Seen only by a source that cannot identify it (e.g. a resctrl
            # group of a domain libvirt no longer lists).
            LOG.debug('Instance %s has no identity this cycle; skipped',
                      inst.uuid)
            return None
        notes = list(inst.notes)
        if inst.incarnation is not None:
            known = self._incarnations.get(inst.uuid)
            if known is not None and known != inst.incarnation:
                self._tracker.forget([k for k in self._tracker.keys()
                                      if k[0] == inst.uuid])
                notes.append(RESTARTED)
            self._incarnations[inst.uuid] = inst.incarnation
        vcpu_cpus, cpuset, per_node = _inside(inst, topology, notes)
        cumulative = {name: inst.counters.get(name)
                      for name in base.CUMULATIVE}
        deltas = self._tracker.update_all(
            inst.uuid, cumulative, now,
            counters_mod.plausible_max_rates(inst.vcpus))
        values = {name: d.value for name, d in deltas.items()}
        for gauge in base.GAUGES:
            values[gauge] = inst.counters.get(gauge)
        notes.extend(counters_mod.instance_notes(deltas))
        return report_mod.InstanceRecord(
            uuid=inst.uuid, name=inst.name, vcpus=inst.vcpus,
            memory_mib=inst.memory_mib, flavor=inst.flavor,
            image_id=inst.image_id, project_id=inst.project_id,
            cpu_policy=inst.cpu_policy or 'shared',
            vcpu_cpus=vcpu_cpus, cpuset=cpuset,
            memory_mib_per_node=per_node, cpu_quota=inst.cpu_quota,
            counters=report_mod.Counters(**values),
            notes=tuple(dict.fromkeys(notes)))

    def _forget(self, present):
        gone = [key for key in self._tracker.keys() if key[0] not in present]
        self._tracker.forget(gone)
        for uuid in set(self._incarnations) - present:
            del self._incarnations[uuid]


def _counted_at(runs):
    """When this cycle's cumulative counters were read, or None.

    ``runs`` are (sample, end of the source's turn) in source order. The
    moment every source that counted something says its counters are of
    (``read_at``), else the end of the turn of the first of them: the
    merge takes each counter from the first source that has it, so that
    source's (libvirt's CPU time and perf events, which the plausibility
    bounds check) date the interval. A source that runs after it may
    wait without moving that moment: under ``virsh destroy``
    (tests/functional/hypervisor) resctrl's libvirt calls took 16-92 ms
    and ``numa_memory``'s reads 7-14 ms. None when nothing was counted.
    """
    counting = [(sample, end) for sample, end in runs
                if any(inst.counters.get(name) is not None
                       for inst in sample.instances
                       for name in base.CUMULATIVE)]
    if not counting:
        return None
    moments = {sample.read_at for sample, _ in counting}
    if len(moments) == 1 and None not in moments:
        return moments.pop()
    return counting[0][1]


def _inside(inst, topology, notes):
    """Placement fields restricted to what the topology has.

    A CPU or node the topology lacks (a CPU hot-plugged since the topology
    was read, a source with a different view of the host) would make the
    whole report invalid; that one field is dropped instead and noted.
    """
    vcpu_cpus = tuple(inst.vcpu_cpus or ())
    cpuset = tuple(inst.cpuset or ())
    per_node = dict(inst.memory_mib_per_node or {})
    if not all(topology.has_cpu(cpu) for cpu in vcpu_cpus):
        vcpu_cpus = ()
        notes.append('placement_outside_topology:vcpu_cpus')
    if not all(topology.has_cpu(cpu) for cpu in cpuset):
        cpuset = ()
        notes.append('placement_outside_topology:cpuset')
    nodes = set(topology.node_ids)
    if not set(per_node) <= nodes:
        per_node = {}
        notes.append('placement_outside_topology:memory_mib_per_node')
    return vcpu_cpus, cpuset, per_node

"""The host report: what one compute node measured over one interval.

The agent publishes one report per host and interval as an oslo.messaging
notification (topic ``contention_telemetry``, event type
``contention.host.report``); the collector validates it with
:meth:`HostReport.from_dict` and stores it. ``doc/telemetry.md`` documents the
schema with a complete example.

Conventions:

* ``None`` means *unavailable* (the source could not measure it), never
  zero. A zero is a measured zero.
* Counters are deltas over the interval, already corrected for resets and
  wrap-around by :mod:`contention.counters`.
* ``cache_misses`` / ``cache_references`` are the generic perf events; which
  cache they count is ``cache_miss_level`` (L3 on Intel, L2 on AMD Zen).

The schema is versioned by ``version`` (major.minor). A reader accepts any
minor version of a major it knows, ignoring nothing silently: unknown fields
are an error, so a minor version may only add optional fields that readers of
that version declare.
"""

import dataclasses
import math
import re
import threading
from typing import Optional

import orjson

from contention import schema
from contention.topology import HostTopology

SCHEMA_VERSION = '1.4'
SUPPORTED_MAJOR = 1

EVENT_TYPE = 'contention.host.report'
TOPIC = 'contention_telemetry'
#: Seconds of counters in a report by default: the agent's ``[agent]
#: interval``, and what the simulator's view of an epoch shows of it.
DEFAULT_INTERVAL_S = 10.0

_VERSION = re.compile(r'([0-9]+)\.([0-9]+)')

CPU_POLICIES = ('shared', 'dedicated', 'mixed')
MISS_LEVELS = ('L2', 'L3')

_NN = schema.non_negative


class InvalidReport(schema.InvalidData):
    """A report failed validation. ``path`` names the field, ``problem`` why."""


@dataclasses.dataclass(frozen=True)
class Counters:
    """Counter deltas over the interval; None = not measured."""

    instructions: Optional[int] = dataclasses.field(default=None,
                                                    metadata=_NN())
    cycles: Optional[int] = dataclasses.field(default=None, metadata=_NN())
    cache_references: Optional[int] = dataclasses.field(default=None,
                                                        metadata=_NN())
    cache_misses: Optional[int] = dataclasses.field(default=None,
                                                    metadata=_NN())
    #: CPU time the domain's vCPUs used.
    cpu_time_ns: Optional[int] = dataclasses.field(default=None,
                                                   metadata=_NN())
    #: Time the vCPUs waited for a host CPU (steal as the guest sees it).
    vcpu_delay_ns: Optional[int] = dataclasses.field(default=None,
                                                     metadata=_NN())
    #: resctrl memory-bandwidth monitoring: bytes read/written to DRAM.
    mbm_local_bytes: Optional[int] = dataclasses.field(default=None,
                                                       metadata=_NN())
    mbm_total_bytes: Optional[int] = dataclasses.field(default=None,
                                                       metadata=_NN())
    #: resctrl cache monitoring: LLC occupancy at the end of the interval
    #: (a gauge, not a delta).
    llc_occupancy_bytes: Optional[int] = dataclasses.field(default=None,
                                                           metadata=_NN())


@dataclasses.dataclass(frozen=True)
class Metrics:
    """Metrics derived from :class:`Counters`; None where an input is None."""

    ipc: Optional[float] = dataclasses.field(default=None, metadata=_NN())
    #: cache misses per 1000 instructions (Merlin's L3 MPKI).
    mpki: Optional[float] = dataclasses.field(default=None, metadata=_NN())
    #: Merlin's Memory Factor: misses / references.
    mf: Optional[float] = dataclasses.field(default=None, metadata=_NN())
    llc_misses_per_s: Optional[float] = dataclasses.field(default=None,
                                                          metadata=_NN())
    #: CPU used / CPU allocated (Merlin's CPU sensitivity input).
    cpu_util: Optional[float] = dataclasses.field(default=None,
                                                  metadata=_NN())
    mem_bw_local_bps: Optional[float] = dataclasses.field(default=None,
                                                          metadata=_NN())
    mem_bw_total_bps: Optional[float] = dataclasses.field(default=None,
                                                          metadata=_NN())
    #: Fraction of the instance's memory on nodes its vCPUs do not run on.
    remote_memory_ratio: Optional[float] = dataclasses.field(
        default=None, metadata=_NN())


@dataclasses.dataclass(frozen=True)
class InstanceRecord:
    """One instance (libvirt domain) on the host."""

    uuid: str
    name: str
    vcpus: int = dataclasses.field(metadata=dict(minimum=1))
    memory_mib: int = dataclasses.field(metadata=_NN())
    flavor: Optional[str] = None
    image_id: Optional[str] = None
    project_id: Optional[str] = None
    cpu_policy: str = dataclasses.field(
        default='shared', metadata=dict(choices=CPU_POLICIES))
    #: Host CPU each vCPU last ran on, indexed by vCPU number.
    vcpu_cpus: tuple[int, ...] = ()
    #: Host CPUs the vCPUs may run on (their affinity); empty = any.
    cpuset: tuple[int, ...] = ()
    #: Memory of the QEMU process per host NUMA node.
    memory_mib_per_node: dict[int, float] = dataclasses.field(
        default_factory=dict)
    #: CPU cap: the fraction of each vCPU the instance may use (CFS
    #: ``vcpu_quota / vcpu_period``); None = no cap, or unknown. Merlin's
    #: CPU sensitivity is ``cpu_util`` against it (section 3.4), and the
    #: quota phase (:mod:`contention.swap.quota`) raises it. Added in 1.1.
    cpu_quota: Optional[float] = dataclasses.field(default=None,
                                                   metadata=_NN())
    counters: Counters = dataclasses.field(default_factory=Counters)
    metrics: Metrics = dataclasses.field(default_factory=Metrics)
    #: Merlin state "<mpki level>/<mf level>", e.g. "high/low"; None when
    #: MPKI or MF is unavailable. See :mod:`contention.classify`.
    merlin_class: Optional[str] = None
    #: What happened to this instance's measurement this interval, e.g.
    #: "counter_reset:instructions", "first_sample", "vanished_mid_collection".
    notes: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class NodeOverhead:
    """Liu & Li's four overhead levels of a memory node and their sum."""

    llc: int = dataclasses.field(metadata=_NN())
    mc: int = dataclasses.field(metadata=_NN())
    ic: int = dataclasses.field(metadata=_NN())
    remote: int = dataclasses.field(metadata=_NN())

    @property
    def total(self):
        return self.llc + self.mc + self.ic + self.remote


@dataclasses.dataclass(frozen=True)
class NodeAggregate:
    """Per NUMA node sums over the instances whose vCPUs run there.

    An instance spanning nodes contributes to each in proportion to its
    vCPUs on that node.
    """

    node: int
    instances: int = dataclasses.field(metadata=_NN())
    vcpus: float = dataclasses.field(metadata=_NN())
    mpki_sum: Optional[float] = dataclasses.field(default=None,
                                                  metadata=_NN())
    llc_misses_per_s: Optional[float] = dataclasses.field(default=None,
                                                          metadata=_NN())
    #: Miss-weighted mean Memory Factor.
    mf: Optional[float] = dataclasses.field(default=None, metadata=_NN())
    mem_bw_bps: Optional[float] = dataclasses.field(default=None,
                                                    metadata=_NN())
    llc_occupancy_bytes: Optional[int] = dataclasses.field(default=None,
                                                           metadata=_NN())
    #: Memory of all instances on this node.
    memory_mib: float = dataclasses.field(default=0.0, metadata=_NN())
    overhead: Optional[NodeOverhead] = None
    #: Merlin's node trigger: summed MPKI over the threshold (default 100);
    #: None (unknown) when no instance on the node had an MPKI.
    mc_ic_pressure: Optional[bool] = None
    #: Instances per Merlin class on this node.
    classes: dict[str, int] = dataclasses.field(default_factory=dict,
                                                metadata=_NN())
    #: Since 1.3: the instances' LLC misses per kilo-cycle x busy vCPUs
    #: (MPKI x IPC x cpu_util x vCPUs here), summed: what contends for
    #: the cache, the memory controller and the interconnect, from
    #: counters alone (:func:`contention.aggregate.node_loads`). None
    #: when an instance here lacks its MPKI or IPC.
    miss_intensity: Optional[float] = dataclasses.field(default=None,
                                                        metadata=_NN())
    #: Since 1.3: busy vCPUs here (cpu_util x vCPUs, summed; an unknown
    #: cpu_util counts as busy).
    cpu_demand: Optional[float] = dataclasses.field(default=None,
                                                    metadata=_NN())


@dataclasses.dataclass(frozen=True)
class SourceStatus:
    """Whether a counter source could measure on this host, and why not."""

    name: str
    available: bool
    reason: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class HostReport:
    """One host, one interval."""

    host: str
    #: End of the interval, seconds since the epoch (UTC).
    timestamp: float = dataclasses.field(metadata=dict(minimum=0))
    interval_s: float = dataclasses.field(metadata=dict(minimum=0))
    topology: HostTopology
    version: str = SCHEMA_VERSION
    cache_miss_level: str = dataclasses.field(
        default='L3', metadata=dict(choices=MISS_LEVELS))
    sources: tuple[SourceStatus, ...] = ()
    nodes: tuple[NodeAggregate, ...] = ()
    instances: tuple[InstanceRecord, ...] = ()
    #: Host-level events of this interval, e.g. "libvirt_reconnected",
    #: "reports_dropped:3".
    events: tuple[str, ...] = ()
    #: Host CPUs Nova places instances on: its ``[compute]``
    #: ``cpu_shared_set`` and ``cpu_dedicated_set`` together (the agent's
    #: ``[agent] shared_cpu_set`` and ``dedicated_cpu_set``). Empty, as
    #: both of Nova's are when unset: every CPU of the topology. Added in
    #: 1.2.
    nova_cpus: tuple[int, ...] = ()

    def to_dict(self):
        return schema.dump(self)

    @classmethod
    def from_dict(cls, data):
        """Validate and load a report; raise InvalidReport naming the field."""
        if not isinstance(data, dict):
            raise InvalidReport('report', 'expected an object, got %s'
                                % type(data).__name__)
        _check_version(data.get('version', None))
        topology_data = data.get('topology')
        topology = _TOPOLOGIES.get(topology_data)
        try:
            report = schema.load(cls, data, 'report', preloaded=None if (
                topology is None) else {'topology': topology})
        except InvalidReport:
            raise
        except schema.InvalidData as exc:
            raise InvalidReport(exc.path, exc.problem) from None
        if topology is None:
            _check_topology(report.topology)
            _TOPOLOGIES.put(topology_data, report.topology)
        _check_consistency(report)
        return report

    def instance(self, uuid):
        for record in self.instances:
            if record.uuid == uuid:
                return record
        raise KeyError(uuid)


class _TopologyMemo:
    """Checked topologies by content, so an unchanged one is checked once.

    A host sends the same topology in every report, and hosts of one
    hardware model send the same one but for the host name; checking its
    hundreds of CPUs and caches each time was a quarter of the
    collector's validation work. A topology whose content (host name
    aside) is the same JSON as one already checked is that topology under
    the new name. The key is the JSON text itself (orjson's), which tells
    ``true`` from ``1`` and ``1.0`` from ``1`` (Python's ``==`` does not);
    orjson writes NaN and infinities as ``null``, so a hit must also equal,
    by ``==``, the data the key was made from, which NaN never does. The
    memo therefore never accepts what the full check would refuse.
    """

    #: Distinct hardware models remembered (a cloud has a handful).
    MAX = 64

    def __init__(self):
        self._known = {}
        self._lock = threading.Lock()

    @staticmethod
    def _nameless(data):
        if not isinstance(data, dict) or not isinstance(
                data.get('hostname'), str):
            return None, None
        nameless = dict(data, hostname='')
        try:
            return nameless, orjson.dumps(nameless)
        except TypeError:
            return None, None   # not plain JSON: the full check says why

    def get(self, data):
        nameless, key = self._nameless(data)
        known = None if key is None else self._known.get(key)
        if known is None or known[0] != nameless:
            return None
        return dataclasses.replace(known[1], hostname=data['hostname'])

    def put(self, data, topology):
        _nameless, key = self._nameless(data)
        if key is None:
            return
        with self._lock:
            if len(self._known) >= self.MAX:
                del self._known[next(iter(self._known))]
            # The data as the key spells it: the caller's dict may change.
            self._known[key] = (orjson.loads(key),
                                dataclasses.replace(topology, hostname=''))


_TOPOLOGIES = _TopologyMemo()


def _check_version(version):
    if not isinstance(version, str):
        raise InvalidReport('report.version', 'missing or not a string')
    # ASCII digits only: str.isdigit() also accepts '²' and '١'.
    match = _VERSION.fullmatch(version)
    if match is None:
        raise InvalidReport('report.version',
                            'malformed version %r' % version)
    if int(match.group(1)) != SUPPORTED_MAJOR:
        raise InvalidReport('report.version',
                            'unknown schema version %r (this reader knows '
                            '%d.x)' % (version, SUPPORTED_MAJOR))


def _check_consistency(report):
    if not report.host:
        raise InvalidReport('report.host', 'empty host name')
    if report.interval_s <= 0 or not math.isfinite(report.interval_s):
        raise InvalidReport('report.interval_s', 'must be positive')
    topo = report.topology
    node_ids = set(topo.node_ids)
    cpu_ids = frozenset(cpu.id for cpu in topo.cpus)
    outside = sorted(set(report.nova_cpus) - cpu_ids)
    if outside:
        raise InvalidReport('report.nova_cpus',
                            'CPU %d is not in the topology' % outside[0])
    seen = set()
    for i, record in enumerate(report.instances):
        path = 'report.instances[%d]' % i
        if record.uuid in seen:
            raise InvalidReport(path + '.uuid',
                                'instance %s listed twice' % record.uuid)
        seen.add(record.uuid)
        for field in ('vcpu_cpus', 'cpuset'):
            cpus = getattr(record, field)
            if cpu_ids.issuperset(cpus):
                continue
            cpu = next(c for c in cpus if c not in cpu_ids)
            raise InvalidReport('%s.%s' % (path, field),
                                'CPU %d is not in the topology' % cpu)
        if len(record.vcpu_cpus) > record.vcpus:
            raise InvalidReport(path + '.vcpu_cpus',
                                '%d entries for %d vCPUs'
                                % (len(record.vcpu_cpus), record.vcpus))
        for node, mib in record.memory_mib_per_node.items():
            if node not in node_ids:
                raise InvalidReport('%s.memory_mib_per_node[%r]'
                                    % (path, node),
                                    'NUMA node %d is not in the topology'
                                    % node)
            if mib < 0:
                raise InvalidReport('%s.memory_mib_per_node[%r]'
                                    % (path, node), 'negative memory')
    nodes_seen = set()
    for i, agg in enumerate(report.nodes):
        path = 'report.nodes[%d].node' % i
        if agg.node not in node_ids:
            raise InvalidReport(path, 'NUMA node %d is not in the topology'
                                % agg.node)
        if agg.node in nodes_seen:
            raise InvalidReport(path, 'node %d listed twice' % agg.node)
        nodes_seen.add(agg.node)


def _check_topology(topo):
    """The topology must be self-consistent: its parts refer to each other.

    Readers index ``caches`` by ``Cpu.l2``/``l3`` and look nodes and CPUs up
    by id, so a dangling reference would fail far from the report.
    """
    path = 'report.topology'
    node_ids = set()
    for i, node in enumerate(topo.nodes):
        if node.id in node_ids:
            raise InvalidReport('%s.nodes[%d].id' % (path, i),
                                'node %d listed twice' % node.id)
        node_ids.add(node.id)
    cpu_node = {}
    for i, cpu in enumerate(topo.cpus):
        cpath = '%s.cpus[%d]' % (path, i)
        if cpu.id in cpu_node:
            raise InvalidReport(cpath + '.id', 'CPU %d listed twice' % cpu.id)
        cpu_node[cpu.id] = cpu.node
        if cpu.node not in node_ids:
            raise InvalidReport(cpath + '.node', 'NUMA node %d is not in '
                                'the topology' % cpu.node)
        for level in (2, 3):
            index = getattr(cpu, 'l%d' % level)
            if index is not None and not (
                    0 <= index < len(topo.caches)
                    and topo.caches[index].level == level):
                raise InvalidReport('%s.l%d' % (cpath, level),
                                    'no L%d cache at index %d'
                                    % (level, index))
        for sibling in cpu.siblings:
            if not topo.has_cpu(sibling):
                raise InvalidReport(cpath + '.siblings', 'CPU %d is not in '
                                    'the topology' % sibling)
    for i, node in enumerate(topo.nodes):
        for cpu in node.cpus:
            if cpu_node.get(cpu) != node.id:
                raise InvalidReport('%s.nodes[%d].cpus' % (path, i),
                                    'CPU %d is not a CPU of node %d'
                                    % (cpu, node.id))
    for i, cache in enumerate(topo.caches):
        for cpu in cache.cpus:
            if cpu not in cpu_node:
                raise InvalidReport('%s.caches[%d].cpus' % (path, i),
                                    'CPU %d is not in the topology' % cpu)
    if len(topo.distances) != len(topo.nodes) or any(
            len(row) != len(topo.nodes) for row in topo.distances):
        raise InvalidReport(path + '.distances',
                            'must be a %dx%d matrix'
                            % (len(topo.nodes), len(topo.nodes)))

"""The cluster view from the agents' reports and what the cloud knows.

The agents measure (per-socket placement, LLC misses, MPKI, MF, Merlin
class); the cloud knows (hosts, their capacity and state, instances,
their sizes, lock and state, the audit's scope). Neither alone is
enough: :func:`view_from_reports` joins them into the
:class:`contention.cluster.ClusterView` the audit reads and decides, with
a reason for each, what the algorithms may not touch. An adapter supplies
only the :class:`Inventory` (Watcher from its compute model, a test or
the simulator from its own records).

* A host that is disabled or down, has no report fresher than
  ``freshness`` seconds, or whose report cannot be read, is in the view
  but disabled (never a source or a destination) with its reason; a bad
  stored value never raises.
* An instance the inventory marks not movable, or missing from its
  host's fresh report, is in the view (its load and size still count)
  but not movable, with its reason.
* An instance the agent reports but the inventory does not hold (one
  created after the inventory was taken) still counts towards its host's
  load.
* An instance's flavor is the inventory's, else the one its host's
  report gives (Watcher's compute model has none).

:func:`dominant_node` is the one vote for "the NUMA node an instance
runs on" (its vCPUs, else its memory); the store's history and the
status command use it too.
"""

import collections
import dataclasses
from typing import Optional

from contention import cluster
from contention.fast_init import fast_init

#: Categories (first word) of the skip reasons this module gives.
HOST_REASONS = ('disabled', 'down', 'no_telemetry', 'bad_report')
INSTANCE_REASONS = ('out_of_scope', 'locked', 'not_active', 'no_telemetry',
                    'unknown_to_nova')


@dataclasses.dataclass(frozen=True)
class HostInventory:
    """A compute host as the cloud knows it (capacity net of reserved)."""

    name: str
    vcpus_total: int
    memory_mib_total: int
    disk_gb_total: float = 0.0
    cpu_allocation_ratio: float = 1.0
    ram_allocation_ratio: float = 1.0
    disk_allocation_ratio: float = 1.0
    #: None when it may be used; else why not ("disabled: ...", "down:
    #: ...").
    unusable: Optional[str] = None


@fast_init
@dataclasses.dataclass(frozen=True)
class InstanceInventory:
    """An instance as the cloud knows it."""

    uuid: str
    host: str
    vcpus: int
    memory_mib: int
    disk_gb: float = 0.0
    flavor: Optional[str] = None
    #: hw:numa_nodes or dedicated CPUs in its flavor (Nova binds it).
    has_numa_topology: bool = False
    dedicated: bool = False
    priority: int = 0
    #: A latency service or not, as its flavor declares; None undeclared
    #: (:attr:`contention.cluster.InstanceView.latency`).
    latency: Optional[bool] = None
    #: None when it may move; else why not ("locked: ...").
    unmovable: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Inventory:
    hosts: tuple
    instances: tuple


@dataclasses.dataclass(frozen=True)
class BuiltView:
    view: cluster.ClusterView
    #: Instances in scope without fresh telemetry / instances in scope.
    missing_ratio: float
    missing: int
    in_scope: int
    #: {socket id: [cpu ids]} per host, for re-pin actions.
    socket_cpus: dict
    #: {socket id: (node ids)} per host.
    socket_nodes: dict


class TelemetryMissing(Exception):
    """Too much of the scope has no fresh telemetry to plan on."""


def check_telemetry(built, max_missing_ratio, who='the audit'):
    """Raise :class:`TelemetryMissing` if too much telemetry is missing.

    Proposing moves from a partial picture moves instances onto hosts
    whose load is unknown; the message says what to check.
    """
    if built.missing_ratio > max_missing_ratio:
        raise TelemetryMissing(
            '%s proposes nothing: %d of %d instances in scope (%.0f %%) '
            'have no fresh telemetry, more than max_missing_ratio %.0f %%; '
            'check that contention-agent runs on every compute host and '
            'contention-collector writes to the store'
            % (who, built.missing, built.in_scope,
               100 * built.missing_ratio, 100 * max_missing_ratio))


def node_of_cpu(topology):
    return {cpu.id: cpu.node for cpu in topology.cpus}


def busiest_node(vcpus, socket_of):
    """The node an instance mostly runs on, from its vCPUs on each node.

    ``vcpus`` maps a node id to the vCPUs (or the share of them) there;
    ``socket_of`` a node id to its socket. The socket holding most of the
    vCPUs is chosen first, then that socket's node holding most (ties: the
    lowest id, each time), so the node is always on the socket the
    instance is judged on, even when it spans sockets and the busiest
    single node is on the other one. The simulator's view uses this rule
    too.
    """
    per_socket = collections.defaultdict(float)
    for node, count in vcpus.items():
        if count > 0:
            per_socket[socket_of[node]] += count
    if not per_socket:
        return None
    socket = min(per_socket, key=lambda s: (-per_socket[s], s))
    return min((n for n, c in vcpus.items()
                if c > 0 and socket_of[n] == socket),
               key=lambda n: (-vcpus[n], n))


def dominant_node(record, topology, cpu_node=None):
    """The NUMA node an instance mostly runs on (vCPUs, else memory).

    :func:`busiest_node` of its vCPUs (CPUs the topology does not know
    are not counted), else the node holding most of its memory (ties: the
    lowest id), else None. ``cpu_node`` (:func:`node_of_cpu` of
    ``topology``) saves building it again for each instance of a report.
    """
    if cpu_node is None:
        cpu_node = node_of_cpu(topology)
    nodes = [cpu_node[cpu] for cpu in record.vcpu_cpus if cpu in cpu_node]
    if nodes and nodes.count(nodes[0]) == len(nodes):
        return nodes[0]              # one node: the common case, no vote
    if nodes:
        return busiest_node(collections.Counter(nodes),
                            {n.id: n.socket for n in topology.nodes})
    memory = record.memory_mib_per_node
    if memory:
        return min(memory, key=lambda n: (-memory[n], n))
    return None


def memory_node(record):
    """The NUMA node holding most of an instance's memory, or None."""
    memory = record.memory_mib_per_node if record is not None else None
    if not memory or not any(v > 0 for v in memory.values()):
        return None
    return min(memory, key=lambda n: (-memory[n], n))


_SOCKETS_CACHE = {}


def _sockets(topology, nova_cpus=()):
    """(SocketViews, {socket: cpus}, {socket: nodes}) Nova places on.

    Only the CPUs Nova places instances on (``nova_cpus``, empty for all)
    count, and a node with none of them is left out, as Nova leaves out
    what ``cpu_shared_set`` and ``cpu_dedicated_set`` do not hold. Hosts of
    one model share a few shapes, so results are cached by shape.
    """
    key = (tuple((n.id, n.socket, tuple(n.cpus), n.memory_mib,
                  n.memory_bandwidth_bps) for n in topology.nodes),
           tuple((c.level, tuple(c.cpus), c.size_kib)
                 for c in topology.caches), nova_cpus)
    cached = _SOCKETS_CACHE.get(key)
    if cached is None:
        if len(_SOCKETS_CACHE) > 1024:
            _SOCKETS_CACHE.clear()
        cached = _SOCKETS_CACHE[key] = _compute_sockets(topology, nova_cpus)
    return cached


def _compute_sockets(topology, nova_cpus):
    usable = frozenset(nova_cpus) or None
    nodes = collections.defaultdict(list)
    for node in topology.nodes:
        cpus = [c for c in node.cpus if usable is None or c in usable]
        if node.socket >= 0 and cpus:
            nodes[node.socket].append((node, cpus))
    core_of = {c.id: c.core for c in topology.cpus}
    top = max((c.level for c in topology.caches), default=None)
    llcs = [c for c in topology.caches if c.level == top]
    sockets = []
    cpus = {}
    node_ids = {}
    for socket_id in sorted(nodes):
        members = [n for n, _ in nodes[socket_id]]
        cpu_ids = sorted(c for _, node_cpus in nodes[socket_id]
                         for c in node_cpus)
        sockets.append(cluster.SocketView(
            id=socket_id, nodes=tuple(n.id for n in members),
            cpus=len(cpu_ids),
            memory_mib=int(sum(n.memory_mib for n in members)),
            cores=len({core_of.get(c, ('cpu', c)) for c in cpu_ids}),
            llc_kib=_llc_kib(llcs, cpu_ids),
            memory_bandwidth_bps=_memory_bandwidth(members)))
        cpus[socket_id] = cpu_ids
        node_ids[socket_id] = tuple(n.id for n in members)
    return tuple(sockets), cpus, node_ids


def _memory_bandwidth(nodes):
    """Summed memory bandwidth of ``nodes``, bytes/s (None: unknown)."""
    found = [n.memory_bandwidth_bps for n in nodes]
    if not found or any(b is None for b in found):
        return None
    return float(sum(found))


def _llc_kib(caches, cpu_ids):
    """KiB of the last-level caches serving ``cpu_ids`` (None: unknown)."""
    cpus = set(cpu_ids)
    serving = [c for c in caches if cpus.intersection(c.cpus)]
    if not serving or any(c.size_kib is None for c in serving):
        return None
    return int(sum(c.size_kib for c in serving))


@dataclasses.dataclass
class _Read:
    """What one host's report gives the view (empty if not fresh)."""

    fresh: bool = False
    sockets: tuple = ()
    socket_cpus: dict = dataclasses.field(default_factory=dict)
    socket_nodes: dict = dataclasses.field(default_factory=dict)
    #: {uuid: (record, socket, node)}
    records: dict = dataclasses.field(default_factory=dict)
    cpu_vendor: Optional[str] = None
    cpu_model: Optional[str] = None
    #: Start of the report's interval (its timestamp is the end).
    measured_since: Optional[float] = None


def _read(report):
    """The usable content of a fresh report; raises on a bad value."""
    topology = report.topology
    cpu_node = node_of_cpu(topology)
    node_socket = {n.id: n.socket for n in topology.nodes if n.socket >= 0}
    sockets, socket_cpus, socket_nodes = _sockets(topology,
                                                  report.nova_cpus)
    records = {}
    for record in report.instances:
        node = dominant_node(record, topology, cpu_node)
        socket = node_socket.get(node) if node is not None else None
        llc = record.metrics.llc_misses_per_s
        if llc is not None and not float(llc) >= 0:
            raise ValueError('instance %s: LLC misses/s %r is not a number '
                             '>= 0' % (record.uuid, llc))
        records[record.uuid] = (record, socket, node)
    return _Read(True, sockets, socket_cpus, socket_nodes, records,
                 topology.cpu_vendor, topology.cpu_model or None,
                 float(report.timestamp) - float(report.interval_s))


def _host_state(host, report, now, freshness_s):
    """(reason or None, age, _Read) of one host.

    A fresh report is read even for a disabled or down host: its
    instances' telemetry is known (they count as measured), though the
    host is never a source or a destination.
    """
    age = None
    if report is not None:
        try:
            age = max(0.0, now - float(report.timestamp))
        except (TypeError, ValueError):
            return ('bad_report: its timestamp %r is not a number'
                    % (report.timestamp,)), None, _Read()
    if report is None:
        reason = 'no_telemetry: no report from this host\'s agent'
    elif age > freshness_s:
        reason = ('no_telemetry: the latest report is %.0f s old, more '
                  'than freshness %.0f s' % (age, freshness_s))
    else:
        try:
            read = _read(report)
        except Exception as exc:  # any stored value: skip the host
            return ('bad_report: its latest report cannot be read (%s: %s)'
                    % (type(exc).__name__, exc)), age, _Read()
        return host.unusable, age, read
    return host.unusable or reason, age, _Read()


def _metrics(record):
    return record.metrics if record is not None else None


def view_from_reports(reports, inventory, now, freshness):
    """A :class:`BuiltView` of ``inventory`` with ``reports`` joined in.

    ``reports`` is ``{host name: HostReport}`` (the store's latest).
    Every host of the inventory is in the view, in name order.
    """
    hosts = []
    instances = []
    socket_cpus = {}
    socket_nodes = {}
    missing = in_scope = 0
    by_host = collections.defaultdict(list)
    for inst in inventory.instances:
        by_host[inst.host].append(inst)
    for host in sorted(inventory.hosts, key=lambda h: h.name):
        name = host.name
        reason, age, read = _host_state(host, reports.get(name), now,
                                        freshness)
        fresh = read.fresh
        if fresh:
            socket_cpus[name] = read.socket_cpus
            socket_nodes[name] = read.socket_nodes
        hosts.append(cluster.HostView(
            name=name, sockets=read.sockets,
            vcpus_total=max(0, host.vcpus_total),
            memory_mib_total=max(0, host.memory_mib_total),
            disk_gb_total=max(0, host.disk_gb_total),
            cpu_allocation_ratio=float(host.cpu_allocation_ratio or 1.0),
            ram_allocation_ratio=float(host.ram_allocation_ratio or 1.0),
            disk_allocation_ratio=float(host.disk_allocation_ratio or 1.0),
            enabled=reason is None, skip_reason=reason,
            telemetry_age_s=age, measured_since=read.measured_since,
            cpu_vendor=read.cpu_vendor, cpu_model=read.cpu_model))
        seen = set()
        for inst in by_host.get(name, ()):
            seen.add(inst.uuid)
            record, socket, node = read.records.get(inst.uuid,
                                                    (None, None, None))
            metrics = _metrics(record)
            in_scope += 1
            if record is None or metrics.llc_misses_per_s is None:
                missing += 1
            skip = inst.unmovable
            if skip is None and not fresh:
                skip = 'no_telemetry: no fresh report from its host'
            elif skip is None and record is None:
                skip = 'no_telemetry: not in its host\'s latest report'
            elif skip is None and metrics.llc_misses_per_s is None:
                skip = ('no_telemetry: its host\'s report has no LLC-miss '
                        'rate for it')
            instances.append(_instance(
                inst.uuid, name, inst.vcpus, inst.memory_mib, record,
                socket, node, disk_gb=float(inst.disk_gb),
                flavor=_flavor(inst, record),
                has_numa_topology=inst.has_numa_topology or inst.dedicated,
                cpu_policy=('dedicated' if inst.dedicated else
                            record.cpu_policy if record is not None
                            else 'shared'),
                priority=inst.priority, latency=inst.latency, skip=skip))
        for uuid, (record, socket, node) in read.records.items():
            if uuid in seen:
                continue
            instances.append(_instance(
                uuid, name, record.vcpus, record.memory_mib, record, socket,
                node, flavor=record.flavor,
                skip='unknown_to_nova: reported by the agent, not in '
                     'the cloud\'s inventory'))
    view = cluster.ClusterView(tuple(hosts), tuple(instances), now=now)
    return BuiltView(view=view,
                     missing_ratio=(missing / in_scope) if in_scope else 0.0,
                     missing=missing, in_scope=in_scope,
                     socket_cpus=socket_cpus, socket_nodes=socket_nodes)


def _flavor(inst, record):
    """The inventory's flavor of ``inst``, else its report's, else None.

    Watcher's instance element has no flavor; the agent reads it from the
    domain's metadata. Without it, same-image instances of one size look
    like one workload (:func:`contention.swap.measure.alike`).
    """
    if inst.flavor is not None:
        return inst.flavor
    return record.flavor if record is not None else None


def _instance(uuid, host, vcpus, memory_mib, record, socket, node, skip,
              **known):
    metrics = _metrics(record)
    return cluster.InstanceView(
        uuid=uuid, host=host, vcpus=int(vcpus), memory_mib=int(memory_mib),
        socket=socket, node=node,
        llc_misses_per_s=metrics.llc_misses_per_s if metrics else None,
        mpki=metrics.mpki if metrics else None,
        mf=metrics.mf if metrics else None,
        ipc=metrics.ipc if metrics else None,
        cpu_util=metrics.cpu_util if metrics else None,
        merlin_class=record.merlin_class if record else None,
        image_id=record.image_id if record else None,
        movable=skip is None, skip_reason=skip,
        cpu_quota=record.cpu_quota if record else None,
        memory_node=memory_node(record),
        remote_memory_ratio=(metrics.remote_memory_ratio if metrics
                             else None),
        **known)

"""Build the core's ClusterView from Watcher's compute model and the store.

Watcher's model knows what Nova knows (hosts, their capacity and state,
instances, their flavors, lock and state, the audit scope); the telemetry
store knows what the agents measured (per-socket placement, LLC misses,
MPKI, MF, Merlin class). Neither alone is enough: this joins them and
decides, with a reason for each, what the algorithms may not touch.

* A host out of the audit scope is absent from the model and so from the
  view. A host that is disabled or down, or has no report fresher than
  ``freshness`` seconds, is in the view but disabled (never a source or a
  destination) with its reason.
* An instance that is locked, not ACTIVE, excluded by the audit scope, or
  missing from its host's fresh report is in the view (its load and size
  still count) but not movable, with its reason.
* An instance the agent reports but Nova's model does not hold (scope
  rules by project or metadata remove nothing, but an instance created
  after the model was built does) still counts towards its host's load.
"""

import collections
import dataclasses

from contention import cluster

#: Categories (first word) of the skip reasons this module gives.
HOST_REASONS = ('disabled', 'down', 'no_telemetry')
INSTANCE_REASONS = ('out_of_scope', 'locked', 'not_active', 'no_telemetry',
                    'unknown_to_nova')


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


_SOCKETS_CACHE = {}


def _sockets(topology):
    """(SocketViews, {socket: cpus}, {socket: nodes}) of a topology.

    Hosts of one model share a few shapes, so results are cached by shape.
    """
    key = tuple((n.id, n.socket, n.cpus, n.memory_mib)
                for n in topology.nodes)
    cached = _SOCKETS_CACHE.get(key)
    if cached is None:
        if len(_SOCKETS_CACHE) > 1024:
            _SOCKETS_CACHE.clear()
        cached = _SOCKETS_CACHE[key] = _compute_sockets(topology)
    return cached


def _compute_sockets(topology):
    nodes = collections.defaultdict(list)
    for node in topology.nodes:
        if node.socket >= 0:
            nodes[node.socket].append(node)
    sockets = []
    cpus = {}
    node_ids = {}
    for socket_id in sorted(nodes):
        members = nodes[socket_id]
        cpu_ids = sorted(c for n in members for c in n.cpus)
        sockets.append(cluster.SocketView(
            id=socket_id, nodes=tuple(n.id for n in members),
            cpus=len(cpu_ids),
            memory_mib=int(sum(n.memory_mib for n in members))))
        cpus[socket_id] = cpu_ids
        node_ids[socket_id] = tuple(n.id for n in members)
    return tuple(sockets), cpus, node_ids


def _socket_of(record, cpu_node, node_socket):
    """(socket, node) an instance mostly runs on; (None, None) if unknown.

    The same vote as :func:`contention.store.api.dominant_node` (vCPUs,
    else memory), on maps computed once per host.
    """
    votes = {}
    for cpu in record.vcpu_cpus:
        node = cpu_node.get(cpu)
        if node is not None:
            votes[node] = votes.get(node, 0) + 1
    if votes:
        node = min(votes, key=lambda n: (-votes[n], n))
    elif record.memory_mib_per_node:
        memory = record.memory_mib_per_node
        node = min(memory, key=lambda n: (-memory[n], n))
    else:
        return None, None
    return node_socket.get(node), node


def _memory_node(record):
    """The NUMA node holding most of an instance's memory, or None."""
    memory = record.memory_mib_per_node if record is not None else None
    if not memory or not any(v > 0 for v in memory.values()):
        return None
    return min(memory, key=lambda n: (-memory[n], n))


def _numa_bound(extra_specs):
    extra_specs = extra_specs or {}
    return ('hw:numa_nodes' in extra_specs
            or extra_specs.get('hw:cpu_policy') == 'dedicated')


def _attr(obj, name, default):
    """A model element's field, or ``default`` when it was never set."""
    try:
        value = getattr(obj, name)
    except NotImplementedError:  # oslo.versionedobjects: field not set
        return default
    return default if value is None else value


def _cpu_policy(extra_specs, record):
    if extra_specs.get('hw:cpu_policy') == 'dedicated':
        return 'dedicated'
    return record.cpu_policy if record is not None else 'shared'


def _priority(metadata):
    try:
        return int((metadata or {}).get('contention_priority', 0))
    except (TypeError, ValueError):
        return 0


def build_view(model, reports, now, freshness_s, last_moved=None):
    """A :class:`BuiltView` of the scoped compute model.

    ``reports`` is ``{host name: HostReport}`` (the store's latest);
    ``last_moved`` is ``{instance uuid: seconds since the epoch}``.
    """
    last_moved = last_moved or {}
    hosts = []
    instances = []
    socket_cpus = {}
    socket_nodes = {}
    missing = in_scope = 0
    nodes = sorted(model.get_all_compute_nodes().values(),
                   key=lambda n: n.hostname)
    for node in nodes:
        name = node.hostname
        report = reports.get(name)
        age = None if report is None else max(0.0, now - report.timestamp)
        fresh = report is not None and age <= freshness_s
        reason = None
        if node.status != 'enabled':
            why = _attr(node, 'disabled_reason', None)
            reason = 'disabled: the compute service is disabled%s' % (
                ' (%s)' % why if why else '')
        elif node.state != 'up':
            reason = 'down: nova-compute is %s' % node.state
        elif report is None:
            reason = 'no_telemetry: no report from this host\'s agent'
        elif not fresh:
            reason = ('no_telemetry: the latest report is %.0f s old, more '
                      'than freshness %.0f s' % (age, freshness_s))
        sockets = ()
        records = {}
        cpu_node = node_socket = {}
        if fresh:
            topology = report.topology
            cpu_node = {c.id: c.node for c in topology.cpus}
            node_socket = {n.id: n.socket for n in topology.nodes
                           if n.socket >= 0}
            sockets, socket_cpus[name], socket_nodes[name] = _sockets(
                topology)
            records = {r.uuid: r for r in report.instances}
        hosts.append(cluster.HostView(
            name=name, sockets=sockets,
            vcpus_total=max(0, _attr(node, 'vcpus', 0)
                            - _attr(node, 'vcpu_reserved', 0)),
            memory_mib_total=max(0, _attr(node, 'memory', 0)
                                 - _attr(node, 'memory_mb_reserved', 0)),
            disk_gb_total=max(0, _attr(node, 'disk', 0)
                              - _attr(node, 'disk_gb_reserved', 0)),
            cpu_allocation_ratio=float(_attr(node, 'vcpu_ratio', 1.0)
                                       or 1.0),
            ram_allocation_ratio=float(_attr(node, 'memory_ratio', 1.0)
                                       or 1.0),
            disk_allocation_ratio=float(_attr(node, 'disk_ratio', 1.0)
                                        or 1.0),
            enabled=reason is None, skip_reason=reason,
            telemetry_age_s=age))
        seen = set()
        for inst in model.get_node_instances(node):
            seen.add(inst.uuid)
            record = records.get(inst.uuid)
            in_scope += 1
            metrics = record.metrics if record is not None else None
            if record is None or metrics.llc_misses_per_s is None:
                missing += 1
            skip = None
            if _attr(inst, 'watcher_exclude', False):
                skip = 'out_of_scope: excluded by the audit scope'
            elif _attr(inst, 'locked', False):
                skip = 'locked: the instance is locked in Nova'
            elif _attr(inst, 'state', 'active') != 'active':
                skip = 'not_active: the instance is %s' % inst.state
            elif not fresh:
                skip = 'no_telemetry: no fresh report from its host'
            elif record is None:
                skip = 'no_telemetry: not in its host\'s latest report'
            elif metrics.llc_misses_per_s is None:
                skip = ('no_telemetry: its host\'s report has no LLC-miss '
                        'rate for it')
            socket = node_id = None
            if record is not None:
                socket, node_id = _socket_of(record, cpu_node, node_socket)
            extra_specs = _attr(inst, 'flavor_extra_specs', {})
            numa = _numa_bound(extra_specs)
            instances.append(cluster.InstanceView(
                uuid=inst.uuid, host=name, vcpus=int(_attr(inst, 'vcpus', 0)),
                memory_mib=int(_attr(inst, 'memory', 0)),
                disk_gb=float(_attr(inst, 'disk', 0)),
                socket=socket, node=node_id,
                llc_misses_per_s=metrics.llc_misses_per_s if metrics
                else None,
                mpki=metrics.mpki if metrics else None,
                mf=metrics.mf if metrics else None,
                ipc=metrics.ipc if metrics else None,
                cpu_util=metrics.cpu_util if metrics else None,
                merlin_class=record.merlin_class if record else None,
                image_id=record.image_id if record else None,
                has_numa_topology=numa,
                cpu_policy=_cpu_policy(extra_specs, record),
                priority=_priority(_attr(inst, 'metadata', {})),
                movable=skip is None, skip_reason=skip,
                last_moved_at=last_moved.get(inst.uuid),
                cpu_quota=record.cpu_quota if record else None,
                memory_node=_memory_node(record),
                remote_memory_ratio=metrics.remote_memory_ratio if metrics
                else None))
        for uuid, record in records.items():
            if uuid in seen:
                continue
            socket, node_id = _socket_of(record, cpu_node, node_socket)
            metrics = record.metrics
            instances.append(cluster.InstanceView(
                uuid=uuid, host=name, vcpus=record.vcpus,
                memory_mib=record.memory_mib, socket=socket, node=node_id,
                llc_misses_per_s=metrics.llc_misses_per_s, mpki=metrics.mpki,
                mf=metrics.mf, ipc=metrics.ipc, cpu_util=metrics.cpu_util,
                merlin_class=record.merlin_class, image_id=record.image_id,
                movable=False,
                skip_reason='unknown_to_nova: reported by the agent, not '
                            'in Watcher\'s compute model',
                last_moved_at=last_moved.get(uuid),
                cpu_quota=record.cpu_quota,
                memory_node=_memory_node(record),
                remote_memory_ratio=metrics.remote_memory_ratio))
    view = cluster.ClusterView(tuple(hosts), tuple(instances), now=now)
    return BuiltView(view=view,
                     missing_ratio=(missing / in_scope) if in_scope else 0.0,
                     missing=missing, in_scope=in_scope,
                     socket_cpus=socket_cpus, socket_nodes=socket_nodes)

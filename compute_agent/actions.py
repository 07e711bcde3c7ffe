"""The local reconfigurations the agent performs on request.

These are the cheapest actions of Merlin's cost ranking (section 4.3): a
CPU cap (``set_cpu_quota``) and a vCPU move within the host
(``repin_instance``, optionally moving the memory with numatune). They
change the running domain only (``VIR_DOMAIN_AFFECT_CURRENT`` on a running
domain): the persistent definition stays Nova's, so a hard reboot or a
migration returns the instance to Nova's placement, as Nova expects.

Every action:

* acts only on a domain of this host (looked up by uuid);
* refuses instances whose CPUs Nova pins (``hw:cpu_policy`` dedicated or
  mixed), since moving them would break Nova's accounting;
* keeps the target inside the configured shared CPU set;
* validates each argument and raises :class:`ActionError` naming it;
* is idempotent: asking for the current state changes nothing and says so.

:class:`LocalActions` applies them through libvirt; :class:`EmulatedActions`
to the host a ``sim`` or ``emulated`` source plays, with the same checks.
"""

import uuid as uuid_mod

import libvirt

from compute_agent import domain_xml
from compute_agent import libvirt_connection
from contention import cluster
from contention import topology_parse


#: Largest CFS quota libvirt accepts (``vcpu_quota``).
MAX_QUOTA_US = 17592186044415


class ActionError(Exception):
    """A local action was refused or failed; the message says why."""


def _check_uuid(value):
    try:
        return str(uuid_mod.UUID(str(value)))
    except ValueError:
        raise ActionError('instance_uuid: %s is not a uuid'
                          % _clip(repr(value))) from None


def _cpu_list(value, name, limit):
    """The CPUs of ``value``, refused unless each is below ``limit``.

    The bound is checked before a range is expanded, so a caller's
    "0-10000000" costs no memory, and the refusal stays short.
    """
    if isinstance(value, str):
        try:
            return frozenset(topology_parse.parse_cpulist(value, name,
                                                          limit=limit))
        except topology_parse.TopologyError as exc:
            raise ActionError(str(exc)) from None
    if isinstance(value, (list, tuple)) and all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0
            for c in value):
        beyond = [c for c in value if c >= limit]
        if beyond:
            raise ActionError('%s: CPU %d is beyond this host\'s CPUs '
                              '(0-%d)' % (name, max(beyond), limit - 1))
        return frozenset(value)
    raise ActionError('%s: expected a CPU list like "0-3,8" or a list of '
                      'CPU numbers, got %s' % (name, _clip(repr(value))))


def _clip(text, limit=80):
    return text if len(text) <= limit else text[:limit] + '...'


def _format(cpus):
    return ','.join(str(c) for c in sorted(cpus))


def allowed_cpus(topology, online, shared, dedicated):
    """CPUs a target may use: the shared set, online, known to the host.

    Without a configured shared set, every CPU of the topology outside
    the dedicated set.
    """
    if shared is not None:
        allowed = shared
    else:
        allowed = frozenset(c.id for c in topology.cpus)
        if dedicated is not None:
            allowed = allowed - dedicated
    return allowed & online


def target_cpus(host, topology, allowed, node, cpus):
    """The CPUs a re-pin to ``node`` or ``cpus`` means, checked.

    :raises ActionError: naming the argument that cannot be honoured.
    """
    if (node is None) == (cpus is None):
        raise ActionError('give exactly one of node and cpus')
    if node is not None:
        if isinstance(node, bool) or not isinstance(node, int):
            raise ActionError('node: expected a NUMA node number, got %s'
                              % _clip(repr(node)))
        if node not in topology.node_ids:
            raise ActionError('node: host %s has no NUMA node %d (it has '
                              '%s)' % (host, node, list(topology.node_ids)))
        target = frozenset(topology.node(node).cpus) & allowed
        if not target:
            raise ActionError('node: NUMA node %d has no CPU in the '
                              'shared, online CPU set %s'
                              % (node, _format(allowed)))
        return target
    target = _cpu_list(cpus, 'cpus', max(c.id for c in topology.cpus) + 1)
    if not target:
        raise ActionError('cpus: empty CPU set')
    unknown = [c for c in target if not topology.has_cpu(c)]
    if unknown:
        raise ActionError('cpus: host %s has no CPU %s'
                          % (host, _format(unknown)))
    outside = target - allowed
    if outside:
        raise ActionError('cpus: CPU(s) %s are outside the shared, '
                          'online CPU set %s'
                          % (_format(outside), _format(allowed)))
    return target


def check_move_memory(move_memory):
    if not isinstance(move_memory, bool):
        raise ActionError('move_memory: expected true or false, got %r'
                          % (move_memory,))
    return move_memory


def check_quota(quota_us):
    """``quota_us`` if it is -1 (no cap) or a CFS quota libvirt accepts."""
    if (isinstance(quota_us, bool) or not isinstance(quota_us, int)
            or not (quota_us == -1 or 1000 <= quota_us <= MAX_QUOTA_US)):
        raise ActionError('quota_us: expected -1 (no cap) or an integer '
                          'from 1000 to %d microseconds, got %s'
                          % (MAX_QUOTA_US, _clip(repr(quota_us))))
    return quota_us


class _HostActions(object):
    """What both kinds of local actions know of the host.

    :param topology: callable returning the current HostTopology.
    """

    def __init__(self, host, topology, shared_cpus=None, dedicated_cpus=None,
                 cpu_period_us=100000):
        self.host = host
        self._topology = topology
        self._shared = shared_cpus
        self._dedicated = dedicated_cpus
        self._period = cpu_period_us

    def _current_topology(self):
        topology = self._topology()
        if topology is None:
            raise ActionError('host %s: the agent has not read the host '
                              'topology yet (is libvirt reachable?); retry '
                              'after its first collection' % self.host)
        return topology


class LocalActions(_HostActions):
    """Validates and applies local actions through a libvirt connection.

    :param connection: a :class:`compute_agent.libvirt_connection.
        LibvirtConnection` (or anything with ``get()``).
    """

    def __init__(self, host, connection, topology, **kwargs):
        super().__init__(host, topology, **kwargs)
        self._connection = connection

    def _with_domain(self, instance_uuid, what, act):
        """``act(conn, dom, info)`` on the instance's running domain.

        A libvirt error that means the connection is gone (libvirtd
        restarted: "Broken pipe", then "client socket is closed") drops
        it through :meth:`LibvirtConnection.check_error`, the same logic
        the collection loop uses, and the action is tried once more on a
        new connection: every action is idempotent, so a second try after
        a partial first one is safe.
        """
        for attempt in (1, 2):
            try:
                conn = self._connection.get()
            except libvirt_connection.Disconnected as exc:
                raise ActionError(str(exc)) from None
            try:
                dom, info = self._domain(conn, instance_uuid)
                return act(conn, dom, info)
            except libvirt.libvirtError as exc:
                if self._connection.check_error(exc) and attempt == 1:
                    continue
                raise self._libvirt_failed(instance_uuid, what,
                                           exc) from None

    def _domain(self, conn, instance_uuid):
        try:
            dom = conn.lookupByUUIDString(instance_uuid)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                raise ActionError('instance %s is not on host %s'
                                  % (instance_uuid, self.host)) from None
            raise
        if not dom.isActive():
            raise ActionError('instance %s is not running on host %s'
                              % (instance_uuid, self.host))
        # Nova's pinning is in the persistent definition; the live XML
        # also carries this agent's earlier live re-pinning, which would
        # make a shared instance pinned to one CPU look dedicated.
        xml = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
        try:
            info = domain_xml.parse(xml)
        except domain_xml.DomainXMLError as exc:
            raise ActionError('instance %s: %s' % (instance_uuid,
                                                   exc)) from None
        policy = domain_xml.cpu_policy(info, self._dedicated)
        if policy != 'shared':
            raise ActionError('instance %s has hw:cpu_policy %s: its CPUs '
                              'are Nova\'s to place, not the agent\'s'
                              % (instance_uuid, policy))
        if info.nova_name is None:
            raise ActionError('domain %s on host %s is not a Nova instance '
                              '(no nova:instance metadata): the agent acts '
                              'on Nova instances only'
                              % (instance_uuid, self.host))
        return dom, info

    def repin_instance(self, instance_uuid, node=None, cpus=None,
                       move_memory=False):
        """Move all vCPUs of the instance to a node's shared CPUs or ``cpus``.

        With ``move_memory`` its memory is also bound to the nodes of those
        CPUs (numatune nodeset). Returns what now holds.
        """
        instance_uuid = _check_uuid(instance_uuid)
        check_move_memory(move_memory)
        topology = self._current_topology()

        def repin(conn, dom, info):
            maplen, online_map, _ = conn.getCPUMap()
            online = frozenset(i for i, on in enumerate(online_map) if on)
            allowed = allowed_cpus(topology, online, self._shared,
                                   self._dedicated)
            target = target_cpus(self.host, topology, allowed, node, cpus)
            cpumap = tuple(i in target for i in range(maplen))
            nodes = sorted({topology.node_of_cpu(c) for c in target})
            changed = False
            # Memory first, so that a refusal leaves the vCPUs where they
            # are too.
            if move_memory:
                changed = self._bind_memory(instance_uuid, dom, info, nodes)
            _, current = dom.vcpus()
            for vcpu, have in enumerate(current):
                have_set = frozenset(i for i, on in enumerate(have) if on)
                if have_set != target:
                    dom.pinVcpu(vcpu, cpumap)
                    changed = True
            return {'instance_uuid': instance_uuid, 'host': self.host,
                    'cpus': sorted(target),
                    'memory_nodes': nodes if move_memory else None,
                    'changed': changed}

        return self._with_domain(instance_uuid, 'repin', repin)

    def _bind_memory(self, instance_uuid, dom, info, nodes):
        """Bind the running domain's memory to ``nodes`` (numatune).

        libvirt (9.0 at least) changes the nodeset of a running domain
        only in ``restrictive`` mode, the one mode where QEMU's memory is
        bound by the cgroup alone; in ``strict`` mode, which Nova writes
        for every instance with a NUMA topology, QEMU bound it at start
        and libvirt refuses ("change of nodeset for running domain
        requires restrictive numa mode"). Such a domain is refused here,
        before anything changes, with what to do instead; a domain without
        ``<numatune>`` (no NUMA topology in its flavor) can move.
        """
        if info.numa_mode is not None and info.numa_mode != 'restrictive':
            raise ActionError(
                'move_memory: instance %s has numatune mode %s, and libvirt '
                'changes the memory nodes of a running domain only in '
                'restrictive mode; repin its vCPUs without move_memory, or '
                'migrate it to move its memory' % (instance_uuid,
                                                   info.numa_mode))
        params = dom.numaParameters(libvirt.VIR_DOMAIN_AFFECT_LIVE)
        current_nodes = topology_parse.parse_cpulist(
            params.get('numa_nodeset') or '')
        if sorted(current_nodes) == nodes:
            return False
        dom.setNumaParameters({'numa_nodeset': _format(nodes)},
                              libvirt.VIR_DOMAIN_AFFECT_LIVE)
        return True

    def _libvirt_failed(self, instance_uuid, what, exc):
        if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
            return ActionError('instance %s vanished from host %s'
                               % (instance_uuid, self.host))
        return ActionError('libvirt cannot %s instance %s: %s'
                           % (what, instance_uuid,
                              exc.get_error_message()))

    def set_cpu_quota(self, instance_uuid, quota_us):
        """Cap each vCPU at ``quota_us`` per ``cpu_period_us`` (CFS).

        ``quota_us = -1`` lifts the cap. Returns what now holds.
        """
        instance_uuid = _check_uuid(instance_uuid)
        check_quota(quota_us)
        flags = libvirt.VIR_DOMAIN_AFFECT_LIVE

        def set_quota(conn, dom, info):
            current = dom.schedulerParametersFlags(flags)
            wanted = {'vcpu_quota': quota_us, 'vcpu_period': self._period}
            changed = any(current.get(k) != v for k, v in wanted.items())
            if changed:
                dom.setSchedulerParametersFlags(wanted, flags)
            return {'instance_uuid': instance_uuid, 'host': self.host,
                    'quota_us': quota_us, 'period_us': self._period,
                    'changed': changed}

        return self._with_domain(instance_uuid, 'set the CPU quota of',
                                 set_quota)


class EmulatedActions(_HostActions):
    """The same local actions on a host a counter source emulates.

    With ``[agent] sources`` ``sim`` or ``emulated`` there is no hypervisor
    to re-pin on: the source *is* the host (a simulator playing its
    instances), so a re-pin or a CPU cap changes the emulated placement,
    and the next reports show it, as they would on a real host. The
    arguments are checked exactly as :class:`LocalActions` checks them.

    The emulated host places vCPUs by socket, as the simulator does: a
    re-pin to a node or to CPUs moves the instance to the socket of those
    CPUs, spread over the nodes its flavor takes there (exact on hosts
    with one node per socket). The answer says where it now runs.

    :param source: the emulating source (``source.emulates_host``).
    """

    def __init__(self, host, source, topology, **kwargs):
        super().__init__(host, topology, **kwargs)
        self._source = source

    def _act(self, action):
        try:
            return self._source.act(action)
        except ValueError as exc:
            raise ActionError(str(exc)) from None

    def repin_instance(self, instance_uuid, node=None, cpus=None,
                       move_memory=False):
        instance_uuid = _check_uuid(instance_uuid)
        check_move_memory(move_memory)
        topology = self._current_topology()
        online = frozenset(c.id for c in topology.cpus)
        allowed = allowed_cpus(topology, online, self._shared,
                               self._dedicated)
        target = target_cpus(self.host, topology, allowed, node, cpus)
        socket = topology.node(topology.node_of_cpu(min(target))).socket
        held = self._act(cluster.Repin(instance_uuid, self.host, socket,
                                       move_memory=move_memory))
        now = frozenset(c for n in held['vcpu_nodes']
                        for c in topology.node(n).cpus) & allowed
        return {'instance_uuid': instance_uuid, 'host': self.host,
                'cpus': sorted(now),
                'memory_nodes': held['memory_nodes'] if move_memory
                else None,
                'changed': held['changed']}

    def set_cpu_quota(self, instance_uuid, quota_us):
        instance_uuid = _check_uuid(instance_uuid)
        check_quota(quota_us)
        fraction = (1.0 if quota_us == -1
                    else min(1.0, quota_us / float(self._period)))
        held = self._act(cluster.CpuQuota(instance_uuid, self.host,
                                          fraction))
        return {'instance_uuid': instance_uuid, 'host': self.host,
                'quota_us': quota_us, 'period_us': self._period,
                'changed': held['changed']}

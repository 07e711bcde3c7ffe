"""The cluster as the algorithms see it, and the actions they propose.

The swap algorithms, Merlin's arbitration, the placement weigher and the
simulator's policies all read a :class:`ClusterView` and return
:class:`Plan` s. Adapters build the view from wherever the data lives (the
telemetry store plus Watcher's compute model, Nova's HostStates, or the
simulator's state) and turn plans back into Watcher actions or simulator
moves. Nothing here knows which.

All values are plain and immutable. What an action does to a view is
defined once, by :class:`contention.swap.State` (:func:`contention.swap.apply`
for the view after a list of actions).
"""

import dataclasses
from typing import Optional, Union

from contention.fast_init import fast_init


@fast_init
@dataclasses.dataclass(frozen=True)
class InstanceView:
    """An instance with what the algorithms need to know about it."""

    uuid: str
    host: str
    vcpus: int
    memory_mib: int
    disk_gb: float = 0.0
    #: Socket its vCPUs run on (None if spread or unknown).
    socket: Optional[int] = None
    #: NUMA node its vCPUs run on and where most of its memory is.
    node: Optional[int] = None
    llc_misses_per_s: Optional[float] = None
    mpki: Optional[float] = None
    mf: Optional[float] = None
    ipc: Optional[float] = None
    cpu_util: Optional[float] = None
    llc_occupancy_bytes: Optional[float] = None
    merlin_class: Optional[str] = None
    image_id: Optional[str] = None
    flavor: Optional[str] = None
    #: Nova NUMA topology (hw:numa_nodes) or dedicated CPUs: the instance
    #: must fit one NUMA cell of its destination, and the agent must not
    #: re-pin it.
    has_numa_topology: bool = False
    cpu_policy: str = 'shared'
    #: Lower values are moved first when the choice is otherwise even.
    priority: int = 0
    #: False for instances the algorithms must leave alone (locked, not
    #: ACTIVE, excluded by scope, no fresh telemetry). ``skip_reason`` says
    #: why.
    movable: bool = True
    skip_reason: Optional[str] = None
    #: When it was last moved (seconds since the epoch), for the cool-down;
    #: the audit also reads its move log
    #: (:func:`contention.swap.audit.with_cooldown`).
    last_moved_at: Optional[float] = None
    #: CPU cap as a fraction of its vCPUs (1 = uncapped; None = unknown).
    #: Merlin's CPU sensitivity is cpu_util / cpu_quota.
    cpu_quota: Optional[float] = None
    #: NUMA node holding most of its memory (None = unknown).
    memory_node: Optional[int] = None
    #: Fraction of its memory on nodes its vCPUs do not run on.
    remote_memory_ratio: Optional[float] = None
    #: Whether it is a latency service, as its flavor's
    #: ``contention:profile`` declares (``latency=1``; a profile without it
    #: declares a throughput code). None when undeclared: the harm check
    #: then guesses from its CPU use (:func:`contention.swap.measure.
    #: serving`).
    latency: Optional[bool] = None


@dataclasses.dataclass(frozen=True)
class SocketView:
    """A socket (or NUMA node, for NUMA-granular algorithms) of a host."""

    id: int
    nodes: tuple[int, ...]
    #: Hardware threads Nova places on.
    cpus: int
    memory_mib: int
    #: Physical cores among them (None: unknown, taken as ``cpus``).
    cores: Optional[int] = None
    #: Last-level cache of those CPUs, KiB (None: unknown).
    llc_kib: Optional[int] = None
    #: Sustainable DRAM bandwidth of its nodes' memory controllers,
    #: summed, bytes/s (None: unknown): the harm check's reading of the
    #: queue at a controller (:meth:`contention.swap.state.State.
    #: mc_utilisation`).
    memory_bandwidth_bps: Optional[float] = None


@fast_init
@dataclasses.dataclass(frozen=True)
class HostView:
    name: str
    sockets: tuple[SocketView, ...]
    vcpus_total: int
    memory_mib_total: int
    disk_gb_total: float = 0.0
    #: Nova's allocation ratios, so free capacity matches what Nova allows.
    cpu_allocation_ratio: float = 1.0
    ram_allocation_ratio: float = 1.0
    disk_allocation_ratio: float = 1.0
    #: False for disabled or down hosts; ``skip_reason`` says which.
    enabled: bool = True
    skip_reason: Optional[str] = None
    #: Age of the newest telemetry for this host, seconds (None = none).
    telemetry_age_s: Optional[float] = None
    #: Start of the interval its instances' figures were measured over,
    #: seconds since the epoch (None = unknown): the measured roll-back
    #: judges a move only by an interval that began after its copy ended.
    measured_since: Optional[float] = None
    #: 'intel', 'amd' or None (unknown), from the agent's topology report:
    #: a live migration stays between hosts of one (:func:`live_migratable`).
    cpu_vendor: Optional[str] = None
    #: The CPU model its agent reports (libvirt's host CPU model, else
    #: /proc/cpuinfo's); None if unknown.
    cpu_model: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class ClusterView:
    hosts: tuple[HostView, ...]
    instances: tuple[InstanceView, ...]
    #: Seconds since the epoch at which the view was taken.
    now: float = 0.0

    def _index(self):
        """({host name: HostView}, {uuid: InstanceView}, {host: instances}).

        Built on first use and kept on the object (a frozen view's derived
        state, not a field): an audit asks for a host's instances once per
        host and candidate, which a scan of the whole cluster made
        quadratic in its size. The first of duplicate names wins, as a
        scan finds it.
        """
        index = self.__dict__.get('_index_cache')
        if index is None:
            hosts, by_uuid, on = {}, {}, {}
            for host in self.hosts:
                hosts.setdefault(host.name, host)
            for inst in self.instances:
                by_uuid.setdefault(inst.uuid, inst)
                on.setdefault(inst.host, []).append(inst)
            index = (hosts, by_uuid,
                     {name: tuple(insts) for name, insts in on.items()})
            object.__setattr__(self, '_index_cache', index)
        return index

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop('_index_cache', None)
        return state

    def host(self, name):
        host = self._index()[0].get(name)
        if host is None:
            raise KeyError('host %s is not in the cluster view' % name)
        return host

    def instance(self, uuid):
        inst = self._index()[1].get(uuid)
        if inst is None:
            raise KeyError('instance %s is not in the cluster view' % uuid)
        return inst

    def instances_on(self, host, socket=None):
        on = self._index()[2].get(host, ())
        if socket is None:
            return on
        return tuple(i for i in on if i.socket == socket)

    def free(self, host_name):
        """(vCPUs, RAM MiB, disk GB) still free on a host."""
        host = self.host(host_name)
        used = self.instances_on(host_name)
        return (host.vcpus_total * host.cpu_allocation_ratio
                - sum(i.vcpus for i in used),
                host.memory_mib_total * host.ram_allocation_ratio
                - sum(i.memory_mib for i in used),
                host.disk_gb_total * host.disk_allocation_ratio
                - sum(i.disk_gb for i in used))


def live_migratable(source_vendor, dest_vendor):
    """Whether Nova can live-migrate a guest between these CPU vendors.

    A guest's virtual CPU is a model of its host's vendor (libvirt's
    ``host-model``, or the named model an operator sets: Nova's admin
    guide, "CPU models"), and libvirt refuses to run it on the other
    vendor's CPUs, so the destination's compatibility check fails. Within
    a vendor, an operator mixing generations sets a model they all run;
    across Intel and AMD there is none in use. A vendor that is unknown
    (None or 'unknown') is not judged.
    """
    known = {source_vendor, dest_vendor} - {None, 'unknown'}
    return len(known) < 2


@dataclasses.dataclass(frozen=True)
class Migrate:
    """Live-migrate an instance (with its memory) to a host and socket."""

    instance: str
    source_host: str
    dest_host: str
    dest_socket: Optional[int] = None
    #: The measured roll-back's way back (:mod:`contention.swap.rollback`):
    #: the move log records it as an undo, never undone and holding its
    #: hosts for the cool-down.
    undo: bool = False


@dataclasses.dataclass(frozen=True)
class Swap:
    """Two live migrations exchanging two instances' hosts, in order.

    ``first`` runs, then ``second`` only if ``first`` succeeded; if
    ``second`` fails, ``first`` is undone.
    """

    first: Migrate
    second: Migrate


@dataclasses.dataclass(frozen=True)
class Repin:
    """Move an instance's vCPUs (and optionally memory) within its host."""

    instance: str
    host: str
    dest_socket: int
    move_memory: bool = False
    #: The measured roll-back's way back (see :class:`Migrate`).
    undo: bool = False


@dataclasses.dataclass(frozen=True)
class CpuQuota:
    """Cap an instance's CPU time (Merlin's cheapest reconfiguration)."""

    instance: str
    host: str
    #: Fraction of its allocated CPU, 0 < quota <= 1 (1 = no cap).
    quota: float


Action = Union[Migrate, Swap, Repin, CpuQuota]


@dataclasses.dataclass(frozen=True)
class Skipped:
    """Something the algorithm left alone, and why (shown to operators)."""

    subject: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a policy proposes, in the order it must run."""

    actions: tuple[Action, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    #: Free-form indicators (e.g. spread before/after) for reports.
    indicators: dict[str, float] = dataclasses.field(default_factory=dict)
    #: Why the plan is empty, when it is.
    reason: Optional[str] = None

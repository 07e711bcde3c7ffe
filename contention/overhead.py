"""Liu & Li's per-node overhead estimate, and the allocator that uses it.

Liu & Li, "Optimizing VM consolidation performance on NUMA server
architecture" (``shared/papers/001_*``), section 3.2 finds four overheads
that each explain part of the slowdown of consolidated VMs, and an
inexpensive counter that tracks each; section 4.1 and its Figure 4 bin each
estimate into levels with predefined thresholds (lines 1-4), classify
every memory node (lines 6-15) and add the levels up per node (16-28).
The sum ranks memory nodes: memory goes to the lowest-overhead nodes.

How each level is fed here (all from the instance's counter deltas:
``instructions``, ``cycles``, ``cache_references``, ``cache_misses``; its
vCPUs per node; its memory per node):

* **LLC contention** (Figure 4 line 8, ``i.cache_hit``): the hit rate
  ``1 - misses / references`` of the instances running on the node's CPUs,
  each weighted by its share of vCPUs there (so it is the node's
  references-weighted hit rate). Levels count the thresholds of
  ``llc_hit_rate`` the hit rate is below (lower hit rate = more
  contention; the paper measured 0.48 falling to 0.10 with 8 VMs).
* **MC congestion** (line 9, ``cycle_loss_local``): the largest fraction
  of cycles lost to misses served by this node's memory among instances
  running on this node (the paper takes "the domain with the maximum cycle
  loss").
* **IC congestion** (line 12, ``cycle_loss_remote``): the same, for
  instances running on other nodes whose memory is here.
* **Remote latency** (line 13, ``remote_ipc``): the ratio of the mean IPC
  of local accesses to this node's memory to that of remote accesses; 1 =
  no penalty. With no local accesses to this node, the host's local
  accesses are the baseline.

Approximations, because the hypervisor has no per-access counters:

* Cycle loss is estimated, like Intel PCM's "cycles lost due to L3
  misses" that the paper uses, as misses x stall cycles per miss / cycles,
  with ``miss_stall_cycles`` an effective value (DRAM latency divided by
  the usual memory-level parallelism) scaled by the SLIT distance / 10 for
  remote memory, capped at 1.
* An instance's misses go to its memory nodes in proportion to its memory
  there (pages accessed uniformly), from each of its vCPU nodes in
  proportion to its vCPUs there.
* On AMD Zen the generic events count L2, not L3 (see
  ``HostTopology.cache_miss_level``): the "LLC" hit rate is then the L2's.
* Figure 4 is pairwise (requesting node, memory node); the report holds one
  overhead per node, so IC and remote levels are the worst over all nodes
  whose instances use this node's memory.

:func:`overhead_aware_allocation` is the paper's allocator (sections 4.2
and 5.2) over these levels. Nova places an instance's memory itself and
has no proportional allocation, so nothing in the product calls it; the
fidelity bench (``bench/fidelity.py``) runs it in the simulator against
the paper's Figures 7 and 8.

A node that no running instance touches has all levels 0: nothing
contends there (the paper's allocator prefers such nodes). A node touched
by an instance whose counters or memory placement are unavailable gets
None: its levels cannot be known, and a zero would invite placements on
it. An instance whose vCPU placement is unknown is taken as not running.
"""

import collections
import dataclasses
import math
from typing import Optional

from contention.report import NodeOverhead


@dataclasses.dataclass(frozen=True)
class OverheadThresholds:
    """Level boundaries of the four overheads (Figure 4 lines 1-4).

    Each tuple's length is the number of levels above 0. The paper gives no
    values (they are platform dependent); the defaults follow its
    measurements in section 3.2 where it reports them.
    """

    #: Hit rates below which LLC contention reaches level 1, 2, 3.
    llc_hit_rate: tuple[float, ...] = (0.45, 0.3, 0.15)
    #: Fractions of cycles lost to local misses above which MC congestion
    #: reaches level 1, 2, 3.
    mc_cycle_loss: tuple[float, ...] = (0.1, 0.3, 0.5)
    #: The same for remote misses: IC congestion.
    ic_cycle_loss: tuple[float, ...] = (0.1, 0.3, 0.5)
    #: Local / remote IPC ratios above which remote latency reaches level
    #: 1, 2, 3.
    remote_ipc_ratio: tuple[float, ...] = (1.1, 1.3, 1.6)
    #: Effective core cycles stalled per miss served by local memory.
    miss_stall_cycles: float = 60.0

    def __post_init__(self):
        for name, descending in (('llc_hit_rate', True),
                                 ('mc_cycle_loss', False),
                                 ('ic_cycle_loss', False),
                                 ('remote_ipc_ratio', False)):
            values = getattr(self, name)
            if not isinstance(values, tuple) or not all(
                    _finite_non_negative(v) for v in values):
                raise ValueError('%s must be a tuple of finite numbers >= 0,'
                                 ' got %r' % (name, values))
            ordered = sorted(values, reverse=descending)
            if list(values) != ordered:
                raise ValueError('%s must be %s, got %r'
                                 % (name, 'descending' if descending
                                    else 'ascending', values))
        if not (_finite_non_negative(self.miss_stall_cycles)
                and self.miss_stall_cycles > 0):
            raise ValueError('miss_stall_cycles must be a finite number > 0,'
                             ' got %r' % (self.miss_stall_cycles,))


def _finite_non_negative(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)


DEFAULT_OVERHEAD_THRESHOLDS = OverheadThresholds()


@dataclasses.dataclass(frozen=True)
class Occupant:
    """One instance as the estimator sees it: where it runs, its counters.

    ``vcpus_per_node``: vCPUs (or any weights) per node they ran on.
    ``memory_mib_per_node``: its memory per node; empty = unknown.
    Counters are deltas over the interval, None = unavailable.
    """

    vcpus_per_node: dict[int, float]
    memory_mib_per_node: dict[int, float]
    instructions: Optional[int] = None
    cycles: Optional[int] = None
    cache_references: Optional[int] = None
    cache_misses: Optional[int] = None


def level_above(value, thresholds):
    """How many of the ascending ``thresholds`` ``value`` exceeds."""
    return sum(1 for t in thresholds if value > t)


def level_below(value, thresholds):
    """How many of the descending ``thresholds`` ``value`` is under."""
    return sum(1 for t in thresholds if value < t)


_Access = collections.namedtuple(
    '_Access', 'cpu_node memory_node weight cycle_loss ipc')


def _shares(mapping):
    total = sum(mapping.values())
    if total <= 0:
        return {}
    return {node: value / total for node, value in mapping.items()
            if value > 0}


def _accesses(occupant, topology, th):
    """Split an occupant's activity over (vCPU node, memory node) pairs."""
    if not occupant.cycles:
        return []
    cpu_shares = _shares(occupant.vcpus_per_node)
    memory_shares = _shares(occupant.memory_mib_per_node)
    ipc = occupant.instructions / occupant.cycles
    accesses = []
    for cpu_node, f in cpu_shares.items():
        for memory_node, g in memory_shares.items():
            distance = max(topology.distance(cpu_node, memory_node), 10)
            stalls = (occupant.cache_misses * g * th.miss_stall_cycles
                      * distance / 10.0)
            accesses.append(_Access(cpu_node, memory_node, f * g,
                                    min(1.0, stalls / occupant.cycles),
                                    ipc))
    return accesses


def _unknown_nodes(occupant, node_ids):
    """Nodes whose levels this occupant makes unknowable, if any."""
    counters = (occupant.instructions, occupant.cycles,
                occupant.cache_references, occupant.cache_misses)
    if not _shares(occupant.memory_mib_per_node):
        return set(node_ids)
    if any(c is None for c in counters):
        return set(occupant.vcpus_per_node) | set(
            occupant.memory_mib_per_node)
    return set()


def _mean_ipc(accesses):
    weight = sum(a.weight for a in accesses)
    if weight <= 0:
        return None
    return sum(a.weight * a.ipc for a in accesses) / weight


def _ipc_ratio(local, remote):
    if remote > 0:
        return local / remote
    return math.inf if local > 0 else 1.0


def node_overheads(topology, occupants, th=DEFAULT_OVERHEAD_THRESHOLDS):
    """Each node's :class:`NodeOverhead`, or None where unknowable.

    :param topology: the host's :class:`contention.topology.HostTopology`.
    :param occupants: :class:`Occupant` per instance on the host.
    :returns: dict node id -> NodeOverhead or None, for every node.
    """
    node_ids = topology.node_ids
    known = set(node_ids)
    unknown = set()
    accesses = []
    refs = collections.Counter()
    misses = collections.Counter()
    for occupant in occupants:
        nodes = set(occupant.vcpus_per_node) | set(
            occupant.memory_mib_per_node)
        stray = nodes - known
        if stray:
            raise ValueError('NUMA node(s) %s not in the topology of %s'
                             % (sorted(stray), topology.hostname))
        if not _shares(occupant.vcpus_per_node):
            continue
        bad = _unknown_nodes(occupant, node_ids)
        if bad:
            unknown |= bad
            continue
        accesses.extend(_accesses(occupant, topology, th))
        for node, f in _shares(occupant.vcpus_per_node).items():
            refs[node] += f * occupant.cache_references
            misses[node] += f * occupant.cache_misses
    local = [a for a in accesses if a.cpu_node == a.memory_node]
    host_local_ipc = _mean_ipc(local)
    result = {}
    for node in node_ids:
        if node in unknown:
            result[node] = None
            continue
        result[node] = _overhead_of(node, accesses, refs[node], misses[node],
                                    host_local_ipc, th)
    return result


def _overhead_of(node, accesses, refs, misses, host_local_ipc, th):
    hit_rate = max(0.0, 1.0 - misses / refs) if refs > 0 else 1.0
    here = [a for a in accesses if a.memory_node == node]
    local = [a for a in here if a.cpu_node == node]
    remote = [a for a in here if a.cpu_node != node]
    mc_loss = max((a.cycle_loss for a in local), default=0.0)
    ic_loss = max((a.cycle_loss for a in remote), default=0.0)
    remote_level = 0
    remote_ipc = _mean_ipc(remote)
    if remote_ipc is not None:
        local_ipc = _mean_ipc(local)
        if local_ipc is None:
            local_ipc = host_local_ipc
        if local_ipc is None:
            return None
        remote_level = level_above(_ipc_ratio(local_ipc, remote_ipc),
                                   th.remote_ipc_ratio)
    return NodeOverhead(
        llc=level_below(hit_rate, th.llc_hit_rate),
        mc=level_above(mc_loss, th.mc_cycle_loss),
        ic=level_above(ic_loss, th.ic_cycle_loss),
        remote=remote_level)


def zone_overheads(levels, local_node):
    """Each memory node's overhead for memory used from ``local_node``.

    Figure 4 lines 16-28: the local node's own memory costs its LLC
    contention and MC congestion; a remote node's memory adds its IC
    congestion and remote latency to them (all four of the remote node's
    levels, one level per node as :func:`node_overheads` holds them).
    Line 24 reads "local_node.i.LLC_contention"; the LLC counted is node
    ``i``'s, so that contention where the vCPUs run (section 6.1: "if the
    last level cache contention in socket 0 becomes significant") makes
    remote memory the cheaper choice.

    :param levels: {node: :class:`NodeOverhead` or None}, as
        :func:`node_overheads` returns them.
    :returns: {node: int or None}; None where the levels are unknown.
    """
    zones = {}
    for node, level in levels.items():
        if level is None:
            zones[node] = None
        elif node == local_node:
            zones[node] = level.llc + level.mc
        else:
            zones[node] = level.total
    return zones


#: Section 4.2: the step function selects at most this many nodes.
MAX_ALLOCATION_NODES = 4

#: Memory the allocator's shares may miss by from rounding (a byte): a
#: request that exactly fills what earlier shares left is not refused.
_MIB_EPSILON = 1e-6


def allocation_weight(zone_overhead):
    """A node's share of a request by the power-of-two rule of section 5.2.

    "Nodes A, B and C with overheads 2, 4 and 5 [...] will allocate memory
    blocks of size 2^(8-1), 2^(8-2) and 2^(8-2)": an overhead ``o`` gets
    the weight ``2 ** -floor(log2(o))``, and 0 or 1 the whole block.
    """
    return 2.0 ** -math.floor(math.log2(max(zone_overhead, 1)))


def overhead_aware_allocation(memory_mib, local_node, zones, free_mib,
                              idle_nodes, distance):
    """Liu & Li's NUMA overhead-aware buddy allocator (sections 4.2, 5.2).

    Where an instance's ``memory_mib`` goes when it is created with its
    vCPUs on ``local_node``, per Figure 5 and section 5.2:

    1. The local node, then remote nodes (nearest first), that hold no
       active instance take the largest chunk they can ("the local node
       (1st choice) or remote nodes (2nd choice) with no active VMs have
       the highest priority").
    2. The rest goes to the lowest-overhead nodes with room: the step
       function (a threshold from 0 up by two until four candidates are
       chosen) selects the :data:`MAX_ALLOCATION_NODES` lowest, and each
       takes a share by :func:`allocation_weight`. A node that fills up
       passes what it cannot hold to the others in the same proportion.

    Nodes whose overhead is unknown (None) are not chosen while another
    node has room.

    :param zones: {node: int or None}, :func:`zone_overheads`.
    :param free_mib: {node: MiB free}; nodes absent have none.
    :param idle_nodes: nodes no active instance uses.
    :param distance: ``distance(a, b)``, the SLIT distance of two nodes.
    :returns: {node: MiB}, summing to ``memory_mib``.
    :raises ValueError: the nodes cannot hold ``memory_mib`` together.
    """
    free = {n: float(m) for n, m in free_mib.items() if m > 0}
    if sum(free.values()) < memory_mib - _MIB_EPSILON:
        raise ValueError('%s MiB do not fit in the free memory of nodes %s'
                         % (memory_mib, dict(sorted(free_mib.items()))))
    allocation = collections.Counter()
    remaining = float(memory_mib)
    idle = sorted((n for n in free if n in idle_nodes),
                  key=lambda n: (n != local_node, distance(local_node, n), n))
    for node in idle:
        if remaining <= 0:
            break
        take = min(remaining, free[node])
        allocation[node] += take
        free[node] -= take
        remaining -= take
    while remaining > _MIB_EPSILON:
        rooms = [n for n in free if free[n] > 0]
        known = [n for n in rooms if zones.get(n) is not None]
        chosen = sorted(known or rooms, key=lambda n: (
            zones.get(n) or 0, distance(local_node, n), n))[
                :MAX_ALLOCATION_NODES]
        weights = {n: allocation_weight(zones.get(n) or 0) for n in chosen}
        total = sum(weights.values())
        shares = {n: min(free[n], remaining * w / total)
                  for n, w in weights.items()}
        for node, take in shares.items():
            allocation[node] += take
            free[node] -= take
        remaining -= sum(shares.values())
    return dict(allocation)

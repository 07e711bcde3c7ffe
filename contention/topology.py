"""A host's NUMA topology: nodes, CPUs, caches, sockets, distances.

Every part of the project that reasons about placement (the agent's
per-node aggregates, the simulator's hardware model, the placement model's
important placements, the swap algorithms' sockets) uses this one dataclass,
so that it never matters whether a topology came from libvirt's capabilities
XML, from sysfs or from a scenario file. The parsers live in
:mod:`contention.topology_parse`.

Vocabulary:

* a *node* is a NUMA node (a memory controller and the CPUs closest to it);
* a *socket* is a physical package; Intel parts usually have one node per
  socket, AMD EPYC in NPS2/NPS4 mode several;
* an *L3 domain* is a set of CPUs sharing one last-level cache; on AMD Zen
  there are several per node (one per CCX/CCD), on Intel one per socket.
"""

import dataclasses
from typing import Optional

from contention import schema

#: Bytes a last-level cache miss moves from memory: one cache line.
LINE_BYTES = 64.0


@dataclasses.dataclass(frozen=True)
class Cpu:
    """One logical CPU (hardware thread)."""

    id: int
    node: int
    socket: int
    #: Core id, unique within the host (not sysfs's per-socket core_id).
    core: int
    #: SMT siblings, including this CPU.
    siblings: tuple[int, ...]
    #: Index into :attr:`HostTopology.caches` of the L2 and L3 this CPU uses,
    #: or None where the source did not say.
    l2: Optional[int] = None
    l3: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Cache:
    """A cache shared by a set of CPUs."""

    id: int
    level: int
    cpus: tuple[int, ...]
    size_kib: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class NumaNode:
    """A NUMA node: its CPUs and memory."""

    id: int
    cpus: tuple[int, ...]
    memory_mib: int
    #: Socket of this node's CPUs (a node with no CPUs has socket -1).
    socket: int
    #: Sustainable DRAM bandwidth of its memory controller, bytes/s, as
    #: the operator states it (``[agent] memory_bandwidth_gbps``); None:
    #: unknown. Since report schema 1.4.
    memory_bandwidth_bps: Optional[float] = dataclasses.field(
        default=None, metadata=schema.non_negative())


@dataclasses.dataclass(frozen=True)
class HostTopology:
    """The shared-resource layout of one host.

    ``distances[i][j]`` is the ACPI SLIT distance between ``nodes[i]`` and
    ``nodes[j]`` (10 = local), in the order of :attr:`nodes`.
    """

    hostname: str
    #: 'intel', 'amd' or 'unknown'. It decides what the generic
    #: cache_misses event counts (L3 on Intel, L2 on AMD Zen).
    cpu_vendor: str
    cpu_model: str
    nodes: tuple[NumaNode, ...]
    cpus: tuple[Cpu, ...]
    caches: tuple[Cache, ...]
    distances: tuple[tuple[int, ...], ...]

    def node(self, node_id):
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError('NUMA node %s is not in the topology of %s'
                       % (node_id, self.hostname))

    def cpu(self, cpu_id):
        cpu = self._cpu_index().get(cpu_id)
        if cpu is None:
            raise KeyError('CPU %s is not in the topology of %s'
                           % (cpu_id, self.hostname))
        return cpu

    def _cpu_index(self):
        # frozen dataclass: cache the index on the instance without
        # making it a field (it is derived state, not part of the value).
        index = self.__dict__.get('_cpu_index_cache')
        if index is None:
            index = {cpu.id: cpu for cpu in self.cpus}
            object.__setattr__(self, '_cpu_index_cache', index)
        return index

    def l3_of_cpus(self):
        """{CPU id: (L3 index, its size in bytes)}, for CPUs with a sized L3.

        Built once per topology object (a collector reads it for every
        instance of every report; see :mod:`contention.llc_share`).
        """
        index = self.__dict__.get('_l3_of_cpus_cache')
        if index is None:
            index = {}
            for cpu in self.cpus:
                if cpu.l3 is None or not 0 <= cpu.l3 < len(self.caches):
                    continue
                cache = self.caches[cpu.l3]
                if cache.level == 3 and cache.size_kib:
                    index[cpu.id] = (cpu.l3, cache.size_kib * 1024)
            object.__setattr__(self, '_l3_of_cpus_cache', index)
        return index

    def has_cpu(self, cpu_id):
        return cpu_id in self._cpu_index()

    def node_of_cpu(self, cpu_id):
        return self.cpu(cpu_id).node

    @property
    def node_ids(self):
        return tuple(node.id for node in self.nodes)

    @property
    def sockets(self):
        """Socket ids, sorted."""
        return tuple(sorted({node.socket for node in self.nodes
                             if node.socket >= 0}))

    def nodes_of_socket(self, socket):
        return tuple(node.id for node in self.nodes if node.socket == socket)

    def cpus_of_socket(self, socket):
        return tuple(cpu.id for cpu in self.cpus if cpu.socket == socket)

    def l3_domains(self):
        """The L3 caches, each with the CPUs sharing it."""
        return tuple(cache for cache in self.caches if cache.level == 3)

    def distance(self, node_a, node_b):
        ids = self.node_ids
        return self.distances[ids.index(node_a)][ids.index(node_b)]

    @property
    def cache_miss_level(self):
        """Which cache the generic ``cache_misses`` perf event counts."""
        return 'L2' if self.cpu_vendor == 'amd' else 'L3'

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data, path='topology'):
        return schema.load(cls, data, path)


def with_memory_bandwidth(topology, bps):
    """``topology`` with ``bps`` as each memory node's bandwidth.

    Every node with memory gets it (a node without memory has no
    controller to queue at); ``bps`` None leaves the topology as it is.
    """
    if bps is None:
        return topology
    nodes = tuple(dataclasses.replace(n, memory_bandwidth_bps=float(bps))
                  if n.memory_mib > 0 else n for n in topology.nodes)
    return dataclasses.replace(topology, nodes=nodes)

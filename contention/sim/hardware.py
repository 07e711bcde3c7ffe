"""The simulated hardware: a host's shared resources and their speeds.

A host is described twice, on purpose, by what the rest of the project
already uses: its layout is a :class:`contention.topology.HostTopology`
(the dataclass the agent builds from libvirt and sysfs), and its speeds are
a :class:`PerfParams`. :class:`HostModel` reads both into the few numbers
the contention solver needs per NUMA node:

* ``cores`` (physical cores) and ``threads`` (hardware threads per core);
* ``l3_bytes``: the last-level cache the node's CPUs share. A node with
  several L3 domains (AMD Zen CCXs) is modelled as one cache of their
  summed size: an approximation, documented in ``doc/simulator.md``;
* ``mc_bandwidth``: its memory controller's sustainable bandwidth;
* per pair of nodes, the SLIT distance (latency = local latency x
  distance / 10) and an interconnect link with its own bandwidth.

:class:`HardwareClass` is the scenario file's ``hardware:`` entry, from
which :func:`build_topology` generates the topology of every host of that
class, numbered as Linux numbers a real machine (first threads of every
core, socket by socket, then the second threads).

All parameter values in shipped scenarios are synthetic, chosen to be of
the order of the papers' platforms (Westmere-era Xeons), not measured.
"""

import dataclasses

import numpy as np

from contention import topology as topo

MIB = 1024 * 1024
GB = 1e9


#: (The "distance / 10" above is now this calibrated multiplier.)
#: Calibration (bench/fidelity.py, doc/simulator.md "Calibration"): how
#: much slower an unloaded miss to another node is than a local one, per
#: unit of SLIT distance above 10. Liu & Li (section 1) state that with QPI
#: and HyperTransport "the difference between local and remote memory
#: access latencies can be minimized within 30 %"; SLIT 21, the usual
#: two-socket distance, therefore maps to 1.3x (it mapped to 2.1x when the
#: multiplier was SLIT / 10). Other distances scale linearly (SLIT 12 ->
#: 1.05x, 32 -> 1.6x); queueing on the link comes on top.
REMOTE_LATENCY_PER_SLIT = 0.3 / 11.0


def remote_latency_factor(distances):
    """Unloaded latency multipliers from a SLIT matrix (10 = local)."""
    dist = np.asarray(distances, dtype=float)
    return 1.0 + REMOTE_LATENCY_PER_SLIT * np.maximum(dist - 10.0, 0.0)


@dataclasses.dataclass(frozen=True)
class PerfParams:
    """Speeds of one host class (all synthetic defaults, see module doc)."""

    freq_ghz: float = 2.4
    #: Sustainable DRAM bandwidth of one node's memory controller, GB/s.
    mc_bandwidth_gbs: float = 12.0
    #: Bandwidth of the interconnect link between two nodes, per direction.
    link_bandwidth_gbs: float = 10.0
    #: Unloaded latency of a miss served by the local node.
    local_latency_ns: float = 80.0
    #: Queueing scale: a resource at utilisation u adds ``q * u / (1 - u)``.
    mc_queue_ns: float = 20.0
    link_queue_ns: float = 20.0
    #: Extra throughput of a core's second hardware thread (0.25 = a busy
    #: core with both threads busy does 1.25 cores of work).
    smt_gain: float = 0.25
    #: Default L3 size per node when the topology does not carry sizes.
    l3_mib_per_node: float = 12.0


@dataclasses.dataclass(frozen=True)
class HardwareClass:
    """A kind of host, as a scenario file's ``hardware:`` entry gives it."""

    name: str
    sockets: int = 2
    nodes_per_socket: int = 1
    cores_per_node: int = 4
    threads_per_core: int = 1
    l3_mib_per_node: float = 12.0
    l3_domains_per_node: int = 1
    memory_gib_per_node: float = 16.0
    #: SLIT distance between nodes of one socket, and of different sockets.
    same_socket_distance: int = 12
    remote_distance: int = 21
    cpu_vendor: str = 'intel'
    cpu_model: str = 'simulated'
    #: Nodes no instance may use (e.g. where Dom-0 runs in Merlin's setup).
    reserved_nodes: tuple[int, ...] = ()
    #: Nova's allocation ratios for the host; the defaults are Nova's own
    #: (``initial_cpu_allocation_ratio`` 4.0, ``initial_ram_allocation_ratio``
    #: 1.0), so capacity checks, and the transient capacity a live-migration
    #: swap needs, behave as in a default Nova deployment. Whether vCPUs then
    #: time-share CPUs is the solver's business, not the ratio's.
    cpu_allocation_ratio: float = 4.0
    ram_allocation_ratio: float = 1.0
    perf: PerfParams = PerfParams()

    @property
    def nodes(self):
        return self.sockets * self.nodes_per_socket

    @property
    def cores_per_socket(self):
        return self.nodes_per_socket * self.cores_per_node


def build_topology(hostname, hw):
    """The :class:`HostTopology` of one host of class ``hw``."""
    nodes = hw.nodes
    cores = nodes * hw.cores_per_node
    cpus = []
    caches = []
    l3_of_core = {}
    per_l3 = max(1, hw.cores_per_node // hw.l3_domains_per_node)
    l3_kib = int(round(hw.l3_mib_per_node * 1024 / hw.l3_domains_per_node))
    for node in range(nodes):
        for d in range(hw.l3_domains_per_node):
            first = node * hw.cores_per_node + d * per_l3
            last = min(first + per_l3, (node + 1) * hw.cores_per_node)
            if d == hw.l3_domains_per_node - 1:
                last = (node + 1) * hw.cores_per_node
            core_ids = range(first, last)
            cache_cpus = tuple(sorted(c + t * cores for c in core_ids
                                      for t in range(hw.threads_per_core)))
            for c in core_ids:
                l3_of_core[c] = len(caches)
            caches.append(topo.Cache(id=len(caches), level=3,
                                     cpus=cache_cpus, size_kib=l3_kib))
    for t in range(hw.threads_per_core):
        for core in range(cores):
            node = core // hw.cores_per_node
            siblings = tuple(core + s * cores
                             for s in range(hw.threads_per_core))
            cpus.append(topo.Cpu(id=core + t * cores, node=node,
                                 socket=node // hw.nodes_per_socket,
                                 core=core, siblings=siblings,
                                 l3=l3_of_core[core]))
    numa_nodes = tuple(topo.NumaNode(
        id=n, cpus=tuple(sorted(c.id for c in cpus if c.node == n)),
        memory_mib=int(hw.memory_gib_per_node * 1024),
        socket=n // hw.nodes_per_socket) for n in range(nodes))
    distances = tuple(tuple(
        10 if a == b else (hw.same_socket_distance
                           if a // hw.nodes_per_socket
                           == b // hw.nodes_per_socket
                           else hw.remote_distance)
        for b in range(nodes)) for a in range(nodes))
    return topo.HostTopology(hostname=hostname, cpu_vendor=hw.cpu_vendor,
                             cpu_model=hw.cpu_model, nodes=numa_nodes,
                             cpus=tuple(cpus), caches=tuple(caches),
                             distances=distances)


@dataclasses.dataclass(frozen=True)
class HostModel:
    """Per-node numbers of one host, read from its topology (see module)."""

    topology: topo.HostTopology
    perf: PerfParams
    node_ids: tuple[int, ...]
    cores: np.ndarray
    threads: np.ndarray
    l3_bytes: np.ndarray
    memory_mib: np.ndarray
    sockets: np.ndarray
    #: Unloaded latency multiplier between two nodes
    #: (:func:`remote_latency_factor` of their SLIT distance).
    latency_factor: np.ndarray
    reserved: tuple[int, ...] = ()

    @classmethod
    def from_topology(cls, topology, perf, reserved_nodes=()):
        node_ids = topology.node_ids
        cores, threads, l3, sockets = [], [], [], []
        for node in topology.nodes:
            node_cpus = [topology.cpu(c) for c in node.cpus]
            n_cores = len({c.core for c in node_cpus})
            cores.append(n_cores)
            threads.append(len(node_cpus) / n_cores if n_cores else 1.0)
            l3_ids = {c.l3 for c in node_cpus if c.l3 is not None}
            sizes = [topology.caches[i].size_kib for i in l3_ids]
            if sizes and all(s is not None for s in sizes):
                # A cache shared with another node's CPUs counts in part.
                total = 0.0
                for i in l3_ids:
                    cache = topology.caches[i]
                    here = sum(1 for c in cache.cpus
                               if topology.node_of_cpu(c) == node.id)
                    total += cache.size_kib * 1024.0 * here / len(cache.cpus)
                l3.append(total)
            else:
                l3.append(perf.l3_mib_per_node * MIB)
            sockets.append(node.socket)
        dist = remote_latency_factor(topology.distances)
        return cls(topology=topology, perf=perf, node_ids=node_ids,
                   cores=np.array(cores, dtype=float),
                   threads=np.array(threads, dtype=float),
                   l3_bytes=np.array(l3, dtype=float),
                   memory_mib=np.array([n.memory_mib
                                        for n in topology.nodes],
                                       dtype=float),
                   sockets=np.array(sockets, dtype=int),
                   latency_factor=dist,
                   reserved=tuple(reserved_nodes))

    @property
    def n_nodes(self):
        return len(self.node_ids)

    def usable_sockets(self):
        """Socket ids with at least one node instances may use."""
        return tuple(sorted({int(self.sockets[i])
                             for i, n in enumerate(self.node_ids)
                             if n not in self.reserved}))

    def node_indices_of_socket(self, socket):
        """Indices (into node_ids) of a socket's usable nodes."""
        return tuple(i for i, n in enumerate(self.node_ids)
                     if self.sockets[i] == socket
                     and n not in self.reserved)


def host_model(hostname, hw):
    """A :class:`HostModel` for one host of class ``hw``."""
    return HostModel.from_topology(build_topology(hostname, hw), hw.perf,
                                   hw.reserved_nodes)

"""The simulated hardware: a host's shared resources and their speeds.

A host is described twice, on purpose, by what the rest of the project
already uses: its layout is a :class:`contention.topology.HostTopology`
(the dataclass the agent builds from libvirt and sysfs), and its speeds are
a :class:`PerfParams`. :class:`HostModel` reads both into the few numbers
the contention solver needs per NUMA node:

* ``cores`` (physical cores) and ``threads`` (hardware threads per core);
* per **L3 domain** (its own level: one per socket or sub-NUMA cluster
  on Intel, one per CCX/CCD on AMD Zen, so several per NUMA node there):
  its cores, hardware threads per core and cache size, and the NUMA node
  it belongs to;
* per NUMA node: its memory controller's sustainable bandwidth
  (``mc_bandwidth_gbs_per_node``, default the class's ``perf`` value for
  every node) and its memory;
* per pair of nodes, the SLIT distance (latency = local latency x
  :func:`remote_latency_factor` of the distance, from a full
  ``distances`` matrix or the two shorthand distances) and an
  interconnect link with its own bandwidth
  (``link_bandwidth_gbs_per_pair``, default ``perf.link_bandwidth_gbs``).

:class:`HardwareClass` is the scenario file's ``hardware:`` entry, from
which :func:`build_topology` generates the topology of every host of that
class, numbered as Linux numbers a real machine (first threads of every
core, socket by socket, then the second threads). Shipped host classes
(:data:`HOST_CLASSES`, ``hardware/*.yaml`` beside the scenarios) are named
with ``base:`` in a scenario's hardware entry.

All parameter values in the Ahn and Merlin scenarios are synthetic, chosen
to be of the order of the papers' platforms (Westmere-era Xeons), not
measured; the shipped host classes say beside each value where it comes
from.
"""

import dataclasses
from typing import Optional

import numpy as np

from contention import topology as topo

MIB = 1024 * 1024
GB = 1e9


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
    #: SLIT distance between nodes of one socket, and of different sockets
    #: (shorthand used when ``distances`` is not given).
    same_socket_distance: int = 12
    remote_distance: int = 21
    #: Full SLIT matrix, nodes x nodes (node ids 0..nodes-1), or None.
    distances: Optional[tuple] = None
    #: Sustainable DRAM bandwidth of each node, GB/s, or None (then
    #: ``perf.mc_bandwidth_gbs`` for every node).
    mc_bandwidth_gbs_per_node: Optional[tuple] = None
    #: Interconnect bandwidth per ordered node pair, GB/s (nodes x nodes;
    #: the diagonal is ignored), or None (then ``perf.link_bandwidth_gbs``).
    link_bandwidth_gbs_per_pair: Optional[tuple] = None
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

    def distance_matrix(self):
        """The SLIT matrix, from ``distances`` or the two shorthands."""
        if self.distances is not None:
            return tuple(tuple(int(d) for d in row)
                         for row in self.distances)
        per = self.nodes_per_socket
        return tuple(tuple(
            10 if a == b else (self.same_socket_distance
                               if a // per == b // per
                               else self.remote_distance)
            for b in range(self.nodes)) for a in range(self.nodes))

    def node_mc_bandwidth(self):
        """GB/s of each node's memory controller."""
        if self.mc_bandwidth_gbs_per_node is not None:
            return tuple(float(b) for b in self.mc_bandwidth_gbs_per_node)
        return (float(self.perf.mc_bandwidth_gbs),) * self.nodes

    def link_bandwidth(self):
        """GB/s of the link between each ordered pair of nodes."""
        if self.link_bandwidth_gbs_per_pair is not None:
            return tuple(tuple(float(b) for b in row)
                         for row in self.link_bandwidth_gbs_per_pair)
        bw = float(self.perf.link_bandwidth_gbs)
        return tuple((bw,) * self.nodes for _ in range(self.nodes))

    def problems(self):
        """What is inconsistent in this class, as (field, problem) pairs."""
        out = []
        n = self.nodes
        for field in ('distances', 'mc_bandwidth_gbs_per_node',
                      'link_bandwidth_gbs_per_pair'):
            value = getattr(self, field)
            if value is None:
                continue
            if len(value) != n:
                out.append((field, 'has %d entries, the class has %d nodes'
                            % (len(value), n)))
                continue
            if field == 'mc_bandwidth_gbs_per_node':
                continue
            for i, row in enumerate(value):
                if len(row) != n:
                    out.append(('%s.%d' % (field, i), 'has %d entries, the '
                                'class has %d nodes' % (len(row), n)))
        if self.distances is not None and not out:
            for i, row in enumerate(self.distances):
                if row[i] != 10:
                    out.append(('distances.%d.%d' % (i, i),
                                'a node\'s distance to itself is 10, not %s'
                                % row[i]))
        if self.cores_per_node % self.l3_domains_per_node:
            out.append(('l3_domains_per_node', '%d cores per node do not '
                        'split evenly into %d L3 domains'
                        % (self.cores_per_node, self.l3_domains_per_node)))
        bad = [r for r in self.reserved_nodes if r >= n]
        if bad:
            out.append(('reserved_nodes', 'node %d does not exist (%d nodes)'
                        % (bad[0], n)))
        return out


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
    distances = hw.distance_matrix()
    return topo.HostTopology(hostname=hostname, cpu_vendor=hw.cpu_vendor,
                             cpu_model=hw.cpu_model, nodes=numa_nodes,
                             cpus=tuple(cpus), caches=tuple(caches),
                             distances=distances)


@dataclasses.dataclass(frozen=True)
class HostModel:
    """Per-node and per-L3-domain numbers of one host (see module doc).

    Node arrays are indexed like ``node_ids``; domain arrays (``dom_*``)
    list the host's L3 domains, each inside one node (a cache whose CPUs
    span several nodes, as sysfs may report with sub-NUMA clustering, is
    split into one domain per node, its size shared by CPU count).
    """

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
    #: Each node's memory-controller bandwidth, bytes/s.
    mc_bw: np.ndarray = None
    #: Link bandwidth between ordered node pairs, bytes/s (N x N).
    link_bw: np.ndarray = None
    #: Per L3 domain: its node's index, cores, threads per core, cache
    #: bytes, and its CPUs in the order Nova's pinning takes them (core
    #: by core, a core's threads together).
    dom_node: np.ndarray = None
    dom_cores: np.ndarray = None
    dom_threads: np.ndarray = None
    dom_l3_bytes: np.ndarray = None
    dom_cpus: tuple = ()

    @classmethod
    def from_topology(cls, topology, perf, reserved_nodes=(),
                      mc_bandwidth_gbs=None, link_bandwidth_gbs=None):
        node_ids = topology.node_ids
        cores, threads, l3, sockets = [], [], [], []
        dom_node, dom_cores, dom_threads, dom_l3, dom_cpus = [], [], [], [], []
        for k, node in enumerate(topology.nodes):
            node_cpus = [topology.cpu(c) for c in node.cpus]
            n_cores = len({c.core for c in node_cpus})
            cores.append(n_cores)
            threads.append(len(node_cpus) / n_cores if n_cores else 1.0)
            groups = {}
            for c in node_cpus:
                l3_id = c.l3 if (c.l3 is not None and 0 <= c.l3 < len(
                    topology.caches)) else None
                groups.setdefault(l3_id, []).append(c)
            sized = all(i is not None
                        and topology.caches[i].size_kib is not None
                        for i in groups)
            total = 0.0
            for l3_id in sorted(groups, key=lambda i: (i is None, i)):
                members = groups[l3_id]
                if sized:
                    cache = topology.caches[l3_id]
                    size = (cache.size_kib * 1024.0 * len(members)
                            / len(cache.cpus))
                else:
                    size = perf.l3_mib_per_node * MIB * len(members) / max(
                        len(node_cpus), 1)
                total += size
                core_ids = sorted({c.core for c in members})
                order = tuple(c.id for core in core_ids
                              for c in sorted(members, key=lambda c: c.id)
                              if c.core == core)
                dom_node.append(k)
                dom_cores.append(len(core_ids))
                dom_threads.append(len(members) / max(len(core_ids), 1))
                dom_l3.append(size)
                dom_cpus.append(order)
            l3.append(total if groups else perf.l3_mib_per_node * MIB)
            sockets.append(node.socket)
        n = len(node_ids)
        dist = remote_latency_factor(topology.distances)
        mc = (np.full(n, perf.mc_bandwidth_gbs * GB)
              if mc_bandwidth_gbs is None
              else np.array(mc_bandwidth_gbs, dtype=float) * GB)
        link = (np.full((n, n), perf.link_bandwidth_gbs * GB)
                if link_bandwidth_gbs is None
                else np.array(link_bandwidth_gbs, dtype=float) * GB)
        # The operator states each node's bandwidth to the agent
        # (``[agent] memory_bandwidth_gbps``): the reports carry it.
        topology = dataclasses.replace(topology, nodes=tuple(
            dataclasses.replace(node, memory_bandwidth_bps=float(bw))
            for node, bw in zip(topology.nodes, mc)))
        return cls(topology=topology, perf=perf, node_ids=node_ids,
                   cores=np.array(cores, dtype=float),
                   threads=np.array(threads, dtype=float),
                   l3_bytes=np.array(l3, dtype=float),
                   memory_mib=np.array([n.memory_mib
                                        for n in topology.nodes],
                                       dtype=float),
                   sockets=np.array(sockets, dtype=int),
                   latency_factor=dist,
                   reserved=tuple(reserved_nodes),
                   mc_bw=mc, link_bw=np.maximum(link, 1.0),
                   dom_node=np.array(dom_node, dtype=int),
                   dom_cores=np.array(dom_cores, dtype=float),
                   dom_threads=np.array(dom_threads, dtype=float),
                   dom_l3_bytes=np.array(dom_l3, dtype=float),
                   dom_cpus=tuple(dom_cpus))

    @property
    def n_nodes(self):
        return len(self.node_ids)

    @property
    def n_domains(self):
        return len(self.dom_node)

    def usable_sockets(self):
        """Socket ids with at least one node instances may use."""
        return tuple(sorted({int(self.sockets[i])
                             for i, n in enumerate(self.node_ids)
                             if n not in self.reserved}))

    def node_indices_of_socket(self, socket):
        """Indices (into node_ids) of a socket's usable nodes."""
        # Asked for every placement check: cached on the (frozen) model.
        cache = self.__dict__.setdefault('_socket_nodes', {})
        if socket not in cache:
            cache[socket] = tuple(i for i, n in enumerate(self.node_ids)
                                  if self.sockets[i] == socket
                                  and n not in self.reserved)
        return cache[socket]

    def nova_cpus(self):
        """The CPUs Nova places instances on: empty when it has them all.

        A host keeping nodes for itself has Nova's ``cpu_shared_set`` and
        ``cpu_dedicated_set`` leave them out; its reports say so.
        """
        if not self.reserved:
            return ()
        return tuple(sorted(c for n in self.topology.nodes
                            if n.id not in self.reserved for c in n.cpus))

    def usable_node_indices(self):
        return tuple(i for i, n in enumerate(self.node_ids)
                     if n not in self.reserved)

    def domain_split(self):
        """(N, D) matrix: a node's share of vCPUs spread over its domains.

        Shared-policy vCPUs float over every CPU of their nodes, so each
        L3 domain gets the share of the node's CPUs it holds.
        """
        split = np.zeros((self.n_nodes, self.n_domains))
        cpus = self.dom_cores * self.dom_threads
        for d, k in enumerate(self.dom_node):
            split[k, d] = cpus[d]
        totals = split.sum(axis=1, keepdims=True)
        return split / np.where(totals > 0, totals, 1.0)


def host_model(hostname, hw):
    """A :class:`HostModel` for one host of class ``hw``."""
    return HostModel.from_topology(build_topology(hostname, hw), hw.perf,
                                   hw.reserved_nodes,
                                   hw.node_mc_bandwidth(),
                                   hw.link_bandwidth())

"""The shape of a host as the placement algorithms see it.

The placement-model paper (``shared/papers/003_*``, section 4) reasons
about a machine through counts and capacities of its shared resources: how
many NUMA nodes (the unit of allocation, section 3), how many physical
cores (L2 / SMT units) each has, how many hardware threads share a core.
:func:`shape_of` reads those from any
:class:`~contention.topology.HostTopology`; :func:`regular_topology` builds
a topology of a regular machine, for the paper's examples, the ``advise``
command and tests.
"""

import collections
import dataclasses

from contention import topology as topo


@dataclasses.dataclass(frozen=True)
class MachineShape:
    """Counts the scheduling concerns need (Algorithm 1's Count/Capacity).

    The balanced-placement assumption (section 3) presumes identical
    nodes; on a host with uneven nodes the smallest node is taken, so a
    placement that is feasible here is feasible on every node.
    """

    nodes: tuple[int, ...]
    cores_per_node: int
    threads_per_core: int

    @property
    def threads_per_node(self):
        return self.cores_per_node * self.threads_per_core

    @property
    def cores(self):
        return self.cores_per_node * len(self.nodes)


def shape_of(topology):
    """The :class:`MachineShape` of a HostTopology (nodes with CPUs only)."""
    cores = collections.defaultdict(set)
    threads = collections.Counter()
    for cpu in topology.cpus:
        cores[cpu.node].add(cpu.core)
        threads[cpu.core] += 1
    nodes = tuple(node.id for node in topology.nodes if node.cpus)
    if not nodes:
        raise ValueError('host %s has no NUMA node with CPUs'
                         % topology.hostname)
    return MachineShape(
        nodes=nodes,
        cores_per_node=min(len(cores[n]) for n in nodes),
        threads_per_core=max(1, min(threads.values())))


def regular_topology(hostname='host', nodes=2, cores_per_node=8,
                     threads_per_core=1, memory_mib_per_node=65536,
                     nodes_per_socket=1, vendor='intel', distances=None,
                     model='regular'):
    """A HostTopology of identical nodes, one L3 per node, L2 per core.

    CPUs are numbered as Linux does: first threads of every core, then
    second threads. ``distances`` defaults to 10 local, 12 within a
    socket and 21 across sockets.
    """
    n_cores = nodes * cores_per_node
    cpus, caches, numa = [], [], []
    node_cpus = collections.defaultdict(list)
    for core in range(n_cores):
        caches.append(topo.Cache(
            id=core, level=2,
            cpus=tuple(core + t * n_cores for t in range(threads_per_core))))
    for node in range(nodes):
        first = node * cores_per_node
        l3_cpus = tuple(sorted(
            c + t * n_cores for c in range(first, first + cores_per_node)
            for t in range(threads_per_core)))
        caches.append(topo.Cache(id=n_cores + node, level=3, cpus=l3_cpus))
    for thread in range(threads_per_core):
        for core in range(n_cores):
            cpu_id = core + thread * n_cores
            node = core // cores_per_node
            node_cpus[node].append(cpu_id)
            cpus.append(topo.Cpu(
                id=cpu_id, node=node, socket=node // nodes_per_socket,
                core=core, siblings=caches[core].cpus, l2=core,
                l3=n_cores + node))
    for node in range(nodes):
        numa.append(topo.NumaNode(
            id=node, cpus=tuple(sorted(node_cpus[node])),
            memory_mib=memory_mib_per_node, socket=node // nodes_per_socket))
    if distances is None:
        distances = tuple(tuple(
            10 if a == b else
            12 if a // nodes_per_socket == b // nodes_per_socket else 21
            for b in range(nodes)) for a in range(nodes))
    cpus.sort(key=lambda c: c.id)
    return topo.HostTopology(
        hostname=hostname, cpu_vendor=vendor, cpu_model=model,
        nodes=tuple(numa), cpus=tuple(cpus), caches=tuple(caches),
        distances=tuple(tuple(row) for row in distances))

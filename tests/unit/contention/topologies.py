"""Small HostTopology objects built directly, for the metrics tests.

Built by hand rather than parsed, so these tests do not depend on
:mod:`contention.topology_parse`.
"""

from contention import topology


def host(nodes=2, cpus_per_node=4, distance=21, vendor='intel',
         memory_mib=16384):
    """``nodes`` nodes, one socket and one L3 each, no SMT.

    CPUs are numbered node by node: node 0 has 0..cpus_per_node-1.
    """
    cpus, caches, numa = [], [], []
    for n in range(nodes):
        ids = tuple(range(n * cpus_per_node, (n + 1) * cpus_per_node))
        caches.append(topology.Cache(id=n, level=3, cpus=ids,
                                     size_kib=16384))
        for cpu in ids:
            cpus.append(topology.Cpu(id=cpu, node=n, socket=n, core=cpu,
                                     siblings=(cpu,), l3=n))
        numa.append(topology.NumaNode(id=n, cpus=ids, memory_mib=memory_mib,
                                      socket=n))
    distances = tuple(tuple(10 if a == b else distance for b in range(nodes))
                      for a in range(nodes))
    return topology.HostTopology(
        hostname='host-a', cpu_vendor=vendor, cpu_model='test',
        nodes=tuple(numa), cpus=tuple(cpus), caches=tuple(caches),
        distances=distances)

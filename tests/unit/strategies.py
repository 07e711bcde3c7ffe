"""Hypothesis strategies for valid topologies and host reports.

Any test that needs "some valid report" (the store, the collector, the
aggregates) draws it from here, so that what counts as valid is defined
once, next to the tests of :meth:`HostReport.from_dict` that check it.

``topologies()`` draws hosts of 1-2 sockets, 1-2 NUMA nodes per socket,
optional SMT and optional caches (L2 per core, L3 per group of cores, so
several L3 per node happen), with a symmetric distance matrix.
``host_reports(topology=None)`` draws a report on such a host (or on the
given one) whose instances only use its CPUs and nodes.
"""

from hypothesis import strategies as st

from contention import report as report_mod
from contention import topology as topo_mod

LEVELS = ('low', 'medium', 'high')
MERLIN_CLASSES = tuple('%s/%s' % (a, b) for a in LEVELS for b in LEVELS)

#: Short readable text; JSON carries any unicode, but these keep failures
#: easy to read. Use st.text() where full unicode matters.
names = st.text(alphabet='abcdefghijklmnopqrstuvwxyz0123456789-_.',
                min_size=1, max_size=12)

counts = st.integers(min_value=0, max_value=2 ** 64 - 1)
non_negative_floats = st.floats(min_value=0.0, max_value=1e15,
                                allow_nan=False, allow_infinity=False)


def _optional(strategy):
    return st.none() | strategy


@st.composite
def topologies(draw, hostname=None):
    """A valid, self-consistent HostTopology."""
    sockets = draw(st.integers(1, 2))
    nodes_per_socket = draw(st.integers(1, 2))
    cores_per_node = draw(st.integers(1, 4))
    threads = draw(st.integers(1, 2))
    with_caches = draw(st.booleans())
    cores_per_l3 = draw(st.sampled_from(
        [n for n in (1, 2, 4) if cores_per_node % n == 0]))
    vendor = draw(st.sampled_from(('intel', 'amd', 'unknown')))
    node_count = sockets * nodes_per_socket
    cores = node_count * cores_per_node

    def cpus_of_cores(core_ids):
        return tuple(sorted(core + t * cores for core in core_ids
                            for t in range(threads)))

    caches = []
    l2_of, l3_of = {}, {}
    if with_caches:
        for core in range(cores):
            for cpu in cpus_of_cores([core]):
                l2_of[cpu] = len(caches)
            caches.append(topo_mod.Cache(
                id=len(caches), level=2, cpus=cpus_of_cores([core]),
                size_kib=draw(_optional(st.integers(64, 4096)))))
        for first in range(0, cores, cores_per_l3):
            group = cpus_of_cores(range(first, first + cores_per_l3))
            for cpu in group:
                l3_of[cpu] = len(caches)
            caches.append(topo_mod.Cache(
                id=len(caches), level=3, cpus=group,
                size_kib=draw(_optional(st.integers(1024, 65536)))))

    cpus = []
    for cpu in range(cores * threads):
        core = cpu % cores
        node = core // cores_per_node
        cpus.append(topo_mod.Cpu(
            id=cpu, node=node, socket=node // nodes_per_socket, core=core,
            siblings=cpus_of_cores([core]), l2=l2_of.get(cpu),
            l3=l3_of.get(cpu)))
    nodes = tuple(
        topo_mod.NumaNode(
            id=n, cpus=cpus_of_cores(range(n * cores_per_node,
                                           (n + 1) * cores_per_node)),
            memory_mib=draw(st.integers(0, 1 << 20)),
            socket=n // nodes_per_socket)
        for n in range(node_count))

    remote = {}
    for a in range(node_count):
        for b in range(a + 1, node_count):
            remote[(a, b)] = remote[(b, a)] = draw(st.integers(11, 64))
    distances = tuple(tuple(10 if a == b else remote[(a, b)]
                            for b in range(node_count))
                      for a in range(node_count))
    return topo_mod.HostTopology(
        hostname=hostname or draw(names), cpu_vendor=vendor,
        cpu_model=draw(st.text(max_size=20)), nodes=nodes,
        cpus=tuple(cpus), caches=tuple(caches), distances=distances)


def counters():
    return st.builds(
        report_mod.Counters,
        **{name: _optional(counts)
           for name in ('instructions', 'cycles', 'cache_references',
                        'cache_misses', 'cpu_time_ns', 'vcpu_delay_ns',
                        'mbm_local_bytes', 'mbm_total_bytes',
                        'llc_occupancy_bytes')})


def metrics():
    return st.builds(
        report_mod.Metrics,
        **{name: _optional(non_negative_floats)
           for name in ('ipc', 'mpki', 'mf', 'llc_misses_per_s', 'cpu_util',
                        'mem_bw_local_bps', 'mem_bw_total_bps',
                        'remote_memory_ratio')})


@st.composite
def instance_records(draw, topology, uuid=None):
    """An instance on ``topology``: only its CPUs and nodes."""
    cpu_ids = [cpu.id for cpu in topology.cpus]
    vcpus = draw(st.integers(1, 8))
    return report_mod.InstanceRecord(
        uuid=uuid or str(draw(st.uuids())),
        name=draw(st.text(max_size=16)),
        vcpus=vcpus,
        memory_mib=draw(st.integers(0, 1 << 20)),
        flavor=draw(_optional(names)),
        image_id=draw(_optional(st.uuids().map(str))),
        project_id=draw(_optional(names)),
        cpu_policy=draw(st.sampled_from(report_mod.CPU_POLICIES)),
        vcpu_cpus=tuple(draw(st.lists(st.sampled_from(cpu_ids),
                                      max_size=vcpus))),
        cpuset=tuple(sorted(draw(st.sets(st.sampled_from(cpu_ids))))),
        memory_mib_per_node=draw(st.dictionaries(
            st.sampled_from(topology.node_ids), non_negative_floats)),
        cpu_quota=draw(_optional(non_negative_floats)),
        counters=draw(counters()),
        metrics=draw(metrics()),
        merlin_class=draw(_optional(st.sampled_from(MERLIN_CLASSES))),
        notes=tuple(draw(st.lists(names, max_size=3))))


@st.composite
def node_aggregates(draw, node):
    return report_mod.NodeAggregate(
        node=node,
        instances=draw(st.integers(0, 100)),
        vcpus=draw(non_negative_floats),
        mpki_sum=draw(_optional(non_negative_floats)),
        llc_misses_per_s=draw(_optional(non_negative_floats)),
        mf=draw(_optional(non_negative_floats)),
        mem_bw_bps=draw(_optional(non_negative_floats)),
        llc_occupancy_bytes=draw(_optional(counts)),
        memory_mib=draw(non_negative_floats),
        overhead=draw(_optional(st.builds(
            report_mod.NodeOverhead, llc=st.integers(0, 3),
            mc=st.integers(0, 3), ic=st.integers(0, 3),
            remote=st.integers(0, 3)))),
        mc_ic_pressure=draw(st.booleans()),
        classes=draw(st.dictionaries(st.sampled_from(MERLIN_CLASSES),
                                     st.integers(0, 50))))


source_statuses = st.builds(
    report_mod.SourceStatus, name=names, available=st.booleans(),
    reason=_optional(st.text(max_size=30)))


@st.composite
def host_reports(draw, topology=None, max_instances=4):
    """A valid HostReport; on ``topology`` if given, else on a drawn one."""
    if topology is None:
        topology = draw(topologies())
    uuids = draw(st.lists(st.uuids().map(str), max_size=max_instances,
                          unique=True))
    instances = tuple(draw(instance_records(topology, uuid))
                      for uuid in uuids)
    node_ids = draw(st.lists(st.sampled_from(topology.node_ids),
                             unique=True))
    return report_mod.HostReport(
        host=topology.hostname,
        timestamp=draw(st.floats(min_value=0, max_value=4e9,
                                 allow_nan=False)),
        interval_s=draw(st.floats(min_value=0.001, max_value=3600)),
        topology=topology,
        version=draw(st.sampled_from(('1.0', report_mod.SCHEMA_VERSION,
                                      '1.7'))),
        cache_miss_level=topology.cache_miss_level,
        sources=tuple(draw(st.lists(source_statuses, max_size=3))),
        nodes=tuple(draw(node_aggregates(node)) for node in node_ids),
        instances=instances,
        events=tuple(draw(st.lists(names, max_size=3))))

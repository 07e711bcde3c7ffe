"""Small valid host reports for the store and collector tests."""

from contention import report
from contention import topology


def small_topology(host, cpus_per_node=4):
    """Two NUMA nodes on two sockets, no SMT, no caches."""
    cpus, nodes = [], []
    for node in (0, 1):
        ids = tuple(range(node * cpus_per_node, (node + 1) * cpus_per_node))
        nodes.append(topology.NumaNode(id=node, cpus=ids, memory_mib=8192,
                                       socket=node))
        cpus += [topology.Cpu(id=c, node=node, socket=node, core=c,
                              siblings=(c,)) for c in ids]
    return topology.HostTopology(
        hostname=host, cpu_vendor='intel', cpu_model='test', nodes=tuple(nodes),
        cpus=tuple(cpus), caches=(), distances=((10, 21), (21, 10)))


def instance(uuid, image_id='image-a', mpki=1.0, mf=0.1, ipc=1.5,
             vcpu_cpus=(0, 1), merlin_class='low/low'):
    return report.InstanceRecord(
        uuid=uuid, name='instance-' + uuid, vcpus=len(vcpu_cpus) or 1,
        memory_mib=2048, image_id=image_id, vcpu_cpus=tuple(vcpu_cpus),
        memory_mib_per_node={0: 2048.0},
        counters=report.Counters(instructions=10 ** 10, cycles=10 ** 10),
        metrics=report.Metrics(ipc=ipc, mpki=mpki, mf=mf,
                               llc_misses_per_s=1e6, cpu_util=0.5),
        merlin_class=merlin_class)


def host_report(host, timestamp, instances=(), nodes=None):
    if nodes is None:
        nodes = (report.NodeAggregate(
            node=0, instances=len(instances), vcpus=2.0 * len(instances),
            mpki_sum=sum(i.metrics.mpki or 0 for i in instances), mf=0.1,
            mem_bw_bps=1e9, llc_occupancy_bytes=1 << 20,
            overhead=report.NodeOverhead(llc=1, mc=0, ic=0, remote=0),
            classes={'low/low': len(instances)}),
            report.NodeAggregate(node=1, instances=0, vcpus=0.0))
    return report.HostReport(host=host, timestamp=float(timestamp),
                             interval_s=10.0, topology=small_topology(host),
                             nodes=nodes, instances=tuple(instances))

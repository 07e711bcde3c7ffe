"""Hand-built cluster views for the swap tests."""

from contention import cluster


def host(name, sockets=2, cpus=8, memory_mib=32768, disk_gb=500,
         enabled=True, **kwargs):
    socks = tuple(cluster.SocketView(s, (s,), cpus, memory_mib)
                  for s in range(sockets))
    return cluster.HostView(name, socks, cpus * sockets,
                            memory_mib * sockets, disk_gb_total=disk_gb,
                            enabled=enabled, **kwargs)


def vm(uuid, host_name, misses, socket=0, vcpus=2, memory_mib=2048,
       mf=None, **kwargs):
    if mf is None:
        # As measured: the instances with more LLC misses are the more
        # memory-bound, whose misses reach DRAM (a higher Memory Factor).
        mf = min(0.9, 0.05 + misses / 1e7)
    return cluster.InstanceView(uuid=uuid, host=host_name, vcpus=vcpus,
                                memory_mib=memory_mib, disk_gb=10,
                                socket=socket, llc_misses_per_s=misses,
                                mf=mf, **kwargs)


def view(hosts, instances, now=10000.0):
    return cluster.ClusterView(tuple(hosts), tuple(instances), now=now)

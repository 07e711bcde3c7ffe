"""A Watcher compute model and a store that agree, for adapter tests."""

import uuid as uuidlib

from contention import cluster
from contention import report
from contention import store as store_api
from tests.unit.contention.store import reports
from watcher_strategies.peers import datasource as simulated

M = 1e6
NODE_CPUS = {0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}


def uid(name):
    """A stable UUID for a readable test name."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, name))


def record(name, misses, socket=0, vcpus=2, memory_mib=2048, mf=0.3,
           mpki=5.0, merlin_class='medium/medium', cpu_quota=None,
           cpu_util=0.5):
    cpus = NODE_CPUS[socket][:max(1, min(vcpus, 4))]
    return report.InstanceRecord(
        uuid=uid(name), name=name, vcpus=vcpus, memory_mib=memory_mib,
        vcpu_cpus=cpus, memory_mib_per_node={socket: float(memory_mib)},
        cpu_quota=cpu_quota,
        metrics=report.Metrics(ipc=1.0, mpki=mpki, mf=mf,
                               llc_misses_per_s=misses, cpu_util=cpu_util),
        merlin_class=merlin_class)


def host_report(host, timestamp, records):
    return reports.host_report(host, timestamp, records)


def model(hosts, placements, locked=(), disabled=(), numa=()):
    """A Watcher model: ``placements`` is [(name, host, vcpus, mem)]."""
    sockets = (cluster.SocketView(0, (0,), 4, 8192),
               cluster.SocketView(1, (1,), 4, 8192))
    view = cluster.ClusterView(
        tuple(cluster.HostView(h, sockets, 8, 16384, disk_gb_total=200,
                               enabled=h not in disabled,
                               skip_reason='maintenance'
                               if h in disabled else None)
              for h in hosts),
        tuple(cluster.InstanceView(uid(n), h, vcpus, mem, disk_gb=1,
                                   movable=n not in locked,
                                   has_numa_topology=n in numa)
              for n, h, vcpus, mem in placements))
    return simulated.compute_model_from_view(view)


def store(*host_reports, moves=()):
    # Every report's instances sampled: the history tests read them.
    st = store_api.open_store('sqlite://', sample_interval_s=0)
    st.upgrade()
    st.ingest(list(host_reports), now=max(
        [r.timestamp for r in host_reports] or [0]))
    if moves:
        st.record_moves(list(moves))
    return st

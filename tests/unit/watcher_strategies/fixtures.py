"""A Watcher compute model and a store that agree, for adapter tests."""

import dataclasses
import uuid as uuidlib

from contention import classify
from contention import cluster
from contention import report
from contention import reportview
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
           cpu_util=1.0):
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


#: What the emulated source of ``make system`` measures (the profiles of
#: tools/system/emulated.yaml on its xeon-2s4c host, two 1-vCPU servers
#: per socket): misses per second, MPKI, MF and IPC of a profile beside a
#: co-runner's. The cpu-loop never reaches memory, beside anything.
SYSTEM_FIGURES = {('milc', 'milc'): (22.49 * M, 25.36, 0.906, 0.369),
                  ('milc', 'cpu-loop'): (23.09 * M, 24.40, 0.871, 0.394),
                  ('cpu-loop', 'cpu-loop'): (0.0, 0.0, 0.0, 1.0),
                  ('cpu-loop', 'milc'): (0.0, 0.0, 0.0, 1.0)}


def system_layout(now, servers, image_id='tiny', vcpus=1, memory_mib=1024):
    """(reports, inventory) of ``make system``'s cloud, as measured.

    ``servers`` is [(name, flavor, host, profile[, socket])]. A server
    without a socket is placed as the emulated source places a host's
    servers: in UUID order, on alternate sockets (two sockets of four
    CPUs). Its figures are its profile's beside its socket's other
    server (:data:`SYSTEM_FIGURES`). Watcher's model knows no flavor (its
    instance element has none) nor image: only the agents' reports carry
    them.
    """
    rank = {}
    for host in {s[2] for s in servers}:
        unplaced = sorted(uid(s[0]) for s in servers
                          if s[2] == host and len(s) < 5)
        rank.update((u, k) for k, u in enumerate(unplaced))
    placed = {}
    for server in servers:
        name, flavor, host, profile = server[:4]
        socket = server[4] if len(server) > 4 else rank[uid(name)] % 2
        slot = sum(1 for p in placed.values() if p[:2] == (host, socket))
        placed[name] = (host, socket, slot, flavor, profile)
    hosts = sorted({p[0] for p in placed.values()})
    records = {h: [] for h in hosts}
    inventory = []
    for name, (host, socket, slot, flavor, profile) in placed.items():
        beside = [p[4] for n, p in placed.items() if n != name
                  and p[:2] == (host, socket)]
        misses, mpki, mf, ipc = SYSTEM_FIGURES[
            (profile, beside[0] if beside else profile)]
        records[host].append(dataclasses.replace(
            record(name, misses, socket=socket, vcpus=vcpus,
                   memory_mib=memory_mib),
            flavor=flavor, image_id=image_id,
            vcpu_cpus=NODE_CPUS[socket][slot:slot + vcpus],
            metrics=report.Metrics(ipc=ipc, mpki=mpki, mf=mf,
                                   llc_misses_per_s=misses, cpu_util=1.0),
            merlin_class=classify.merlin_class(mpki=mpki, mf=mf)))
        inventory.append(reportview.InstanceInventory(
            uid(name), host, vcpus, memory_mib, disk_gb=1))
    reports = {h: host_report(h, now - 5, records[h]) for h in hosts}
    return reports, reportview.Inventory(
        tuple(reportview.HostInventory(h, 8, 16384, disk_gb_total=200,
                                       cpu_allocation_ratio=4.0)
              for h in hosts),
        tuple(inventory))

"""What Merlin's policies read from a view: needs, free cores, node MPKI.

* an instance *needs CPU* when its CPU use over its allocation
  (``cpu_util / cpu_quota``) is above Merlin's 0.8 (section 3.4) and it is
  capped (quota < 1): it could use more than it is given;
* a NUMA node *needs MC/IC relief* when the summed L3 MPKI of the
  instances running there is over 100 (section 3.4);
* a socket's *free cores* are its CPUs minus the cores allocated to the
  instances there (vCPUs x quota).
"""

from contention import classify


def allocated(inst):
    return inst.vcpus * (inst.cpu_quota if inst.cpu_quota is not None
                         else 1.0)


def free_cores(view, host):
    """{socket id: CPUs not allocated} of a host."""
    hv = view.host(host)
    free = {s.id: float(s.cpus) for s in hv.sockets}
    for inst in view.instances_on(host):
        if inst.socket in free:
            free[inst.socket] -= allocated(inst)
    return free


def needs_cpu(inst, th=classify.DEFAULT_THRESHOLDS):
    quota = inst.cpu_quota if inst.cpu_quota is not None else 1.0
    if inst.cpu_util is None or quota >= 1.0 or not inst.movable:
        return False
    return inst.cpu_util / quota > th.cpu_needs_more


def node_mpki(view, host):
    """{node: summed MPKI of the instances running there}."""
    sums = {}
    for inst in view.instances_on(host):
        if inst.node is not None and inst.mpki is not None:
            sums[inst.node] = sums.get(inst.node, 0.0) + inst.mpki
    return sums


def pressured_nodes(view, host, th=classify.DEFAULT_THRESHOLDS):
    return sorted(n for n, s in node_mpki(view, host).items()
                  if classify.node_needs_mc_ic_relief(s, th))


def socket_of_node(view, host, node):
    for socket in view.host(host).sockets:
        if node in socket.nodes:
            return socket.id
    return None


def one_more_core(inst):
    """The quota giving ``inst`` one more core (capped at 1)."""
    quota = inst.cpu_quota if inst.cpu_quota is not None else 1.0
    return min(1.0, quota + 1.0 / inst.vcpus)


def update(view, uuid, **changes):
    """The view with one instance's fields changed (e.g. after a quota)."""
    import dataclasses
    return dataclasses.replace(view, instances=tuple(
        dataclasses.replace(i, **changes) if i.uuid == uuid else i
        for i in view.instances))


def node_of_socket(view, host, socket):
    for s in view.host(host).sockets:
        if s.id == socket:
            return s.nodes[0] if s.nodes else None
    return None

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
from contention.swap import quota


# Merlin's CPU rules live in the core, where our strategies use them too.
allocated = quota.allocated
free_cores = quota.free_cores
needs_cpu = quota.needs_cpu
one_more_core = quota.one_more_core
mc_ic_sensitive = quota.mc_ic_sensitive


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

"""What Merlin's policies read from a view: needs, free cores, node MPKI.

* an instance *needs CPU* when its CPU use over its allocation
  (``cpu_util / cpu_quota``) is above Merlin's 0.8 (section 3.4) and it is
  capped (quota < 1): it could use more than it is given;
* a NUMA node *needs MC/IC relief* when the summed L3 MPKI of the
  instances running there is over 100 (section 3.4);
* an instance *needs cache* when its class moved down Figure 3's grid
  since the previous audit (its Memory Factor level rose: more of its
  accesses reach memory with no change in what it asks of its L2) and
  it was cache-sensitive before the move (section 3.4: "Upon detecting
  such a transition, Merlin attempts to re-allocate cache shares for
  cache-sensitive applications"; section 5.2.2: every policy then frees
  cache for it by acting on a co-runner of its node);
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


def cpu_sensitive(inst, th=classify.DEFAULT_THRESHOLDS):
    """Using over 0.8 of its allocation, capped or not (section 3.4).

    Unlike :func:`needs_cpu` an uncapped instance counts: capping it
    would take CPU it uses.
    """
    if inst.cpu_util is None:
        return False
    return bool(classify.cpu_sensitivity(
        inst.cpu_util / quota.quota(inst), th))


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


def classes(view):
    """{uuid: Merlin class} of the view's measured instances.

    What a policy keeps from one audit to the next to see transitions.
    """
    return {i.uuid: i.merlin_class for i in view.instances
            if i.merlin_class is not None}


def cache_needs(view, previous):
    """{(host, node): frozenset of uuids} of the instances needing cache.

    ``previous`` is :func:`classes` of the last audit's view. An instance
    needs cache when its class moved down since then (a higher MF level)
    and its previous class was cache-sensitive
    (:func:`contention.classify.resource_sensitivities`); States 7 and 8,
    already at the bottom, cannot move down (section 3.4).
    """
    needs = {}
    for inst in view.instances:
        before = previous.get(inst.uuid)
        move = classify.transition(before, inst.merlin_class)
        if (move is None or not move.down or inst.node is None
                or classify.CACHE not in classify.resource_sensitivities(
                    before)):
            continue
        key = (inst.host, inst.node)
        needs[key] = needs.get(key, frozenset()) | {inst.uuid}
    return needs


class CacheNeeds:
    """:func:`cache_needs` audit after audit: remembers the last classes.

    Call it with each audit's view; a policy makes a new one when it is
    bound to a simulator.
    """

    def __init__(self):
        self._classes = {}

    def __call__(self, view):
        needs = cache_needs(view, self._classes)
        self._classes = classes(view)
        return needs


def relief_nodes(view, host, needs, th=classify.DEFAULT_THRESHOLDS):
    """``[(node, needers)]``: the host's nodes a Merlin policy relieves.

    A node over the MPKI trigger is relieved by acting on any instance
    there (``needers`` empty); a node where instances need cache
    (:func:`cache_needs`) by acting on a co-runner, never on the
    ``needers`` themselves.
    """
    nodes = {n: frozenset() for n in pressured_nodes(view, host, th)}
    for (h, node), uuids in needs.items():
        if h == host:
            nodes.setdefault(node, uuids)
    return sorted(nodes.items())


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

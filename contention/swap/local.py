"""Phase: Ahn et al.'s local phase, re-dealing each host's VMs over its sockets.

Algorithm 1 step 1: on every host, sort the VMs by LLC misses and deal
them over the sockets (the shared-cache domains) so that per-socket
misses are even: the largest to the first socket, the second largest to
the second, then the smallest to the first, and so on (Zhuravlev et
al.'s method). Merlin's cost and hurt checks decide whether a host's
re-deal runs.
"""

import collections
import itertools
import math

from contention import classify
from contention import cluster
from contention.swap import arbitration
from contention.swap import feasibility
from contention.swap import measure


def phase(state, params):
    """``(actions, skipped)``: the re-pins, applied to ``state``."""
    if not params.local_phase:
        return [], []
    view = state.final_view() if state.moved else state.view
    actions, skipped = local_phase(view, params, state.thresholds)
    for action in actions:
        state.apply(action)
    return actions, skipped


def local_phase(view, params, thresholds=classify.DEFAULT_THRESHOLDS):
    """``(actions, skipped)``: the re-pins of every host of ``view``.

    ``thresholds``: the operator's, which :func:`measure.sensitivity`
    reads.
    """
    skipped = []
    by_host = collections.defaultdict(list)
    for inst in view.instances:
        by_host[inst.host].append(inst)
    actions = []
    for host in view.hosts:
        if not host.enabled or len(host.sockets) < 2:
            continue
        fixed, free = [], []
        for inst in by_host.get(host.name, ()):
            reason = None
            if not inst.movable:
                reason = None  # reported by the global phase
            elif inst.llc_misses_per_s is None:
                reason = None
            elif feasibility.numa_bound(inst):
                reason = 'pinned: %s' % ('NUMA topology'
                                         if inst.has_numa_topology
                                         else 'dedicated CPUs')
            elif arbitration.in_cooldown(inst, view.now, params.cooldown_s):
                reason = None
            else:
                free.append(inst)
                continue
            if reason:
                skipped.append(cluster.Skipped(inst.uuid, reason))
            fixed.append(inst)
        if len(free) < 2:
            continue
        socket_ids = [s.id for s in host.sockets]
        groups = deal(free, len(socket_ids))
        mapping = _best_mapping(groups, socket_ids)
        target = {}
        for group, socket in zip(groups, mapping):
            for inst in group:
                target[inst.uuid] = socket

        def loads(where):
            result = {s: 0.0 for s in socket_ids}
            for inst in fixed + free:
                socket = where(inst)
                if socket in result:
                    result[socket] += measure.misses(inst)
                else:
                    for s in socket_ids:
                        result[s] += measure.misses(inst) / len(socket_ids)
            return result

        known = {}

        def contention(where):
            groups = collections.defaultdict(list)
            for inst in fixed + free:
                groups[where(inst)].append(inst)
            return sum(measure.pressure(g, thresholds, known)
                       for s, g in groups.items()
                       if s is not None)
        before = loads(lambda i: i.socket)
        after = loads(lambda i: target.get(i.uuid, i.socket))
        reduction = ((max(before.values()) - min(before.values()))
                     - (max(after.values()) - min(after.values())))
        if reduction <= 0:
            if any(target[i.uuid] != i.socket for i in free):
                skipped.append(cluster.Skipped(
                    host.name, 'local_no_gain: the sockets are as even as '
                    'dealing makes them'))
            continue
        # Merlin section 3.3: moving memory is the costliest local
        # reconfiguration; a re-deal whose memory moves cost more than the
        # reduction they buy is not worth it (the same price per GiB as a
        # live migration's).
        cost = arbitration.migration_cost(
            [i for i in free if target[i.uuid] != i.socket
             and feasibility.memory_follows(i, params)], params.migration_cost_per_gib)
        if reduction < cost:
            skipped.append(cluster.Skipped(
                host.name, 'not_worth_it: re-dealing reduces the sockets\' '
                'difference by %.3g misses/s but moves memory costing %.3g'
                % (reduction, cost)))
            continue
        # Even misses are not less contention when the sensitive instances
        # end up beside the heavy ones (Merlin section 3.4): the re-deal
        # must lower the predicted contention by more than it costs,
        # counting the misses it sends to remote memory as the NUMA
        # repair counts those it brings home (one rule for both phases,
        # so the repair does not undo a re-deal that the next re-deal
        # would make again).
        node_socket = measure.node_sockets(host)
        sent_remote = math.fsum(
            _remote_misses(i, target[i.uuid], node_socket, params)
            - _remote_misses(i, i.socket, node_socket, params)
            for i in free if target[i.uuid] != i.socket)
        gain = (contention(lambda i: i.socket)
                - contention(lambda i: target.get(i.uuid, i.socket))
                - sent_remote)
        if gain <= cost:
            skipped.append(cluster.Skipped(
                host.name, 'no_predicted_gain: re-dealing evens the '
                'sockets\' misses but changes the predicted contention by '
                '%.3g misses/s, not more than its cost %.3g'
                % (-gain, cost)))
            continue
        # A socket may not end with more vCPUs than CPUs unless it already
        # had them (and then not more): time-sharing CPUs slows every
        # instance on the socket, which no LLC balance repays.
        over = []
        for sock in host.sockets:
            vcpus = sum(i.vcpus for i in fixed + free
                        if target.get(i.uuid, i.socket) == sock.id)
            vcpus_before = sum(i.vcpus for i in fixed + free
                               if i.socket == sock.id)
            if vcpus > max(sock.cpus, vcpus_before):
                over.append(sock.id)
        if over:
            skipped.append(cluster.Skipped(
                host.name, 'local_capacity: socket(s) %s would end with more '
                'vCPUs than CPUs' % ', '.join(map(str, over))))
            continue
        for inst in sorted(free, key=lambda i: i.uuid):
            if target[inst.uuid] != inst.socket:
                actions.append(cluster.Repin(
                    inst.uuid, host.name, target[inst.uuid],
                    move_memory=feasibility.memory_follows(inst, params)))
    return actions, skipped


def _remote_misses(inst, socket, node_socket, params):
    """``inst``'s LLC misses/s reaching remote memory once on ``socket``.

    A re-pin takes the memory along where :func:`feasibility.memory_follows`
    says so; otherwise the memory stays on its node's socket
    (``node_socket``: the host's {node: socket}) and
    :func:`measure.remote_fraction` of the misses go there, as the NUMA
    repair counts them (:meth:`.state.State.remote_misses`).
    """
    if inst.socket is None or (socket != inst.socket
                               and feasibility.memory_follows(inst, params)):
        return 0.0
    mem = node_socket.get(inst.memory_node, inst.socket)
    return measure.misses(inst) * measure.remote_fraction(inst, socket, mem)


def deal(instances, n_groups):
    """Ahn's / Zhuravlev's sort-and-alternate dealing into n_groups.

    Sorted by LLC misses, largest first; the n largest go to groups
    0..n-1, then the n smallest to groups 0..n-1, then the next n largest,
    and so on. Returns a list of lists of instances.
    """
    ordered = sorted(instances, key=lambda i: (-measure.misses(i), i.uuid))
    groups = [[] for _ in range(n_groups)]
    lo, hi = 0, len(ordered)
    from_top = True
    while lo < hi:
        if from_top:
            take = ordered[lo:min(lo + n_groups, hi)]
            lo += len(take)
        else:
            take = ordered[max(hi - n_groups, lo):hi][::-1]
            hi -= len(take)
        for index, inst in enumerate(take):
            groups[index].append(inst)
        from_top = not from_top
    return groups


def _best_mapping(groups, socket_ids):
    """Group -> socket assignment keeping most instances where they are."""
    def kept(perm):
        return sum(1 for g, s in zip(groups, perm) for i in g
                   if i.socket == s)
    if len(socket_ids) <= 6:
        return max(itertools.permutations(socket_ids),
                   key=lambda p: (kept(p), [-s for s in p]))
    free = list(socket_ids)
    mapping = []
    for group in groups:
        best = max(free, key=lambda s: (sum(1 for i in group
                                            if i.socket == s), -s))
        free.remove(best)
        mapping.append(best)
    return tuple(mapping)

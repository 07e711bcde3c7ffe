"""Undo our moves where an instance measures slower than before them.

Every other rule of the audit judges a plan by an estimate before it
runs; the estimates miss what they do not model (a service near
saturation, whose response time a 1 % slower instruction stream
stretches by 20 %; a neighbour's NUMA repair that makes it miss more).
This rule judges by measurement after the plan has run, as Merlin's
repercussion check does (Tembey et al., section 3.5: the co-runners of
a move are watched for a repercussion interval, and a reconfiguration
that hurt one is arbitrated again), and answers with the one move whose
outcome is known: back to where the instance was measured.

For each host our moves landed on within the cool-down (a migration
onto it, a re-pin on it; the move log's), each instance on it is
compared with the last time it was seen before the first of those moves
(:meth:`MoveLog.seen_before`). Its measured loss (:func:`loss`) is what
its instructions per cycle lost; for a service answering requests
(:func:`measure.serving`) it is the change of its response time, an
M/M/1 queue of its vCPUs at the utilisation it had, with the work per
request unchanged. Where the loss passes ``rollback_harm`` (by default
a net for a VM made much worse, well above ``max_vm_harm``: see its help
and ``doc/watcher.md``; a service's is the same multiple of
``max_latency_harm``, :func:`net`), our moves on that host
within the cool-down are undone, newest first (all of them: which one
hurt is not measured). The cool-down moves an instance in one plan at
most, so its moves within it are one episode (a rotation or a memory
move re-pins it twice), undone as one: back to where it was seen before
the first. An instance that migrated goes back to its source host and
socket (with one that migrated the other way between the two hosts, as
a swap), one re-pinned goes back to the sockets its vCPUs and memory
were seen on (memory moves only with the vCPUs, so memory that moved
alone goes back with them, and they return alone). The way back is
marked ``undo`` (``cluster.Migrate.undo``, ``Repin.undo``) and the move
log records it as such (:func:`movelog.is_undo`): an instance the
roll-back moved is never undone, nothing is undone twice, and nothing
is undone where its instance has left the host, a move did not end as
planned, or where it was is unknown.

The undo is judged by feasibility only (:func:`harm.feasible_order`, the
rules Nova and the agent enforce as each leg runs): it goes back to a
measured state, which needs no estimate. While the audit undoes, it
plans nothing else; the next audits leave the host alone until the
cool-down has passed (:func:`hold`), or they would plan the re-deal that
was undone again with the instances that did not move.

A host is judged only by a measurement interval that began after the
copies of our moves on it had ended (:attr:`movelog.Move.settled`;
``HostView.measured_since``): a live migration slows the instance and
its co-runners on both hosts while it copies, for minutes where the
instance is large, and a measurement over that time is of the copy, not
of the new placement (``rollback_wait`` until then; a view that does not
say when it was measured is judged as it is).

Limitations: a measurement of one interval against one earlier; a
phase change of the instance's own demand in between or counter noise
looks the same as harm (a false alarm costs the moves it undoes, and
each at most once per cool-down). The M/M/1 queue is steeper than a
service with many workers (M/M/c), the cautious side. The hold lasts
one cool-down; after it the harm check keeps an undone move from being
proposed again as long as the move log remembers it (``rolled_back``,
:func:`movelog.undone`), or the audits would plan it and undo it every
two cool-downs. Moves of other instances onto the same host are not
remembered: a different plan may still be tried, and undone, once.
"""

import dataclasses

from contention import cluster
from contention.swap import harm
from contention.swap import measure
from contention.swap import movelog

REASONS = {
    'rollback_kept': 'an instance measures slower than before our moves on '
                     'its host, but none of them can be undone',
    'rollback_hold': 'our moves on the host were undone less than cooldown '
                     'seconds ago; it takes no new move until then',
    'rollback_wait': 'an instance measures slower than before our moves on '
                     'its host, over an interval a copy of those moves ran '
                     'in; it is judged by a later one',
}


def loss(before, now, serving):
    """Measured relative loss of performance from ``before`` to ``now``.

    ``before`` and ``now`` have ``ipc`` and ``cpu_util`` (a
    :class:`contention.swap.movelog.Seen` or an InstanceView); None when
    either lacks the instruction rate. A throughput code loses what its
    IPC lost; a service keeps its request rate, so its utilisation grows
    as its IPC falls and its response time, that of an M/M/1 queue,
    as 1 / (1 - utilisation): performance (response time alone over
    response time) changes by ``r (1 - u / r) / (1 - u)`` for an IPC
    ratio ``r`` at utilisation ``u``, and a service pushed to saturation
    has lost everything.
    """
    if not (before.ipc and now.ipc and before.ipc > 0):
        return None
    ratio = now.ipc / before.ipc
    util = before.cpu_util
    if not serving or util is None or not 0 <= util < 1:
        return 1.0 - ratio
    busy = util / ratio
    if busy >= 1.0:
        return 1.0
    return 1.0 - ratio * (1.0 - busy) / (1.0 - util)


def plan(view, params, move_log, start):
    """(actions, skipped, state): the undo of our moves that measured harm.

    ``start`` is an untouched :class:`contention.swap.state.State` of
    ``view``; it is read, never changed; ``state`` is a fork of it with
    the undo applied (None when the rule is off). No action where
    ``rollback_harm`` is 0, there is no move log or no cool-down, or
    nobody lost more than ``rollback_harm``.
    """
    if not params.rollback_harm or move_log is None or not params.cooldown_s:
        return (), (), None
    since = view.now - params.cooldown_s
    moves = move_log.moves_since(since)
    episodes = _episodes(moves)
    landed = {}
    for move in moves:
        if move.uuid in episodes:
            landed.setdefault(move.dest_host, []).append(move.uuid)
    actions, skipped = [], []
    state = start.fork()
    since_of = {h.name: h.measured_since for h in view.hosts}
    for host in sorted(landed):
        first = min(episodes[u][0].moved_at for u in landed[host])
        harmed = _harmed(view.instances_on(host), move_log, first, since,
                         params)
        if not harmed:
            continue
        copying = _copy_end(moves, host)
        if since_of.get(host) is not None and since_of[host] < copying:
            skipped.append(cluster.Skipped(
                harmed[0][0], 'rollback_wait: %s lost %.0f %% since our '
                'first move on %s, measured while a copy of our moves '
                'there ran; judged by an interval after it'
                % (harmed[0][0], 100 * harmed[0][1], host)))
            continue
        # Newest first: the way back retraces the way there.
        undo = list(dict.fromkeys(reversed(landed[host])))
        back = _undo_actions(state, undo, episodes, move_log, since)
        kept = _fitting(view, state, back)
        if not kept:
            skipped.append(cluster.Skipped(
                harmed[0][0], 'rollback_kept: %s lost %.0f %% since our '
                'first move on %s; no move there can be undone'
                % (harmed[0][0], 100 * harmed[0][1], host)))
            continue
        actions.extend(kept)
    return tuple(actions), tuple(skipped), state


def _episodes(moves):
    """{uuid: its moves, oldest first} that an undo may take back.

    The cool-down moves an instance in one plan at most (a rotation or a
    memory move re-pins it twice there), so its moves within it are one
    episode, undone as one: back to where it was seen before the first.
    An instance the roll-back moved already (an undo is never undone) or
    one whose move did not end as planned (where it is may be unknown)
    has none.
    """
    by_uuid = {}
    for move in moves:
        by_uuid.setdefault(move.uuid, []).append(move)
    return {uuid: own for uuid, own in by_uuid.items()
            if not any(movelog.is_undo(m) or movelog.failed(m)
                       for m in own)}


def _copy_end(moves, host):
    """When the copies of ``moves`` touching ``host`` ended (or will).

    A live migration copies on its source and its destination, slowing
    the instance and its co-runners on both (Merlin section 5.3's page
    copies); a measurement over that time is of the copy, not of the
    placement the moves made.
    """
    return max((m.settled for m in moves
                if host in (m.source_host, m.dest_host)
                and not movelog.failed(m)), default=float('-inf'))


def _fitting(view, state, back):
    """``back``'s actions that fit, in order, applied on ``state``.

    All together first: a re-deal of a host's sockets (a cycle of
    re-pins on a 4-socket host) fits only once all of it has run; else
    each exchange or action on its own.
    """
    if not back:
        return []
    order, _ = harm.feasible_order(state, tuple(back))
    if order is not None:
        return list(order)
    kept = []
    for group in harm.action_groups(view, back):
        order, _ = harm.feasible_order(state, group)
        if order is not None:
            kept.extend(order)
    return kept


def hold(view, move_log, params):
    """``view`` with the hosts an undo ran on left alone (disabled).

    The hosts of the roll-back's moves within the cool-down take no new
    move until it has passed, or the next audit would plan the re-deal
    that was undone again, with the other instances. After it, the harm
    check still refuses the undone moves themselves (``rolled_back``).
    """
    if not params.rollback_harm or move_log is None or not params.cooldown_s:
        return view
    held = set()
    for move in move_log.moves_since(view.now - params.cooldown_s):
        if movelog.is_undo(move) and not movelog.failed(move):
            held.update((move.source_host, move.dest_host))
    if not held:
        return view
    hosts = tuple(
        dataclasses.replace(h, enabled=False, skip_reason=(
            'rollback_hold: our moves on it were undone less than '
            'cooldown seconds ago')) if h.name in held and h.enabled else h
        for h in view.hosts)
    return cluster.ClusterView(hosts, view.instances, now=view.now)


def net(params, serving):
    """The loss past which an instance's host is rolled back.

    ``rollback_harm``; for a service answering requests
    (:func:`measure.serving`), the same multiple of its own harm bound
    (``rollback_harm * max_latency_harm / max_vm_harm``): its response
    time is what its bound protects, and a net as many times looser than
    that bound as a batch code's is than ``max_vm_harm`` catches a
    service made much worse by the measure it was planned under.
    """
    if not serving or not params.max_vm_harm:
        return params.rollback_harm
    return (params.rollback_harm * params.max_latency_harm
            / params.max_vm_harm)


def _harmed(instances, move_log, first, since, params):
    """[(uuid, loss)] of ``instances`` (one host's) past their :func:`net`.

    Worst first.
    """
    seen = move_log.seen_before({inst.uuid: (first, since)
                                 for inst in instances})
    found = [(uuid, lost) for uuid, lost, serving in _losses(instances, seen)
             if lost > net(params, serving)]
    return sorted(found, key=lambda x: -x[1])


def _losses(instances, seen):
    """[(uuid, :func:`loss`, serving)] of ``instances`` against ``seen``.

    ``seen`` ({uuid: :class:`movelog.Seen`}) is each as last seen before
    our moves; those not in it, or without an instruction rate, are left
    out.
    """
    found = []
    for inst in instances:
        before = seen.get(inst.uuid)
        if before is None:
            continue
        serving = measure.serving(inst)
        lost = loss(before, inst, serving)
        if lost is not None:
            found.append((inst.uuid, lost, serving))
    return found


def spent(view, params, move_log):
    """{uuid: measured loss} of the harm bound our moves already used.

    An instance on a host our moves landed on within the cool-down, as
    the roll-back measures it (since before the first of them), where it
    lost. Within the cool-down the harm check's bound is one budget, not
    one per audit: plans each within ``max_vm_harm`` added up on
    generated clusters to a VM 8-14 % slower, under the roll-back's net
    (:func:`contention.swap.harm.check` with ``spent``; simulated).
    Hosts measured while a copy of our moves ran are left out, as the
    roll-back leaves them (``rollback_wait``): that loss is the copy's.
    Empty without a move log or a cool-down; one read of the log.
    """
    if move_log is None or not params.cooldown_s:
        return {}
    since = view.now - params.cooldown_s
    moves = move_log.moves_since(since)
    first = {}
    for move in moves:
        if not movelog.failed(move):
            first[move.dest_host] = min(
                first.get(move.dest_host, move.moved_at), move.moved_at)
    since_of = {h.name: h.measured_since for h in view.hosts}
    instances = [
        inst for host in sorted(first)
        if since_of.get(host) is None
        or since_of[host] >= _copy_end(moves, host)
        for inst in view.instances_on(host)]
    seen = move_log.seen_before({inst.uuid: (first[inst.host], since)
                                 for inst in instances})
    return {uuid: lost for uuid, lost, _ in _losses(instances, seen)
            if lost > 0}


def _back(state, episode, move_log, since):
    """(instance now, host, socket it ran on, socket of its memory), or None.

    Where ``episode``'s instance was seen before its first move. None
    where it is no longer where the last move put it, or where it was
    before is not known.
    """
    first, last = episode[0], episode[-1]
    inst = state.inst.get(first.uuid)
    if inst is None or inst.host != last.dest_host:
        return None
    before = move_log.seen_before(
        {first.uuid: (first.moved_at, since)}).get(first.uuid)
    if before is None or first.source_host not in state.hosts:
        return None
    host = first.source_host
    return (inst, host, state.node_socket(host, before.node),
            state.node_socket(host, before.memory_node))


def _undo_actions(state, undo, episodes, move_log, since):
    """The actions taking ``undo``'s instances back, in that order.

    An instance that migrated goes back with one that migrated the other
    way between the same two hosts, if any (a swap's other leg), as a
    swap; one re-pinned on its host goes back to its sockets.
    """
    actions, done = [], set()
    for uuid in undo:
        back = None if uuid in done else _back(state, episodes[uuid],
                                               move_log, since)
        if back is None:
            continue
        inst, host, socket, memory = back
        done.add(uuid)
        if host == inst.host:
            actions.extend(_repins_back(state, inst, socket, memory))
            continue
        leg = cluster.Migrate(uuid, inst.host, host, socket, undo=True)
        partner = _partner(state, episodes, done, inst.host, host,
                           move_log, since)
        if partner is None:
            actions.append(leg)
            continue
        done.add(partner.instance)
        actions.append(cluster.Swap(leg, partner))
    return actions


def _partner(state, episodes, done, here, there, move_log, since):
    """The way back from ``there`` to ``here`` of another instance, or None.

    An instance not yet taken back that is now on ``there`` and came
    from ``here`` (a swap's other leg), as a marked Migrate.
    """
    for uuid in sorted(episodes):
        episode = episodes[uuid]
        if (uuid in done or episode[0].source_host != here
                or episode[-1].dest_host != there):
            continue
        back = _back(state, episode, move_log, since)
        if back is not None:
            return cluster.Migrate(uuid, there, here, back[2], undo=True)
    return None


def _repins_back(state, inst, socket, memory):
    """Re-pins putting ``inst``'s vCPUs on ``socket``, memory on ``memory``.

    A re-pin moves the memory only to the socket the vCPUs go to, so
    memory that went elsewhere goes back with the vCPUs, which then
    return alone.
    """
    if socket is None:
        return []
    repins = []
    if memory is not None and memory != state.memory_socket(inst):
        repins.append(cluster.Repin(inst.uuid, inst.host, memory,
                                    move_memory=True, undo=True))
        if memory != socket:
            repins.append(cluster.Repin(inst.uuid, inst.host, socket,
                                        undo=True))
    elif socket != inst.socket:
        repins.append(cluster.Repin(inst.uuid, inst.host, socket,
                                    undo=True))
    return repins

"""Phase: repair NUMA affinity within each host (re-pins, no migration).

Ahn et al.'s "local NUMA-aware scheduling" (sections 3 and 4.2) in
Merlin's cost order (section 3.3); see :func:`numa_repair`.
"""

from contention import cluster
from contention.swap import arbitration
from contention.swap import feasibility
from contention.swap import measure


def phase(state, params):
    """``(actions, skipped)``: :func:`numa_repair` as an audit phase.

    Both algorithms repair every remote instance. Ahn et al.'s Algorithm
    1 (host unit) used to repair only instances whose memory its local
    phase takes along, leaving the others remote whatever the local phase
    then did; on the W-W starts of generated clusters that kept
    cache_aware_swap at a median of 86 % and a 5th percentile of 4 % of
    the best gain that keeps issue 19's bounds, where repairing them all
    reached 100 % and 33 % with no cluster harmed (``doc/watcher.md``,
    simulated). The local phase prices the remote misses its re-pins
    leave behind (:func:`.local.local_phase`), so it does not leave an
    instance remote that this phase would then bring back.
    """
    if not params.numa_repair:
        return [], []
    skipped = []
    actions = numa_repair(state, params, skipped)
    return actions, skipped


def numa_repair(state, params, skipped):
    """Repair NUMA affinity host by host; Repin actions, applied to state.

    Ahn et al. section 2.1: "If an application is running on a socket
    different from the socket in which its memory pages reside, the cost
    of LLC misses will increase due to the NUMA effect", and their W-W
    worst case (section 2.2) leaves every VM's memory on the remote
    socket; their NUMA-aware scheduler (section 3, Algorithm 2) keeps
    affinity only for the VMs it swaps, and they name "local NUMA-aware
    scheduling" within a node, by page migration, as the way to repair it
    without live migrations (sections 3 and 4.2). For each instance whose
    memory is mostly on another socket than its vCPUs (most LLC misses
    first), the cheapest fix that fits and gains more than it costs, in
    Merlin's cost order (section 3.3: a local vCPU move before a memory
    migration):

    1. re-pin its vCPUs to its memory's socket (no memory moves), if that
       socket has CPUs for them;
    2. else exchange sockets with an instance there whose memory is on
       this one (both become local, the vCPU counts stay), or rotate a
       cycle of three or four such instances (each one's memory on the
       next one's socket, the last one's on the first's), which no pair
       closes, by consecutive exchanges (:func:`_cycles`);
       else, where no re-pin of those fits, exchange a set of such
       instances between the two sockets whose vCPUs balance (one of 16
       vCPUs for four of 4: :func:`_exchanges`), which no pair of unequal
       flavors closes on full sockets;
    3. else move its memory to its vCPUs' node (libvirt numatune, the
       kernel migrates the pages), if the node has room, holds the
       memory of no instance running on another socket
       (:meth:`.state.State.remote_tenant`), and the remote accesses
       removed (its LLC misses/s x remote fraction) exceed the memory's
       cost (``migration_cost_per_gib``).

    Instances moved within ``cooldown_s``, without telemetry, or with a
    NUMA topology or dedicated CPUs (Nova binds their memory) are left.
    """
    actions = []
    for host in state.view.hosts:
        if not host.enabled or len(host.sockets) < 2:
            continue
        remote = []
        for inst in state.on_host[host.name].values():
            mem_socket, ratio = state.remote_share(inst)
            if (mem_socket is None or not inst.movable
                    or inst.llc_misses_per_s is None or feasibility.numa_bound(inst)
                    or arbitration.in_cooldown(inst, state.now,
                                               params.cooldown_s)):
                continue
            remote.append((inst, mem_socket, ratio))
        remote.sort(key=lambda r: (-measure.misses(r[0]) * r[2], r[0].uuid))
        candidates = {r[0].uuid for r in remote}
        done = set()
        for inst, mem_socket, ratio in remote:
            if inst.uuid in done:
                continue
            options = []
            flip = [(inst, mem_socket, False, ratio)]
            options.append(flip)
            left = [r for r in remote
                    if r[0].uuid not in done and r[0].uuid != inst.uuid]
            for other, other_socket, other_ratio in left:
                if (other.socket == mem_socket
                        and other_socket == inst.socket):
                    options.append(flip + [(other, inst.socket, False,
                                            other_ratio)])
            options.extend(_cycles((inst, mem_socket, ratio), left))
            options.append([(inst, inst.socket, True, ratio)])
            best = _best(state, options, params, candidates)
            moves_memory = best is not None and best[0][0] > 0
            if best is None or moves_memory:
                best = _best(state, _exchanges((inst, mem_socket, ratio),
                                               left),
                             params, candidates, best)
            if best is None:
                skipped.append(cluster.Skipped(
                    inst.uuid, 'numa_remote: %.0f %% of its memory is on '
                    'socket %s, its vCPUs on socket %s; no re-pin fits, and '
                    'moving %.0f MiB would hurt another instance or cost '
                    'more than the %.3g remote accesses/s it removes' % (
                        100 * ratio, mem_socket, inst.socket,
                        inst.memory_mib * ratio, measure.misses(inst) * ratio)))
                continue
            for moved, socket, move_memory, _ratio in best[1]:
                done.add(moved.uuid)
                action = cluster.Repin(moved.uuid, host.name, socket,
                                       move_memory=move_memory)
                state.apply(action)
                actions.append(action)
    return actions


def _best(state, options, params, candidates, best=None):
    """((cost, -net gain), moves) of the best of ``options``, or ``best``.

    Each option is judged by :func:`_try_repair`; one that does not fit,
    harms, or gains no more than the memory it moves costs is left out.
    The cheapest wins (a re-pin moves no memory), then the largest net
    gain.
    """
    for moves in options:
        tried = _try_repair(state, moves, params, candidates)
        if tried is None:
            continue
        gain, mib = tried
        cost = mib / 1024.0 * params.migration_cost_per_gib
        if gain <= cost:
            continue
        key = (cost, -(gain - cost))
        if best is None or key < best[0]:
            best = (key, moves)
    return best


#: The most instances one exchange of sets re-pins (:func:`_exchanges`):
#: one of 32 vCPUs against four of 8 and a fifth to spare.
LARGEST_EXCHANGE = 6


def _exchanges(first, others):
    """An exchange of sets of remote instances whose vCPUs balance.

    ``first`` and ``others`` as in :func:`_cycles`. ``first`` runs on
    socket a with its memory on b; the exchange moves it and instances
    like it (on a, memory on b) to b, and instances on b with their
    memory on a to a, every one onto its memory, with as many vCPUs
    leaving each socket as arrive: a full socket stays full, and no
    socket is left overcommitted once the set has run. On full sockets
    a pair of unequal flavors cannot exchange, and a remote instance
    whose partners are smaller stayed remote while the repairs around it
    re-dealt its co-runners: on a generated cluster (family seed 137,
    gen-small-019, simulated) an 8-vCPU cache-bound VM so left, with two
    4-vCPU partners, lost 5.6 %, past the harm bound, where exchanging
    it with both repaired all three.

    The sets are filled greedily: while more vCPUs go one way, the side
    that must send some back adds its largest instance that does not
    overshoot the difference (its smallest if all do), in ``others``'
    order (most remote misses first) among equal sizes; at most
    :data:`LARGEST_EXCHANGE` instances. [] if the sets do not balance.
    The moves run first to last; the harm check replays such a run as
    one step (:func:`.harm.action_groups`).
    """
    inst, there, _ratio = first
    here = inst.socket
    sides = {there: [r for r in others
                     if r[0].socket == there and r[1] == here],
             here: [r for r in others
                    if r[0].socket == here and r[1] == there]}
    if not sides[there]:
        return []
    chosen, into_there = [first], inst.vcpus
    while into_there and len(chosen) < LARGEST_EXCHANGE:
        side = there if into_there > 0 else here
        pool = [r for r in sides[side] if r not in chosen]
        if not pool:
            return []
        need = abs(into_there)
        under = [r for r in pool if r[0].vcpus <= need]
        pick = (max(under, key=lambda r: r[0].vcpus) if under
                else min(pool, key=lambda r: r[0].vcpus))
        chosen.append(pick)
        into_there += pick[0].vcpus if side == here else -pick[0].vcpus
    if into_there or len(chosen) < 3:
        return []
    return [[(r[0], r[1], False, r[2]) for r in chosen]]


#: The most instances a rotation repairs at once (:func:`_cycles`): a
#: cycle through every socket of a 4-socket host.
LONGEST_CYCLE = 4


def _cycles(first, others):
    """Rotations that make a cycle of remote instances local, as moves.

    ``first`` and ``others`` are (instance, memory socket, remote
    fraction) of remote instances on one host. A cycle is ``first`` on
    socket a0 with its memory on a1, an instance on a1 with its memory on
    a2, ..., and the last one's memory on a0; at most
    :data:`LONGEST_CYCLE` instances, each on its own socket. It runs as
    consecutive socket exchanges with the instance that has come to a0:
    each makes the instance arriving from a0 local, and the last makes
    both local. Each step is a plain exchange of two instances, which the
    harm check replays as one step (:func:`.harm.action_groups`), so no
    socket holds both at once; an exchange of unequal vCPU counts is
    judged there like any other. Of the instances that could take one
    place in a cycle (same socket, memory on the same socket) only the
    first of ``others`` is tried, so a host has at most a few rotations
    to judge whatever its size. Only closed cycles are proposed: an
    instance left on a socket that still is not its memory's gains
    nothing for its move, and on generated clusters such half exchanges
    harmed more clusters than closed cycles (``doc/watcher.md``).
    """
    start = first[0].socket
    found = []

    def extend(path):
        last, tried = path[-1], set()
        for other in others:
            if (other[0].socket != last[1] or other[1] in tried
                    or any(other[0].socket == p[0].socket for p in path)):
                continue
            tried.add(other[1])
            if other[1] == start:
                if len(path) >= 2:
                    found.append(path + [other])
            elif len(path) + 1 < LONGEST_CYCLE:
                extend(path + [other])
    extend([first])
    options = []
    for cycle in found:
        moves = [(cycle[0][0], cycle[0][1], False, cycle[0][2])]
        for here in cycle[1:-1]:
            moves.append((here[0], start, False, here[2]))
            moves.append((here[0], here[1], False, here[2]))
        last = cycle[-1]
        moves.append((last[0], start, False, last[2]))
        options.append(moves)
    return options


def _try_repair(state, moves, params, candidates):
    """Net predicted gain and cost of ``moves``, or None if one does not fit.

    Or if it harms a co-runner: no instance on the sockets involved may
    face more co-runner LLC misses than :func:`measure.hurt` allows, the
    rule the harm check applies (:mod:`.harm`), so that of the ways to
    repair an instance the phase takes one the check lets through. The
    host's repair ``candidates`` (repaired already or to be) are not
    judged here: the check spares those the plan repairs while it walks
    the plan and judges where they end with what their repair gives back
    (:meth:`.harm._Walk.harmed_at_end`), so a repair that leaves one of
    them harmed is dropped there, with its reason.

    ``moves`` are (instance, socket, move_memory, remote fraction) on one
    host. The gain is the remote memory accesses removed
    (:meth:`State.remote_misses`: each instance's LLC misses/s times its
    remote fraction; the misses go to DRAM, and to the other socket's)
    plus the change in :func:`measure.pressure` on the sockets involved;
    the cost is the memory moved, priced as the local phase prices it.
    A socket may not end with more vCPUs than CPUs unless it already had
    them (and then not more), as in :func:`local_phase`. Where the
    repair pushes a socket's busy vCPUs further past its physical cores
    (:func:`measure.core_overflow`), the CPU share every instance there
    loses may not exceed the slowdown the repair gives back
    (:func:`_cpu_pays`). The state is left as it was.
    """
    host = moves[0][0].host
    keys = set()
    for inst, socket, _mem, _ratio in moves:
        keys.update({(host, inst.socket), (host, socket)})
    vcpus_before = {k: state.cell_used[k][0] for k in keys}
    overflow_before = {k: state.core_overflow(*k) for k in keys}
    before = state.pressure(keys) + state.remote_misses(keys)
    spared = {m[0].uuid for m in moves} | set(candidates)
    judged = {i.uuid: (i, state.co_load(i))
              for i in state.on_host[host].values()
              if i.uuid not in spared and (host, i.socket) in keys}
    originals = [state.inst[m[0].uuid] for m in moves]
    gain = moved_mib = 0.0
    try:
        for inst, socket, move_memory, ratio in moves:
            state.move(inst.uuid, host, socket, move_memory=move_memory)
            if move_memory:
                moved_mib += inst.memory_mib * ratio
        moved = {m[0].uuid for m in moves}
        for inst, socket, move_memory, _ratio in moves:
            if (move_memory and state.remote_tenant(host, socket, moved)
                    is not None):
                return None
        for key in keys:
            cpus = state.socket_cpus(*key)
            if state.cell_used[key][0] > max(cpus, vcpus_before[key]):
                return None
            if state.cell_free(host, key[1], False)[1] < 0:
                return None
        for uuid, (first, then) in judged.items():
            now = state.inst[uuid]
            if measure.hurt(first, then, state.co_load(now),
                            params.max_vm_harm, params.max_latency_harm,
                            state.typical_load, state.thresholds,
                            own=state.own_load(now)):
                return None
        if not _cpu_pays(state, moves, overflow_before):
            return None
        gain = before - state.pressure(keys) - state.remote_misses(keys)
    finally:
        for inst in reversed(originals):
            state.restore(inst)
    return gain, moved_mib


def _cpu_pays(state, moves, overflow_before):
    """Whether the repair ``moves`` give back more than the CPU they cost.

    The repair's gain counts memory accesses; a vCPU it puts on a socket
    whose cores are busy shares a core with a sibling thread, and every
    instance there gets a smaller share of the CPU it wants, which that
    gain does not see. Both sides as slowdowns, the harm check's
    estimates: given back, each moved instance's remote penalty shed
    (:meth:`State.repair_gain`) times its :func:`measure.
    memory_sensitivity`; lost, for each instance on the touched sockets,
    the fall of its share of the CPU it wants (one minus
    :func:`measure.core_overflow` of its socket, now against its socket's
    in ``overflow_before``; a rise counts as a gain). On a generated
    cluster (seed 89, gen-small-079) a CPU-bound VM re-pinned onto a
    socket whose 64 cores were busy slowed it and its eight co-runners
    by 2.5 % each, the cluster's mean by 0.22 % (simulated).
    """
    now = {key: state.core_overflow(*key) for key in overflow_before}
    if now == overflow_before:
        return True
    was = {}
    for inst, _socket, _mem, _ratio in moves:
        was.setdefault(inst.uuid, inst.socket)
    host = moves[0][0].host
    lost = 0.0
    for inst in state.on_host[host].values():
        if (host, inst.socket) in now:
            then = overflow_before[(host, was.get(inst.uuid, inst.socket))]
            lost += 1.0 - (1.0 - now[(host, inst.socket)]) / (1.0 - then)
    if lost <= 1e-9:
        return True
    given = sum(state.repair_gain(state.inst[inst.uuid], inst)
                * measure.memory_sensitivity(inst)
                for inst, _socket, _mem, _ratio in moves)
    return lost <= given

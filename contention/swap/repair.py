"""Phase: repair NUMA affinity within each host (re-pins, no migration).

Ahn et al.'s "local NUMA-aware scheduling" (sections 3 and 4.2) in
Merlin's cost order (section 3.3); see :func:`numa_repair`.
"""

from contention import cluster
from contention.swap import arbitration
from contention.swap import feasibility
from contention.swap import measure
from contention.swap import state as state_mod


def phase(state, params):
    """``(actions, skipped)``: :func:`numa_repair` as an audit phase.

    In a host-unit audit (Ahn et al.'s Algorithm 1, whose local phase
    leaves a low-MF instance's memory behind on purpose) only instances
    whose memory a local re-pin takes along are repaired.
    """
    if not params.numa_repair:
        return [], []
    skipped = []
    actions = numa_repair(state, params, skipped,
                          memory_following_only=state.unit == state_mod.HOST)
    return actions, skipped


def numa_repair(state, params, skipped, memory_following_only=False):
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
       this one (both become local, the vCPU counts stay);
    3. else move its memory to its vCPUs' node (libvirt numatune, the
       kernel migrates the pages), if the node has room and the remote
       accesses removed (its LLC misses/s x remote fraction) exceed the
       memory's cost (``migration_cost_per_gib``).

    With ``memory_following_only`` only instances whose memory a local
    re-pin would take along (:func:`feasibility.memory_follows`) are repaired: the
    cache-aware local phase leaves the others' memory behind on purpose.
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
                                               params.cooldown_s)
                    or (memory_following_only
                        and not feasibility.memory_follows(inst, params))):
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
            for other, other_socket, other_ratio in remote:
                if (other.uuid not in done and other.uuid != inst.uuid
                        and other.socket == mem_socket
                        and other_socket == inst.socket):
                    options.append(flip + [(other, inst.socket, False,
                                            other_ratio)])
            options.append([(inst, inst.socket, True, ratio)])
            best = None
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
            if best is None:
                skipped.append(cluster.Skipped(
                    inst.uuid, 'numa_remote: %.0f %% of its memory is on '
                    'socket %s, its vCPUs on socket %s; no re-pin fits and '
                    'moving %.0f MiB costs more than the %.3g remote '
                    'accesses/s it removes' % (
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
    them (and then not more), as in :func:`local_phase`. The state is
    left as it was.
    """
    host = moves[0][0].host
    keys = set()
    for inst, socket, _mem, _ratio in moves:
        keys.update({(host, inst.socket), (host, socket)})
    vcpus_before = {k: state.cell_used[k][0] for k in keys}
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
        for key in keys:
            cpus = state.socket_cpus(*key)
            if state.cell_used[key][0] > max(cpus, vcpus_before[key]):
                return None
            if state.cell_free(host, key[1], False)[1] < 0:
                return None
        for uuid, (first, then) in judged.items():
            if measure.hurt(first, then, state.co_load(state.inst[uuid]),
                            params.max_vm_harm, params.max_latency_harm,
                            state.typical_load, state.thresholds):
                return None
        gain = before - state.pressure(keys) - state.remote_misses(keys)
    finally:
        for inst in reversed(originals):
            state.restore(inst)
    return gain, moved_mib

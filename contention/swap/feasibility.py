"""Whether a move may run: capacity, CPU oversubscription, worth.

Beyond Ahn et al.'s papers, a step must fit: each leg's destination must
have the free vCPUs, RAM and disk in the order the legs run (with both
instances on the first destination in between), an instance with a NUMA
topology must fit one NUMA cell there, and no host or socket may end with
more vCPUs than CPUs where it had not. And it must pay: its predicted
drop of contention must exceed its cost by a margin (:func:`assess`),
and, with a model, the model must predict the sockets it touches to
perform better (:func:`mix_gain`). Every function leaves the state as it
found it.
"""

import math

from contention import cluster
from contention.swap import arbitration
from contention.swap import measure
from contention.swap import state as state_mod


def dedicated(inst):
    return inst.cpu_policy == 'dedicated'


def numa_bound(inst):
    return inst.has_numa_topology or dedicated(inst)


def fits_cell(state, inst, host_name, socket):
    cpus, mem = state.cell_free(host_name, socket, dedicated(inst))
    return cpus >= inst.vcpus and mem >= inst.memory_mib


def landing(state, inst, host_name, wanted_socket, exact_socket):
    """(fits, socket) for ``inst`` arriving on ``host_name`` now.

    Host free vCPUs/RAM/disk first; then, for an instance with a NUMA
    topology, a cell that holds it (the wanted one first); with
    ``exact_socket`` (NUMA-aware moves) the wanted socket must hold it;
    with no socket wanted (a host-level one-way move), the
    :func:`roomiest_socket`.
    """
    if inst.host != host_name:
        cpus, mem, disk = state.free(host_name)
        if (cpus < inst.vcpus or mem < inst.memory_mib
                or disk < inst.disk_gb):
            return False, None
    if exact_socket:
        if numa_bound(inst) or wanted_socket is not None:
            cpus, mem = state.cell_free(host_name, wanted_socket,
                                        dedicated(inst))
            if mem < inst.memory_mib or (
                    numa_bound(inst) and cpus < inst.vcpus):
                return False, None
        return True, wanted_socket
    if not numa_bound(inst):
        if wanted_socket is None:
            return roomiest_socket(state, inst, host_name)
        return True, wanted_socket
    sockets = [s.id for s in state.hosts[host_name].sockets]
    if wanted_socket in sockets:
        sockets.remove(wanted_socket)
        sockets.insert(0, wanted_socket)
    for socket in sockets:
        if fits_cell(state, inst, host_name, socket):
            return True, socket
    return False, None


def roomiest_socket(state, inst, host_name):
    """(fits, socket) for ``inst`` migrating to ``host_name``, no socket named.

    The socket of ``host_name`` with the most free vCPUs among those with
    room for ``inst``'s memory (the lowest id on a tie), and the plan
    names it: the destination's agent re-pins the instance there once it
    has landed. Unnamed, a guest without a NUMA topology floats over the
    host's CPUs, and where no socket has free cores for all its vCPUs
    they spread over both, with part of its memory on each: the plan's
    estimates, which count an instance on the socket its vCPUs run on,
    would not see it on any (on family seed 137's ``gen-small-035``, a
    16-vCPU VM moved that way landed a quarter on one socket, three
    quarters on the other, and ran 4.5 % slower than where it was,
    simulated). A move with no socket that holds its memory does not fit:
    its memory would be split the same way. A host whose sockets the view
    does not know keeps the unnamed landing.
    """
    sockets = state.hosts[host_name].sockets
    if not sockets:
        return True, None
    roomy = []
    for sock in sockets:
        cpus, mem = state.cell_free(host_name, sock.id, dedicated(inst))
        if mem >= inst.memory_mib:
            roomy.append((-cpus, sock.id))
    if not roomy:
        return False, None
    return True, min(roomy)[1]


def reachable(state, unit_a, unit_b, params):
    """Whether this audit may move instances between two units' hosts.

    Nova must be able to live-migrate between them
    (:meth:`State.migratable`, their CPU vendors), and unless
    ``params.across_cpu_models`` their agents must report one CPU model
    (or either none): the harm check estimates what co-runners do, not
    what other hardware does to an instance's own speed.
    """
    if not state.migratable(unit_a, unit_b):
        return False
    if params.across_cpu_models:
        return True
    a = state.hosts[state.unit_host(unit_a)].cpu_model
    b = state.hosts[state.unit_host(unit_b)].cpu_model
    return not (a and b) or a == b


def pooled(state, units, params):
    """Whether some of ``units`` cannot reach others (:func:`reachable`)."""
    hosts = [state.hosts[state.unit_host(unit)] for unit in units]
    vendors = {h.cpu_vendor for h in hosts} - {None, 'unknown'}
    models = (set() if params.across_cpu_models
              else {h.cpu_model for h in hosts} - {None, ''})
    return len(vendors) > 1 or len(models) > 1


def plan_legs(state, cand, src, dst, exact_socket):
    """The swap as ordered actions, or None if no leg order fits."""
    out, back = cand.out, cand.back
    if not state.migratable(src, dst):
        return None
    dst_host = state.unit_host(dst)
    src_host = state.unit_host(src)
    if state.unit == state_mod.HOST:
        out_socket = back.socket if back is not None else None
        back_socket = out.socket
    else:
        out_socket, back_socket = dst[1], src[1]
    if back is None:
        ok, socket = landing(state, out, dst_host, out_socket,
                             exact_socket)
        if not ok:
            return None
        return (make_leg(out, dst_host, socket),)
    orders = ((out, dst_host, out_socket, back, src_host, back_socket),
              (back, src_host, back_socket, out, dst_host, out_socket))
    for first, h1, s1, second, h2, s2 in orders:
        ok, socket1 = landing(state, first, h1, s1, exact_socket)
        if not ok:
            continue
        # The transient state: the first leg has landed.
        state.move(first.uuid, h1, socket1)
        try:
            ok, socket2 = landing(state, second, h2, s2, exact_socket)
        finally:
            state.restore(first)
        if ok:
            return (make_leg(first, h1, socket1),
                    make_leg(second, h2, socket2))
    return None


def cpu_pressure(state, host_name, socket, moves=()):
    """vCPUs over physical CPUs of a host, and of one of its sockets.

    Now, or once ``moves`` (:meth:`.state.State.pressure`) have run.
    """
    on_host, on_socket = state.vcpus(host_name, socket, moves)
    sock = state.socket_view(host_name, socket)
    return (on_host - state.hosts[host_name].vcpus_total,
            on_socket - sock.cpus if sock is not None else float('-inf'))


def _oversubscribed(state, before, moves):
    """Whether a place of ``before`` ({place: CPU pressure}) got worse."""
    for place, (host_before, socket_before) in before.items():
        host_after, socket_after = cpu_pressure(state, *place, moves=moves)
        if (host_after > max(0.0, host_before)
                or socket_after > max(0.0, socket_before)):
            return True
    return False


def assess(state, legs, cost, params):
    """(why not, predicted gain) of running ``legs``; why not is None if ok.

    Both rules a candidate move must pass, on one application of its legs
    (a balancing step tries thousands of candidates at 1,000 hosts):

    * ``cpu_oversubscribed``: the move leaves more vCPUs than CPUs where
      there were not. Allocation ratios let Nova put more vCPUs on a host
      than it has CPUs, and the capacity checks allow that, but the vCPUs
      then share CPU time: every instance there slows down (Merlin's CPU
      sensitivity, section 3.1), which no LLC balance repays. Ahn et al.'s
      swaps keep each host's instance count; a one-way move, or a swap of
      unequal instances, must not push a host or a socket past its CPUs,
      or further past them.
    * ``no_predicted_gain``: the drop of :func:`measure.pressure` over the
      sockets the legs leave and reach must exceed the move's cost plus
      ``min_predicted_gain`` of the predicted contention there. The
      margin is for the estimate's error: it is computed from counters
      measured in the current mix, and a cache-sensitive instance's
      Memory Factor is low while its cache is its own and high beside a
      heavy co-runner (Merlin section 3.4, its Figure 3 transitions), so
      a small predicted drop is within what the next measurement may
      contradict. With a placement model, the model check must predict a
      gain too (:func:`mix_gain`).

    The state is left as it is: the legs are weighed, not run.
    """
    moves = [(state.inst[leg.instance], _dest_host(leg), leg.dest_socket)
             for leg in legs]
    cpus = {place: cpu_pressure(state, *place)
            for place in {(host, socket) for _, host, socket in moves}}
    if _oversubscribed(state, cpus, moves):
        return 'cpu_oversubscribed', None
    keys = touched(state, legs)
    before = state.pressure(keys)
    gain = before - state.pressure(keys, moves)
    if gain - cost <= params.min_predicted_gain * before:
        return 'no_predicted_gain', gain
    if state.mix_values is not None and mix_gain(state, legs) <= 0:
        return 'no_predicted_gain', gain
    return None, gain


def make_leg(inst, host, socket):
    if inst.host == host:
        return cluster.Repin(inst.uuid, host, socket, move_memory=True)
    return cluster.Migrate(inst.uuid, inst.host, host, socket)


def as_action(legs):
    if len(legs) == 2 and all(isinstance(x, cluster.Migrate) for x in legs):
        return (cluster.Swap(legs[0], legs[1]),)
    return tuple(legs)


def may_move(state, inst, params, skipped, seen):
    """Whether ``inst`` may be a victim; records why not once."""
    reason = None
    if not inst.movable:
        reason = 'not_movable: %s' % (inst.skip_reason or 'excluded')
    elif inst.llc_misses_per_s is None:
        reason = 'no_telemetry: no LLC-miss rate'
    elif arbitration.in_cooldown(inst, state.now, params.cooldown_s):
        if inst.last_moved_at == state.now:
            return False  # moved earlier in this plan: not a skip
        reason = ('cooldown: moved %.0f s ago, cooldown is %.0f s'
                  % (state.now - inst.last_moved_at, params.cooldown_s))
    elif state.unit == state_mod.SOCKET and inst.socket is None:
        reason = 'socket_unknown: vCPUs not on one socket'
    if reason is None:
        return True
    if inst.uuid not in seen:
        seen.add(inst.uuid)
        skipped.append(cluster.Skipped(inst.uuid, reason))
    return False


def _dest_host(leg):
    return leg.dest_host if isinstance(leg, cluster.Migrate) else leg.host


def touched(state, legs):
    """The (host, socket) keys ``legs`` leave and reach."""
    keys = set()
    for leg in legs:
        inst = state.inst[leg.instance]
        keys.add((inst.host, inst.socket))
        keys.add((_dest_host(leg), leg.dest_socket))
    return keys


def mixes_of(state, keys):
    """[(mix, socket CPUs)] of the sockets ``keys``, or None.

    None when a socket is unknown or holds a class the model has no
    profile for.
    """
    values = state.mix_values
    found = []
    for host_name, socket in keys:
        if socket is None:
            return None
        mix = measure.unit_mix(state, (host_name, socket))
        if not all(values.knows(k) for k, _ in mix):
            return None
        found.append((mix, state.socket_cpus(host_name, socket)))
    return found


def mix_gain(state, legs):
    """The model check: predicted performance gained by ``legs``.

    The sockets the legs leave and reach, valued whole by the placement
    model (:class:`contention.perfmodel.mixes.MixValues`) before and
    after. Counters say how much an instance misses the cache, not how
    much a co-runner slows it; the pressure estimate weighs every pair
    alike, so a swap it favours can put the cache-sensitive instances of
    a mix together (ahn-wl2) or spread streaming ones where pairing them
    beside insensitive ones is faster (ahn-wl4). A model trained on
    landings beside several co-runners, copies of one workload among
    them, orders such mixes as their performance does. A move touching a
    socket whose classes it cannot value passes (the check has nothing to
    say).
    """
    keys = touched(state, legs)
    before = mixes_of(state, keys)
    originals = [state.inst[leg.instance] for leg in legs]
    for leg in legs:
        state.apply(leg)
    try:
        after = mixes_of(state, keys)
    finally:
        for inst in reversed(originals):
            state.restore(inst)
    if before is None or after is None:
        return math.inf
    values = state.mix_values
    if values.unsure(before + after):
        return math.inf         # the model abstains: nothing to say
    return (sum(values.value(m, c) for m, c in after)
            - sum(values.value(m, c) for m, c in before))


def memory_follows(inst, params):
    """Whether a local re-pin moves the instance's memory (SwapParameters).

    Memory stays behind only for an instance with little DRAM traffic
    (MF under ``local_memory_mf``) that is not a service answering
    requests (:func:`measure.serving`): a service's response time grows
    with any slowdown, and every miss of its would go to remote memory
    (on generated clusters such services lost up to 21 %, simulated).
    """
    return (inst.mf is None or inst.mf >= params.local_memory_mf
            or measure.serving(inst))

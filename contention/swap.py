"""Ahn et al.'s cache-aware and NUMA-aware schedulers over a ClusterView.

Ahn et al., "Dynamic VM scheduling in clouds for architectural shared
resources" (``shared/papers/004_*``):

* **Algorithm 1, cache-aware.** Local phase: on every host, sort the VMs by
  LLC misses and deal them over the sockets (the shared-cache domains) so
  that per-socket misses are even: the largest to the first socket, the
  second largest to the second, then the smallest to the first, the second
  smallest to the second, and so on (Zhuravlev et al.'s method). Global
  phase: find the hosts with the most and fewest misses and, if they differ
  by more than ``threshold``, swap the VM with the most misses on the
  first with the VM with the fewest on the second by live migration.
* **Algorithm 2, NUMA-aware.** The global phase only, between the sockets
  with the most and fewest misses across the cluster; VMs move with their
  memory, so NUMA affinity is kept (no local phase, which would break it).

The papers run one step per period; here an audit chains up to
``max_swaps`` steps, each chosen on the state left by the previous ones
(the same as :func:`cluster.apply_action` on a copy of the view, kept as
incremental indexes so 200,000 instances stay fast). Which swap a step
runs, and whether it is worth it, is Merlin's arbitration
(:mod:`contention.arbitration`). Beyond the papers, a step must also fit:
each leg's destination must have the free vCPUs, RAM and disk in the order
the legs run (with both instances on the first destination in between),
and an instance with a NUMA topology must fit one NUMA cell there.
Everything left alone is reported as a :class:`cluster.Skipped` with a
reason from :data:`REASONS`.
"""

import collections
import dataclasses
import itertools
import math

from contention import arbitration
from contention import classify
from contention import cluster
from contention.perfmodel import mixes
from contention import quota

HOST = 'host'
SOCKET = 'socket'

#: Skip reasons (the first word of every Skipped.reason), for operators.
REASONS = {
    'not_movable': 'the instance was excluded before the algorithm ran '
                   '(locked, not ACTIVE, out of scope, no telemetry)',
    'host_disabled': 'the host is disabled or down',
    'no_telemetry': 'no LLC-miss measurement for the instance',
    'socket_unknown': 'the instance\'s socket is not known',
    'cooldown': 'the instance was moved less than cooldown seconds ago',
    'pinned': 'the instance has a NUMA topology or dedicated CPUs, which '
              'Nova manages; the agent does not re-pin it',
    'no_capacity': 'no leg order fits the destinations\' free capacity',
    'cpu_oversubscribed': 'every move would leave a host or socket with '
                          'more vCPUs than CPUs (or more over) than before',
    'not_worth_it': 'the predicted reduction does not repay the '
                    'migration cost',
    'no_gain': 'no move reduces the difference',
    'no_partner': 'the unit has no instance that may move',
    'local_no_gain': 're-dealing the host\'s VMs would not even its '
                     'sockets out',
    'local_capacity': 're-dealing would leave a socket with more vCPUs '
                      'than CPUs',
    'repercussion': 'a co-runner moved to a worse Merlin state after a '
                    'previous move; its unit is arbitrated first',
    'no_predicted_gain': 'the move would not lower the predicted '
                         'contention (co-runners\' LLC misses weighted by '
                         'each instance\'s Memory Factor) by more than it '
                         'costs',
    'numa_remote': 'the instance\'s memory is on another socket than its '
                   'vCPUs and no repair fits or repays its cost',
}
REASONS.update(quota.REASONS)


@dataclasses.dataclass(frozen=True)
class SwapParameters:
    """Parameters of both schedulers (one audit).

    ``threshold`` is in LLC misses per second: the smallest difference
    between the most and least loaded units worth a swap (Ahn's
    threshold). ``migration_cost_per_gib`` prices a live migration in the
    same unit per GiB of memory moved; a swap whose reduction of the
    difference is below the cost of the memory it moves is skipped.
    ``tolerance`` is Merlin's "about as much": candidates within that
    fraction of the best reduction compete on sensitivity and cost.
    ``local_memory_mf`` decides whether the local phase's re-pins take the
    instance's memory along: an instance whose Memory Factor is below it
    (Merlin's low MF, section 3.2: few of its accesses reach DRAM) moves its
    vCPUs only, the cheaper "remote vCPU move" of Merlin's cost ranking
    (section 3.3); every other instance, or one whose MF is unknown, moves
    its memory too, because leaving a memory-bound instance's memory behind
    turns its DRAM traffic into remote traffic over the interconnect, which
    costs it more than the LLC contention the re-pin removes (the reason
    Ahn et al. add the NUMA-aware scheduler, section 4).
    ``numa_repair`` runs :func:`numa_repair` first: an instance whose
    memory is mostly on another socket than its vCPUs gets the cheaper of
    a vCPU re-pin to its memory's socket or a move of its memory to its
    vCPUs' node (Ahn et al.'s "local NUMA-aware scheduling", sections 3
    and 4.2).
    ``cpu_quota`` runs :func:`contention.quota.quota_phase` last: a capped
    instance that uses nearly all its allocation gets one more core when
    its socket, after the moves, has one free and no highly MC/IC
    sensitive co-runner there would suffer its extra misses (Merlin
    sections 3.2-3.5).
    ``min_predicted_gain`` is the margin by which a move must lower the
    predicted contention of the sockets it touches, as a fraction of it,
    beyond its cost (:func:`_worth_it`). ``contention_swaps`` runs
    :func:`contention_phase` after the global phase, within the same
    ``max_swaps``.
    """

    threshold: float = 5e6
    max_swaps: int = 5
    victim_selection: str = arbitration.SENSITIVITY_COST
    cooldown_s: float = 3600.0
    tolerance: float = 0.1
    migration_cost_per_gib: float = 2.5e5
    local_phase: bool = True
    local_memory_mf: float = classify.Thresholds().mf_low
    numa_repair: bool = True
    cpu_quota: bool = True
    min_predicted_gain: float = 0.1
    contention_swaps: bool = False

    def __post_init__(self):
        if self.victim_selection not in arbitration.VICTIM_SELECTIONS:
            raise ValueError(
                'victim_selection must be one of %s, not %r'
                % (', '.join(arbitration.VICTIM_SELECTIONS),
                   self.victim_selection))
        for name in ('threshold', 'cooldown_s', 'tolerance',
                     'migration_cost_per_gib', 'local_memory_mf',
                     'min_predicted_gain'):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or math.isnan(value) \
                    or value < 0:
                raise ValueError('%s must be a number >= 0, not %r'
                                 % (name, value))
        if not isinstance(self.max_swaps, int) or self.max_swaps < 0:
            raise ValueError('max_swaps must be an integer >= 0, not %r'
                             % (self.max_swaps,))


#: An audit gives up after this many units per allowed swap had no
#: acceptable move: the next ones are less loaded and rarely do better.
MAX_FAILED_SOURCES_PER_SWAP = 20


def misses(instance):
    return instance.llc_misses_per_s or 0.0


def spread(loads):
    """Coefficient of variation (population std / mean); 0 if no load."""
    loads = list(loads)
    if not loads:
        return 0.0
    mean = sum(loads) / len(loads)
    if mean <= 0:
        return 0.0
    var = sum((x - mean) ** 2 for x in loads) / len(loads)
    return math.sqrt(var) / mean


def socket_loads(view):
    """{(host, socket): LLC misses/s} over the enabled hosts' sockets.

    Instances with no known socket count evenly towards every socket of
    their host.
    """
    loads = {}
    enabled = {}
    for host in view.hosts:
        if host.enabled:
            enabled[host.name] = host
            for sock in host.sockets:
                loads[(host.name, sock.id)] = 0.0
    for inst in view.instances:
        _contribute(loads, enabled, inst, 1.0)
    return loads


def _contribute(loads, enabled, inst, sign):
    host = enabled.get(inst.host)
    if host is None or not host.sockets:
        return
    if inst.socket is not None and (inst.host, inst.socket) in loads:
        loads[(inst.host, inst.socket)] += sign * misses(inst)
    else:
        share = sign * misses(inst) / len(host.sockets)
        for sock in host.sockets:
            loads[(host.name, sock.id)] += share


def sensitivity(instance):
    """How much an instance suffers from its co-runners' LLC misses.

    Merlin's Memory Factor (section 3.2: the share of its cache accesses
    that miss the LLC and reach memory, so compete for the LLC, the memory
    controller and the interconnect); an unknown MF counts as 1, the
    cautious value, as in :func:`arbitration.preference_key`.
    """
    return 1.0 if instance.mf is None else max(0.0, instance.mf)


def pressure(instances):
    """Predicted contention among instances sharing one socket.

    Sum over each instance of its sensitivity (:func:`sensitivity`) times
    the LLC misses/s of its co-runners: Zhuravlev et al.'s pain model
    (sensitivity x intensity, Ahn et al.'s reference [9], the source of
    their dealing method) with Merlin's MF as the sensitivity. Ahn et
    al.'s even spread of misses ignores who suffers from them; this is
    what lets a move be judged by whom it hurts (Merlin section 3.4,
    "the least hurt to all applications affected"). In LLC misses/s, the
    unit of the migration cost.
    """
    instances = [i for i in instances if i.llc_misses_per_s is not None]
    load = sum(misses(i) for i in instances)
    return sum(sensitivity(i) * (load - misses(i)) for i in instances)


def _replace(inst, **changes):
    """dataclasses.replace for InstanceView, without its per-call cost.

    InstanceView is a frozen dataclass with no __post_init__, so copying
    its __dict__ gives the same value; dataclasses.replace costs ~20 us a
    call, which adds up to seconds over a 200,000-instance local phase.
    """
    new = object.__new__(type(inst))
    new.__dict__.update(inst.__dict__)
    new.__dict__.update(changes)
    return new


class _State:
    """Incremental indexes over a view: apply_action without the copies."""

    def __init__(self, view, unit, mix_values=None):
        self.view = view
        self.unit = unit
        #: :class:`contention.perfmodel.mixes.MixValues` for the model
        #: check (:func:`_worth_it`), or None.
        self.mix_values = mix_values
        self.now = view.now
        self.hosts = {h.name: h for h in view.hosts}
        self.inst = {i.uuid: i for i in view.instances}
        self.on_host = collections.defaultdict(dict)
        self.used = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
        self.cell_used = collections.defaultdict(lambda: [0.0, 0.0])
        self.load = collections.defaultdict(float)
        #: Per (host, socket of the vCPUs): [sum of LLC misses/s, sum of
        #: Memory Factors, sum of MF x misses], for :meth:`pressure`.
        self.sock_stats = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
        #: Instances moved (or trial-moved) since the view was taken.
        self.moved = set()
        #: Swaps or one-way moves the global phase ran (for max_swaps).
        self.steps = 0
        for inst in view.instances:
            self._add(inst)

    def key(self, inst):
        if self.unit == HOST:
            return inst.host
        return (inst.host, inst.socket)

    def _add(self, inst):
        self.on_host[inst.host][inst.uuid] = inst
        used = self.used[inst.host]
        used[0] += inst.vcpus
        used[1] += inst.memory_mib
        used[2] += inst.disk_gb
        if inst.socket is not None:
            self.cell_used[(inst.host, inst.socket)][0] += inst.vcpus
        mem_socket = self._memory_socket(inst)
        if mem_socket is not None:
            self.cell_used[(inst.host, mem_socket)][1] += inst.memory_mib
        self.load[self.key(inst)] += misses(inst)
        self._stats(inst, 1.0)

    def _stats(self, inst, sign):
        if inst.socket is None or inst.llc_misses_per_s is None:
            return
        stats = self.sock_stats[(inst.host, inst.socket)]
        sens = sensitivity(inst)
        stats[0] += sign * misses(inst)
        stats[1] += sign * sens
        stats[2] += sign * sens * misses(inst)

    def pressure(self, keys):
        """Predicted contention on the (host, socket) ``keys`` now.

        See :func:`pressure`; computed from running sums.
        """
        total = 0.0
        for key in set(keys):
            load, sens, both = self.sock_stats.get(key, (0.0, 0.0, 0.0))
            total += load * sens - both
        return total

    def _remove(self, inst):
        del self.on_host[inst.host][inst.uuid]
        used = self.used[inst.host]
        used[0] -= inst.vcpus
        used[1] -= inst.memory_mib
        used[2] -= inst.disk_gb
        if inst.socket is not None:
            self.cell_used[(inst.host, inst.socket)][0] -= inst.vcpus
        mem_socket = self._memory_socket(inst)
        if mem_socket is not None:
            self.cell_used[(inst.host, mem_socket)][1] -= inst.memory_mib
        self.load[self.key(inst)] -= misses(inst)
        self._stats(inst, -1.0)

    def _memory_socket(self, inst):
        """The socket holding ``inst``'s memory.

        Its memory node's socket when the view says (``memory_node``: a
        VM whose memory was left behind, e.g. by a re-pin without memory
        or Ahn et al.'s W-W placement, uses the other socket's memory),
        else the socket of its vCPUs.
        """
        if inst.memory_node is not None:
            host = self.hosts.get(inst.host)
            for sock in (host.sockets if host is not None else ()):
                if inst.memory_node in sock.nodes:
                    return sock.id
        return inst.socket

    def _node_of(self, host_name, socket):
        host = self.hosts.get(host_name)
        sock = next((s for s in (host.sockets if host is not None else ())
                     if s.id == socket), None)
        return sock.nodes[0] if sock is not None and sock.nodes else None

    def move(self, uuid, host, socket, move_memory=True):
        """Move vCPUs (and, unless told otherwise, memory) to host/socket.

        A migration and a re-pin with memory leave the memory local to the
        new socket; a re-pin without memory leaves it on its node.
        """
        old = self.inst[uuid]
        if move_memory:
            memory_node = None
        else:
            memory_node = (old.memory_node if old.memory_node is not None
                           else self._node_of(old.host, old.socket))
        self._remove(old)
        new = _replace(old, host=host, socket=socket, last_moved_at=self.now,
                       memory_node=memory_node)
        self.moved.add(uuid)
        self.inst[uuid] = new
        self._add(new)
        return new

    def restore(self, inst):
        """Put ``inst`` back exactly as it was (undo a trial move)."""
        self._remove(self.inst[inst.uuid])
        self.inst[inst.uuid] = inst
        self._add(inst)

    def apply(self, action):
        """The same as cluster.apply_action, on the indexes."""
        if isinstance(action, cluster.Swap):
            self.apply(action.first)
            self.apply(action.second)
        elif isinstance(action, cluster.Migrate):
            self.move(action.instance, action.dest_host, action.dest_socket)
        elif isinstance(action, cluster.Repin):
            self.move(action.instance, action.host, action.dest_socket,
                      move_memory=action.move_memory)

    def instances_in(self, key):
        if self.unit == HOST:
            return self.on_host[key].values()
        host, socket = key
        return [i for i in self.on_host[host].values() if i.socket == socket]

    def free(self, host_name):
        host = self.hosts[host_name]
        used = self.used[host_name]
        return (host.vcpus_total * host.cpu_allocation_ratio - used[0],
                host.memory_mib_total * host.ram_allocation_ratio - used[1],
                host.disk_gb_total * host.disk_allocation_ratio - used[2])

    def cell_free(self, host_name, socket, dedicated):
        host = self.hosts[host_name]
        sock = next((s for s in host.sockets if s.id == socket), None)
        if sock is None:
            return (0.0, 0.0)
        used = self.cell_used[(host_name, socket)]
        cpu_ratio = 1.0 if dedicated else host.cpu_allocation_ratio
        ram_ratio = 1.0 if dedicated else host.ram_allocation_ratio
        return (sock.cpus * cpu_ratio - used[0],
                sock.memory_mib * ram_ratio - used[1])

    def socket_loads(self, before=None):
        """Per-socket loads now; ``before`` = socket_loads(self.view)."""
        if before is None:
            return socket_loads(self.final_view())
        loads = dict(before)
        enabled = {h.name: h for h in self.view.hosts if h.enabled}
        originals = {i.uuid: i for i in self.view.instances
                     if i.uuid in self.moved}
        for uuid in self.moved:
            _contribute(loads, enabled, originals[uuid], -1.0)
            _contribute(loads, enabled, self.inst[uuid], 1.0)
        return loads

    def final_view(self):
        return dataclasses.replace(
            self.view, instances=tuple(self.inst[i.uuid]
                                       for i in self.view.instances))


def _dedicated(inst):
    return inst.cpu_policy == 'dedicated'


def _numa_bound(inst):
    return inst.has_numa_topology or _dedicated(inst)


def _fits_cell(state, inst, host_name, socket):
    cpus, mem = state.cell_free(host_name, socket, _dedicated(inst))
    return cpus >= inst.vcpus and mem >= inst.memory_mib


def _landing(state, inst, host_name, wanted_socket, exact_socket):
    """(fits, socket) for ``inst`` arriving on ``host_name`` now.

    Host free vCPUs/RAM/disk first; then, for an instance with a NUMA
    topology, a cell that holds it (the wanted one first); with
    ``exact_socket`` (NUMA-aware moves) the wanted socket must hold it.
    """
    if inst.host != host_name:
        cpus, mem, disk = state.free(host_name)
        if (cpus < inst.vcpus or mem < inst.memory_mib
                or disk < inst.disk_gb):
            return False, None
    if exact_socket:
        if _numa_bound(inst) or wanted_socket is not None:
            cpus, mem = state.cell_free(host_name, wanted_socket,
                                        _dedicated(inst))
            if mem < inst.memory_mib or (
                    _numa_bound(inst) and cpus < inst.vcpus):
                return False, None
        return True, wanted_socket
    if not _numa_bound(inst):
        return True, wanted_socket
    sockets = [s.id for s in state.hosts[host_name].sockets]
    if wanted_socket in sockets:
        sockets.remove(wanted_socket)
        sockets.insert(0, wanted_socket)
    for socket in sockets:
        if _fits_cell(state, inst, host_name, socket):
            return True, socket
    return False, None


def _legs(state, cand, src, dst, exact_socket):
    """The swap as ordered actions, or None if no leg order fits."""
    out, back = cand.out, cand.back
    dst_host = dst if state.unit == HOST else dst[0]
    src_host = src if state.unit == HOST else src[0]
    if state.unit == HOST:
        out_socket = back.socket if back is not None else None
        back_socket = out.socket
    else:
        out_socket, back_socket = dst[1], src[1]
    if back is None:
        ok, socket = _landing(state, out, dst_host, out_socket,
                              exact_socket)
        if not ok:
            return None
        return (_leg(out, dst_host, socket),)
    orders = ((out, dst_host, out_socket, back, src_host, back_socket),
              (back, src_host, back_socket, out, dst_host, out_socket))
    for first, h1, s1, second, h2, s2 in orders:
        ok, socket1 = _landing(state, first, h1, s1, exact_socket)
        if not ok:
            continue
        # The transient state: the first leg has landed.
        state.move(first.uuid, h1, socket1)
        try:
            ok, socket2 = _landing(state, second, h2, s2, exact_socket)
        finally:
            state.restore(first)
        if ok:
            return (_leg(first, h1, socket1), _leg(second, h2, socket2))
    return None


def _cpu_pressure(state, host_name, socket):
    """vCPUs over physical CPUs of a host, and of one of its sockets."""
    host = state.hosts[host_name]
    over_host = state.used[host_name][0] - host.vcpus_total
    sock = next((s for s in host.sockets if s.id == socket), None)
    over_socket = (state.cell_used[(host_name, socket)][0] - sock.cpus
                   if sock is not None else float('-inf'))
    return over_host, over_socket


def _oversubscribes(state, legs):
    """Whether the move leaves more vCPUs than CPUs where there were not.

    Allocation ratios let Nova put more vCPUs on a host than it has CPUs,
    and the capacity checks allow that, but the vCPUs then share CPU time:
    every instance there slows down (Merlin's CPU sensitivity, section
    3.1), which no LLC balance repays. Ahn et al.'s swaps keep each host's
    instance count; a one-way move, or a swap of unequal instances, must
    not push a host or a socket past its CPUs, or further past them.
    """
    places = {(leg.dest_host if isinstance(leg, cluster.Migrate)
               else leg.host, leg.dest_socket) for leg in legs}
    before = {place: _cpu_pressure(state, *place) for place in places}
    originals = [state.inst[leg.instance] for leg in legs]
    for leg in legs:
        state.apply(leg)
    try:
        for place, (host_before, socket_before) in before.items():
            host_after, socket_after = _cpu_pressure(state, *place)
            if (host_after > max(0.0, host_before)
                    or socket_after > max(0.0, socket_before)):
                return True
        return False
    finally:
        for inst in reversed(originals):
            state.restore(inst)


def _pressure_gain(state, legs):
    """Predicted contention removed by running ``legs`` (may be < 0).

    :func:`pressure` over the sockets the legs leave and reach, before and
    after, on the state's indexes (the legs are undone before returning).
    """
    keys = _touched(state, legs)
    before = state.pressure(keys)
    originals = [state.inst[leg.instance] for leg in legs]
    for leg in legs:
        state.apply(leg)
    try:
        return before - state.pressure(keys)
    finally:
        for inst in reversed(originals):
            state.restore(inst)


def _leg(inst, host, socket):
    if inst.host == host:
        return cluster.Repin(inst.uuid, host, socket, move_memory=True)
    return cluster.Migrate(inst.uuid, inst.host, host, socket)


def _as_action(legs):
    if len(legs) == 2 and all(isinstance(x, cluster.Migrate) for x in legs):
        return (cluster.Swap(legs[0], legs[1]),)
    return tuple(legs)


def _movable(state, inst, params, skipped, seen):
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
    elif state.unit == SOCKET and inst.socket is None:
        reason = 'socket_unknown: vCPUs not on one socket'
    if reason is None:
        return True
    if inst.uuid not in seen:
        seen.add(inst.uuid)
        skipped.append(cluster.Skipped(inst.uuid, reason))
    return False


def _alike(a, b):
    """Whether two instances run the same image in the same flavor.

    Swapping them leaves every unit with the same mix of workloads, so
    it cannot gain anything, whatever their counters say this period
    (a Memory Factor measured beside a heavy co-runner is higher than the
    same workload's elsewhere); it only costs.
    """
    return (a.image_id is not None and a.image_id == b.image_id
            and a.flavor == b.flavor and a.vcpus == b.vcpus
            and a.memory_mib == b.memory_mib)


def _candidates(state, src, dst, params, skipped, seen, reasons):
    """Feasible candidates for one step from ``src`` to ``dst``."""
    outs = [i for i in state.instances_in(src)
            if _movable(state, i, params, skipped, seen)]
    backs = [i for i in state.instances_in(dst)
             if _movable(state, i, params, skipped, seen)]
    if not outs:
        reasons['no_partner'] += 1
        return []
    diff = state.load[src] - state.load[dst]
    if params.victim_selection == arbitration.EXTREME:
        out = max(outs, key=lambda i: (misses(i), i.uuid))
        back = (min(backs, key=lambda i: (misses(i), i.uuid))
                if backs else None)
        pairs = [(out, back)]
    else:
        pairs = [(o, b) for o in outs for b in backs]
        pairs += [(o, None) for o in outs]
    exact = state.unit == SOCKET
    feasible = []
    for out, back in pairs:
        if back is not None and _alike(out, back):
            reasons['no_gain'] += 1
            continue
        delta = misses(out) - (misses(back) if back is not None else 0.0)
        reduction = diff - abs(diff - 2 * delta)
        if reduction <= 0:
            reasons['no_gain'] += 1
            continue
        moved = (out,) if back is None else (out, back)
        cost = arbitration.migration_cost(moved,
                                          params.migration_cost_per_gib)
        # Between two sockets of one host the instances move by re-pins
        # that take their memory along: no live migration, but the same
        # memory is copied, priced as the local phase prices it.
        if reduction < cost:
            reasons['not_worth_it'] += 1
            continue
        cand = arbitration.Candidate(out, back, reduction, cost)
        legs = _legs(state, cand, src, dst, exact)
        if legs is None:
            reasons['no_capacity'] += 1
            continue
        if _oversubscribes(state, legs):
            reasons['cpu_oversubscribed'] += 1
            continue
        # Ahn et al. balance misses whoever suffers from them; Merlin
        # (section 3.4) takes a move only if it helps more than it hurts.
        # A move must lower the predicted contention by more than it costs
        # (and by a margin: _worth_it).
        if not _worth_it(state, legs, cost, params):
            reasons['no_predicted_gain'] += 1
            continue
        feasible.append((cand, legs))
    return feasible


def _name(key):
    if isinstance(key, tuple):
        return '%s/socket-%s' % key
    return key


def global_phase(view, params, unit=HOST, hurt=(), skipped=None,
                 state=None):
    """Ahn's global phase (Algorithm 1 step 2, or Algorithm 2).

    Returns (actions, skipped, state after). ``hurt`` are the repercussion
    check's findings (:func:`arbitration.hurt_corunners`): their units are
    arbitrated first, whatever their rank, and never receive a VM.
    """
    skipped = [] if skipped is None else skipped
    state = _State(view, unit) if state is None else state
    seen = set()
    units = []
    for host in view.hosts:
        if not host.enabled:
            skipped.append(cluster.Skipped(
                host.name, 'host_disabled: %s'
                % (host.skip_reason or 'disabled or down')))
            for inst in state.on_host[host.name].values():
                seen.add(inst.uuid)
            continue
        if unit == HOST:
            units.append(host.name)
        else:
            units.extend((host.name, s.id) for s in host.sockets)
    protected = set()
    focus = []
    for h in hurt:
        key = h.host if unit == HOST else (h.host, h.socket)
        if key not in units:
            continue
        skipped.append(cluster.Skipped(
            h.uuid, 'repercussion: class went from %s to %s after %s '
            'arrived; %s is arbitrated first' % (h.before, h.after,
                                                 h.culprit, _name(key))))
        protected.add(key)
        if key not in focus:
            focus.append(key)
    actions = []
    exhausted = set()
    swaps = 0
    reason = None
    failures = 0
    max_failures = MAX_FAILED_SOURCES_PER_SWAP * max(1, params.max_swaps)
    by_load = None  # units, most loaded first; re-sorted after each move
    while swaps < params.max_swaps and units:
        if by_load is None:
            by_load = sorted(units, key=lambda u: (-state.load[u], str(u)))
        forced = [u for u in focus if u not in exhausted]
        src = forced[0] if forced else next(
            (u for u in by_load if u not in exhausted), None)
        dst = next((u for u in reversed(by_load)
                    if u not in protected and u != src), None)
        if src is None or dst is None:
            reason = ('no unit left to arbitrate' if len(units) > 1
                      else 'fewer than two hosts or sockets to balance')
            break
        if failures >= max_failures:
            reason = ('stopped after %d units without an acceptable move '
                      '(see skipped)' % failures)
            break
        diff = state.load[src] - state.load[dst]
        if not forced and diff <= params.threshold:
            if exhausted:
                reason = ('the units that could still give an instance '
                          'differ from the least loaded by no more than '
                          'the threshold %.3g misses/s; the more loaded '
                          'ones had no acceptable move (see skipped)'
                          % params.threshold)
            else:
                reason = ('balanced: the most and least loaded units (%s, '
                          '%s) differ by %.3g misses/s, not more than the '
                          'threshold %.3g' % (_name(src), _name(dst), diff,
                                              params.threshold))
            break
        if diff <= 0:
            exhausted.add(src)
            continue
        reasons = collections.Counter()
        feasible = _candidates(state, src, dst, params, skipped, seen,
                               reasons)
        chosen = arbitration.choose([c for c, _ in feasible],
                                    params.victim_selection,
                                    params.tolerance)
        if chosen is None:
            exhausted.add(src)
            failures += 1
            why = ', '.join('%d %s' % (n, r)
                            for r, n in sorted(reasons.items()))
            first = (max(reasons, key=lambda r: (reasons[r], r))
                     if reasons else 'no_partner')
            skipped.append(cluster.Skipped(
                _name(src), '%s: no acceptable move from %s to %s (%s)'
                % (first, _name(src), _name(dst), why or 'no candidates')))
            continue
        legs = next(legs for c, legs in feasible if c is chosen)
        for action in _as_action(legs):
            actions.append(action)
            state.apply(action)
        by_load = None
        if src in focus:
            exhausted.add(src)
        swaps += 1
        state.steps += 1
    return actions, skipped, state, reason


def _touched(state, legs):
    """The (host, socket) keys ``legs`` leave and reach."""
    keys = set()
    for leg in legs:
        inst = state.inst[leg.instance]
        keys.add((inst.host, inst.socket))
        keys.add((leg.dest_host if isinstance(leg, cluster.Migrate)
                  else leg.host, leg.dest_socket))
    return keys


def _worth_it(state, legs, cost, params):
    """Whether ``legs`` lower the predicted contention enough to be run.

    The drop (:func:`_pressure_gain`) must exceed the move's cost plus
    ``min_predicted_gain`` of the predicted contention on the sockets it
    touches. The margin is for the estimate's error: it is computed from
    counters measured in the current mix, and a cache-sensitive
    instance's Memory Factor is low while its cache is its own and high
    beside a heavy co-runner (Merlin section 3.4, its Figure 3
    transitions), so a small predicted drop is within what the next
    measurement may contradict.
    """
    gain = _pressure_gain(state, legs)
    if gain - cost <= params.min_predicted_gain * state.pressure(
            _touched(state, legs)):
        return False
    return state.mix_values is None or _mix_gain(state, legs) > 0


def _mixes_of(state, keys):
    """[(mix, socket CPUs)] of the sockets ``keys``, or None.

    None when a socket is unknown or holds a class the model has no
    profile for.
    """
    values = state.mix_values
    found = []
    for host_name, socket in keys:
        if socket is None:
            return None
        mix = _unit_mix(state, (host_name, socket))
        if not all(values.knows(k) for k, _ in mix):
            return None
        found.append((mix, _socket_cpus(state, host_name, socket)))
    return found


def _mix_gain(state, legs):
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
    keys = _touched(state, legs)
    before = _mixes_of(state, keys)
    originals = [state.inst[leg.instance] for leg in legs]
    for leg in legs:
        state.apply(leg)
    try:
        after = _mixes_of(state, keys)
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


def _unit_pressure(state, unit):
    if state.unit == HOST:
        host = state.hosts[unit]
        return state.pressure([(unit, s.id) for s in host.sockets])
    return state.pressure([unit])


#: The contention phase looks for swaps between this many of the most and
#: least contended units: 3 x 3 unit pairs, so its cost does not grow with
#: the cluster beyond ranking the units.
CONTENTION_UNITS = 3


def contention_phase(view, params, state, budget):
    """Swaps chosen by predicted contention alone, after the balancing.

    Ahn et al.'s global phase stops when the LLC misses per unit are
    within ``threshold`` of each other (Algorithm 1, line 2), and an even
    spread of misses is not yet the least contention: four instances of
    one CPU-bound workload on a socket still share its cache among
    themselves while a socket of another workload sits idle beside
    them. Merlin arbitrates by "the least hurt to all applications
    affected" (section 3.4) rather than by balance; here, while
    ``budget`` swaps remain, every swap between an instance of one of the
    :data:`CONTENTION_UNITS` units with the highest predicted contention
    (:func:`pressure`) and one of the units with the lowest is priced,
    and the one whose drop of predicted contention most exceeds its cost
    is run, if it clears :func:`_worth_it`. Capacity, CPU
    oversubscription, cool-down and same-image rules are those of the
    global phase. Returns the actions, applied to ``state``.
    """
    units = []
    for host in view.hosts:
        if host.enabled:
            if state.unit == HOST:
                units.append(host.name)
            else:
                units.extend((host.name, s.id) for s in host.sockets)
    seen, ignored = set(), []  # the global phase reported the skips
    exact = state.unit == SOCKET
    actions = []
    while budget > 0 and len(units) > 1:
        ranked = sorted(units, key=lambda u: (-_unit_pressure(state, u),
                                              str(u)))
        best = None
        for src in ranked[:CONTENTION_UNITS]:
            outs = [i for i in state.instances_in(src)
                    if _movable(state, i, params, ignored, seen)]
            for dst in ranked[::-1][:CONTENTION_UNITS]:
                if dst == src:
                    continue
                backs = [i for i in state.instances_in(dst)
                         if _movable(state, i, params, ignored, seen)]
                for out in outs:
                    for back in backs:
                        if _alike(out, back):
                            continue
                        cost = arbitration.migration_cost(
                            (out, back), params.migration_cost_per_gib)
                        legs = _legs(state, arbitration.Candidate(
                            out, back, 0.0, cost), src, dst, exact)
                        if legs is None or _oversubscribes(state, legs):
                            continue
                        if not _worth_it(state, legs, cost, params):
                            continue
                        net = _pressure_gain(state, legs) - cost
                        if best is None or net > best[0]:
                            best = (net, legs)
        if best is None:
            break
        for action in _as_action(best[1]):
            actions.append(action)
            state.apply(action)
        budget -= 1
    return actions


def mix_class(inst):
    """The class of interchangeable instances ``inst`` belongs to.

    Same image, flavor, vCPUs and memory (:func:`_alike`); an instance
    without an image is a class of its own.
    """
    if inst.image_id is None:
        return ('instance', inst.uuid)
    return (inst.image_id, inst.flavor, inst.vcpus, inst.memory_mib)


def _unit_mix(state, key):
    """The mix (:func:`contention.perfmodel.mixes.mix_of`) of a socket."""
    host_name, socket = key
    return mixes.mix_of(mix_class(i) for i in state.on_host[host_name].values()
                        if i.socket == socket)


def deal(instances, n_groups):
    """Ahn's / Zhuravlev's sort-and-alternate dealing into n_groups.

    Sorted by LLC misses, largest first; the n largest go to groups
    0..n-1, then the n smallest to groups 0..n-1, then the next n largest,
    and so on. Returns a list of lists of instances.
    """
    ordered = sorted(instances, key=lambda i: (-misses(i), i.uuid))
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


def _memory_follows(inst, params):
    """Whether a local re-pin moves the instance's memory (SwapParameters)."""
    return inst.mf is None or inst.mf >= params.local_memory_mf


def _remote(state, inst):
    """(socket holding most of ``inst``'s memory, remote fraction).

    (None, 0.0) when the memory is on the socket of its vCPUs or either is
    unknown. The fraction is the report's ``remote_memory_ratio`` when it
    has one, else all of it (the view only says where most of it is).
    """
    if inst.socket is None:
        return None, 0.0
    mem_socket = state._memory_socket(inst)
    if mem_socket is None or mem_socket == inst.socket:
        return None, 0.0
    ratio = inst.remote_memory_ratio
    return mem_socket, (1.0 if ratio is None else min(1.0, max(0.0, ratio)))


def _socket_cpus(state, host_name, socket):
    host = state.hosts[host_name]
    return next((s.cpus for s in host.sockets if s.id == socket), 0)


def _try_repair(state, moves):
    """Net predicted gain and cost of ``moves``, or None if one does not fit.

    ``moves`` are (instance, socket, move_memory, remote fraction) on one
    host. The gain is the remote memory accesses removed (each instance's
    LLC misses/s times its remote fraction: the misses go to DRAM, and
    to the other socket's) plus the change in :func:`pressure` on the
    sockets involved; the cost is the memory moved, priced as the local
    phase prices it. A socket may not end with more vCPUs than CPUs
    unless it already had them (and then not more), as in
    :func:`local_phase`. The state is left as it was.
    """
    host = moves[0][0].host
    keys = set()
    for inst, socket, _mem, _ratio in moves:
        keys.update({(host, inst.socket), (host, socket)})
    vcpus_before = {k: state.cell_used[k][0] for k in keys}
    before = state.pressure(keys)
    originals = [state.inst[m[0].uuid] for m in moves]
    gain = moved_mib = 0.0
    try:
        for inst, socket, move_memory, ratio in moves:
            state.move(inst.uuid, host, socket, move_memory=move_memory)
            gain += misses(inst) * ratio
            if move_memory:
                moved_mib += inst.memory_mib * ratio
        for key in keys:
            cpus = _socket_cpus(state, *key)
            if state.cell_used[key][0] > max(cpus, vcpus_before[key]):
                return None
            if state.cell_free(host, key[1], False)[1] < 0:
                return None
        gain += before - state.pressure(keys)
    finally:
        for inst in reversed(originals):
            state.restore(inst)
    return gain, moved_mib


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
    re-pin would take along (:func:`_memory_follows`) are repaired: the
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
            mem_socket, ratio = _remote(state, inst)
            if (mem_socket is None or not inst.movable
                    or inst.llc_misses_per_s is None or _numa_bound(inst)
                    or arbitration.in_cooldown(inst, state.now,
                                               params.cooldown_s)
                    or (memory_following_only
                        and not _memory_follows(inst, params))):
                continue
            remote.append((inst, mem_socket, ratio))
        remote.sort(key=lambda r: (-misses(r[0]) * r[2], r[0].uuid))
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
                tried = _try_repair(state, moves)
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
                        inst.memory_mib * ratio, misses(inst) * ratio)))
                continue
            for moved, socket, move_memory, _ratio in best[1]:
                done.add(moved.uuid)
                action = cluster.Repin(moved.uuid, host.name, socket,
                                       move_memory=move_memory)
                state.apply(action)
                actions.append(action)
    return actions


def local_phase(view, params, skipped=None):
    """Ahn's local phase (Algorithm 1 step 1): Repin actions per host."""
    skipped = [] if skipped is None else skipped
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
            elif _numa_bound(inst):
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
                    result[socket] += misses(inst)
                else:
                    for s in socket_ids:
                        result[s] += misses(inst) / len(socket_ids)
            return result

        def contention(where):
            groups = collections.defaultdict(list)
            for inst in fixed + free:
                groups[where(inst)].append(inst)
            return sum(pressure(g) for s, g in groups.items()
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
             and _memory_follows(i, params)], params.migration_cost_per_gib)
        if reduction < cost:
            skipped.append(cluster.Skipped(
                host.name, 'not_worth_it: re-dealing reduces the sockets\' '
                'difference by %.3g misses/s but moves memory costing %.3g'
                % (reduction, cost)))
            continue
        # Even misses are not less contention when the sensitive instances
        # end up beside the heavy ones (Merlin section 3.4): the re-deal
        # must lower the predicted contention by more than it costs.
        gain = (contention(lambda i: i.socket)
                - contention(lambda i: target.get(i.uuid, i.socket)))
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
                    move_memory=_memory_follows(inst, params)))
    return actions, skipped


def _indicators(before_view, state, actions):
    loads = socket_loads(before_view)
    before = spread(loads.values())
    after = spread(state.socket_loads(loads).values())
    migrations = swaps = repins = 0
    memory = 0.0
    for action in actions:
        legs = ((action.first, action.second)
                if isinstance(action, cluster.Swap) else (action,))
        swaps += isinstance(action, cluster.Swap)
        for leg in legs:
            if isinstance(leg, cluster.Migrate):
                migrations += 1
                memory += state.inst[leg.instance].memory_mib
            elif isinstance(leg, cluster.Repin):
                repins += 1
    return {
        'instances': float(len(before_view.instances)),
        'migrations': float(migrations),
        'swaps': float(swaps),
        'repins': float(repins),
        'spread_before': before,
        'spread_after': after,
        'predicted_gain': (100.0 * (before - after) / before
                           if before > 0 else 0.0),
        'memory_to_migrate_gb': memory / 1024.0,
    }


def _plan(view, actions, skipped, state, reason):
    indicators = _indicators(view, state, actions)
    if not actions and reason is None:
        reason = 'no acceptable move (see skipped)'
    return cluster.Plan(actions=tuple(actions), skipped=tuple(skipped),
                        indicators=indicators,
                        reason=None if actions else reason)


def cache_aware(view, params=SwapParameters(), hurt=(), mix_values=None):
    """Algorithm 1: local re-pins, then up to max_swaps host swaps.

    ``mix_values``: the model check on every host swap, as in
    :func:`numa_aware`.
    """
    skipped = []
    actions = []
    state = _State(view, HOST, mix_values)
    if params.numa_repair:
        actions = numa_repair(state, params, skipped,
                              memory_following_only=True)
    if params.local_phase:
        local, skipped = local_phase(
            state.final_view() if actions else view, params, skipped)
        for action in local:
            state.apply(action)
        actions += local
    swaps, skipped, state, reason = global_phase(view, params, HOST, hurt,
                                                 skipped, state=state)
    actions += swaps
    if params.contention_swaps:
        actions += contention_phase(view, params, state,
                                    params.max_swaps - state.steps)
    if params.cpu_quota:
        actions += quota.quota_phase(state.final_view(), skipped)
    return _plan(view, actions, skipped, state, reason)


def numa_aware(view, params=SwapParameters(), hurt=(), mix_values=None):
    """Algorithm 2: NUMA repair, then up to max_swaps socket swaps.

    The swaps move VMs with their memory; the repair (:func:`numa_repair`)
    is the local NUMA-aware step Ahn et al. propose in sections 3 and 4.2.
    ``mix_values`` (:class:`contention.perfmodel.mixes.MixValues`: a
    placement model and the classes' profiles) adds the model check to
    every swap (:func:`_mix_gain`).
    """
    skipped = []
    state = _State(view, SOCKET, mix_values)
    repairs = (numa_repair(state, params, skipped)
               if params.numa_repair else [])
    actions, skipped, state, reason = global_phase(view, params, SOCKET,
                                                   hurt, skipped,
                                                   state=state)
    if params.contention_swaps:
        actions += contention_phase(view, params, state,
                                    params.max_swaps - state.steps)
    actions = repairs + actions
    if params.cpu_quota:
        actions += quota.quota_phase(state.final_view(), skipped)
    return _plan(view, actions, skipped, state, reason)

"""The one state type that applies actions to a cluster view.

Every phase of an audit plans on the state the previous ones leave, and
tries moves before choosing one (a trial move is undone with
:meth:`State.restore`). This keeps the view's instances in incremental
indexes (per host, per socket, free capacity, LLC-miss load, the
running sums of the pressure model) so 200,000 instances stay fast.

Applying an action here is the only definition of what an action does to
a view (:func:`apply`); there used to be two, and they disagreed about
``memory_node``. A live migration or a re-pin that takes the memory along
leaves the memory local to the instance's new socket (``memory_node``
None: "on the node of its vCPUs"); a re-pin without its memory leaves the
memory on the node it was on, so ``memory_node`` names that node. The
copy that left ``memory_node`` as it was after a migration pointed at a
node of the host the instance had left.
"""

import collections
import dataclasses
import math

from contention import classify
from contention import cluster
from contention import topology
from contention.swap import measure

HOST = 'host'
SOCKET = 'socket'
UNITS = (HOST, SOCKET)


def replace_instance(inst, **changes):
    """dataclasses.replace for InstanceView, without its per-call cost.

    InstanceView is a frozen dataclass with no __post_init__, so copying
    its __dict__ gives the same value; dataclasses.replace costs ~20 us a
    call, which adds up to seconds over a 200,000-instance local phase.
    """
    new = object.__new__(type(inst))
    new.__dict__.update(inst.__dict__)
    new.__dict__.update(changes)
    return new


class State:
    """A view under a plan being built: the actions so far, applied.

    ``unit`` is what the balancing compares (:data:`HOST` for Ahn et
    al.'s Algorithm 1, :data:`SOCKET` for Algorithm 2); ``mix_values``
    (:class:`contention.perfmodel.mixes.MixValues`) enables the model
    check, ``hurt`` (:class:`arbitration.Hurt`) are the co-runners the
    repercussion check found; the balancing arbitrates their units first.
    ``thresholds`` (:class:`contention.classify.Thresholds`) are the
    operator's ``[contention_thresholds]``, which Merlin's rules read.
    """

    def __init__(self, view, unit=HOST, mix_values=None, hurt=(),
                 thresholds=classify.DEFAULT_THRESHOLDS):
        if unit not in UNITS:
            raise ValueError('unit must be one of %s, not %r'
                             % (', '.join(UNITS), unit))
        self.view = view
        self.unit = unit
        self.mix_values = mix_values
        self.hurt = tuple(hurt)
        self.thresholds = thresholds
        self.now = view.now
        self.hosts = {h.name: h for h in view.hosts}
        #: {(host, socket id): SocketView} and {(host, node): socket id}.
        self._sockets = {(h.name, s.id): s for h in view.hosts
                         for s in h.sockets}
        self._node_socket = {(h.name, n): socket for h in view.hosts
                             for n, socket in measure.node_sockets(h).items()}
        #: {uuid: measure.sensitivity}: it reads only the instance's
        #: counters, which no action changes.
        self._sensitivity = {}
        self.inst = {i.uuid: i for i in view.instances}
        self.on_host = collections.defaultdict(dict)
        self.used = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
        self.cell_used = collections.defaultdict(lambda: [0.0, 0.0])
        #: Per unit: weighted LLC misses/s (:func:`measure.capacity_weights`).
        self.load = collections.defaultdict(float)
        self.unit_weight = measure.capacity_weights(view, unit)
        self.socket_weight = (self.unit_weight if unit == SOCKET
                              else measure.capacity_weights(view, SOCKET))
        #: Per (host, socket of the vCPUs): [sum of LLC misses/s, sum of
        #: sensitivities, sum of sensitivity x misses], for
        #: :meth:`pressure`.
        self.sock_stats = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
        #: Instances moved (or trial-moved) since the view was taken.
        self.moved = set()
        #: {host: changes of its instances}: what :meth:`per_host` kept
        #: at one count holds while it is unchanged.
        self.host_edits = collections.defaultdict(int)
        #: {(host, key): (host_edits, value)} of :meth:`per_host`.
        self._per_host = {}
        #: Swaps or one-way moves the balancing phases ran (max_swaps).
        self.steps = 0
        #: Why the balancing stopped, for an empty plan.
        self.reason = None
        #: Figures of the view worked out once, shared by the forks.
        self._of_view = {}
        for inst in view.instances:
            self._add(inst)
        sockets = [(h.name, s.id) for h in view.hosts if h.enabled
                   for s in h.sockets]
        #: The weighted LLC misses/s of an average socket before any move
        #: (the floor :func:`measure.co_load_base` gives services and
        #: instances whose misses reach memory).
        self.typical_load = sum(
            self.sock_stats[k][0] * self.socket_weight.get(k, 1.0)
            for k in sockets if k in self.sock_stats) / max(1, len(sockets))

    def fork(self, unit=None, mix_values=None, hurt=()):
        """A State for another walk from where this one stands.

        The same view, thresholds, instances and moves, with ``unit``
        (None: this one's), ``mix_values`` and ``hurt`` of the new walk,
        and the walk's own counters (``steps``, ``reason``) afresh: what
        ``State(view, unit, mix_values, hurt, thresholds)`` builds when no
        move was applied. It copies the indexes instead of adding every
        instance again: one audit plans and then checks the plan for harm,
        from the same view (:func:`contention.swap.audit.run_audit`), and
        at 1,000 hosts (20,000 instances) a build costs 0.06-0.1 s, a fork
        0.003 s, or 0.025 s when it re-keys the load for another unit.
        """
        unit = self.unit if unit is None else unit
        if unit not in UNITS:
            raise ValueError('unit must be one of %s, not %r'
                             % (', '.join(UNITS), unit))
        new = object.__new__(State)
        new.__dict__.update(self.__dict__)
        new.unit, new.mix_values, new.hurt = unit, mix_values, tuple(hurt)
        new.inst = dict(self.inst)
        new.on_host = collections.defaultdict(dict)
        for host, insts in self.on_host.items():
            new.on_host[host] = dict(insts)
        new.used = _copied(self.used, [0.0, 0.0, 0.0])
        new.cell_used = _copied(self.cell_used, [0.0, 0.0])
        new.sock_stats = _copied(self.sock_stats, [0.0, 0.0, 0.0])
        new.moved = set(self.moved)
        # Nothing kept yet, so the counts may start again.
        new.host_edits = collections.defaultdict(int)
        new._per_host = {}
        new.steps, new.reason = 0, None
        if unit == self.unit:
            new.load = collections.defaultdict(float, self.load)
        else:
            new.unit_weight = (self.socket_weight if unit == SOCKET
                               else measure.capacity_weights(self.view, unit))
            new.load = collections.defaultdict(float)
            for inst in new.inst.values():
                new._count_load(inst, measure.misses(inst))
        return new

    def key(self, inst):
        if self.unit == HOST:
            return inst.host
        return (inst.host, inst.socket)

    def unit_host(self, unit):
        """The host name of a balancing unit (a host, or (host, socket))."""
        return unit if self.unit == HOST else unit[0]

    def migratable(self, unit_a, unit_b):
        """Whether instances can live-migrate between two units' hosts.

        :func:`contention.cluster.live_migratable` of their CPU vendors;
        always within one host.
        """
        return cluster.live_migratable(
            self.hosts[self.unit_host(unit_a)].cpu_vendor,
            self.hosts[self.unit_host(unit_b)].cpu_vendor)

    def per_host(self, host, key, compute):
        """``compute()``, kept while ``host``'s instances are unchanged.

        For a reader that works a figure out of a host's instances many
        times between two moves: the harm check judges every instance of
        each socket a step touches, and each read its socket's CPU
        overflow and co-runner misses afresh (two thirds of the audits'
        time on a generated cluster of 15 hosts and 1,680 instances,
        ``bench.watcher``). ``key`` names the figure within the host; the
        figure may depend on the host's instances as they stand, and on
        nothing else that changes.
        """
        edits = self.host_edits[host]
        found = self._per_host.get((host, key))
        if found is not None and found[0] == edits:
            return found[1]
        value = compute()
        self._per_host[(host, key)] = (edits, value)
        return value

    def _add(self, inst):
        self.on_host[inst.host][inst.uuid] = inst
        self.host_edits[inst.host] += 1
        self._account(inst, 1.0)

    def _remove(self, inst):
        del self.on_host[inst.host][inst.uuid]
        self.host_edits[inst.host] += 1
        self._account(inst, -1.0)

    def _count_load(self, inst, misses):
        """Add ``misses`` (LLC misses/s; negative takes away) to a load.

        That of ``inst``'s balancing unit, at the unit's capacity weight:
        the one rule for the load, kept by :meth:`_account` and
        :meth:`fork`.
        """
        key = self.key(inst)
        self.load[key] += misses * self.unit_weight.get(key, 1.0)

    def _account(self, inst, sign):
        """Add (``sign`` 1) or take away (-1) ``inst`` in every index.

        The one hot path of the audit (every trial move runs it twice), so
        it reads each field once.
        """
        host, socket, vcpus = inst.host, inst.socket, inst.vcpus
        used = self.used[host]
        used[0] += sign * vcpus
        used[1] += sign * inst.memory_mib
        used[2] += sign * inst.disk_gb
        if socket is not None:
            self.cell_used[(host, socket)][0] += sign * vcpus
        mem_socket = self.memory_socket(inst)
        if mem_socket is not None:
            self.cell_used[(host, mem_socket)][1] += sign * inst.memory_mib
        llc = inst.llc_misses_per_s
        self._count_load(inst, sign * (llc or 0.0))
        if socket is None or llc is None:
            return
        _shift(self.sock_stats[(host, socket)], self._pressure_terms(inst),
               sign)

    def _pressure_terms(self, inst):
        """(LLC misses/s, sensitivity) ``inst`` adds to its socket's sums.

        For an instance with an LLC-miss rate; its sensitivity reads only
        its counters, which no action changes, so it is worked out once.
        """
        sens = self._sensitivity.get(inst.uuid)
        if sens is None:
            sens = self._sensitivity[inst.uuid] = measure.sensitivity(
                inst, self.thresholds)
        return inst.llc_misses_per_s, sens

    def pressure(self, keys, moves=()):
        """Predicted contention on the (host, socket) ``keys``.

        :func:`measure.pressure`, computed from running sums, each
        socket's times its capacity weight (:func:`measure.capacity_weights`:
        co-runners' misses hurt less where there is more cache and memory
        bandwidth to share). Now, or once ``moves`` ((instance as it
        stands, host, socket) of distinct instances) have run, without
        running them: a balancing step weighs hundreds of candidate moves
        per unit at 1,000 hosts, and applying and undoing each was most
        of its time (``bench/watcher.py``).
        """
        shifted = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
        for inst, host, socket in moves:
            if inst.llc_misses_per_s is None:
                continue
            terms = self._pressure_terms(inst)
            for key, sign in (((inst.host, inst.socket), -1.0),
                              ((host, socket), 1.0)):
                if key[1] is not None:
                    _shift(shifted[key], terms, sign)
        # fsum: the sum may not depend on the order of a set of keys
        # (string hashing differs between processes), or equal
        # candidates would tie differently in two runs of one audit.
        terms = []
        for key in set(keys):
            load, sens, both = self.sock_stats.get(key, (0.0, 0.0, 0.0))
            if key in shifted:
                d_load, d_sens, d_both = shifted[key]
                load, sens, both = load + d_load, sens + d_sens, both + d_both
            terms.append((load * sens - both)
                         * self.socket_weight.get(key, 1.0))
        return math.fsum(terms)

    def vcpus(self, host, socket, moves=()):
        """vCPUs on ``host`` and on its ``socket``, now or once ``moves`` ran.

        ``moves`` as :meth:`pressure` takes them, not run: the counts
        :meth:`free` and :meth:`cell_free` read.
        """
        on_host = self.used[host][0]
        on_socket = self.cell_used.get((host, socket), (0.0,))[0]
        for inst, dest_host, dest_socket in moves:
            for where, where_socket, sign in (
                    (inst.host, inst.socket, -1), (dest_host, dest_socket, 1)):
                if where == host:
                    on_host += sign * inst.vcpus
                    if where_socket == socket and socket is not None:
                        on_socket += sign * inst.vcpus
        return on_host, on_socket

    def remote_misses(self, keys):
        """LLC misses/s that reach another socket's memory, on ``keys``.

        Over the instances whose vCPUs run on the (host, socket) ``keys``:
        each one's misses times the fraction of its memory away from its
        vCPUs' socket (the report's ``remote_memory_ratio``, all of it if
        unknown). What NUMA repair removes (:mod:`.repair`); the pressure
        estimate does not see it.
        """
        terms = []
        for host, socket in set(keys):
            for inst in self.on_host[host].values():
                if inst.socket == socket and inst.socket is not None:
                    terms.append(self.own_remote_misses(inst))
        return math.fsum(terms)

    def remote_share(self, inst):
        """(socket holding most of ``inst``'s memory, remote fraction).

        (None, 0.0) when the memory is on the socket of its vCPUs or
        either is unknown. The fraction is the report's
        ``remote_memory_ratio`` when it has one, else all of it (the view
        only says where most of it is).
        """
        if inst.socket is None:
            return None, 0.0
        mem = self.memory_socket(inst)
        if mem is None or mem == inst.socket:
            return None, 0.0
        return mem, measure.remote_fraction(inst, inst.socket, mem)

    def own_remote_misses(self, inst):
        """``inst``'s LLC misses/s that reach another socket's memory.

        Its misses times its remote fraction (:meth:`remote_share`).
        """
        return measure.misses(inst) * self.remote_share(inst)[1]

    def remote_penalty(self, inst):
        """The slowdown ``inst``'s remote misses cost it, a share of 1.

        The share of its own LLC misses that reach another socket's
        memory times :data:`measure.REMOTE_PENALTY`.
        """
        total = measure.misses(inst)
        if total <= 0:
            return 0.0
        return (self.own_remote_misses(inst) / total
                * measure.REMOTE_PENALTY)

    def repair_gain(self, inst, before):
        """The slowdown ``inst`` has shed since ``before`` by NUMA repair.

        The fall of its :meth:`remote_penalty` from its placement
        ``before`` to ``inst`` (two placements of one instance): what a
        repair gives back, set against the co-runner load it may bring
        (:func:`measure.hurt`'s ``gain``).
        """
        return max(0.0, self.remote_penalty(before)
                   - self.remote_penalty(inst))

    def remote_tenant(self, host, socket, moved=()):
        """An instance whose memory ``socket``'s node serves remotely, or None.

        One not in ``moved`` (uuids) whose vCPUs run on another socket of
        ``host`` and whose memory is on ``socket``'s node. Memory moved
        onto that node sends its misses to the memory controller serving
        the tenant's, which already pays the interconnect for each
        (Merlin section 3.2: MC and IC contention); the co-runner
        estimate, which counts the misses of the instances sharing a
        socket's cache, does not see it, nor is the tenant on a socket
        the move touches. The NUMA repair moves no memory there
        (:mod:`.repair`), and the harm check drops a memory move that
        lands there once the plan's other moves are dropped or reordered
        (:mod:`.harm`). On generated clusters such moves cost busy
        services whose memory was left remote 14-40 % (simulated;
        ``doc/watcher.md``).
        """
        for other in self.on_host[host].values():
            if (other.uuid not in moved and other.socket != socket
                    and self.memory_socket(other) == socket):
                return other
        return None

    def memory_traffic(self, host, socket):
        """LLC misses/s the memory of ``socket`` of ``host`` serves.

        Each instance's misses go to the socket of its vCPUs, less the
        share that reaches remote memory (:meth:`remote_share`), which
        goes to the socket holding its memory. Every socket of the host
        is worked out in one pass, kept while the host is unchanged.
        """
        return self.per_host(host, 'memory_traffic', lambda: (
            self._memory_traffic(host))).get(socket, 0.0)

    def _memory_traffic(self, host):
        """{socket: LLC misses/s its memory serves} of ``host``."""
        parts = {}
        for inst in self.on_host[host].values():
            misses = measure.misses(inst)
            if misses <= 0:
                continue
            mem, frac = self.remote_share(inst)
            if inst.socket is None:
                parts.setdefault(self.memory_socket(inst), []).append(misses)
                continue
            parts.setdefault(inst.socket, []).append(misses * (1.0 - frac))
            if mem is not None:
                parts.setdefault(mem, []).append(misses * frac)
        return {socket: math.fsum(p) for socket, p in parts.items()}

    def mc_utilisation(self, host, socket):
        """The utilisation of ``socket``'s memory controllers, or None.

        :meth:`memory_traffic` in bytes over the socket's
        ``memory_bandwidth_bps``; None where the view has no bandwidth.
        """
        sock = self.socket_view(host, socket)
        bw = sock.memory_bandwidth_bps if sock is not None else None
        if not bw:
            return None
        return self.memory_traffic(host, socket) * topology.LINE_BYTES / bw

    def core_overflow(self, host, socket, wanted=measure.busy_vcpus):
        """:func:`measure.core_overflow` of ``socket`` of ``host`` now."""
        return measure.core_overflow(self.on_host[host].values(),
                                     self.hosts[host], socket, wanted)

    def co_load(self, inst, worst=False, rate=None, rate_key=None):
        """:func:`measure.co_load` of ``inst`` now.

        ``rate_key`` names ``rate`` (what it returns for a co-runner
        depends on that co-runner and on what the key names only): with
        it, the terms of ``inst``'s socket are worked out once while its
        host is unchanged (:meth:`per_host`), for every instance there.
        """
        instances = self.on_host[inst.host].values()
        host = self.hosts[inst.host]
        terms = None
        if rate_key is not None and inst.socket is not None:
            terms = self.per_host(
                inst.host, ('co_load', inst.socket, worst, rate_key),
                lambda: measure.co_load_terms(instances, host, inst.socket,
                                              worst, rate or measure.misses))
        return measure.co_load(instances, inst, host, self.socket_weight,
                               worst=worst, rate=rate, terms=terms)

    def own_load(self, inst):
        """``inst``'s LLC misses/s in the unit of :meth:`co_load`.

        Weighted like its co-runners' (by the weight of the socket it runs
        on, the mean of its host's where the host chooses), so that its
        share of its socket's misses is the unweighted one
        (:func:`measure.co_load_base`).
        """
        if inst.socket is not None:
            keys = [(inst.host, inst.socket)]
        else:
            keys = [(inst.host, s.id) for s in self.hosts[inst.host].sockets]
        weight = (sum(self.socket_weight.get(k, 1.0) for k in keys)
                  / len(keys) if keys else 1.0)
        return measure.misses(inst) * weight

    def memory_socket(self, inst):
        """The socket holding ``inst``'s memory.

        Its memory node's socket when the view says (``memory_node``: a
        VM whose memory was left behind, e.g. by a re-pin without memory
        or Ahn et al.'s W-W placement, uses the other socket's memory),
        else the socket of its vCPUs.
        """
        if inst.memory_node is not None:
            found = self.node_socket(inst.host, inst.memory_node)
            if found is not None:
                return found
        return inst.socket

    def node_socket(self, host_name, node):
        """The socket of ``host_name`` holding NUMA node ``node``, or None."""
        return self._node_socket.get((host_name, node))

    def socket_view(self, host_name, socket):
        return self._sockets.get((host_name, socket))

    def socket_cpus(self, host_name, socket):
        sock = self.socket_view(host_name, socket)
        return sock.cpus if sock is not None else 0

    def _node_of(self, host_name, socket):
        sock = self.socket_view(host_name, socket)
        return sock.nodes[0] if sock is not None and sock.nodes else None

    def move(self, uuid, host, socket, move_memory=True):
        """Move vCPUs (and, unless told otherwise, memory) to host/socket.

        See the module docstring for ``memory_node``; ``node`` becomes the
        destination socket's node when it has one, else unknown.
        """
        old = self.inst[uuid]
        if move_memory:
            memory_node = None
        else:
            memory_node = (old.memory_node if old.memory_node is not None
                           else self._node_of(old.host, old.socket))
        sock = self.socket_view(host, socket)
        node = (sock.nodes[0] if sock is not None and len(sock.nodes) == 1
                else None)
        changes = {}
        if not move_memory and socket != old.socket:
            # the report's ratio described the old vCPU socket
            changes['remote_memory_ratio'] = None
        self._remove(old)
        new = replace_instance(old, host=host, socket=socket, node=node,
                               last_moved_at=self.now,
                               memory_node=memory_node, **changes)
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
        """Apply one :mod:`contention.cluster` action."""
        if isinstance(action, cluster.Swap):
            self.apply(action.first)
            self.apply(action.second)
        elif isinstance(action, cluster.Migrate):
            self.move(action.instance, action.dest_host, action.dest_socket)
        elif isinstance(action, cluster.Repin):
            self.move(action.instance, action.host, action.dest_socket,
                      move_memory=action.move_memory)
        elif isinstance(action, cluster.CpuQuota):
            old = self.inst[action.instance]
            self.inst[action.instance] = replace_instance(
                old, cpu_quota=action.quota)
        else:
            raise TypeError('unknown action %r' % (action,))

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
        sock = self._sockets.get((host_name, socket))
        if sock is None:
            return (0.0, 0.0)
        used = self.cell_used[(host_name, socket)]
        cpu_ratio = 1.0 if dedicated else host.cpu_allocation_ratio
        ram_ratio = 1.0 if dedicated else host.ram_allocation_ratio
        return (sock.cpus * cpu_ratio - used[0],
                sock.memory_mib * ram_ratio - used[1])

    def view_loads(self):
        """:func:`measure.socket_loads` of the view, before any move.

        Worked out once and shared by the forks: an audit's plan and the
        plan its harm check leaves both report the spread they start from
        (0.2 s each at 200,000 instances, ``bench/watcher.py``).
        """
        loads = self._of_view.get('socket_loads')
        if loads is None:
            loads = self._of_view['socket_loads'] = measure.socket_loads(
                self.view)
        return loads

    def socket_loads(self):
        """:func:`measure.socket_loads` with the moves so far."""
        loads = dict(self.view_loads())
        enabled = {h.name: h for h in self.view.hosts if h.enabled}
        originals = {i.uuid: i for i in self.view.instances
                     if i.uuid in self.moved}
        for uuid in self.moved:
            measure.contribute(loads, enabled, originals[uuid], -1.0,
                               self.socket_weight)
            measure.contribute(loads, enabled, self.inst[uuid], 1.0,
                               self.socket_weight)
        return loads

    def final_view(self):
        return dataclasses.replace(
            self.view, instances=tuple(self.inst[i.uuid]
                                       for i in self.view.instances))


def _shift(stats, terms, sign):
    """Add (``sign`` 1) or take away (-1) ``terms`` in a socket's sums.

    ``stats`` is [LLC misses/s, sensitivities, sensitivity x misses] of
    a socket, ``terms`` an instance's (misses/s, sensitivity)
    (:meth:`State._pressure_terms`): the one rule for how an instance
    changes them, whether it moves (:meth:`State._account`) or is only
    weighed moving (:meth:`State.pressure`).
    """
    misses, sens = terms
    stats[0] += sign * misses
    stats[1] += sign * sens
    stats[2] += sign * sens * misses


def _copied(index, zero):
    """A defaultdict of lists, copied list by list."""
    new = collections.defaultdict(lambda: list(zero))
    for key, values in index.items():
        new[key] = list(values)
    return new


def apply(view, actions):
    """The view after ``actions`` (in order); ``view`` is unchanged."""
    state = State(view)
    for action in actions:
        state.apply(action)
    return state.final_view()

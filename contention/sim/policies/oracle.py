"""The ``oracle``: the best placement, found with the simulator's truth.

**Exact search by symmetry.** With every instance's memory on the socket
that runs its vCPUs, the model's sockets do not interact (each has its
own cache, memory controller and cores, and no traffic crosses the
interconnect), so the cluster's total performance is a sum over sockets
of ``F(c)``, where ``c`` counts, per *class* of interchangeable instances
(same profile, vCPUs, memory, quota and current CPU demand), how many a
socket holds. When all usable sockets are identical, ``F`` is computed
once per composition ``c`` (one batched solve), and a dynamic programme
over the sockets, ``V_k(r) = max_c F(c) + V_{k-1}(r - c)`` on the vector
``r`` of instances still to place, gives the exact optimum of the sum of
normalised performances over all NUMA-local placements. Ahn et al.'s
32-VM mixes have 4 classes of 8 and 8 sockets of 4 cores: 70
compositions, 6,561 states, solved in milliseconds.

Scope of "exact": placements whose memory is local to the vCPUs, with
no socket holding more vCPUs than it has cores (more only when the
instances cannot fit otherwise) and node memory respected. Remote memory
is never better in this model unless a memory controller saturates, so
the restriction is stated, not hidden.

**CPU quotas.** A capped instance (quota below 1 when the run began)
may have that quota or more, in steps of one core up to its vCPUs
(:func:`quota_options`): the raises Merlin's CPU-sensitivity trigger
makes (section 3.5) and the swap strategies' quota phase
(:mod:`contention.swap.quota`) makes one audit at a time. The oracle chooses
afresh every audit, so it may also take a raise back, which those never
do: its options include theirs. Each socket composition's value is the
best over its instances' quota options
(:meth:`OraclePolicy._best_quotas`), so the optimum is exact over
placements and quotas together, and the oracle stays an upper bound for
policies that raise quotas. Were the options too many to enumerate,
quotas would stay fixed and the note says the optimum is not exact.

**Larger scenarios** (heterogeneous sockets, too many states): the
exact search is replaced by the best-known placement of a bounded
local search with restarts (:meth:`OraclePolicy._local_search`, at most
``search_tries`` tries and ``search_solves`` socket compositions solved
an audit), started from the better of the current
placement and a balanced deal (Ahn et al.'s distribute over all sockets of
the cluster). It reports an upper bound on its gap to the optimum: each
instance can at best reach its best performance over all socket
compositions that can hold it (or 1.0, alone, when compositions cannot be
enumerated). Every plan, exact or not, is dry-run first
(:meth:`OraclePolicy._feasible`, :meth:`contention.sim.Simulator.
dry_run`): a swap between full hosts goes through a staging host with
room when there is one, and what the simulator would refuse is left out,
so the oracle emits only actions the simulator accepts. The run's notes
say which case applied. Pinned (not movable) instances rule both
searches out; then the oracle keeps the current placement.

The oracle acts only when its placement beats the current one by more
than ``min_gain`` (relative), and then emits swaps (two live migrations
between hosts, two re-pins with memory inside a host) so capacity holds
after every action, plus memory moves for instances whose memory is not
local.

**Which epoch's demand.** By default (``demand='current'``) the oracle
decides with each instance's CPU demand in the middle of the epoch about
to run, ``now + epoch_s / 2``: it foresees demand phases (a MapReduce
VM's burst, Darwin's phases) that no counter has shown yet. Every real
policy (ours, Watcher's, Merlin's) sees only the interval just measured.
``demand='last_interval'`` makes the oracle decide with the demand of
that interval, ``now - epoch_s / 2`` (at the first audit, ``0``: the
simulator's first measurement), everything else unchanged: ground-truth
profiles, the same exact search, the same ``min_gain``. The gap between
the two separates the part of the clairvoyant oracle's gain that needs
foresight of demand phases from the part a counter-driven policy could
close. It is a reference, not an upper bound for reactive policies: it
still optimises for the interval just gone, and a policy that happens to
suit the coming one better can pass it. With constant demand the two
decide identically.
"""

import itertools
import math

import numpy as np

from contention import cluster
from contention import policy
from contention.sim import placement
from contention.sim import solver
from contention.sim import state as state_mod

MAX_STATES = 2000000
MAX_COMPOSITIONS = 20000
#: Most instances solved over all compositions of one exact search (each
#: composition is a socket solved once; beyond this the search would take
#: minutes, so the local search runs instead).
MAX_EVALUATED = 200000
#: Most steps of the exact search's dynamic programme (states x socket
#: compositions x sockets; a few ns each, so about 20 CPU s an audit):
#: beyond, the local search runs instead. Clusters over it (a 9-host one
#: had 650,025 states, 4,510 compositions, 18 sockets) took more than two
#: minutes an audit and were left out of the evaluation instead.
MAX_DP_STEPS = 5 * 10 ** 9
#: Budget of the local search an audit (:meth:`OraclePolicy.
#: _local_search`): tries, and socket compositions solved (the costly
#: part of a try; a cluster of many kinds of socket solves one almost
#: every try). Counts, not seconds, so the best-known reference is the
#: same on every machine and every run. On four generated small clusters
#: (family seed 19) 8,192 tries found 98-100 % of the gain 32,768 found at
#: the first audit, 64-100 % of the smaller gains left at later ones.
SEARCH_TRIES = 8192
SEARCH_SOLVES = 1000


def _compositions(counts, vcpus, mems, cap, node_mem):
    """Every per-class count vector a socket can hold, or None if too many.

    Depth-first with the remaining cores and memory as bounds, so it never
    walks the (huge) product of all counts.
    """
    found = []
    current = [0] * len(counts)

    def walk(j, cores, memory):
        if len(found) > MAX_COMPOSITIONS:
            return
        if j == len(counts):
            found.append(tuple(current))
            return
        most = counts[j]
        if vcpus[j] > 0:
            most = min(most, int((cores + 1e-9) // vcpus[j]))
        if mems[j] > 0:
            most = min(most, int((memory + 1e-9) // mems[j]))
        for n in range(most + 1):
            current[j] = n
            walk(j + 1, cores - n * vcpus[j], memory - n * mems[j])
        current[j] = 0

    walk(0, cap, node_mem)
    return None if len(found) > MAX_COMPOSITIONS else found


def quota_options(quota, vcpus, movable=True):
    """The quotas the oracle may give an instance capped at ``quota``.

    A capped instance (``quota`` below 1, the quota it started the run
    with) gets it or more, one core at a time, ``quota + k / vcpus``, up
    to 1 (Merlin section 3.5, "an additional local CPU";
    :func:`contention.swap.quota.one_more_core`). An uncapped or pinned (not
    movable) instance keeps its quota.
    """
    if not movable or quota >= 1.0 or vcpus < 1:
        return (quota,)
    options = [quota]
    while options[-1] < 1.0 - 1e-9:
        options.append(min(1.0, options[-1] + 1.0 / vcpus))
    return tuple(round(q, 6) for q in options)


class OraclePolicy(policy.Policy):
    name = 'oracle'

    #: The CPU demand the oracle decides with (module docstring).
    DEMANDS = ('current', 'last_interval')

    def __init__(self, min_gain=0.02, demand='current',
                 search_tries=SEARCH_TRIES, search_solves=SEARCH_SOLVES,
                 restarts_after=200):
        if demand not in self.DEMANDS:
            raise ValueError('demand must be one of %s, not %r'
                             % (', '.join(self.DEMANDS), demand))
        self.min_gain = min_gain
        self.demand = demand
        #: Tries and compositions solved of the local search beyond the
        #: exact one, per audit, and tries without improvement before a
        #: restart.
        self.search_tries = int(search_tries)
        self.search_solves = int(search_solves)
        self.restarts_after = int(restarts_after)
        self.sim = None
        self.notes = []
        self._memo = {}

    def bind(self, simulator):
        self.sim = simulator
        self.notes = []
        self._memo = {}
        #: Each instance's quota when the run began: its quota options
        #: start there, whatever raises the oracle made since.
        self._base_quota = {i.uuid: i.quota for i in simulator.state.instances}
        vendors = [host.hw.cpu_vendor for host in simulator.state.hosts]
        self._pools = (vendors if len(set(vendors)) > 1
                       else [None] * len(vendors))

    def _base(self, inst):
        return self._base_quota.setdefault(inst.uuid, inst.quota)

    # -- the search --------------------------------------------------------

    def _pool(self, h):
        """The group of hosts host ``h``'s instances can live-migrate in.

        Its CPU vendor on a cluster of two or more vendors
        (:func:`contention.cluster.live_migratable`; an unknown vendor is
        a group of its own here), else None: one group.
        """
        return self._pools[h]

    def _classes(self, t):
        groups = {}
        for inst in self.sim.state.instances:
            # A capped instance's class is by the quota it started with
            # (its options, quota_options); the others' by their quota.
            # Instances of different pools are of different classes, so
            # a class only moves among the sockets of its pool.
            key = (inst.profile.name, inst.vcpus, inst.memory_mib,
                   round(self._base(inst), 4), round(inst.demand_at(t), 3),
                   self._pool(inst.host) or '')
            groups.setdefault(key, []).append(inst)
        keys = sorted(groups)
        return keys, [groups[k] for k in keys]

    def _sockets(self):
        st = self.sim.state
        slots = []
        for h, host in enumerate(st.hosts):
            for s in host.model.usable_sockets():
                idx = host.model.node_indices_of_socket(s)
                sig = (host.hw.name, len(idx))
                slots.append((h, s, sig))
        return slots

    def _compositions(self, members, cores, memory):
        vcpus = [m[0].vcpus for m in members]
        mems = [m[0].memory_mib for m in members]
        counts = [len(m) for m in members]
        total = sum(v * c for v, c in zip(vcpus, counts))
        return vcpus, mems, counts, total

    def _evaluate(self, keys, members, comps, h0, s0, t, quotas=None):
        """Per-class performance of each composition on one socket.

        ``quotas``, when given, holds per composition and class the quota
        of each of its instances there (else the class's own quota).
        """
        st = self.sim.state
        host = st.hosts[h0]
        hosts = [state_mod.SimHost('oracle-%d' % k, host.model, host.hw)
                 for k in range(len(comps))]
        yardstick = None
        if st.yardstick is not None:
            # the cluster's yardstick host, empty, so performance means
            # what it means in the simulator
            yardstick = len(hosts)
            hosts.append(st.hosts[st.yardstick])
        tmp = state_mod.ClusterState(hosts, yardstick)
        owner = []
        for k, comp in enumerate(comps):
            for j, count in enumerate(comp):
                proto = members[j][0]
                for n in range(count):
                    quota = (proto.quota if quotas is None
                             else quotas[k][j][n])
                    # one uuid each: the state keys its members, free
                    # cores and pinned CPUs by uuid
                    inst = state_mod.SimInstance(
                        uuid='%d-%d-%d' % (k, j, n), name='',
                        profile=proto.profile,
                        quota=quota, phase_offset=proto.phase_offset)
                    tmp.add(inst)
                    tmp.place(inst, k, s0)
                    owner.append((k, j))
        values = np.zeros((len(comps), len(keys)))
        if not tmp.instances:
            return values
        # Demand must be the class's at t, whatever the phase offset.
        p = tmp.problem(t)
        for n, (k, j) in enumerate(owner):
            p.demand[n] = members[j][0].demand_at(t)
        _, perf = tmp.performance(p)
        for n, (k, j) in enumerate(owner):
            values[k, j] += perf[n]
        return values

    def _options(self, inst):
        return quota_options(self._base(inst), inst.vcpus, inst.movable)

    def _best_quotas(self, keys, members, comps, h0, s0, t):
        """(value, quotas) per composition, the best over quota options.

        ``quotas[c][j]`` is the tuple of quotas the composition's instances
        of class ``j`` get (:func:`quota_options`, as a multiset: the
        instances of a class are interchangeable). None when the options
        multiply past :data:`MAX_COMPOSITIONS` evaluations.
        """
        options = [self._options(m[0]) for m in members]
        rows, owner = [], []
        for c, comp in enumerate(comps):
            per_class = [tuple(itertools.combinations_with_replacement(
                options[j], n)) for j, n in enumerate(comp)]
            for split in itertools.product(*per_class):
                rows.append(split)
                owner.append(c)
                if len(rows) > MAX_COMPOSITIONS:
                    return None
        expanded = [comps[c] for c in owner]
        totals = self._evaluate(keys, members, expanded, h0, s0, t,
                                quotas=rows).sum(axis=1)
        value = np.full(len(comps), -np.inf)
        quotas = [None] * len(comps)
        for row, (c, total) in enumerate(zip(owner, totals)):
            if total > value[c] + 1e-12:
                value[c], quotas[c] = total, rows[row]
        return value, quotas

    def search(self, t):
        """The exact optimum, or (None, why) when it cannot be searched.

        The optimum is a dict: ``keys``/``members`` (the classes),
        ``slots`` (host, socket, signature), ``assignment`` (per slot, how
        many of each class), ``value`` (sum of normalised performance),
        ``exact``. When the state space is too large but compositions can
        be enumerated, :attr:`_bound` is set to an upper bound.
        """
        self._bound = None
        keys, members = self._classes(t)
        slots = self._sockets()
        st = self.sim.state
        sigs = {sig for _, _, sig in slots}
        counts = [len(m) for m in members]
        vcpus = [m[0].vcpus for m in members]
        mems = [m[0].memory_mib for m in members]
        # Python integers: numpy's int64 product overflowed (to a negative
        # count that passed the guard below) on a 200-host cluster.
        n_states = math.prod(c + 1 for c in counts)
        if len(sigs) != 1 or any(not i.movable for i in st.instances):
            return None, 'sockets differ or instances are pinned'
        per_socket = len(st.hosts[slots[0][0]].model.node_indices_of_socket(
            slots[0][1]))
        if any((i.profile.numa_nodes or 0) > per_socket
               for i in st.instances):
            return None, 'flavors span sockets, so sockets interact'
        h0, s0, _ = slots[0]
        cores = st.cores_of_socket(h0, s0)
        model = st.hosts[h0].model
        node_mem = float(model.memory_mib[list(
            model.node_indices_of_socket(s0))].sum())
        cap = max(cores, np.ceil(sum(v * c for v, c in zip(vcpus, counts))
                                 / len(slots)))
        comps = _compositions(counts, vcpus, mems, cap, node_mem)
        if comps is None:
            return None, ('more than %d socket compositions'
                          % MAX_COMPOSITIONS)
        if sum(sum(c) for c in comps) > MAX_EVALUATED:
            return None, ('more than %d instances to solve over the socket '
                          'compositions' % MAX_EVALUATED)
        if (n_states > MAX_STATES
                or n_states * len(comps) * len(slots) > MAX_DP_STEPS):
            per_class = self._evaluate(keys, members, comps, h0, s0, t)
            comp_arr = np.array(comps, dtype=float)
            with np.errstate(divide='ignore', invalid='ignore'):
                each = np.where(comp_arr > 0, per_class / comp_arr, -np.inf)
            self._bound = float(np.dot(counts, each.max(axis=0)))
            return None, ('%d states x %d compositions x %d sockets is '
                          'too many for the exact search'
                          % (n_states, len(comps), len(slots)))
        memo_key = (tuple(keys), tuple(counts), len(slots))
        if memo_key in self._memo:
            assignment, total, quotas, exact = self._memo[memo_key]
            return dict(keys=keys, members=members, slots=slots,
                        assignment=assignment, value=total,
                        quotas=quotas, exact=exact), None
        capped = any(len(self._options(m[0])) > 1 for m in members)
        best_quotas = (self._best_quotas(keys, members, comps, h0, s0, t)
                       if capped else None)
        if best_quotas is None:
            value = self._evaluate(keys, members, comps, h0, s0,
                                   t).sum(axis=1)
            comp_quotas = None
        else:
            value, comp_quotas = best_quotas
        radix = np.cumprod([1] + [c + 1 for c in counts[:-1]])
        digits = (np.arange(n_states)[:, None] // radix[None, :]) % (
            np.array(counts) + 1)[None, :]
        # at_least[j][v]: the states holding at least v of class j, so a
        # composition's feasible states are an AND of one mask per class
        at_least = [[digits[:, j] >= v for v in range(count + 1)]
                    for j, count in enumerate(counts)]
        del digits
        comp_arr = np.array(comps)
        comp_code = comp_arr @ radix
        best = np.full(n_states, -np.inf)
        best[0] = 0.0
        choices = []
        for _ in slots:
            nxt = np.full(n_states, -np.inf)
            arg = np.full(n_states, -1)
            for c, (code, vec) in enumerate(zip(comp_code, comp_arr)):
                ok = np.ones(n_states, dtype=bool)
                for j, v in enumerate(vec):
                    if v:
                        ok &= at_least[j][v]
                idx = np.nonzero(ok)[0]
                cand = value[c] + best[idx - code]
                better = cand > nxt[idx]
                nxt[idx[better]] = cand[better]
                arg[idx[better]] = c
            best = nxt
            choices.append(arg)
        full = int(np.array(counts) @ radix)
        if not np.isfinite(best[full]):
            return None, 'no feasible placement of whole sockets'
        assignment, quotas = [], []
        state = full
        for arg in reversed(choices):
            c = int(arg[state])
            assignment.append(comps[c])
            quotas.append(None if comp_quotas is None else comp_quotas[c])
            state -= int(comp_code[c])
        # Exact unless capped instances' quotas had to stay fixed.
        exact = not capped or comp_quotas is not None
        self._memo[memo_key] = (assignment, float(best[full]), quotas,
                                exact)
        return dict(keys=keys, members=members, slots=slots,
                    assignment=assignment, value=float(best[full]),
                    quotas=quotas, exact=exact), None

    # -- turning a target into actions -------------------------------------

    def decision_time(self):
        """The time whose CPU demand this audit decides with.

        ``demand='current'``: the middle of the epoch about to run.
        ``'last_interval'``: the middle of the epoch just measured (the
        simulator measures at 0 before the first epoch).
        """
        half = self.sim.scenario.epoch_s / 2.0
        if self.demand == 'current':
            return self.sim.now + half
        return max(0.0, self.sim.now - half)

    def rebalance(self, view, rng):
        t = self.decision_time()
        found, why = self.search(t)
        current = float(sum(self._current_perf(t)))
        if found is None:
            return self._fallback(t, why, current)
        fixed = ('' if found['exact'] else
                 ' (exact search not possible over quota raises, too many '
                 'options: quotas kept fixed)')
        if found['value'] <= current * (1.0 + self.min_gain):
            return cluster.Plan(reason='oracle: current placement within '
                                '%.1f %% of the optimum%s'
                                % (100 * self.min_gain, fixed))
        scope = ('NUMA-local placements and CPU quota raises'
                 if any(q is not None for q in found['quotas'])
                 else 'NUMA-local placements')
        if found['exact']:
            note = ('oracle: exact optimum over %s, sum of normalised '
                    'performance %.3f (current %.3f)'
                    % (scope, found['value'], current))
        else:
            note = ('oracle: best over NUMA-local placements%s, sum of '
                    'normalised performance %.3f (current %.3f)'
                    % (fixed, found['value'], current))
        self.notes.append(note)
        return cluster.Plan(actions=self._feasible(self._moves(found)),
                            indicators={'oracle_value': found['value'],
                                        'current_value': current})

    def _fallback(self, t, why, current):
        """Best found by local search, and a gap bound (module doc)."""
        n = len(self.sim.state.instances)
        bound = self._bound if self._bound is not None else float(n)
        how = ('best per-instance performance over all socket '
               'compositions' if self._bound is not None
               else 'performance <= 1 per instance')
        found = None
        if all(i.movable for i in self.sim.state.instances):
            found = self._local_search(t)
        if found is not None and found['value'] > current * (
                1.0 + self.min_gain):
            actions = self._feasible(self._moves(found))
            note = ('oracle: exact search not possible (%s); best known: '
                    'local search from the better of the current placement '
                    'and a balanced deal, sum of normalised performance '
                    '%.3f (current %.3f), gap to optimum <= %.3f (%s)'
                    % (why, found['value'], current,
                       max(0.0, bound - found['value']), how))
            self.notes.append(note)
            return cluster.Plan(actions=actions,
                                indicators={'found_value': found['value'],
                                            'gap_bound': bound
                                            - found['value']})
        note = ('oracle: exact search not possible (%s); best known: the '
                'current placement, sum of normalised performance %.3f, gap '
                'to optimum <= %.3f (%s)' % (why, current,
                                             max(0.0, bound - current), how))
        if not self.notes or self.notes[-1] != note:
            self.notes.append(note)
        return cluster.Plan(reason=note)

    # -- beyond the exact search: local search with restarts --------------

    def _current_assignment(self, keys, members, slots):
        st = self.sim.state
        index = {(h, s): k for k, (h, s, _) in enumerate(slots)}
        assignment = [[0] * len(keys) for _ in slots]
        for j, group in enumerate(members):
            for inst in group:
                k = index.get((inst.host, st.socket_of(inst)))
                if k is None:
                    return None
                assignment[k][j] += 1
        return assignment

    def _local_search(self, t):
        """A local search over socket compositions, bounded in tries.

        Sockets do not interact with memory local (module doc), so the
        value of a placement is a sum over sockets of their compositions'
        values, each solved once and memoised. Moves: one instance to
        another socket, or two of different classes exchanged; a move is
        kept when it raises the sum and every socket stays within its
        cores (or the load it already had) and node memory. After
        ``restarts_after`` tries without a gain the search restarts from
        the best found, perturbed by random exchanges, until
        ``search_tries`` tries are spent or ``search_solves`` compositions
        solved. Returns the :meth:`search` dict (``exact`` False).
        """
        st = self.sim.state
        keys, members = self._classes(t)
        slots = self._sockets()
        start = self._current_assignment(keys, members, slots)
        if start is None:
            return None
        dealt = self._deal(t)
        vcpu = np.array([m[0].vcpus * m[0].quota for m in members])
        mem = np.array([m[0].memory_mib for m in members], dtype=float)
        cores, memory = [], []
        for k, (h, s, _) in enumerate(slots):
            model = st.hosts[h].model
            idx = list(model.node_indices_of_socket(s))
            cores.append(max(float(model.cores[idx].sum()),
                             float(np.dot(start[k], vcpu))))
            memory.append(float(model.memory_mib[idx].sum())
                          * st.hosts[h].hw.ram_allocation_ratio)
        memo = {}
        solved = [0]

        def value(k, comp):
            key = (slots[k][2], tuple(comp))
            if key not in memo:
                solved[0] += 1
                h, s, _ = slots[k]
                memo[key] = float(self._evaluate(keys, members, [comp], h, s,
                                                 t).sum())
            return memo[key]

        def prefill(assign):
            # One batched solve per socket signature for every composition
            # not solved yet (a 1,000-host start has thousands).
            missing = {}
            for k, comp in enumerate(assign):
                key = (slots[k][2], tuple(comp))
                if key not in memo:
                    missing.setdefault(slots[k][2], {})[tuple(comp)] = k
            for sig, comps in missing.items():
                items = sorted(comps.items())
                h, s, _ = slots[items[0][1]]
                values = self._evaluate(keys, members, [c for c, _ in items],
                                        h, s, t).sum(axis=1)
                for (comp, _), v in zip(items, values):
                    memo[(sig, comp)] = float(v)

        def fits(k, comp):
            return (np.dot(comp, vcpu) <= cores[k] + 1e-9
                    and np.dot(comp, mem) <= memory[k] + 1e-6)

        def total(assign):
            return sum(value(k, c) for k, c in enumerate(assign))

        best = [list(c) for c in start]
        prefill(best)
        if dealt is not None:
            prefill(dealt['assignment'])
        best_value = total(best)
        if dealt is not None and all(fits(k, c) for k, c in
                                     enumerate(dealt['assignment'])):
            dealt_value = total(dealt['assignment'])
            if dealt_value > best_value:
                best = [list(c) for c in dealt['assignment']]
                best_value = dealt_value
        rng = np.random.default_rng([self.sim.seed, 7, self.sim.epoch])
        cur, cur_value = [list(c) for c in best], best_value
        stale = 0
        n_slots = len(slots)
        peers = {}
        for k, (h, _, _) in enumerate(slots):
            peers.setdefault(self._pool(h), []).append(k)
        pooled = len(peers) > 1

        def pair():
            """Two slots of one pool (None when a's pool has one slot)."""
            if not pooled:
                return rng.choice(n_slots, 2, replace=False)
            a = int(rng.integers(n_slots))
            same = peers[self._pool(slots[a][0])]
            if len(same) < 2:
                return None
            b = same[int(rng.integers(len(same) - 1))]
            return a, (b if b != a else same[-1])

        tries = self.search_tries if n_slots > 1 else 0
        for _ in range(tries):
            if solved[0] >= self.search_solves:
                break
            chosen = pair()
            if chosen is None:
                stale += 1
                continue
            a, b = chosen
            ja = [j for j, c in enumerate(cur[a]) if c]
            if not ja:
                stale += 1
                continue
            j = int(rng.choice(ja))
            new_a, new_b = list(cur[a]), list(cur[b])
            new_a[j] -= 1
            new_b[j] += 1
            jb = [x for x, c in enumerate(cur[b]) if c and x != j]
            if jb and rng.random() < 0.7:
                x = int(rng.choice(jb))
                new_b[x] -= 1
                new_a[x] += 1
            if fits(a, new_a) and fits(b, new_b):
                delta = (value(a, new_a) + value(b, new_b)
                         - value(a, cur[a]) - value(b, cur[b]))
                if delta > 1e-9:
                    cur[a], cur[b] = new_a, new_b
                    cur_value += delta
                    stale = 0
                    if cur_value > best_value + 1e-12:
                        best = [list(c) for c in cur]
                        best_value = cur_value
                    continue
            stale += 1
            if stale >= self.restarts_after:
                stale = 0
                cur = [list(c) for c in best]
                for _ in range(max(1, n_slots // 4)):
                    chosen = pair()
                    if chosen is None:
                        continue
                    a, b = chosen
                    ja = [j for j, c in enumerate(cur[a]) if c]
                    jb = [j for j, c in enumerate(cur[b]) if c]
                    if not ja or not jb:
                        continue
                    x, y = int(rng.choice(ja)), int(rng.choice(jb))
                    new_a, new_b = list(cur[a]), list(cur[b])
                    new_a[x] -= 1
                    new_b[x] += 1
                    new_b[y] -= 1
                    new_a[y] += 1
                    if fits(a, new_a) and fits(b, new_b):
                        cur[a], cur[b] = new_a, new_b
                cur_value = total(cur)
        return dict(keys=keys, members=members, slots=slots,
                    assignment=[tuple(c) for c in best], value=best_value,
                    exact=False)

    def _feasible(self, actions):
        """The plan cut to what the simulator accepts (tried on a scratch).

        A swap between hosts whose first leg has no room becomes three
        migrations through a staging host with room for the first
        instance, when there is one (as an operator runs it with Nova);
        otherwise it is left out, like any other refused action.
        """
        scratch = self.sim.scratch()
        kept = []
        for action in actions:
            refused = scratch.attempt(action)
            if refused is None:
                kept.append(action)
            elif (isinstance(action, cluster.Swap)
                    and refused.kind == 'first_leg'):
                kept.extend(self._staged(scratch, action))
        return tuple(kept)

    def _staged(self, scratch, swap):
        """A swap as three migrations via a staging host, or ().

        Only hosts the first instance can live-migrate to and that have
        room for it are tried (the checks the simulator would make
        first), and only until one takes the first leg: what the second
        and third legs find on the swap's two hosts is the same whichever
        host holds the first instance meanwhile. On a cluster of full
        hosts, trying every host cost minutes an audit.
        """
        first, second = swap.first, swap.second
        st = scratch.state
        inst = st.by_uuid[first.instance]
        insts = [inst, st.by_uuid[second.instance]]
        vendor = st.hosts[st.host_index[first.source_host]].hw.cpu_vendor
        for h, host in enumerate(st.hosts):
            if (host.name in (first.source_host, first.dest_host)
                    or not cluster.live_migratable(vendor,
                                                   host.hw.cpu_vendor)
                    or not placement.fits(st, h, inst)):
                continue
            legs = (cluster.Migrate(first.instance, first.source_host,
                                    host.name),
                    second,
                    cluster.Migrate(first.instance, host.name,
                                    first.dest_host, first.dest_socket))
            snap = scratch._snapshot(insts)
            if scratch.attempt(legs[0]) is not None:
                continue
            if all(scratch.attempt(leg) is None for leg in legs[1:]):
                return legs
            scratch._restore(snap)
            break
        return ()

    def _deal(self, t):
        """Ahn et al.'s distribute (section 3), generalised to all sockets.

        Instances sorted by their LLC misses alone, most first, each to the
        socket with room (allocated cores, node memory) whose summed misses
        are lowest; memory local. Returns the same dict as :meth:`search`
        (``exact`` False), or None when something does not fit.
        """
        st = self.sim.state
        keys, members = self._classes(t)
        cls_of = {}
        for j, group in enumerate(members):
            for inst in group:
                cls_of[inst.uuid] = j
        slots = self._sockets()
        p = st.problem(t)
        rate = solver.solve(solver.alone(p)).misses_per_s
        free = [st.cores_of_socket(h, s) for h, s, _ in slots]
        mem = []
        for h, s, _ in slots:
            model = st.hosts[h].model
            idx = list(model.node_indices_of_socket(s))
            mem.append(float(model.memory_mib[idx].sum())
                       * st.hosts[h].hw.ram_allocation_ratio)
        # Arrays over the slots: a 1,000-host cluster deals 20,000
        # instances over 2,000 sockets.
        free, mem = np.array(free, dtype=float), np.array(mem)
        load = np.zeros(len(slots))
        pools = [self._pool(h) for h, _, _ in slots]
        pool_of = {pool: np.array([q == pool for q in pools])
                   for pool in set(pools)}
        assignment = [[0] * len(keys) for _ in slots]
        chosen = {}
        for i in np.argsort(-rate, kind='stable'):
            inst = st.instances[i]
            need = inst.vcpus * inst.quota
            room = ((free + 1e-9 >= need) & (mem >= inst.memory_mib)
                    & pool_of[self._pool(inst.host)])
            if not room.any():
                return None
            # The least loaded slot with room, then the most free cores,
            # then the first.
            least = room & (load == load[room].min())
            k = int(np.flatnonzero(least & (free == free[least].max()))[0])
            free[k] -= need
            mem[k] -= inst.memory_mib
            load[k] += rate[i]
            assignment[k][cls_of[inst.uuid]] += 1
            chosen[inst.uuid] = k
        tmp = state_mod.ClusterState(st.hosts)
        for inst in st.instances:
            copy = state_mod.SimInstance(
                inst.uuid, inst.name, inst.profile, quota=inst.quota,
                phase_offset=inst.phase_offset)
            tmp.add(copy)
            h, s, _ = slots[chosen[inst.uuid]]
            tmp.place(copy, h, s)
        value = float(tmp.performance(tmp.problem(t))[1].sum())
        return dict(keys=keys, members=members, slots=slots,
                    assignment=assignment, value=value, exact=False)

    def _current_perf(self, t):
        st = self.sim.state
        return st.performance(st.problem(t))[1]

    def _moves(self, found):
        st = self.sim.state
        members, slots = found['members'], found['slots']
        cls_of = {}
        for j, group in enumerate(members):
            for inst in group:
                cls_of[inst.uuid] = j
        # need[slot][class] = how many more of the class the slot wants
        need = [list(comp) for comp in found['assignment']]
        index = {(h, s): k for k, (h, s, _) in enumerate(slots)}
        where = {inst.uuid: index[(inst.host, st.socket_of(inst))]
                 for inst in st.instances}
        misplaced = []
        for inst in st.instances:
            k, j = where[inst.uuid], cls_of[inst.uuid]
            if need[k][j] > 0:
                need[k][j] -= 1
            else:
                misplaced.append(inst)
        actions = []
        moved = set()
        pending = list(misplaced)
        while pending:
            a = pending.pop(0)
            ka, ja = where[a.uuid], cls_of[a.uuid]
            targets = [k for k in range(len(slots)) if need[k][ja] > 0]
            if not targets:
                continue
            # Prefer a partner whose class the source socket needs.
            partner = None
            for b in pending:
                if need[where[b.uuid]][ja] > 0:
                    if need[ka][cls_of[b.uuid]] > 0:
                        partner = b
                        break
                    partner = partner or b
            if partner is None:
                kb = targets[0]
                actions.append(self._move(a, slots[kb], slots[ka]))
                need[kb][ja] -= 1
                where[a.uuid] = kb
                moved.add(a.uuid)
                continue
            kb, jb = where[partner.uuid], cls_of[partner.uuid]
            actions.extend(self._swap(a, slots[ka], partner, slots[kb]))
            moved.update((a.uuid, partner.uuid))
            need[kb][ja] -= 1
            where[a.uuid], where[partner.uuid] = kb, ka
            pending = [b for b in pending if b is not partner]
            if need[ka][jb] > 0:
                need[ka][jb] -= 1
            else:
                pending.append(partner)
        for inst in st.instances:
            if inst.uuid in moved:
                continue
            if st.socket_of(inst, inst.mem_frac) != st.socket_of(inst):
                actions.append(cluster.Repin(
                    inst.uuid, st.hosts[inst.host].name,
                    st.socket_of(inst), move_memory=True))
        return tuple(actions) + self._quota_actions(found, where, cls_of)

    def _quota_actions(self, found, where, cls_of):
        """CpuQuota actions giving each slot's instances their quotas.

        ``where`` maps each instance to the slot it ends in. The chosen
        quotas of a class on a slot go to its instances there, highest
        first, in uuid order (they are interchangeable).
        """
        st = self.sim.state
        actions = []
        for k, quotas in enumerate(found.get('quotas') or ()):
            if quotas is None:
                continue
            h = found['slots'][k][0]
            for j, wanted in enumerate(quotas):
                here = sorted((i for i in st.instances
                               if where[i.uuid] == k and cls_of[i.uuid] == j),
                              key=lambda i: i.uuid)
                wanted = sorted(wanted, reverse=True)
                # Instances already at a wanted quota keep it.
                rest = []
                for inst in here:
                    match = next((n for n, q in enumerate(wanted)
                                  if abs(q - inst.quota) <= 1e-9), None)
                    if match is None:
                        rest.append(inst)
                    else:
                        wanted.pop(match)
                for inst, quota in zip(rest, wanted):
                    actions.append(cluster.CpuQuota(
                        inst.uuid, st.hosts[h].name, float(quota)))
        return tuple(actions)

    def _move(self, inst, slot, from_slot):
        """One instance from ``from_slot`` to ``slot``.

        ``from_slot`` is where earlier actions of the plan left it, not
        where it is now.
        """
        st = self.sim.state
        h, s, _ = slot
        src = from_slot[0]
        if h == src:
            return cluster.Repin(inst.uuid, st.hosts[h].name, s,
                                 move_memory=True)
        return cluster.Migrate(inst.uuid, st.hosts[src].name,
                               st.hosts[h].name, s)

    def _swap(self, a, slot_a, b, slot_b):
        st = self.sim.state
        ha, sa, _ = slot_a
        hb, sb, _ = slot_b
        if ha == hb:
            name = st.hosts[ha].name
            return (cluster.Repin(a.uuid, name, sb, move_memory=True),
                    cluster.Repin(b.uuid, name, sa, move_memory=True))
        return (cluster.Swap(
            cluster.Migrate(a.uuid, st.hosts[ha].name, st.hosts[hb].name, sb),
            cluster.Migrate(b.uuid, st.hosts[hb].name, st.hosts[ha].name,
                            sa)),)

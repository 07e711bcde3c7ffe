"""Do no harm: the last check every plan passes before it is emitted.

The phases plan each move on the state the previous ones leave, but a
plan is run one action (one leg) at a time, and a move chosen for the
balance of LLC misses may still hurt one co-runner badly. :func:`check`
walks the plan's actions in order on a fresh :class:`State` and drops
(with the actions that depend on them: the other re-pin of a socket
exchange, later actions of the same instance):

* ``would_undo``: a migration taking an instance back to the host it
  left within the cool-down (the move log's hosts; a re-pin's socket is
  not in the log, so re-pins are not judged);
* ``rolled_back``: a migration onto, or a re-pin on, a host the measured
  roll-back (:mod:`.rollback`) took the instance off, as long as the
  move log remembers it: the roll-back measured that move to harm, and
  after its one-cool-down hold the audit would otherwise plan it again
  and the roll-back undo it again, every two cool-downs;
* ``no_transient_room``: a one-way migration, or the first leg of a swap
  or exchange, with no room where it lands (the other leg has not left
  yet), in every leg order, by the rules Nova and the agent enforce as
  the leg runs (:func:`_landing_over`);
* ``infeasible_step``: any other leg that does not land, or a group that
  leaves a host or a socket with more CPUs or memory committed than it
  has (or more than before);
* ``harm_bound``: an action after which an instance's predicted
  performance (the model's, slowed by the share of its misses the plan
  leaves on another socket's memory, which the model does not see:
  :func:`_model_perf`) is more than ``max_vm_harm``
  (``max_latency_harm`` for a latency service) below its value before
  the plan; where the model does not value the instance (no profile for
  its class, or the model is unsure of the row:
  :mod:`contention.perfmodel.confidence`, counted in the mix values'
  ``abstentions``), an action after which the co-runner
  LLC misses it faces (a service reads those the plan brings beside it
  at their class's busiest CPU use: :func:`_co_runner_rate`), its
  share of the CPU it wants, the share of its own misses left on
  another socket's memory or, where the view has the memory
  controllers' bandwidth, the queue its misses meet there
  (:func:`_mc_slowdown`) move by more than the bound allows, each or
  together (:meth:`_Walk.estimate_harm`, :func:`measure.hurt`,
  :func:`_summed_harm`). An
  instance the plan repairs (NUMA) is spared the re-deal of its own
  host while the plan is walked; if the walk's end still harms it, with
  what its repair gives back, the plan is walked again without sparing
  it (:meth:`_Walk.harmed_at_end`). Within the cool-down the audits
  share one bound: an instance that measures slower since our first
  move on its host (``spent``, :func:`.rollback.spent`) may lose at the
  plan's end only what that loss left of its bound; if the end takes
  more, the plan is walked again with that remainder as its bound at
  every step (:meth:`_Walk.overspent`). And, whatever the model says, a
  re-pin that moves memory onto a node holding the memory of an
  instance that runs on another socket (the NUMA repair's rule,
  :func:`_memory_onto_tenant`), or a move that lands beside an instance
  without telemetry yet, whom no estimate can judge
  (:func:`_beside_unmeasured`).

A re-pin dropped for harming a co-runner that a later migration of the
same plan takes away from its host, and a migration dropped for harming
an instance on a host a re-pin of the plan re-deals later (or that waits
itself), are tried once more after the rest of the plan, and kept if
they then harm no one and still lower the predicted contention of their
sockets (:meth:`_Walk.after_the_rest`): Ahn et al.'s local phase runs
before the global one, and the next audit would otherwise propose them
as soon as the other action has run.

Then ``plan_lowers_mean``: the plan is emptied if the predicted mean
performance of the instances it touches falls, by either of two
readings. One is the plan's predicted mean change
(:func:`predicted_changes`, the figure the goal's ``perf_mean_change``
reports to the operator): the model's change where it values the
instance, the harm check's estimates elsewhere. The other is the
placement model's mean over the instances it values (the instances it
is unsure of left out), or without a model the audit's own contention
estimate (:func:`measure.pressure` and the misses reaching remote
memory), which must not rise. The second alone passed a migration the
goal itself reported at -0.10 % (``gen-medium-003`` of family seed 83):
the estimate counts LLC misses, not the CPU share the moved VM lost; it
measured -0.09 % with that VM 5.9 % slower (simulated). The first alone
would pass a migration the model says lowers the instances it values,
where the estimates of those it is unsure of rise more (the strategy's
model-file unit test). On the generated families (seeds 19, 61, 67, 83)
both together changed 5 of 1,696 runs of our rows: means higher (or,
on one, 0.01 % lower), 4 with fewer migrations, no VM past the bound.
It also keeps out cache_aware_swap's migrations on the arrival
variants of ahn-wl2 and ahn-wl4 (``bench.evaluation``), predicted at
-0.10 % of the mean (the two tonto VMs moved, 4 % slower each): on
ahn-wl4 they measured 0.7 % slower each, and the run's +1.4 % came
from where later arrivals landed on the room the move left (two
libquantum VMs off a crowded host), which no audit foresees. The per-instance
prediction is the placement model's (paper 003, sections 5-7: an
instance's normalised performance beside its socket's co-runners); where
it knows no class for an instance, or is unsure of its row, the check
abstains for it and says so (a ``harm_unchecked`` entry in the plan's
skipped list; the action runs, judged by the contention estimate only).
"""

import dataclasses
import math

from contention import classify
from contention import cluster
from contention.perfmodel import confidence
from contention.perfmodel import features
from contention.perfmodel import mixes
from contention.swap import feasibility
from contention.swap import measure
from contention.swap import movelog
from contention.swap import repair
from contention.swap import state as state_mod

REASONS = {
    'would_undo': 'the move takes the instance back to the host it left '
                  'less than cooldown seconds ago',
    'rolled_back': 'the measured roll-back took the instance off this '
                   'host (for a re-pin, re-dealt it back there); it is '
                   'not moved there again while the move log remembers '
                   'that',
    'no_transient_room': 'the move (or a swap\'s first leg, in either '
                         'order) has no room where it lands before the '
                         'other leg leaves',
    'infeasible_step': 'running the plan\'s actions in order leaves a host '
                       'or socket with more CPUs or memory committed than '
                       'it has (or more than before)',
    'harm_bound': 'an instance\'s predicted performance would fall by more '
                  'than max_vm_harm (max_latency_harm for a latency '
                  'service), or, with no prediction, the co-runner LLC '
                  'misses it faces, its share of the CPU it wants or the '
                  'share of its own misses left on another socket\'s '
                  'memory would move by more than that bound allows, '
                  'each or together',
    'plan_lowers_mean': 'the plan would lower the predicted mean '
                        'performance; nothing is proposed',
    'harm_unchecked': 'not a skip: the action runs, but the model has no '
                      'profile for the instance or is unsure of it, so '
                      'only the contention estimate judged it',
}

_EPS = 1e-9


def check(view, plan, params, move_log=None, mix_values=None,
          thresholds=classify.DEFAULT_THRESHOLDS, start=None, spent=None):
    """``plan`` with the actions that would do harm dropped (see module).

    ``start``, an untouched State of ``view`` with the same
    ``thresholds``, saves building one; it is read, never changed.
    ``spent`` ({uuid: measured loss}, :func:`.rollback.spent`): what our
    earlier moves within the cool-down already cost each instance; the
    plan's end may cost it only what its bound has left
    (:meth:`_Walk.overspent`).
    """
    return check_and_predict(view, plan, params, move_log, mix_values,
                             thresholds, start, spent)[0]


def check_and_predict(view, plan, params, move_log=None, mix_values=None,
                      thresholds=classify.DEFAULT_THRESHOLDS, start=None,
                      spent=None):
    """(:func:`check`'s plan, what it predicts for each instance).

    The predictions are :func:`predicted_changes` of the plan that passed
    the check, read on the state the check walked (a second fork of a
    10,000-host cluster would cost a tenth of the audit).
    """
    if not plan.actions:
        return plan, {}
    if start is None:
        start = state_mod.State(view, thresholds=thresholds)
    groups = action_groups(view, plan.actions)
    skipped = list(plan.skipped)
    if move_log is not None:
        groups = _undo_free(view, groups, params, move_log, skipped)
    predictor = Predictor(mix_values)
    baseline = Baseline(view, start)
    spared = None
    spent = spent or {}
    tight = set()
    while True:
        walk = _Walk(start, params, predictor, baseline, spared,
                     {u: spent[u] for u in tight})
        state, kept, applied = walk.run(groups)
        harmed = walk.harmed_at_end()
        over = walk.overspent(spent, kept) - tight
        if not harmed and not over:
            break
        spared = walk.spared - harmed
        tight |= over
    skipped.extend(walk.skipped)
    emptied = 'every action was dropped by the harm check (see skipped)'
    # Read before the mean rule, which may take the plan back off state.
    changes = predicted_changes(view, start, state, kept, predictor)
    if kept and (sum(changes.values()) < -_EPS
                 or _mean_falls(state, kept, predictor, baseline, applied)):
        skipped.append(cluster.Skipped(
            'plan', 'plan_lowers_mean: %s' % REASONS['plan_lowers_mean']))
        kept, changes = [], {}
        emptied = 'plan_lowers_mean: ' + REASONS['plan_lowers_mean']
    for uuid in sorted(predictor.unchecked & _instances(kept)):
        skipped.append(cluster.Skipped(
            uuid, 'harm_unchecked: no model profile for its class, or the '
            'model is unsure of it'))
    if tuple(kept) == plan.actions and len(skipped) == len(plan.skipped):
        return plan, changes
    return cluster.Plan(
        actions=tuple(kept), skipped=tuple(skipped),
        indicators=plan.indicators,
        reason=None if kept else (plan.reason or emptied)), changes


class _Walk:
    """One pass of the plan's groups, in order, on a fork of ``start``.

    ``spared``: the instances the plan repairs (:func:`_repairs`, the
    default), spared the re-deal of their own host by
    :func:`_co_load_harm` (Ahn et al.'s W-W is repaired by exchanges, one
    pair at a time, and an instance whose own exchange comes later looks
    crowded meanwhile). ``leaned_on`` collects those whose sparing let a
    step pass; :func:`check` walks again, without sparing them, if the
    walk's end harms them (:meth:`harmed_at_end`). ``tight``: {uuid:
    measured loss} of the instances whose bound is what is left of it at
    every step (:meth:`overspent`).
    """

    def __init__(self, start, params, predictor, baseline, spared=None,
                 tight=None):
        self.params = params
        self.predictor = predictor
        self.baseline = baseline
        self.spared = spared
        self.tight = tight or {}
        self.state = start.fork()
        self.skipped = []
        self.leaned_on = set()

    def run(self, groups):
        """(state, kept actions, applied originals) after every group."""
        state, skipped = self.state, self.skipped
        if self.spared is None:
            self.spared = _repairs(state, groups)
        applied = []
        kept = []
        dropped = set()
        deferred = []
        later = _later(groups, _instances)
        leaving = _later(groups, _migrated)
        repinned = _later(groups, _repinned_hosts)
        for index, group in enumerate(groups):
            uuids = _instances(group)
            if uuids & dropped:
                _drop(group, 'infeasible_step: depends on a dropped action',
                      skipped, dropped)
                continue
            ordered, found = feasible_order(state, group)
            if ordered is None:
                _drop(group, found, skipped, dropped)
                continue
            harmed = self.harm(ordered, found)
            if harmed is not None:
                for inst in reversed(found):
                    state.restore(inst)
                reason, victim = harmed
                if _local(group):
                    waits = victim in leaving[index]
                else:
                    waits = _host_after(state, group, victim) in (
                        repinned[index].union(*(
                            _hosts(g) for g, _ in deferred)))
                if waits and not uuids & later[index]:
                    deferred.append((group, reason))
                else:
                    _drop(group, reason, skipped, dropped)
                continue
            kept.extend(ordered)
            applied.extend(found)
        for group, harmed in deferred:
            done = self.after_the_rest(group)
            if done is None:
                _drop(group, harmed, skipped, dropped)
            else:
                kept.extend(done[0])
                applied.extend(done[1])
        return state, kept, applied

    def harmed_at_end(self):
        """The spared whom the walk's end harms.

        Each instance a step passed only by sparing it, on the state the
        kept plan leaves, by the co-runner rule with what its repair then
        gives back (:meth:`.state.State.repair_gain`, nothing if the walk
        dropped it): a step is transient (re-pins run in seconds), the
        end is what the instance lives with. (On generated clusters,
        repairs that moved a service onto a streamer's socket, or
        gathered cache-bound VMs and a service on one, passed while the
        repaired were spared and cost them 19-38 %, and a service spared
        for a repair the walk dropped fell by 53 %, simulated.)
        """
        state, baseline = self.state, self.baseline
        broken = set()
        for uuid in self.leaned_on:
            inst, before = state.inst[uuid], baseline.inst[uuid]
            if inst.llc_misses_per_s is None:
                continue
            loads = _co_loads(state, inst, before, baseline)
            if _co_load_harm(state, inst, before, self.params, loads,
                             gain=state.repair_gain(inst, before)):
                broken.add(uuid)
        return broken

    def overspent(self, spent, kept):
        """The instances of ``spent`` the walk's end harms past what is left.

        Each instance ``kept`` touches whose measured loss since our first
        move on its host within the cool-down (``spent``) leaves less of
        its bound than the end of the plan takes, judged by the same rules
        with the bound less that loss (:func:`_left`). Steps on the way
        keep the whole bound: a balancing that runs over several steps
        may crowd an instance before it relieves it, and what it lives
        with is the end (on generated clusters, a bound spent at every
        step stopped balancings half-way and left cache-bound VMs 6 %
        slower than doing nothing, where the whole course made them 34 %
        faster; simulated). :func:`check` walks again, with their bound
        less their loss at every step.
        """
        if not spent or not kept:
            return set()
        state = self.state
        keys = _keys(state, self.baseline, _legs_of(kept))
        over = set()
        for inst in _touched_instances(state, keys):
            lost = spent.get(inst.uuid)
            if lost is None or inst.uuid in self.tight:
                continue
            if self.judge(inst, _left(self.params, lost), spare=False):
                over.add(inst.uuid)
        return over

    def after_the_rest(self, group):
        """A group refused where it stood, tried after the rest of the plan.

        Only for a re-pin that hurts a co-runner a later migration of the
        same plan takes away (Ahn et al.'s local phase runs before the
        global one), or a migration that hurts an instance on a host a
        later re-pin of the plan re-deals (the local phase's re-deal of a
        host the global phase empties a socket of runs after the swap):
        refused in its place, the next audit would propose it once the
        other has run. Tried at the end, on the state the kept actions
        leave, it is kept if it is feasible, harms no one and still
        lowers the predicted contention of the sockets it touches (the
        hosts have changed since it was planned). (ordered, originals),
        applied on the state, or None with it unchanged.
        """
        state = self.state
        keys = set()
        for leg in _legs_of(group):
            inst = state.inst[leg.instance]
            keys |= {(inst.host, inst.socket), (_dest(leg), leg.dest_socket)}
        before = state.pressure(keys)
        ordered, found = feasible_order(state, group)
        if ordered is None:
            return None
        if (self.harm(ordered, found) is None
                and state.pressure(keys) < before - _EPS):
            return ordered, found
        for inst in reversed(found):
            state.restore(inst)
        return None

    def harm(self, ordered, originals):
        """(harm_bound reason, instance) if ``ordered`` (applied) hurts one.

        ``originals``: its instances as they were before it. Memory it
        moves onto a node serving an instance's memory remotely hurts that
        instance (:func:`_memory_onto_tenant`); the model judges the
        instances it values; :meth:`estimate_harm` judges the others.
        None if no one is hurt.
        """
        state, baseline = self.state, self.baseline
        legs = _legs_of(ordered)
        found = (_memory_onto_tenant(state, legs, originals)
                 or _beside_unmeasured(state, legs, originals))
        if found is not None:
            return found
        for inst in _touched_instances(state, _keys(state, baseline, legs)):
            lost = self.tight.get(inst.uuid)
            params = self.params if lost is None else _left(self.params,
                                                            lost)
            found = self.judge(inst, params)
            if found:
                return found, inst.uuid
        return None

    def judge(self, inst, params, spare=True):
        """The harm_bound reason ``inst`` is hurt by now, or None.

        The model's prediction where it values the instance, else
        :meth:`estimate_harm` (``spare``: with the sparing of the
        instances the plan repairs).
        """
        before = self.baseline.inst[inst.uuid]
        found = _model_perf(self.predictor, self.state, inst,
                            self.baseline.state, before)
        if found is None:
            return self.estimate_harm(inst, before, params, spare)
        now, then, latency = found
        bound = params.max_latency_harm if latency else params.max_vm_harm
        drop = (then - now) / then
        if drop > bound + _EPS:
            return ('harm_bound: %s\'s predicted performance would '
                    'fall %.1f%% (bound %.1f%%%s)'
                    % (inst.uuid, 100 * drop, 100 * bound,
                       _spent_note(self.params, params)))
        return None

    def estimate_harm(self, inst, before, params=None, spare=True):
        """The harm rule where the model does not value ``inst``.

        The share of the CPU it wants (:func:`_cpu_harm`), of its misses
        left remote (:func:`_remote_harm`) and the co-runner misses it
        faces (:func:`_co_load_harm`), with what a repair made so far
        gives back, each and together (:func:`_summed_harm`); the
        co-runner rule spares an instance the plan repairs (in
        ``spared``), and notes it in ``leaned_on``.
        """
        state, baseline = self.state, self.baseline
        params = params or self.params
        cpu = _cpu_overflows(state, inst, before, baseline)
        remote = _remote_slowdown(state, inst, before)
        queued = _mc_slowdown(state, inst, baseline.state, before)
        gain = state.repair_gain(inst, before)
        found = (_cpu_harm(inst, before, params, cpu)
                 or _remote_harm(inst, before, params, remote)
                 or _mc_harm(inst, before, params, queued, gain))
        if found:
            return found
        loads = None
        if inst.llc_misses_per_s is not None:
            loads = _co_loads(state, inst, before, baseline)
            found = _co_load_harm(state, inst, before, params, loads,
                                  gain=gain)
            if (found and spare and inst.uuid in self.spared
                    and _co_load_harm(state, inst, before, params,
                                      _co_loads(state, inst, before,
                                                baseline, repaired=True))
                    is None):
                self.leaned_on.add(inst.uuid)
                return None
            if found:
                return found
        return _summed_harm(state, inst, before, params, cpu, remote, loads,
                            gain, queued)


def _memory_onto_tenant(state, legs, originals):
    """(harm_bound reason, tenant) if ``legs`` move memory onto its node.

    A re-pin that moves an instance's memory to another node, where the
    memory of an instance running on another socket stays
    (:meth:`.state.State.remote_tenant`, the rule the NUMA repair plans
    by). The repair may plan such a move where its earlier repairs make
    the tenant local; once the check drops those, or orders them after
    it, the move alone crowds the tenant's memory controller. On a
    generated 4-socket cluster (seed 113, ``gen-small-010``) the walk
    dropped a rotation that made two streamers local and kept a third
    streamer's memory move onto their node: they lost 12 % each
    (simulated).
    """
    moved = {leg.instance for leg in legs}
    for leg, before in zip(legs, originals):
        if not (isinstance(leg, cluster.Repin) and leg.move_memory
                and state.memory_socket(before) != leg.dest_socket):
            continue
        tenant = state.remote_tenant(leg.host, leg.dest_socket, moved)
        if tenant is not None:
            return ('harm_bound: %s\'s memory would join, on socket %s\'s '
                    'node, that of %s, whose vCPUs run on socket %s'
                    % (leg.instance, leg.dest_socket, tenant.uuid,
                       tenant.socket)), tenant.uuid
    return None


def _beside_unmeasured(state, legs, originals):
    """(harm_bound reason, co-runner) if a leg lands beside an unknown.

    A leg that brings an instance onto a socket (a migration, onto its
    host's sockets if it names none) where an instance without telemetry
    runs: one that arrived since its host's last report, or whose agent
    sent none. What that co-runner costs the arrival, and the arrival it,
    is unknown; every estimate here would read it as an idle neighbour.
    On the arrival variant of Ahn's WL1 (``bench.evaluation``) the check
    so passed a swap onto two sockets that had each just received a new
    VM, and hmmer lost 11.5 % beside them (simulated). The next audit,
    with the newcomer measured, may propose the move again.
    """
    moved = {leg.instance for leg in legs}
    for leg, before in zip(legs, originals):
        if isinstance(leg, cluster.CpuQuota):
            continue
        host, socket = _dest(leg), leg.dest_socket
        if host == before.host and socket == before.socket:
            continue
        for other in state.on_host.get(host, {}).values():
            if (other.llc_misses_per_s is None and other.uuid not in moved
                    and (socket is None or other.socket in (socket, None))):
                return ('harm_bound: %s would run beside %s, which has no '
                        'telemetry yet (it arrived since its host\'s last '
                        'report, or its agent sent none): neither can be '
                        'judged' % (leg.instance, other.uuid)), other.uuid
    return None


def _repairs(state, groups):
    """The instances a re-pin of the plan moves onto their own memory.

    NUMA repair (:mod:`.repair`); ``state`` is the view's, before the
    plan.
    """
    found = set()
    for group in groups:
        for action in group:
            for leg in _legs(action):
                if not isinstance(leg, cluster.Repin):
                    continue
                before = state.inst[leg.instance]
                memory = state.memory_socket(before)
                if (before.socket is not None and memory is not None
                        and memory != before.socket
                        and (leg.move_memory or leg.dest_socket == memory)):
                    found.add(leg.instance)
    return found


def _legs(action):
    if isinstance(action, cluster.Swap):
        return (action.first, action.second)
    return (action,)


def _legs_of(actions):
    return [leg for action in actions for leg in _legs(action)]


def _instances(actions):
    return {leg.instance for leg in _legs_of(actions)}


def action_groups(view, actions):
    """The actions as groups that run or drop together.

    Two consecutive re-pins on one host exchanging the sockets of two
    instances (a NUMA-aware swap within a host) are one group; where
    their vCPUs differ, so are the consecutive re-pins after them between
    the same two sockets up to the first point where as many vCPUs have
    left each socket as arrived, if there is one (the NUMA repair's
    exchange of sets, :func:`.repair._exchanges`).
    """
    socket = {i.uuid: i.socket for i in view.instances}
    vcpus = {i.uuid: i.vcpus for i in view.instances}
    groups, i = [], 0
    while i < len(actions):
        a = actions[i]
        b = actions[i + 1] if i + 1 < len(actions) else None
        if (isinstance(a, cluster.Repin) and isinstance(b, cluster.Repin)
                and a.host == b.host and a.instance != b.instance
                and a.dest_socket == socket.get(b.instance)
                and b.dest_socket == socket.get(a.instance)):
            group = _balanced_run(actions, i, socket, vcpus) or (a, b)
            for leg in group:
                socket[leg.instance] = leg.dest_socket
            groups.append(group)
            i += len(group)
            continue
        for leg in _legs(a):
            if isinstance(leg, (cluster.Migrate, cluster.Repin)):
                socket[leg.instance] = leg.dest_socket
        groups.append((a,))
        i += 1
    return groups


def _balanced_run(actions, start, socket, vcpus):
    """The re-pins from ``start`` that exchange vCPUs evenly, or None.

    ``actions[start]`` and the next re-pin exchange two instances between
    sockets a and b of one host; the run goes on through the consecutive
    re-pins on that host of other instances between a and b, and ends
    where the vCPUs moved each way are equal, within
    :data:`.repair.LARGEST_EXCHANGE` re-pins. ``socket`` holds each
    instance's socket before ``start``, ``vcpus`` its vCPUs.
    """
    first = actions[start]
    ends = {socket.get(first.instance), first.dest_socket}
    moved, balance = set(), 0
    for action in actions[start:start + repair.LARGEST_EXCHANGE]:
        if (not isinstance(action, cluster.Repin)
                or action.host != first.host or action.instance in moved
                or {socket.get(action.instance), action.dest_socket}
                != ends):
            return None
        moved.add(action.instance)
        balance += vcpus.get(action.instance, 0) * (
            1 if action.dest_socket == first.dest_socket else -1)
        if balance == 0:
            return tuple(actions[start:start + len(moved)])
    return None


def _local(group):
    """Whether ``group`` only re-pins within hosts (no migration)."""
    return all(isinstance(action, cluster.Repin) for action in group)


def _later(groups, of):
    """For each group, the union of ``of(group)`` over the groups after it."""
    later, seen = [], set()
    for group in reversed(groups):
        later.append(frozenset(seen))
        seen |= of(group)
    return later[::-1]


def _migrated(group):
    """The instances ``group`` migrates to another host."""
    return {leg.instance for leg in _legs_of(group)
            if isinstance(leg, cluster.Migrate)}


def _repinned_hosts(group):
    """The hosts ``group`` re-pins on."""
    return {leg.host for leg in _legs_of(group)
            if isinstance(leg, cluster.Repin)}


def _hosts(group):
    """The hosts ``group`` lands on."""
    return {_dest(leg) for leg in _legs_of(group)}


def _host_after(state, group, uuid):
    """The host ``uuid`` is on once ``group`` has run."""
    for leg in _legs_of(group):
        if leg.instance == uuid and isinstance(leg, cluster.Migrate):
            return leg.dest_host
    return state.inst[uuid].host


def _drop(group, reason, skipped, dropped):
    for uuid in sorted(_instances(group)):
        skipped.append(cluster.Skipped(uuid, reason))
    dropped.update(_instances(group))


def _undo_free(view, groups, params, move_log, skipped):
    """``groups`` without those undoing a move or redoing an undone one.

    ``would_undo``: a migration back to the host its instance left
    within the cool-down. ``rolled_back``: a move (a migration, a re-pin)
    of an instance onto a host the measured roll-back took it off
    (:func:`movelog.undone`), which it measured to harm.
    """
    left = {}
    if params.cooldown_s:
        for move in move_log.moves_since(view.now - params.cooldown_s):
            if move.source_host != move.dest_host:
                left.setdefault(move.uuid, set()).add(move.source_host)
    off = movelog.undone(move_log)
    kept = []
    for group in groups:
        reason = None
        for leg in _legs_of(group):
            dest = _onto(leg)
            if (isinstance(leg, cluster.Migrate)
                    and dest in left.get(leg.instance, ())):
                reason = ('would_undo: back to %s within the %.0f s '
                          'cool-down' % (dest, params.cooldown_s))
                break
            if dest in off.get(leg.instance, ()):
                reason = ('rolled_back: the measured roll-back took it '
                          'off %s' % dest)
                break
        if reason:
            for uuid in sorted(_instances(group)):
                skipped.append(cluster.Skipped(uuid, reason))
        else:
            kept.append(group)
    return kept


def _onto(leg):
    """The host a migration takes its instance to, or a re-pin re-deals."""
    if isinstance(leg, cluster.Migrate):
        return leg.dest_host
    if isinstance(leg, cluster.Repin):
        return leg.host
    return None


def _over(state, host_name):
    """What ``host_name`` and its sockets have committed beyond capacity."""
    host = state.hosts.get(host_name)
    if host is None:
        return (math.inf,)
    cpus, mem, _disk = state.free(host_name)
    over = [-cpus, -mem]
    for sock in host.sockets:
        cell_cpus, cell_mem = state.cell_free(host_name, sock.id, False)
        over.extend((-cell_cpus, -cell_mem))
    return tuple(over)


def _landing_over(state, leg):
    """What one leg needs free where it lands, as it runs.

    The rules Nova, libvirt and the agent enforce at that moment (the
    simulator's refusals, :data:`contention.sim.simulator.REJECT_REASONS`,
    are the same): a migration needs the destination host's free vCPUs
    and RAM (Nova's scheduler) and memory on the node it lands on; an
    instance with a NUMA topology or dedicated CPUs needs the whole cell
    (Nova's NUMA fitting); a re-pin that moves memory needs it to fit on
    the destination node (the agent refuses otherwise). Shared vCPUs on a
    full socket for the moment a swap's other leg takes to leave are
    slower, not refused: that is judged on the state the whole group
    leaves (:func:`feasible_order`).
    """
    inst = state.inst[leg.instance]
    numa = feasibility.numa_bound(inst)
    over = []
    if isinstance(leg, cluster.Migrate):
        if leg.dest_host not in state.hosts:
            return (math.inf,)
        cpus, mem, _disk = state.free(leg.dest_host)
        over = [-cpus, -mem]
    elif not (numa or leg.move_memory):
        return ()
    cell_cpus, cell_mem = state.cell_free(
        _dest(leg), leg.dest_socket, feasibility.dedicated(inst))
    over.append(-cell_mem)
    if numa:
        over.append(-cell_cpus)
    return tuple(over)


def _worse(before, after):
    return any(a > max(0.0, b) + _EPS for b, a in zip(before, after))


def _dest(leg):
    return leg.dest_host if isinstance(leg, cluster.Migrate) else leg.host


def _orders(group):
    """The leg orders a group may run in (a swap's legs either way)."""
    if len(group) == 2:
        return (group, (group[1], group[0]))
    action = group[0]
    if isinstance(action, cluster.Swap):
        return ((action,), (cluster.Swap(action.second, action.first),))
    return (group,)


def feasible_order(state, group):
    """The group in a feasible order, applied, or why there is none.

    Each leg must land (:func:`_landing_over`) in the order the legs run;
    then no host or socket the group reaches may be left with more CPUs
    or memory committed than it has (or more than before).
    (order, the instances as they were before it) or (None, reason); a
    feasible order is left applied on ``state``.
    """
    reason = None
    for order in _orders(group):
        legs = _legs_of(order)
        originals = [state.inst[leg.instance] for leg in legs]
        hosts = sorted({_dest(leg) for leg in legs
                        if not isinstance(leg, cluster.CpuQuota)})
        first = {h: _over(state, h) for h in hosts}
        bad = None
        for index, leg in enumerate(legs):
            if isinstance(leg, cluster.CpuQuota):
                state.apply(leg)
                continue
            before = _landing_over(state, leg)
            state.apply(leg)
            if _worse(before, _landing_over(state, leg)):
                transient = index == 0 and (
                    len(legs) == 2 or isinstance(leg, cluster.Migrate))
                bad = ('no_transient_room: %s has no room on %s while it '
                       'lands' % (leg.instance, _dest(leg)) if transient
                       else 'infeasible_step: %s overcommits %s'
                       % (leg.instance, _dest(leg)))
                break
        if bad is None:
            over = [h for h in hosts if _worse(first[h], _over(state, h))]
            if over:
                bad = ('infeasible_step: %s left overcommits %s'
                       % ('the group' if len(legs) > 1
                          else legs[0].instance, over[0]))
        if bad is None:
            return order, originals
        for inst in reversed(originals):
            state.restore(inst)
        reason = reason or bad
    return None, reason


class Predictor:
    """Per-instance predicted performance from the placement model.

    ``mix_values`` (:class:`contention.perfmodel.mixes.MixValues`) holds
    the model, the class profiles and the confidence limits; an instance
    whose socket holds a class it has no profile for has no prediction
    (recorded in ``unchecked``), nor has one whose row the model is
    unsure of (a guess would decide the harm; counted in the mix values'
    ``abstentions``, as the model check's abstentions are, while
    ``counting``: the plan's indicators read the same predictions again
    and count nothing).
    """

    def __init__(self, mix_values):
        self.counting = True
        self.values = mix_values
        self.model = getattr(mix_values, 'model', None)
        self.profiles = getattr(mix_values, 'profiles', None)
        self.limits = getattr(mix_values, 'limits', confidence.Limits())
        self.unchecked = set()
        self._memo = {}

    @property
    def active(self):
        return self.model is not None and self.profiles is not None

    def perf(self, state, inst):
        """(performance, latency service) of ``inst`` here, or None."""
        if not self.active or inst.socket is None:
            self.unchecked.add(inst.uuid)
            return None
        mix = measure.unit_mix(state, (inst.host, inst.socket))
        cpus = state.socket_cpus(inst.host, inst.socket)
        own = measure.mix_class(inst)
        if not all(k in self.profiles for k, _ in mix):
            self.unchecked.add(inst.uuid)
            return None
        item = (mix, cpus, own)
        if item not in self._memo:
            others = [(self.profiles[k], c - (k == own))
                      for k, c in mix if c - (k == own) > 0]
            row = features.feature_row(self.profiles[own],
                                       mixes.cell_beside(cpus, others))
            self._memo[item] = self._predict(row, own)
        if self._memo[item] is None:
            self.unchecked.add(inst.uuid)
        return self._memo[item]

    def _predict(self, row, own):
        """(performance, latency service), or None when it is unsure."""
        predicted, reasons = mixes.judged(self.model, [row], self.limits)
        if reasons[0]:
            self.values.abstentions += self.counting
            return None
        perf = float(predicted[0])
        if math.isnan(perf):
            return None
        return perf, bool(getattr(self.profiles[own], 'latency', False))


def _model_perf(predictor, state, inst, base, before):
    """(now, then, latency service): the model's view of ``inst``.

    Its predicted performance in ``state`` and, as ``before``, in
    ``base``, or None where the model does not value it in both (or
    predicts nothing for it before). The model sees a socket's co-runners
    and CPUs, not where an instance's memory is: now is also slowed by
    the misses the plan leaves on (or, faster, brings back from) another
    socket's memory (:func:`_remote_slowdown`), as the estimate counts
    them. (Judged by the model alone, a re-pin that left a VM's memory
    behind passed the check with a predicted gain of 2 % for a slowdown
    of 28 % the estimate counts; a generated property-test cluster.)
    """
    if not predictor.active:
        return None
    now = predictor.perf(state, inst)
    then = predictor.perf(base, before)
    if now is None or then is None or then[0] <= 0:
        return None
    slower = (_remote_slowdown(state, inst, before)[1]
              + _mc_slowdown(state, inst, base, before))
    return now[0] * (1.0 - slower), then[0], then[1]


def _touched_instances(state, keys):
    """The instances on the (host, socket) ``keys``, in a fixed order.

    Sorted by key: the check stops at the first instance harmed, so the
    order decides which one its reason names, which predictions are
    asked (abstentions are counted) and whom a step leaned on; a set's
    order changes with each process's string hashing (the model check's
    abstentions on epyc-nps4 were 40 or 120 by ``PYTHONHASHSEED``).
    """
    return [i for host, socket in sorted(keys, key=_key_order)
            for i in state.on_host[host].values() if i.socket == socket]


def _key_order(key):
    host, socket = key
    return host, -1 if socket is None else socket


class Baseline:
    """The view before the plan: its instances and its untouched State."""

    def __init__(self, view, state):
        self.view = view
        self.inst = {i.uuid: i for i in view.instances}
        self.hosts = {h.name: h for h in view.hosts}
        self.state = state
        self._on_host = None
        #: {(host, socket): {uuid: busy vCPUs wanted}}, filled as read.
        self._wanted = {}
        #: {(figure, ...): value} of :meth:`co_load` and
        #: :meth:`core_overflow`: every step of every walk reads them again.
        self._kept = {}
        self._peaks = None

    def class_peak(self, inst):
        """``inst``'s LLC misses/s at the most CPU its class was seen using.

        Its class is :func:`measure.mix_class` (image, flavor and size). A
        phase of a workload is a change in how much CPU it wants, so one
        period's counters catch a phased workload at one point of its
        cycle; the instances of its class that run now show more of it.
        Its misses per CPU-second are kept as measured: they change with
        its neighbours (the cache it gets), and the instances of a class
        measure different rates beside different neighbours. At least
        its own reading; within its CPU quota.
        """
        found = measure.misses(inst)
        if not found or (inst.cpu_util or 0.0) <= 0.0:
            return found
        if self._peaks is None:
            # One pass over the view, the first time a service needs it
            # (about 0.06 s at 200,000 instances: bench/watcher.py).
            peaks = self._peaks = {}
            seen = peaks.get
            for other in self.view.instances:
                util = other.cpu_util
                if util is not None:
                    key = measure.mix_class(other)
                    if util > seen(key, 0.0):
                        peaks[key] = util
        most = min(self._peaks.get(measure.mix_class(inst), 0.0),
                   min(1.0, inst.cpu_quota or 1.0))
        return found * max(1.0, most / inst.cpu_util)

    @property
    def on_host(self):
        """{host: its instances before the plan}."""
        if self._on_host is None:
            self._on_host = {}
            for inst in self.view.instances:
                self._on_host.setdefault(inst.host, []).append(inst)
        return self._on_host

    def _keep(self, key, compute):
        found = self._kept.get(key)
        if found is None:
            found = self._kept[key] = compute()
        return found

    def co_load(self, before):
        """:func:`measure.co_load` of ``before``, an instance before the plan."""
        return self._keep(('co_load', before.uuid), lambda: measure.co_load(
            self.on_host.get(before.host, ()), before,
            self.state.hosts[before.host], self.state.socket_weight))

    def core_overflow(self, host, socket):
        """:func:`measure.core_overflow` of a socket before the plan."""
        return self._keep(
            ('core_overflow', host, socket), lambda: measure.core_overflow(
                self.on_host.get(host, ()), self.state.hosts[host], socket,
                self.wanted_cpu))

    def wanted_cpu(self, inst):
        """Busy vCPUs ``inst`` wants, as measured where it was.

        :func:`measure.wanted_on_socket` of its socket before the plan,
        worked out for the sockets the check reads only.
        """
        before = self.inst.get(inst.uuid, inst)
        if before.socket is None:
            return measure.busy_vcpus(before)
        key = (before.host, before.socket)
        wanted = self._wanted.get(key)
        if wanted is None:
            sock = measure.host_socket(self.hosts.get(before.host),
                                       before.socket)
            here = [i for i in self.on_host.get(before.host, ())
                    if i.socket == before.socket]
            wanted = self._wanted[key] = (
                measure.wanted_on_socket(here, sock) if sock is not None
                else {i.uuid: measure.busy_vcpus(i) for i in here})
        return wanted[inst.uuid]


def _keys(state, base, legs):
    """The (host, socket) keys ``legs`` leave (before the plan) and reach.

    A socket left to the host to choose (None) may be any of its sockets:
    all of them are touched; and the instances whose socket is not known
    share every socket of their host, so they are touched too.
    """
    keys = set()
    for leg in legs:
        if isinstance(leg, cluster.CpuQuota):
            continue
        first = base.inst[leg.instance]
        for key in ((_dest(leg), leg.dest_socket),
                    (first.host, first.socket)):
            keys.update((key, (key[0], None)))
            host = state.hosts.get(key[0])
            if key[1] is None and host is not None:
                keys.update((key[0], sock.id) for sock in host.sockets)
    return keys


def _co_loads(state, inst, before, baseline, repaired=False, worst=True):
    """(then, now): the co-runner LLC misses ``inst`` faces.

    :func:`measure.co_load`, per average-sized socket, before the plan
    and now, with the co-runners the plan brings beside it at the rate
    :func:`_co_runner_rate` reads; for a ``repaired`` instance (see
    :func:`_co_load_harm`) now is what it faced plus what the plan's
    migrations bring onto its host. ``worst``: where the host chooses
    its socket, the socket where it would face the most (the harm
    check's reading), else an even share of the host (the predicted
    change's): :func:`measure.co_load`.
    """
    then = baseline.co_load(before)
    rate, key = _co_runner_rate(state, baseline, before)
    if repaired:
        arrived = [o for o in state.on_host[inst.host].values()
                   if o.uuid == inst.uuid
                   or baseline.inst[o.uuid].host != inst.host]
        now = then + measure.co_load(arrived, inst, state.hosts[inst.host],
                                     state.socket_weight, worst=worst,
                                     rate=rate)
    else:
        now = state.co_load(inst, worst=worst, rate=rate, rate_key=key)
    return then, now


def _co_runner_rate(state, baseline, beside):
    """(rate, key): a co-runner's LLC misses/s as ``beside`` will face it.

    ``beside`` is an instance as it was before the plan. A co-runner
    that was beside it is read as measured: what it faced was measured
    with that co-runner. One the plan brings beside it (moving either)
    is read as measured too, with two exceptions.

    *A service answering requests* (:func:`measure.serving`) faces it at
    the CPU use its class was seen at its busiest
    (:meth:`Baseline.class_peak`). One period's counters catch a phased
    workload at one point of its cycle: read as measured, a plan that
    brings a VM caught in a light phase beside a service, and takes away
    one caught in a heavy phase, looks like less load, and the check
    passed such moves for that reason alone, picking the moves whose
    estimate was most wrong. On family seed 149 (simulated), NUMA repairs
    passed that way slowed services near saturation by 6.5 %
    (``gen-small-026``) and 15.6 % (``gen-medium-001``) once the phases
    turned. A service's response time grows as 1 / (1 - utilisation), so
    a phase's peak, not its mean, is what it pays for; a throughput code
    pays for the mean. The class's busiest CPU use, not its highest miss
    rate: the instances of a class measure different rates per CPU-second
    beside different neighbours, and read at the highest, any exchange
    within a class looked like more load (it refused the repairs of Ahn
    et al.'s WL1, doc/watcher.md). Co-runners that leave are read as
    measured, so that no departure is credited more than it was seen to
    weigh.

    *If ``beside`` lives on its cache* (:func:`measure.lives_on_its_cache`),
    a co-runner the plan brings beside it and moves onto its own memory
    runs faster: a NUMA repair that gives back a share ``g`` of
    its time (its :meth:`~contention.swap.state.State.repair_gain` times
    its :func:`measure.memory_sensitivity`, the credit :func:`measure.hurt`
    gives the repaired instance itself) runs it ``1 / (1 - g)`` times as
    fast, and its misses with it, taking more of the cache it joins
    (occupancy follows the miss rate). Read at the measured rate, a
    cache-bound co-runner re-pinned onto its memory's socket passed the
    bound of the cache-bound VM there, which lost 7.1 % (family seed 83
    gen-small-029, simulated; the arrival ran 6 % faster than measured,
    and three more cache-bound VMs beside it lost 6 %). Not so for an
    instance whose misses reach memory, whose neighbours' repairs also
    take traffic off the controllers and links it uses: counted for
    them too, the rule cost up to a third of the gain on generated
    clusters where the simulator saw no harm (doc/watcher.md). A plan
    that leaves memory remote slows an instance; that is not counted,
    the cautious error.

    ``key`` names the rate for
    :meth:`~contention.swap.state.State.co_load`: for a co-runner, it
    depends on the plan's state of that co-runner and on where
    ``beside`` was, and which of the two it is, only.
    """
    cache_bound = measure.lives_on_its_cache(beside, state.thresholds)
    serving = measure.serving(beside)
    if not (cache_bound or serving):
        return measure.misses, 'measured'
    where = (beside.host, beside.socket)

    def rate(other):
        found = measure.misses(other)
        first = baseline.inst.get(other.uuid)
        if first is None or (first.host, first.socket) == where:
            return found
        brought = baseline.class_peak(other) if serving else found
        if first is other or found <= 0 or not cache_bound:
            return brought
        gain = (state.repair_gain(other, first)
                * measure.memory_sensitivity(first))
        return max(brought, found / (1.0 - gain))
    return rate, ('brought beside', where, cache_bound, serving)


def _co_load_harm(state, inst, before, params, loads, gain=0.0):
    """Whether ``inst`` would face too many more co-runner LLC misses.

    The co-runner LLC misses it faces before the plan and now
    (``loads``, :func:`_co_loads`), judged by :func:`measure.hurt`: a
    service answering requests by ``max_latency_harm``, others by
    ``max_vm_harm`` weighted by their sensitivity. For an instance a NUMA
    repair of the plan moves onto its own memory (loads read with
    ``repaired``), which gains what the estimate does not count, the
    re-deal of its host's own instances is that repair's price and is not
    judged; instances the plan migrates onto its host are (the
    arrivals' load is the rise): a cache-bound VM repaired beside a
    streamer the plan brings in fell by 20 % on a generated cluster
    (simulated).
    """
    then, now = loads
    own = state.own_load(inst)
    if not measure.hurt(before, then, now, params.max_vm_harm,
                        params.max_latency_harm, state.typical_load,
                        state.thresholds, gain=gain, own=own):
        return None
    if before.latency:
        what = 'serves requests (a latency service, as its flavor declares)'
    elif measure.serving(before):
        what = ('serves requests (CPU use %.2f of its vCPUs)'
                % before.cpu_util)
    else:
        what = 'has sensitivity %.2f' % measure.sensitivity(
            before, state.thresholds)
    bound = _bound(before, params)
    return ('harm_bound: %s %s and would face %s co-runner LLC misses '
            '(%.3g misses/s, from %.3g; bound +%.1f%% of %.3g%s)'
            % (inst.uuid, what, 'more' if then > 0 else 'new', now, then,
               100 * bound, measure.co_load_base(
                   before, then, now, state.typical_load, own,
                   state.thresholds),
               ', less %.0f%% back from a NUMA repair' % (100 * gain)
               if gain > 0 else ''))


def _remote_slowdown(state, inst, before):
    """(share, slowdown): misses a plan sends remote, and what they cost.

    The rise of the share of ``inst``'s LLC misses that reach another
    socket's memory, and that share times :data:`measure.REMOTE_PENALTY`
    (the slowdown of a code that only waits on memory), weighted by the
    instance's sensitivity (:func:`measure.sensitivity`) unless it serves
    requests (:func:`measure.serving`).
    """
    misses = measure.misses(before)
    if misses <= 0:
        return 0.0, 0.0
    share = (state.own_remote_misses(inst)
             - state.own_remote_misses(before)) / misses
    slowdown = share * measure.REMOTE_PENALTY
    if not measure.serving(before):
        slowdown *= measure.sensitivity(before, state.thresholds)
    return share, slowdown


def _remote_harm(inst, before, params, remote):
    """Whether the plan leaves more of ``inst``'s own misses remote.

    A re-pin that moves vCPUs and leaves the memory behind (Ahn et al.'s
    cache-aware phase moves vCPUs only) sends the instance's own LLC
    misses to another socket's memory, which no co-runner count shows:
    on generated clusters such re-pins cost cache-bound VMs 10-12 %
    (simulated) while the check passed them. The estimated slowdown
    (``remote``, :func:`_remote_slowdown`) may not pass the bound.
    """
    share, slowdown = remote
    bound = _bound(before, params)
    if slowdown <= bound + _EPS:
        return None
    return ('harm_bound: %s would send %.0f%% more of its LLC misses to '
            'another socket\'s memory (estimated slowdown %.1f%%, bound '
            '%.1f%%)' % (inst.uuid, 100 * share, 100 * slowdown,
                         100 * bound))


def _mc_queue(state, inst):
    """The queue ``inst``'s misses meet at the memory controllers, or None.

    The M/M/1 queue length (:func:`measure.mc_queue`) of each socket
    whose memory serves its misses, weighted by the share it serves
    (:meth:`.state.State.remote_share`); None where a socket's
    bandwidth is unknown.
    """
    mem, frac = state.remote_share(inst)
    if inst.socket is None:
        serving = ((state.memory_socket(inst), 1.0),)
    else:
        serving = ((inst.socket, 1.0 - frac), (mem, frac))
    total = 0.0
    for socket, share in serving:
        if socket is None or share <= 0:
            continue
        util = state.mc_utilisation(inst.host, socket)
        if util is None:
            return None
        total += share * measure.mc_queue(util)
    return total


def _mc_slowdown(state, inst, base, before):
    """What a plan's rise of queueing at memory controllers costs ``inst``.

    The rise of the queue its misses meet (:func:`_mc_queue`), in
    ``state`` against ``before`` in ``base`` (the State before the plan),
    times :data:`measure.MC_QUEUE_PENALTY` (the slowdown of a code that
    only waits on memory), weighted by the share of its accesses that
    reach memory (:func:`measure.memory_sensitivity`, all of them where
    unknown) unless it serves requests. Negative where the queue falls;
    0 where the view has no memory bandwidth or ``inst`` no misses.
    """
    if measure.misses(before) <= 0:
        return 0.0
    now = _mc_queue(state, inst)
    # Read again for every step the check walks: kept, as base is not
    # changed by the plan.
    then = base.per_host(before.host, ('mc_queue', before.uuid),
                         lambda: _mc_queue(base, before))
    if now is None or then is None:
        return 0.0
    slowdown = (now - then) * measure.MC_QUEUE_PENALTY
    if not measure.serving(before):
        slowdown *= measure.memory_sensitivity(before, unknown=1.0)
    return slowdown


def _mc_harm(inst, before, params, slowdown, gain=0.0):
    """Whether the plan queues ``inst``'s misses past its bound.

    The estimated ``slowdown`` (:func:`_mc_slowdown`), less what a NUMA
    repair of the plan gives back (``gain``, at the share of its
    accesses that reach memory, as :func:`measure.co_load_slowdown`
    credits it): a repair that brings a VM's memory home to a busy
    controller trades one wait for another.
    """
    bound = _bound(before, params)
    net = slowdown - gain * measure.memory_sensitivity(before)
    if net <= bound + _EPS:
        return None
    return ('harm_bound: %s\'s LLC misses would queue longer at the memory '
            'controllers serving them (estimated slowdown %.1f%%%s, bound '
            '%.1f%%)' % (inst.uuid, 100 * net,
                         ' net of its NUMA repair' if gain > 0 else '',
                         100 * bound))


def _left(params, lost):
    """``params`` with the harm bounds less a measured ``lost``."""
    return dataclasses.replace(
        params, max_vm_harm=max(0.0, params.max_vm_harm - lost),
        max_latency_harm=max(0.0, params.max_latency_harm - lost))


def _spent_note(params, used):
    """What a bound less a measured loss says in a harm_bound reason."""
    if used == params:
        return ''
    return (', what is left of it after the loss our moves within the '
            'cool-down measured')


def _bound(before, params):
    """The harm bound of an instance: a service's, or any other's."""
    return (params.max_latency_harm if measure.serving(before)
            else params.max_vm_harm)


def _cpu_overflows(state, inst, before, baseline, both=False):
    """(now, then): :func:`measure.core_overflow` of ``inst``'s socket.

    Now, and of its socket before the plan, with what each instance wants
    (:meth:`Baseline.wanted_cpu`); 0 where the socket is unknown. Then is
    read only where now overflows, unless ``both``.
    """
    if inst.socket is None:
        return 0.0, 0.0
    now = state.per_host(inst.host, ('core_overflow', inst.socket),
                         lambda: state.core_overflow(
                             inst.host, inst.socket, baseline.wanted_cpu))
    if now <= 0 and not both:
        return 0.0, 0.0
    then = (baseline.core_overflow(before.host, before.socket)
            if before.socket is not None else 0.0)
    return now, then


def _cpu_harm(inst, before, params, overflows):
    """Whether ``inst`` would get a smaller share of the CPU it wants.

    :func:`measure.core_overflow` of its socket now (``overflows``,
    :func:`_cpu_overflows`), with what each instance wants
    (:func:`measure.wanted_on_socket`), may not pass
    ``max_latency_harm`` for a service answering requests nor
    ``max_vm_harm`` for others, unless its socket before the plan was
    already past that, and then it may not rise. A re-deal that gathers
    busy instances on one socket past its physical cores slows every one
    of them (on generated clusters, CPU-bound VMs fell by up to 32 %,
    simulated), while their LLC misses, which the other rule reads, are
    few. The bound is on the overflow, not on its rise in one audit: a
    socket one plan left 3 % past its cores could take 3 % more from the
    next.
    """
    now, then = overflows
    bound = _bound(before, params)
    if now <= max(then, bound) + _EPS:
        return None
    return ('harm_bound: %s would get %.0f%% of the CPU it wants on its '
            'socket, from %.0f%% (busy vCPUs past the socket\'s cores; '
            'bound %.1f%%)'
            % (inst.uuid, 100 * (1 - now), 100 * (1 - then), 100 * bound))


def _summed_harm(state, inst, before, params, cpu, remote, loads, gain,
                 queued=0.0):
    """Whether the slowdowns estimated for ``inst`` add up past the bound.

    Each rule above bounds one cause; one plan can give an instance
    several, each within the bound and together past it: on a generated
    cluster (seed 19, gen-small-073) a CPU-bound VM moved onto a socket
    5 % past its cores, beside a cache-bound one, lost 6 % (simulated).
    The sum of the rises, CPU (``cpu``, :func:`_cpu_overflows`), misses
    sent remote (``remote``, :func:`_remote_slowdown`), co-runner
    misses (``loads``, :func:`_co_loads`, None if unknown, through
    :func:`measure.co_load_slowdown`) and the queue at memory
    controllers (``queued``, :func:`_mc_slowdown`), may not pass the
    bound either; a cause that falls counts nothing. What a repair
    gives back (``gain``) is set against the co-runner misses first and
    what is left of it against the queue. The estimates are those the
    single-cause rules judged.
    """
    now, then = cpu
    back = gain * measure.memory_sensitivity(before)
    parts = [max(0.0, now - then), max(0.0, remote[1]), 0.0, 0.0]
    if loads is not None:
        then_load, now_load = loads
        co_runners = measure.co_load_slowdown(
            before, then_load, now_load, state.typical_load,
            state.thresholds, 0.0, state.own_load(inst))
        parts[2] = max(0.0, co_runners - back)
        back = max(0.0, back - max(0.0, co_runners))
    parts[3] = max(0.0, queued - back)
    bound = _bound(before, params)
    if sum(parts) <= bound + _EPS:
        return None
    return ('harm_bound: %s would lose an estimated %.1f%% (CPU past the '
            'cores %.1f%%, misses sent to remote memory %.1f%%, co-runner '
            'misses %.1f%%, queueing at memory controllers %.1f%%; bound '
            '%.1f%%)'
            % ((inst.uuid, 100 * sum(parts))
               + tuple(100 * p for p in parts) + (100 * bound,)))


def _mean_falls(state, kept, predictor, baseline, applied):
    """Whether the plan lowers the predicted mean of what it touches.

    The model's mean performance over the touched sockets' instances it
    values before and after; with no model, the audit's contention
    estimate over those sockets (the pressure plus the LLC misses that
    reach remote memory, as NUMA repair counts it) must not rise.
    """
    legs = _legs_of(kept)
    keys = _keys(state, baseline, legs)
    if not predictor.active:
        after = state.pressure(keys) + state.remote_misses(keys)
        for inst in reversed(applied):
            state.restore(inst)
        return after > (state.pressure(keys) + state.remote_misses(keys)
                        + _EPS)
    base = baseline.state
    pairs = []
    for inst in _touched_instances(state, keys):
        found = _model_perf(predictor, state, inst, base,
                            base.inst[inst.uuid])
        if found is not None:
            pairs.append((found[1], found[0]))
    if not pairs:
        return False
    return (sum(n for _, n in pairs) < sum(t for t, _ in pairs)
            - _EPS * len(pairs))


def predicted_changes(view, start, state, actions, predictor):
    """{uuid: predicted relative change of performance} a plan gives.

    For each instance on a socket ``actions`` leave or reach (the plan's
    instances and their co-runners before and after), the change from
    ``start`` (a State of ``view``, before the plan) to ``state`` (after
    it); the others keep their performance (0, left out). The goal's
    efficacy indicators report their mean and their minimum
    (:func:`contention.swap.audit.indicators`), as the demo and
    ``bench.indicators`` measure them in the simulator. Each change is
    :func:`_predicted_change`. ``predictor`` is the harm check's
    (:class:`Predictor`), read again, counting nothing.
    :func:`check_and_predict` reads them for the plan that passed.
    """
    legs = [leg for leg in _legs_of(actions)
            if isinstance(leg, (cluster.Migrate, cluster.Repin))]
    if not legs:
        return {}
    baseline = Baseline(view, start)
    counting, predictor.counting = predictor.counting, False
    try:
        changes = {}
        for inst in _touched_instances(state, _keys(state, baseline, legs)):
            before = baseline.inst.get(inst.uuid)
            if before is not None:
                changes[inst.uuid] = _predicted_change(
                    state, inst, before, baseline, predictor)
    finally:
        predictor.counting = counting
    return changes


def _predicted_change(state, inst, before, baseline, predictor):
    """The predicted relative change of ``inst``'s performance.

    The placement model's, where it values the instance before and after
    the plan (:func:`_model_perf`), else the harm check's estimates,
    signed and summed: the change of its share of the CPU it wants
    (:func:`_cpu_overflows`), the slowdown of the misses the plan sends
    to (or, negative, brings back from) another socket's memory
    (:func:`_remote_slowdown`) and the change of the co-runner LLC misses
    it faces (:func:`measure.co_load_slowdown`, at the rate the plan's
    repairs speed its co-runners up to, on its expected socket where the
    host chooses it). The estimates bound causes and are not calibrated
    to performance (:func:`measure.co_load_slowdown`): the figure is an
    estimate, cautious on the generated clusters (``bench.indicators``),
    and never below -1.
    """
    found = _model_perf(predictor, state, inst, baseline.state, before)
    if found is not None:
        return max(-1.0, found[0] / found[1] - 1.0)
    now, then = _cpu_overflows(state, inst, before, baseline, both=True)
    change = ((1.0 - now) / (1.0 - then) - 1.0
              - _remote_slowdown(state, inst, before)[1]
              - _mc_slowdown(state, inst, baseline.state, before))
    if inst.llc_misses_per_s is not None:
        co_then, co_now = _co_loads(state, inst, before, baseline,
                                    worst=False)
        change -= measure.co_load_slowdown(before, co_then, co_now,
                                           state.typical_load,
                                           state.thresholds,
                                           own=state.own_load(inst))
    return max(-1.0, change)

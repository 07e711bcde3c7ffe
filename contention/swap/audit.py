"""One audit, the same in Watcher and in the simulator.

:func:`run_audit` takes a cluster view, the audit's parameters
(:class:`contention.swap.params.SwapParameters`) and a move log
(:class:`contention.swap.movelog.MoveLog`), and returns the plan: its
actions in the order they must run, its efficacy indicators, and the
reason for everything it left alone. It owns what both adapters used to
do each their own way: the cool-down (from the move log), Merlin's
repercussion check (section 3.5, from the move log and the classes before
each move), the model check (``mix_values``), the order of the phases
and the last check of every plan (:mod:`.harm`: feasible at every step,
no instance hurt past a bound, no move back within the cool-down).

The phases (each ``(state, params) -> (actions, skipped)``, applying its
actions to the :class:`contention.swap.state.State` the next one plans
on), per algorithm of Ahn et al. (``shared/papers/004_*``):

* Algorithm 1, cache-aware (unit: host): NUMA repair
  (:mod:`.repair`), the local phase (:mod:`.local`), the global phase
  between hosts (:mod:`.balance`), swaps by predicted contention
  (:mod:`.pressure_swaps`), Merlin's CPU quota raises (:mod:`.quota`);
* Algorithm 2, NUMA-aware (unit: socket): the same without the local
  phase, the swaps moving VMs with their memory.

What an adapter does is only translation: the Watcher strategy builds the
view from its compute model and the store
(:func:`contention.reportview.view_from_reports`) and turns the plan into
Watcher actions; the simulator's policy reads the simulator's view and
remembers its moves in memory.
"""

import dataclasses

from contention import classify
from contention import cluster
from contention.swap import arbitration
from contention.swap import balance
from contention.swap import harm
from contention.swap import local
from contention.swap import measure
from contention.swap import movelog
from contention.swap import params as params_mod
from contention.swap import pressure_swaps
from contention.swap import quota
from contention.swap import repair
from contention.swap import rollback
from contention.swap import state as state_mod

#: (unit, phases) of each algorithm, in the order they run.
ALGORITHMS = {
    params_mod.CACHE_AWARE: (state_mod.HOST, (
        repair.phase, local.phase, balance.phase, pressure_swaps.phase,
        quota.phase)),
    params_mod.NUMA_AWARE: (state_mod.SOCKET, (
        repair.phase, balance.phase, pressure_swaps.phase, quota.phase)),
}

#: Skip reasons (the first word of every Skipped.reason), for operators.
REASONS = {
    'not_movable': 'the instance was excluded before the algorithm ran '
                   '(locked, not ACTIVE, out of scope, no telemetry)',
    'host_disabled': 'the host is disabled or down',
    'no_telemetry': 'no LLC-miss measurement for the instance',
    'socket_unknown': 'the instance\'s socket is not known',
    'cooldown': 'the instance was moved (or a move of it was attempted) '
                'less than cooldown seconds ago',
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
REASONS.update(harm.REASONS)
REASONS.update(rollback.REASONS)


def run_audit(view, params, move_log=None, algorithm=params_mod.CACHE_AWARE,
              mix_values=None, thresholds=classify.DEFAULT_THRESHOLDS):
    """The plan of one audit (a :class:`contention.cluster.Plan`).

    ``move_log`` None is an empty log (no past moves). The view's own
    ``last_moved_at`` stays when it is later than the log's.
    ``thresholds`` are the operator's ``[contention_thresholds]``
    (:func:`contention.opts.thresholds_from_conf`), which Merlin's quota
    rule reads.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError('algorithm must be one of %s, not %r'
                         % (', '.join(ALGORITHMS), algorithm))
    view = with_cooldown(view, move_log, params.cooldown_s)
    hurt = repercussions(view, move_log, params.repercussion_interval)
    # One State of the view, forked by the plan and by the harm check.
    start = state_mod.State(view, thresholds=thresholds)
    undo, left, state = rollback.plan(view, params, move_log, start)
    if undo:
        # Measured harm first: this audit only undoes (module rollback).
        return cluster.Plan(actions=undo, skipped=left, indicators=indicators(
            state, undo, harm.predicted_changes(
                view, start, state, undo, harm.Predictor(mix_values))))
    held = rollback.hold(view, move_log, params)
    if held is not view:
        view, start = held, state_mod.State(held, thresholds=thresholds)
    proposed = plan(view, params, algorithm, hurt=hurt,
                    mix_values=mix_values, thresholds=thresholds,
                    start=start)
    # Every plan, Watcher's and the simulator's, passes the harm check;
    # what our earlier moves cost is read (from the store, in Watcher)
    # only for a plan that has actions to judge.
    spent = (rollback.spent(view, params, move_log) if proposed.actions
             else None)
    checked, changes = harm.check_and_predict(
        view, proposed, params, move_log, mix_values, thresholds,
        start=start, spent=spent)
    if checked.actions != proposed.actions:
        # The indicators describe the plan Watcher shows, not the moves
        # the harm check dropped from it.
        after = start.fork()
        for action in checked.actions:
            after.apply(action)
        shown = indicators(after, checked.actions, changes)
    else:
        shown = dict(checked.indicators,
                     **performance(changes, len(view.instances)))
    checked = dataclasses.replace(checked, indicators=shown)
    if left:
        checked = dataclasses.replace(checked,
                                      skipped=checked.skipped + left)
    return checked


def with_cooldown(view, move_log, cooldown_s):
    """``view`` with each instance's last move taken from ``move_log``."""
    last = movelog.last_moved(move_log, view.now, cooldown_s)
    if not last:
        return view
    instances = []
    for inst in view.instances:
        when = last.get(inst.uuid)
        if when is not None and (inst.last_moved_at is None
                                 or inst.last_moved_at < when):
            inst = state_mod.replace_instance(inst, last_moved_at=when)
        instances.append(inst)
    return cluster.ClusterView(view.hosts, tuple(instances), now=view.now)


def repercussions(view, move_log, interval):
    """Merlin's repercussion check over the moves of the last ``interval``.

    A co-runner's class before a move is the last one measured in the
    ``interval`` before it (:meth:`MoveLog.classes_before`).
    """
    if not interval or move_log is None:
        return []
    moves = move_log.moves_since(view.now - interval)
    if not moves:
        return []
    first_move = {}
    for move in moves:
        for co in view.instances_on(move.dest_host):
            first_move.setdefault(co.uuid, move.moved_at)
    classes_before = move_log.classes_before({
        uuid: (moved_at, moved_at - interval)
        for uuid, moved_at in first_move.items()})
    return arbitration.hurt_corunners(view, moves, classes_before)


def plan(view, params, algorithm, hurt=(), mix_values=None,
         thresholds=classify.DEFAULT_THRESHOLDS, start=None):
    """Run ``algorithm``'s phases on ``view``.

    The cool-down is already in the view, and the repercussion check's
    findings are ``hurt``. ``start``, an untouched State of ``view``
    with the same ``thresholds`` (:meth:`State.fork`), saves building
    one.
    """
    unit, phases = ALGORITHMS[algorithm]
    state = (start.fork(unit, mix_values, hurt) if start is not None
             else state_mod.State(view, unit, mix_values, hurt, thresholds))
    actions, skipped = [], []
    for phase in phases:
        done, left = phase(state, params)
        actions.extend(done)
        skipped.extend(left)
    reason = state.reason
    if not actions and reason is None:
        reason = 'no acceptable move (see skipped)'
    return cluster.Plan(actions=tuple(actions), skipped=tuple(skipped),
                        indicators=indicators(state, actions),
                        reason=None if actions else reason)


def indicators(state, actions, changes=None):
    """The efficacy figures of ``actions``, applied to ``state``.

    What Watcher's goal reports: against ``state``'s view.

    ``changes`` ({uuid: predicted relative change of performance},
    :func:`.harm.predicted_changes`; an instance not in it keeps its
    performance) give ``perf_mean_change``, the mean over the view's
    instances, and ``perf_min_change``, the change of the instance the
    plan is predicted to treat worst (0 when no instance falls), both
    in %.
    """
    before = measure.spread(state.view_loads().values())
    after = measure.spread(state.socket_loads().values())
    migrations = swaps = repins = quotas = 0
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
            elif isinstance(leg, cluster.CpuQuota):
                quotas += 1
    count = len(state.view.instances)
    return dict({
        'instances': float(count),
        'migrations': float(migrations),
        'swaps': float(swaps),
        'repins': float(repins),
        'quota_changes': float(quotas),
        'spread_before': before,
        'spread_after': after,
        'predicted_gain': (100.0 * (before - after) / before
                           if before > 0 else 0.0),
        'memory_to_migrate_gb': memory / 1024.0,
    }, **performance(changes or {}, count))


def performance(changes, count):
    """The indicators of what a plan is predicted to do to performance.

    ``perf_mean_change`` and ``perf_min_change`` (%) of ``changes``
    ({uuid: predicted relative change}) over ``count`` instances
    (:func:`.measure.performance_change`).
    """
    mean, worst = measure.performance_change(changes, count)
    return {'perf_mean_change': mean, 'perf_min_change': worst}


def cache_aware(view, params=params_mod.SwapParameters(), hurt=(),
                mix_values=None):
    """Algorithm 1 on ``view`` with the repercussion findings ``hurt``."""
    return plan(view, params, params_mod.CACHE_AWARE, hurt, mix_values)


def numa_aware(view, params=params_mod.SwapParameters(), hurt=(),
               mix_values=None):
    """Algorithm 2 on ``view`` with the repercussion findings ``hurt``."""
    return plan(view, params, params_mod.NUMA_AWARE, hurt, mix_values)

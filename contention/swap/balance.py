"""Phase: Ahn et al.'s global phase, swaps between the extreme units.

Algorithm 1 step 2 (hosts) or Algorithm 2 (sockets, VMs move with their
memory so NUMA affinity is kept): find the units with the most and fewest
LLC misses (per average-sized unit on a cluster mixing host classes:
:func:`contention.swap.measure.capacity_weights`) and, while they differ
by more than ``threshold``, swap a VM
of the first with one of the second (or move one one-way). The papers run
one step per period; here an audit chains up to ``max_swaps`` steps, each
chosen on the state left by the previous ones. Which swap a step runs,
and whether it is worth it, is Merlin's arbitration
(:mod:`contention.swap.arbitration`) and :mod:`contention.swap.feasibility`.
"""

import collections

from contention import cluster
from contention.swap import arbitration
from contention.swap import feasibility
from contention.swap import measure
from contention.swap import state as state_mod

#: An audit gives up after this many units per allowed swap had no
#: acceptable move: the next ones are less loaded and rarely do better.
MAX_FAILED_SOURCES_PER_SWAP = 20


def _candidates(state, src, dst, params, skipped, seen, reasons):
    """Feasible candidates for one step from ``src`` to ``dst``."""
    outs = [i for i in state.instances_in(src)
            if feasibility.may_move(state, i, params, skipped, seen)]
    backs = [i for i in state.instances_in(dst)
             if feasibility.may_move(state, i, params, skipped, seen)]
    if not outs:
        reasons['no_partner'] += 1
        return []
    diff = state.load[src] - state.load[dst]
    weights = (state.unit_weight.get(src, 1.0)
               + state.unit_weight.get(dst, 1.0))
    if params.victim_selection == arbitration.EXTREME:
        # The papers' victim has the most misses and their partner the
        # fewest; those within the tolerance of them are victims and
        # partners too (counters rarely tell them apart, and earlier
        # steps of the plan moved their co-runners without measuring them
        # again): the feasible pair that narrows the difference most wins
        # (arbitration.choose).
        high = max(measure.misses(i) for i in outs)
        victims = [o for o in outs
                   if measure.misses(o) >= high / (1 + params.tolerance)]
        if backs:
            low = min(measure.misses(i) for i in backs)
            pairs = [(o, b) for o in victims for b in backs
                     if measure.misses(b) <= low * (1 + params.tolerance)]
        else:
            pairs = [(o, None) for o in victims]
    else:
        pairs = [(o, b) for o in outs for b in backs]
        pairs += [(o, None) for o in outs]
    exact = state.unit == state_mod.SOCKET
    priced = []
    for out, back in pairs:
        if back is not None and measure.alike(out, back):
            reasons['no_gain'] += 1
            continue
        delta = measure.misses(out) - (measure.misses(back) if back is not None else 0.0)
        # The difference left after the move: src loses delta at its
        # weight, dst gains it at its own (both 1 on identical units).
        reduction = diff - abs(diff - delta * weights)
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
        priced.append(arbitration.Candidate(out, back, reduction, cost))
    # The largest reductions first: once one is feasible, a candidate not
    # near it (arbitration.is_near) cannot be chosen, so it is not
    # assessed (each assessment is trial moves of the state).
    priced.sort(key=arbitration.largest_reduction_first)
    feasible = []
    for cand in priced:
        if feasible and not arbitration.is_near(
                cand.reduction, feasible[0][0].reduction, params.tolerance):
            break
        legs = feasibility.plan_legs(state, cand, src, dst, exact)
        if legs is None:
            reasons['no_capacity'] += 1
            continue
        # Ahn et al. balance misses whoever suffers from them; Merlin
        # (section 3.4) takes a move only if it helps more than it hurts.
        # A move must lower the predicted contention by more than it costs
        # (and by a margin), without oversubscribing a CPU.
        why_not, _ = feasibility.assess(state, legs, cand.cost, params)
        if why_not is not None:
            reasons[why_not] += 1
            continue
        feasible.append((cand, legs))
    return feasible


def _name(key):
    if isinstance(key, tuple):
        return '%s/socket-%s' % key
    return key


def phase(state, params):
    """``(actions, skipped)``: up to ``max_swaps`` steps, applied to ``state``.

    The repercussion check's findings (``state.hurt``,
    :func:`arbitration.hurt_corunners`) have their units arbitrated
    first, whatever their rank, and never receive a VM. Why the phase
    stopped is left in ``state.reason``.
    """
    skipped = []
    unit = state.unit
    view = state.view
    hurt = state.hurt
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
        if unit == state_mod.HOST:
            units.append(host.name)
        else:
            units.extend((host.name, s.id) for s in host.sockets)
    protected = set()
    focus = []
    for h in hurt:
        key = h.host if unit == state_mod.HOST else (h.host, h.socket)
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
    # Hosts of two CPU vendors, or models: a move stays among the hosts
    # it can reach (feasibility.reachable), so each unit is balanced
    # against the least loaded one it can reach, and one balanced group
    # says nothing of the other.
    pooled = feasibility.pooled(state, units, params)
    while swaps < params.max_swaps and units:
        if by_load is None:
            by_load = sorted(units, key=lambda u: (-state.load[u], str(u)))
        forced = [u for u in focus if u not in exhausted]
        src = forced[0] if forced else next(
            (u for u in by_load if u not in exhausted), None)
        dst = next((u for u in reversed(by_load)
                    if u not in protected and u != src
                    and (not pooled or src is None
                         or feasibility.reachable(state, src, u, params))),
                   None)
        if pooled and src is not None and dst is None:
            exhausted.add(src)
            continue
        if src is None or dst is None:
            reason = ('no unit left to arbitrate' if len(units) > 1
                      else 'fewer than two hosts or sockets to balance')
            if pooled and src is None:
                reason = ('each group of hosts of one CPU vendor (and '
                          'model) is balanced within the threshold %.3g '
                          'misses/s, or its units had no acceptable move '
                          '(see skipped)' % params.threshold)
            break
        if failures >= max_failures:
            reason = ('stopped after %d units without an acceptable move '
                      '(see skipped)' % failures)
            break
        diff = state.load[src] - state.load[dst]
        if pooled and not forced and diff <= params.threshold:
            exhausted.add(src)
            continue
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
        for action in feasibility.as_action(legs):
            actions.append(action)
            state.apply(action)
        by_load = None
        if src in focus:
            exhausted.add(src)
        swaps += 1
        state.steps += 1
    state.reason = reason
    return actions, skipped

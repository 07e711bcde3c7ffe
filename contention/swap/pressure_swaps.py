"""Phase: swaps chosen by predicted contention alone, after the balancing.

See :func:`phase`.
"""

import itertools

from contention.swap import arbitration
from contention.swap import feasibility
from contention.swap import measure
from contention.swap import state as state_mod

#: The contention phase looks for swaps between this many of the most and
#: least contended units: 3 x 3 unit pairs, so its cost does not grow with
#: the cluster beyond ranking the units.
CONTENTION_UNITS = 3


def _unit_pressure(state, unit):
    if state.unit == state_mod.HOST:
        host = state.hosts[unit]
        return state.pressure([(unit, s.id) for s in host.sockets])
    return state.pressure([unit])


def phase(state, params):
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
    (:func:`measure.pressure`) and one of the units with the lowest that
    it may reach (:func:`feasibility.reachable`: same CPU vendor, and
    model unless ``across_cpu_models``) is priced, and the one whose
    drop of predicted contention most exceeds its cost is run, if it
    clears :func:`feasibility.assess`. Capacity, CPU oversubscription,
    cool-down and same-image rules are those of the global phase.
    Returns ``(actions, skipped)``, the actions applied to ``state``; the
    skips are the balancing's to report.
    """
    if not params.contention_swaps:
        return [], []
    budget = params.max_swaps - state.steps
    units = []
    for host in state.view.hosts:
        if host.enabled:
            if state.unit == state_mod.HOST:
                units.append(host.name)
            else:
                units.extend((host.name, s.id) for s in host.sockets)
    seen, ignored = set(), []  # the global phase reported the skips
    exact = state.unit == state_mod.SOCKET
    actions = []
    while budget > 0 and len(units) > 1:
        ranked = sorted(units, key=lambda u: (-_unit_pressure(state, u),
                                              str(u)))
        best = None
        for src in ranked[:CONTENTION_UNITS]:
            outs = [i for i in state.instances_in(src)
                    if feasibility.may_move(state, i, params, ignored, seen)]
            # the least contended units this one may reach: on a cloud of
            # several CPU models the least contended of all may be none
            dsts = itertools.islice(
                (u for u in reversed(ranked) if u != src
                 and feasibility.reachable(state, src, u, params)),
                CONTENTION_UNITS)
            for dst in dsts:
                backs = [i for i in state.instances_in(dst)
                         if feasibility.may_move(state, i, params, ignored, seen)]
                for out in outs:
                    for back in backs:
                        if measure.alike(out, back):
                            continue
                        cost = arbitration.migration_cost(
                            (out, back), params.migration_cost_per_gib)
                        legs = feasibility.plan_legs(state, arbitration.Candidate(
                            out, back, 0.0, cost), src, dst, exact)
                        if legs is None:
                            continue
                        why_not, gain = feasibility.assess(state, legs, cost,
                                                           params)
                        if why_not is not None:
                            continue
                        net = gain - cost
                        if best is None or net > best[0]:
                            best = (net, legs)
        if best is None:
            break
        for action in feasibility.as_action(best[1]):
            actions.append(action)
            state.apply(action)
        budget -= 1
        state.steps += 1
    return actions, []

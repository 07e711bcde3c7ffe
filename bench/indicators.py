"""Do a plan's predicted performance changes agree with the simulator?

Issue 19 item 4: the goal's efficacy indicators report the change of the
instances' mean performance and of the one the plan treats worst, as the
harm check predicts them (:func:`contention.swap.harm.predicted_changes`).
This bench measures them where they can be checked: on generated clusters
(:func:`contention.sim.generate.family`), each policy's first audit is
carried out in the simulator, and each instance's performance once the
migrations have finished is set against its performance in a twin
simulator that ran no plan (same seed, same epochs), so demand phases
cancel out. For every plan with actions it reports whether the predicted
and measured mean agree in direction (a change under :data:`FLAT_PCT` is
none), how far apart both measures are (bias: predicted less measured,
on average), and how often the worst-off instance fell more than a
point further than predicted.

Its second table looks at what the harm check refuses in those audits
(:func:`refusals_one`): each move the phases proposed and the check
dropped is run alone in the simulator, and counted as harmful (some VM
falls past ``max_vm_harm``), harmless and paying (none does and the mean
rises), or neither. A check that refuses many harmless paying moves
leaves gain behind; one that lets harmful ones through is the bench
above. All figures are simulated.

    python -m bench.indicators [--clusters N] [--seed S] [--jobs J]
"""

import argparse
import functools
import multiprocessing
import os
import re
import statistics
import sys
import warnings

import numpy as np

from contention import sim
from contention import swap
from contention.sim import generate

#: Our policies, as the evaluation runs them.
POLICIES = (
    ('cache_aware_swap', 'sensitivity_cost'),
    ('cache_aware_swap', 'extreme'),
    ('numa_aware_swap', 'sensitivity_cost'),
    ('numa_aware_swap', 'extreme'),
)
#: Epochs a plan's live migrations may take before it is measured.
SETTLE_EPOCHS = 20
#: A predicted or measured mean change smaller than this (in %) is "no
#: change": its direction is not judged.
FLAT_PCT = 0.1
#: A refused move that would have raised the cluster's mean by more than
#: this (in %) is counted apart: a gain worth a live migration.
REFUSED_GAIN_PCT = 0.2
#: The instance a skip of the harm check names as the one it protects
#: (``harm_bound: <uuid> has ...``).
_NAMED = re.compile(r'harm_bound: ([0-9a-f]{8}-[0-9a-f-]{27})\b')


def run_one(item, policy, victim):
    """(predicted mean, predicted worst, measured mean, measured worst), %.

    :func:`contention.swap.performance_change` of the plan's predictions
    (its indicators) and of what the simulator measured.

    None when the first audit proposes nothing.
    """
    spec, cseed, name = item
    scen = generate.scenario(spec, cseed, name)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        planned = sim.Simulator(scen)
        twin = sim.Simulator(scen)
        pol = sim.load_policy(policy, victim_selection=victim)
        pol.bind(planned)
        rng = np.random.default_rng([planned.seed, 2])
        planned.step()
        twin.step()
        plan = planned.audit(pol, rng)[0]
    if not plan.actions:
        return None
    for _ in range(SETTLE_EPOCHS):
        if not planned.running:
            break
        planned.step()
        twin.step()
    after, alone = planned.step(), twin.step()
    changes = {u: after[u] / alone[u] - 1.0 for u in after
               if alone.get(u, 0) > 0}
    ind = plan.indicators
    return ((ind['perf_mean_change'], ind['perf_min_change'])
            + swap.performance_change(changes, len(changes)))


def refusals_one(item, policy, victim):
    """What the harm check dropped from the first audit, judged by truth.

    The plan the phases propose (:func:`contention.swap.cache_aware` /
    :func:`contention.swap.numa_aware`) against the plan the audit keeps
    (:func:`contention.swap.run_audit`): each dropped action is run alone
    on a scratch copy of the cluster as the audit saw it, and every VM's
    steady performance (no copy running) set against its performance
    without it. Returns ``[(reason, worst %, mean %, named %)]``, the
    reason being the first word of the check's skip for the action's
    instance, and ``named`` the change of the instance that skip names as
    the one it protects (None where it names none): whether the check
    refused for the VM the move would harm.
    """
    spec, cseed, name = item
    scen = generate.scenario(spec, cseed, name)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        cluster_sim = sim.Simulator(scen)
        pol = sim.load_policy(policy, victim_selection=victim)
        pol.bind(cluster_sim)
        cluster_sim.step()
        view = cluster_sim.view()
        propose = (swap.cache_aware if type(pol).algorithm == swap.CACHE_AWARE
                   else swap.numa_aware)
        proposed = propose(view, pol.params)
        kept = swap.run_audit(view, pol.params, algorithm=type(pol).algorithm)
    why = {}
    for skip in kept.skipped:
        why.setdefault(skip.subject, skip.reason)
    t = cluster_sim.now + scen.epoch_s / 2.0
    index = {inst.uuid: k
             for k, inst in enumerate(cluster_sim.state.instances)}

    def perf(scratch):
        return scratch.state.performance(scratch.state.problem(t))[1]

    base = perf(cluster_sim.scratch())
    out = []
    for action in proposed.actions:
        if action in kept.actions:
            continue
        scratch = cluster_sim.scratch()
        if scratch.attempt(action) is not None:
            continue
        after = perf(scratch)
        change = 100.0 * (after / base - 1.0)
        subject = (action.first.instance if hasattr(action, 'first')
                   else action.instance)
        reason = why.get(subject, 'other')
        named = _NAMED.match(reason)
        k = index.get(named.group(1)) if named else None
        out.append((reason.split(':')[0], float(change.min()),
                    100.0 * float(after.mean() / base.mean() - 1.0),
                    None if k is None else float(change[k])))
    return out


def refusal_summary(rows, bound_pct):
    """Cells for one policy: per reason, and over all refusals."""
    cells = []
    for reason in sorted({r[0] for r in rows}) + [None]:
        mine = [(w, m, n) for r, w, m, n in rows
                if reason is None or r == reason]
        harmful = [w for w, _, _ in mine if w < -bound_pct]
        paid = [m for w, m, _ in mine if w >= -bound_pct and m > 0]
        named = [n for _, _, n in mine if n is not None]
        cells.append(dict(
            reason=reason or 'all', dropped=len(mine), harmful=len(harmful),
            harmful_median=(statistics.median(harmful) if harmful
                            else float('nan')),
            named=len(named),
            named_harmed=sum(n < -bound_pct for n in named),
            named_unharmed=sum(n >= 0 for n in named),
            paid=len(paid),
            paid_median=statistics.median(paid) if paid else float('nan'),
            paid_over=sum(m > REFUSED_GAIN_PCT for m in paid)))
    return cells


def _cell(fmt, value):
    return 'n/a' if np.isnan(value) else fmt % value


def direction(value):
    return 0 if abs(value) < FLAT_PCT else (1 if value > 0 else -1)


def summary(rows):
    """The table's cells for one policy's rows (those with a plan)."""
    agree = sum(direction(p) == direction(m) for p, _, m, _ in rows)
    opposite = sum(direction(p) * direction(m) < 0
                   for p, _, m, _ in rows)
    mean_err = [abs(p - m) for p, _, m, _ in rows]
    worst_err = [abs(p - m) for _, p, _, m in rows]
    under = sum(pw > mw + 1.0 for _, pw, _, mw in rows)
    return dict(plans=len(rows), agree=agree, opposite=opposite,
                mean_mae=statistics.fmean(mean_err),
                mean_median=statistics.median(mean_err),
                mean_bias=statistics.fmean(p - m for p, _, m, _ in rows),
                worst_mae=statistics.fmean(worst_err),
                worst_under=under,
                corr=(float(np.corrcoef([r[0] for r in rows],
                                        [r[2] for r in rows])[0, 1])
                      if len(rows) > 2 else float('nan')))


INTRO = (
    'Whether the goal\'s predicted performance changes '
    '(`predicted_mean_performance_change`, '
    '`predicted_worst_performance_change`) agree with the simulator: each '
    'of our strategies\' first audit on %d generated small clusters, each '
    'VM measured once the migrations are done against a twin simulator '
    'that ran no plan. Errors and bias (predicted less measured) in '
    'percentage points; "same direction" counts a change under 0.1 %% as '
    'none. What the figures mean, and seed 83 (held out): '
    '`doc/watcher.md`, "Efficacy indicators".')


REFUSALS_INTRO = (
    '[simulated] What the harm check refuses, judged by the simulator: the '
    'same first audits of %d clusters (family seed %d); each action the '
    'phases proposed and the check dropped, run alone on a copy of the '
    'cluster as the audit saw it (no copy cost, steady performance). '
    '*Harmful*: some VM falls by more than %g %% (`max_vm_harm`, the '
    'evaluation\'s bound for every VM, services included); *harmless and '
    'raising the mean*: none does and the mean rises; the rest change '
    'nothing or lower the mean. A move alone is not the move in its plan, '
    'whose other moves the check also weighed; *over %g %%* counts the '
    'harmless ones worth more than that share of the mean. *Named*: '
    '`harm_bound` skips, which name the VM the check protects, '
    'and of them those where that VM itself falls past the bound, and '
    'those where it does not fall at all: whether the check refused for '
    'the VM the move would harm.')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--clusters', type=int, default=100,
                        help='small generated clusters (default 100)')
    parser.add_argument('--seed', type=int, default=19,
                        help='family seed (default 19, the evaluation\'s)')
    parser.add_argument('--jobs', type=int, default=os.cpu_count())
    args = parser.parse_args(argv)
    family = generate.family(args.seed, small=args.clusters)
    print(INTRO % len(family))
    print()
    print('[simulated] first audit of %d generated clusters (family seed '
          '%d): predicted against measured change, %%'
          % (len(family), args.seed))
    print()
    print('| policy | plans | mean: same direction | opposite | mean: mean '
          'abs. error | median abs. error | bias | corr | worst: mean abs. '
          'error | worst fell > 1 pt more than predicted |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    with multiprocessing.Pool(args.jobs) as pool:
        for policy, victim in POLICIES:
            rows = [r for r in pool.map(functools.partial(
                run_one, policy=policy, victim=victim), family)
                if r is not None]
            if not rows:
                print('| %s (%s) | 0 | | | | | | | | |' % (policy, victim))
                continue
            s = summary(rows)
            print('| %s (%s) | %d | %d | %d | %.2f | %.2f | %+.2f | %.2f | '
                  '%.2f | %d |'
                  % (policy, victim, s['plans'], s['agree'], s['opposite'],
                     s['mean_mae'], s['mean_median'], s['mean_bias'],
                     s['corr'], s['worst_mae'], s['worst_under']))
            sys.stdout.flush()
        bound = 100 * swap.SwapParameters().max_vm_harm
        print()
        print(REFUSALS_INTRO % (len(family), args.seed, bound,
                                REFUSED_GAIN_PCT))
        print()
        print('| policy | harm check\'s reason | dropped | harmful: count '
              '| median worst VM, %% | harmless and raising the mean: count '
              '| median mean change, %% | of them over %g %% | named: '
              'count / it falls past the bound / it does not fall |'
              % REFUSED_GAIN_PCT)
        print('|---|---|---:|---:|---:|---:|---:|---:|---:|')
        for policy, victim in POLICIES:
            rows = [r for part in pool.map(functools.partial(
                refusals_one, policy=policy, victim=victim), family)
                for r in part]
            for c in refusal_summary(rows, bound):
                print('| %s (%s) | %s | %d | %d | %s | %d | %s | %d | '
                      '%d / %d / %d |'
                      % (policy, victim, c['reason'], c['dropped'],
                         c['harmful'], _cell('%.1f', c['harmful_median']),
                         c['paid'], _cell('%+.2f', c['paid_median']),
                         c['paid_over'], c['named'], c['named_harmed'],
                         c['named_unharmed']))
            sys.stdout.flush()
    return 0


if __name__ == '__main__':
    sys.exit(main())

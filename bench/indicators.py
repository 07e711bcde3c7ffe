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
point further than predicted. All figures are simulated.

    python -m bench.indicators [--clusters N] [--seed S] [--jobs J]
"""

import argparse
import functools
import multiprocessing
import os
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
    return 0


if __name__ == '__main__':
    sys.exit(main())

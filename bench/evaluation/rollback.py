"""What-if: the measured roll-back on generated families (simulated).

``python -m bench.evaluation.rollback --seeds 19,41 --size 100,6
--rollback-harm 0.05 [--noise 0.02]`` runs our four rows on each seed's family
(:func:`bench.evaluation.family.run_family`) as shipped and with
``rollback_harm`` set (:mod:`contention.swap.rollback`), and prints, per
seed and row, the clusters harmed past issue 19's bounds, the summed and
median gain over ``none``, the worst VM and the live migrations, in
Markdown. The rows as shipped run with ``rollback_harm``'s default
(``SwapParameters``; ``--rollback-harm 0`` compares them with the rule
off); ``doc/watcher.md`` ("Measured roll-back") quotes this table,
measured when the default was off. Every figure is simulated.
"""

import argparse
import dataclasses
import sys

from bench.evaluation import family
from bench.evaluation import verdict

#: Suffix of the label of a row run with the roll-back on.
ON = ' + rollback %g'


def entries(harm):
    """``none``, our rows as shipped, and our rows with ``harm`` set."""
    shipped = family.HOLDOUT_ENTRIES
    on = tuple(dataclasses.replace(
        e, label=e.label + ON % harm,
        params=tuple(e.params) + (('rollback_harm', str(harm)),))
        for e in shipped if e.group == 'ours')
    return shipped + on


def table(fam, harm):
    """Markdown rows comparing each of our rows as shipped and at ``harm``.

    ``fam`` is :func:`family.run_family`'s first result.
    """
    lines = ['| row | harmed clusters | summed gain | median gain | worst VM '
             '| live migrations |', '|---|---:|---:|---:|---:|---:|']
    labels = [e.label for e in family.HOLDOUT_ENTRIES if e.group == 'ours']
    for label in labels:
        cells = [_cells(fam, name) for name in (label, label + ON % harm)]
        lines.append('| %s | %s |' % (label, ' | '.join(
            '%s -> %s' % pair for pair in zip(*cells))))
    return '\n'.join(lines)


def _cells(fam, label):
    figs = [verdict.cluster_figures(rows, label)
            for _, rows in fam.values() if label in rows]
    summary = verdict.family_summary(fam, label)
    return ('%d' % summary['harmed'],
            '%+.3f' % sum(f['gain'] for f in figs),
            '%+.1f %%' % (100 * summary['gain'][0]),
            '%+.1f %%' % (100 * summary['vm_worst'][2]),
            '%d' % sum(f['migrations'] for f in figs))


def main(argv):
    parser = argparse.ArgumentParser(
        prog='python -m bench.evaluation.rollback', description=__doc__)
    parser.add_argument('--seeds', default='19',
                        help='family seeds, comma-separated')
    parser.add_argument('--size', default='100,6',
                        help='SMALL,MEDIUM[,LARGE] clusters of each family')
    parser.add_argument('--rollback-harm', type=float, default=0.05)
    parser.add_argument('--noise', type=float, default=0.0,
                        help='log-normal sigma of counter noise on every '
                             'cluster (generated clusters have none)')
    parser.add_argument('--jobs', type=int, default=None)
    args = parser.parse_args(argv)
    size = tuple(int(x) for x in args.size.split(','))
    if len(size) not in (2, 3):
        parser.error('--size %r: expected SMALL,MEDIUM[,LARGE]' % args.size)
    for seed in (int(s) for s in args.seeds.split(',')):
        fam, timeouts, wall = family.run_family(
            (size + (0,))[:3], seed, jobs=args.jobs,
            entries=entries(args.rollback_harm), noise=args.noise)
        print('\nFamily seed %d: %d clusters, %.0f s (simulated; counter '
              'noise %g; shipped -> rollback_harm %g)%s\n' % (
                  seed, len(fam), wall, args.noise, args.rollback_harm,
                  '; over the CPU bound: %s' % timeouts if timeouts else ''))
        print(table(fam, args.rollback_harm))
        sys.stdout.flush()


if __name__ == '__main__':
    main(sys.argv[1:])

"""``python -m bench.evaluation``: run the plan, judge it, write the page.

The family of generated clusters runs first, in child processes
(:mod:`bench.evaluation.family`), then the named scenarios, the what-ifs,
the arrival experiment and the decision-time sweep in this process (they
load Watcher, which registers its options once per process).
"""

import argparse
import os
import sys
import time

from bench.evaluation import family as family_mod
from bench.evaluation.plan import ARRIVAL_ENTRIES
from bench.evaluation.plan import DOC_DIR
from bench.evaluation.plan import IMAGE_DIR
from bench.evaluation.plan import OVERCOMMIT_ENTRIES
from bench.evaluation.plan import arrival_variant
from bench.evaluation.plan import overcommit_variant
from bench.evaluation.plan import weigher_entries
from bench.evaluation.plots import plot_family
from bench.evaluation.plots import plot_over_worst
from bench.evaluation.plots import plot_perf
from bench.evaluation.plots import plot_sweep
from bench.evaluation.report import document
from bench.evaluation.report import FAMILY_HEADING
from bench.evaluation.report import family_section
from bench.evaluation.report import HOLDOUT_HEADING
from bench.evaluation.report import holdout_section
from bench.evaluation.report import is_large_only
from bench.evaluation.report import LARGE_HEADING
from bench.evaluation.run import evaluate_scenario
from bench.evaluation.run import price_what_if
from bench.evaluation.run import quiet
from bench.evaluation.run import run_entry
from bench.evaluation.run import scale_sweep
from bench.evaluation.text import yes_no
from bench.evaluation.verdict import check_targets
from bench.evaluation.verdict import derived
from contention import sim


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.evaluation')
    parser.add_argument('--quick', action='store_true',
                        help='scale sweep up to 1,000 hosts only')
    parser.add_argument('--scenarios', default=None,
                        help='comma-separated subset (default: all shipped)')
    parser.add_argument('--output', default=os.path.join(
        DOC_DIR, 'evaluation.md'))
    parser.add_argument('--family', default='%d,%d,%d'
                        % family_mod.DEFAULT_SIZE,
                        help='generated clusters: SMALL,MEDIUM,LARGE counts '
                             '(default %(default)s; 0,0,0 skips the family)')
    parser.add_argument('--family-seed', type=int,
                        default=family_mod.DEFAULT_SEED)
    parser.add_argument('--jobs', type=int, default=None,
                        help='processes for the family (default: CPUs)')
    parser.add_argument('--budget-s', type=float, default=None,
                        help='stop the family after this many seconds and '
                             'report the clusters finished by then')
    parser.add_argument('--holdout-seeds',
                        default=','.join(str(k) for k in
                                         family_mod.HOLDOUT_SEEDS),
                        help='family seeds our rows also run on, with the '
                             'family\'s small and medium counts (default '
                             '%(default)s; empty skips them)')
    parser.add_argument('--family-only', action='store_true',
                        help='run only the family and replace its section '
                             'of the existing page, keeping the rest')
    args = parser.parse_args(argv)
    size = family_size(args.family)
    quiet()
    started = time.monotonic()
    jobs = args.jobs or os.cpu_count() or 1
    family, timeouts, family_wall = family_mod.run_family(
        size, args.family_seed, jobs, progress=log,
        budget_s=args.budget_s) if any(size) else (
        {}, {}, 0)
    holdout = (family_mod.run_holdout(seeds_of(args.holdout_seeds),
                                      size[:2], jobs, progress=log)
               if any(size[:2]) else {})
    if args.family_only:
        return family_only(args, size, jobs, family, timeouts, family_wall,
                           holdout)
    names = (args.scenarios.split(',') if args.scenarios
             else list(sim.scenarios()))
    results = {}
    for name in names:
        scen, rows, worst = evaluate_scenario(name)
        results[name] = (scen, rows, worst, derived(rows, worst))
    arrivals = {}
    weighers, weigher_why = weigher_entries()
    entries = ARRIVAL_ENTRIES + weighers
    for name in names:
        if not name.startswith('ahn-'):
            continue
        scen = arrival_variant(name)
        arrivals[name] = {e.label: run_entry(scen, e)[0] for e in entries}
    overcommit = {}
    for name in names:
        if name.startswith('ahn-'):
            scen = overcommit_variant(name)
            overcommit[name] = {e.label: run_entry(scen, e)[0]
                                for e in OVERCOMMIT_ENTRIES}
    prices = price_what_if(names)
    sizes = (10, 100, 1000) if args.quick else (10, 100, 1000, 10000)
    sweep = scale_sweep(sizes)
    os.makedirs(IMAGE_DIR, exist_ok=True)
    plot_perf(results, os.path.join(IMAGE_DIR, 'evaluation-perf.png'))
    plot_over_worst(results, overcommit, os.path.join(
        IMAGE_DIR, 'evaluation-over-worst.png'))
    plot_sweep(sweep, os.path.join(IMAGE_DIR, 'evaluation-scale.png'))
    if family:
        family_plots(family)
    checks = check_targets(results)
    elapsed = time.monotonic() - started
    command = 'python -m bench.evaluation%s --family %d,%d,%d' % (
        ' --quick' if args.quick else '', size[0], size[1], size[2])
    lead = family_section(family, size, args.family_seed,
                          family_mod.EPOCHS, jobs, family_wall, timeouts)
    lead += holdout_section(holdout, size, jobs, family, args.family_seed)
    doc = document(results, arrivals, weigher_why, sweep, checks, command,
                   elapsed, args.quick, overcommit, prices, family=lead)
    doc = keep_sections(args.output, doc, (
        () if any(size) else (FAMILY_HEADING,))
        + (() if size[2] else (LARGE_HEADING,))
        + (() if holdout else (HOLDOUT_HEADING,)))
    with open(args.output, 'w', encoding='utf-8') as fh:
        fh.write(doc)
    print(summary(results, checks, sweep, elapsed, args.output))


def family_plots(family, prefix='evaluation-family'):
    labels = [e.label for e in family_mod.FAMILY_ENTRIES]
    plot_family(family, labels, 'gain', os.path.join(
        IMAGE_DIR, prefix + '-gain.png'),
        'mean performance vs none (%)',
        'Gain over none, %d generated clusters (SIMULATED)' % len(family))
    plot_family(family, labels, 'vm_worst', os.path.join(
        IMAGE_DIR, prefix + '-worst-vm.png'),
        'largest fall of one VM vs none (%)',
        'Worst VM per cluster, %d generated clusters (SIMULATED)'
        % len(family))


def family_only(args, size, jobs, family, timeouts, wall, holdout=None):
    """``--family-only``: refresh the family section, keep the rest.

    Large clusters alone (``--family 0,0,N``) refresh their own section,
    after the family's; ``holdout`` (:func:`family_mod.run_holdout`)
    refreshes the held-out seeds' section.
    """
    if not family:
        print('Family of generated clusters: no cluster finished (%s); '
              'the page is left as it was.' % ', '.join(
                  timeouts.get('(unfinished)', ())))
        return
    large = is_large_only(size)
    os.makedirs(IMAGE_DIR, exist_ok=True)
    family_plots(family, 'evaluation-large' if large else 'evaluation-family')
    lead = family_section(family, size, args.family_seed,
                          family_mod.EPOCHS, jobs, wall, timeouts)
    if not large:
        lead[2] += (' Run alone (`python -m bench.evaluation --family-only '
                    '--family %d,%d,%d`): the sections after this one%s come '
                    'from the last full run, whose command is above.' % (
                        size + ((' but the held-out seeds\'',)
                                if holdout else ('',))))
    with open(args.output, encoding='utf-8') as fh:
        page = fh.read()
    page = splice(page, '\n'.join(lead),
                  LARGE_HEADING if large else FAMILY_HEADING)
    held = holdout_section(holdout or {}, size, jobs, family,
                           args.family_seed)
    if held:
        page = splice(page, '\n'.join(held), HOLDOUT_HEADING)
    with open(args.output, 'w', encoding='utf-8') as fh:
        fh.write(page)
    print('Family of generated clusters (simulated): %d clusters in %.0f s, '
          'section of `%s` refreshed.' % (len(family), wall, os.path.relpath(
              args.output, os.path.join(DOC_DIR, os.pardir))))


#: The heading the family sections go before.
NEXT_HEADING = '## What runs'


def section_of(page, heading):
    """The section of ``page`` under ``heading`` (to the next), or None."""
    lines = page.split('\n')
    if heading not in lines:
        return None
    start = lines.index(heading)
    end = next((k for k in range(start + 1, len(lines))
                if lines[k].startswith('## ')), len(lines))
    return '\n'.join(lines[start:end])


def keep_sections(path, doc, headings):
    """``doc`` with the sections under ``headings`` of the page at ``path``.

    A run without large clusters keeps the section an earlier
    ``--family-only --family 0,0,N`` wrote, and a run without a family
    (``--family 0,0,0``, the named scenarios only) keeps the family's:
    each section names the command that made it.
    """
    try:
        with open(path, encoding='utf-8') as fh:
            page = fh.read()
    except FileNotFoundError:
        return doc
    for heading in headings:
        old = section_of(page, heading)
        if old:
            doc = splice(doc, old, heading)
    return doc


def splice(page, section, heading=FAMILY_HEADING):
    """``page`` with its section under ``heading`` replaced by ``section``.

    A page without one gets it before its first ``## What runs`` heading
    (the page's layout since the family leads it).
    """
    lines = page.split('\n')
    if heading in lines:
        start = lines.index(heading)
        end = next((k for k in range(start + 1, len(lines))
                    if lines[k].startswith('## ')), len(lines))
    else:
        start = end = next((k for k, line in enumerate(lines)
                            if line.startswith(NEXT_HEADING)), len(lines))
    new = section.rstrip('\n').split('\n') + ['']
    return '\n'.join(lines[:start] + new + lines[end:])


def seeds_of(text):
    """The seeds of ``--holdout-seeds`` (comma-separated; empty: none)."""
    try:
        return tuple(int(x) for x in text.split(',') if x.strip())
    except ValueError:
        raise SystemExit('--holdout-seeds %r: expected comma-separated '
                         'integers, e.g. 61,67,79' % text)


def family_size(text):
    """(small, medium, large) from ``SMALL,MEDIUM,LARGE``."""
    try:
        size = tuple(int(x) for x in text.split(','))
    except ValueError:
        size = ()
    if len(size) != 3 or min(size) < 0:
        raise SystemExit('--family %r: expected three counts, e.g. 80,24,2'
                         % text)
    return size


def log(text):
    print('evaluation: %s' % text, file=sys.stderr, flush=True)


def summary(results, checks, sweep, elapsed, output):
    lines = ['Full evaluation (simulated) in `%s`; %.0f s on this machine.'
             % (os.path.relpath(output, os.path.join(DOC_DIR, os.pardir)),
                elapsed), '',
             '| scenario | best of ours | perf | best peer | perf | '
             'oracle | ours >= peers | fewer migrations | >= 95 % of '
             'oracle |', '|---|---|---:|---|---:|---:|---|---|---|']
    for name, c in checks.items():
        rows = results[name][1]
        lines.append('| %s | %s | %.3f | %s | %.3f | %.3f | %s | %s | %s |'
                     % (name, c['mine'], c['perf'], c['best_peer'],
                        c['peer_perf'], rows['oracle'][0].perf_mean,
                        yes_no(c['perf_ok']), yes_no(c['mig_ok']),
                        yes_no(c['oracle_ok'])))
    big = sweep[-1]
    lines += ['', 'Decision time at %d hosts: cache_aware_swap %.2f CPU s.'
              % (big['hosts'], big['cache_sc'])]
    return '\n'.join(lines)

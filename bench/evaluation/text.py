"""Cell formats of the page's tables (how a figure reads, not what it is).
"""

from bench.evaluation.verdict import oracle_share
from bench.evaluation.verdict import share_percent


def pct(x, signed=True):
    if x is None:
        return 'n/a'
    return ('%+.1f %%' if signed else '%.0f %%') % (100.0 * x)


def share(frac):
    """A share of the oracle's gain, floored to 0.1 %.

    Floored, not rounded, so a share below ORACLE_SHARE never reads as
    the target (94.96 % shows 94.9 %, not 95.0 %), with the same float
    tolerance as the verdict (:func:`share_met`).
    """
    if frac is None:
        return 'n/a'
    return '%.1f %%' % share_percent(frac)


def scenario_table(rows, extra):
    out = ['| policy | perf mean | perf min | degradation spread | '
           'vs worst placement | of oracle\'s gain | migrations | '
           'vCPU moves | memory moves | GiB moved | platform eff. | '
           'decision s (total) |',
           '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
    for label, (res, _) in rows.items():
        over, frac = extra[label]
        out.append('| %s | %.3f | %.3f | %.3f | %s | %s | %d | %.0f | %d | '
                   '%.1f | %.2f | %.3f |' % (
                       label, res.perf_mean, res.perf_min,
                       res.degradation_spread, pct(over),
                       share(frac),
                       res.migrations, res.vcpu_moves, res.memory_moves,
                       res.memory_moved_gib, res.platform_efficiency,
                       res.decision_wall_s))
    return out


def yes_no(v):
    return {True: 'met', False: 'NOT met', None: 'not applicable'}[v]


def price_cells(results, name, res):
    """perf mean / share of the oracle's gain / migrations / vCPU moves."""
    return '%.4f / %s / %d / %.0f' % (
        res.perf_mean, share(oracle_share(results, name, res)),
        res.migrations, res.vcpu_moves)


def effects_text(items, perf=True):
    if not items:
        return 'no scenario'
    return '; '.join(
        ('%s %+.4f (%+d migrations, %+.0f vCPU moves)' if perf
         else '%s (%+d migrations, %+.0f vCPU moves)')
        % ((n, diff, migs, vcpus) if perf else (n, migs, vcpus))
        for n, diff, migs, vcpus in items)


def arrival_cell(result):
    """An arrival table cell; NoValidHost shows, as perf leaves them out."""
    cell = '%.3f (%d mig.' % (result.perf_mean, result.migrations)
    if result.no_valid_host:
        cell += ', %d NoValidHost' % result.no_valid_host
    return cell + ')'


def lagged_share(check):
    """Ours as a share of the last-interval oracle's gain, or why not."""
    if check['lagged_frac'] is not None:
        return share(check['lagged_frac'])
    return 'n/a (it gains %+.4f over none)' % check['lagged_gain']


def name_list(names, empty='no scenario'):
    return ', '.join(names) or empty


def seconds_list(values):
    values = sorted(set(values))
    return ' / '.join('%.0f' % v for v in values)

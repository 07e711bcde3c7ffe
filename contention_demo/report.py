"""Stage 5: the demo's report (text and JSON) and its plot.

:func:`build_result` gathers plain data (JSON-serialisable);
:func:`format_report` and :func:`plot` only present it, so they are tested
without running the demo. Every figure is simulated and labelled so.
"""

import statistics

from contention import swap

LABEL = 'simulated'


def _cv(values):
    values = list(values)
    if not values:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.pstdev(values) / mean if mean > 0 else 0.0


def _sockets(view):
    """{(host, socket): (LLC misses/s, [instance uuids])}."""
    sockets = {}
    for host in view.hosts:
        for s in host.sockets:
            sockets[(host.name, s.id)] = [0.0, []]
    for inst in view.instances:
        entry = sockets.setdefault((inst.host, inst.socket), [0.0, []])
        entry[0] += inst.llc_misses_per_s or 0.0
        entry[1].append(inst.uuid)
    return sockets


def build_result(scen, seed, before_view, after_view, before_perf,
                 after_perf, plan, actions, indicators, applied, nova,
                 names, profiles, telemetry):
    """Everything the report shows, as plain data."""
    before = {i.uuid: i for i in before_view.instances}
    after = {i.uuid: i for i in after_view.instances}
    vms = []
    for uuid in sorted(after, key=lambda u: names.get(u, u)):
        b, a = before.get(uuid), after[uuid]
        vms.append(dict(
            name=names.get(uuid, uuid), profile=profiles.get(uuid, '?'),
            host_before=b.host if b else None,
            socket_before=b.socket if b else None,
            host_after=a.host, socket_after=a.socket,
            misses_before=b.llc_misses_per_s if b else None,
            misses_after=a.llc_misses_per_s,
            perf_before=before_perf.get(uuid),
            perf_after=after_perf.get(uuid)))
    sb, sa = _sockets(before_view), _sockets(after_view)
    sockets = []
    for key in sorted(set(sb) | set(sa)):
        mb, ub = sb.get(key, (0.0, []))
        ma, ua = sa.get(key, (0.0, []))
        sockets.append(dict(host=key[0], socket=key[1], misses_before=mb,
                            misses_after=ma, vms_before=len(ub),
                            vms_after=len(ua)))
    common = [v for v in vms if v['perf_before'] is not None
              and v['perf_after'] is not None]
    change_mean, change_worst = swap.performance_change(
        {v['name']: v['perf_after'] / v['perf_before'] - 1.0
         for v in common if v['perf_before'] > 0}, len(common))
    totals = dict(
        perf_change_mean=change_mean, perf_change_worst=change_worst,
        perf_mean_before=statistics.fmean(v['perf_before'] for v in common),
        perf_mean_after=statistics.fmean(v['perf_after'] for v in common),
        perf_min_before=min(v['perf_before'] for v in common),
        perf_min_after=min(v['perf_after'] for v in common),
        socket_spread_before=_cv(s['misses_before'] for s in sockets),
        socket_spread_after=_cv(s['misses_after'] for s in sockets))
    return dict(
        simulated=True, scenario=scen.name, description=scen.description,
        seed=seed, telemetry=telemetry, nova=nova, vms=vms,
        sockets=sockets, totals=totals,
        plan=dict(
            uuid=plan.uuid, state=plan.state,
            status_message=plan.status_message,
            global_efficacy=list(plan.global_efficacy or []),
            actions=[dict(index=n + 1, uuid=a.uuid, type=a.action_type,
                          parameters=dict(a.input_parameters),
                          parents=list(a.parents or []))
                     for n, a in enumerate(actions)],
            indicators=[dict(name=i.name, value=float(i.value),
                             unit=i.unit, description=i.description)
                        for i in indicators]),
        applied=len(applied.applied),
        rejected=[dict(action=repr(r.action), reason=r.reason)
                  for r in applied.rejected])


def _fmt(value, spec):
    return '-' if value is None else format(value, spec)


def _m(value):
    return '-' if value is None else '%.1f' % (value / 1e6)


def format_report(result):
    """The human-readable report; every figure labelled simulated."""
    r = result
    t = r['totals']
    lines = ['contention-aware placement demo [%s]' % LABEL,
             'scenario %s (%s), seed %s; all figures are %s.'
             % (r['scenario'], r['description'], r['seed'], LABEL), '',
             'telemetry: %(agents)d agents -> %(transport)s -> collector '
             '-> %(store)s (%(reports)d reports over the whole run)'
             % r['telemetry'], '']
    nova = r['nova']
    lines.append('Nova placement (HostWeightHandler: %s)'
                 % ', '.join(w.rsplit('.', 1)[-1]
                             for w in nova.get('weighers', [])))
    lines.append('  model: %s' % nova.get('model_note'))
    for p in nova.get('placements', []):
        scores = p.get('contention') or {}
        shown = ', '.join(
            '%s %.2f%s' % (h, s['score'],
                           ' (neutral)' if s.get('neutral') else '')
            for h, s in sorted(scores.items()))
        lines.append('  %-22s -> %-8s  ContentionWeigher score per host '
                     '(0-1, higher is better): %s'
                     % (p['name'], p['host'] or 'NO HOST',
                        shown or '- (the only host with room: not weighed)'))
    plan = r['plan']
    lines += ['', 'Watcher action plan %s [%s]' % (plan['uuid'], LABEL),
              '  state: %s' % plan['state'],
              '  status: %s' % (plan['status_message'] or '-')]
    for g in plan['global_efficacy']:
        lines.append('  global efficacy: %s %.1f %s' % (
            g.get('name'), g.get('value') or 0.0, g.get('unit') or ''))
    lines.append('  efficacy indicators:')
    for ind in plan['indicators']:
        lines.append('    %-36s %10.4g %s' % (ind['name'], ind['value'],
                                              ind['unit'] or ''))
    lines.append('  actions (in order; each runs after the one before):')
    if not plan['actions']:
        lines.append('    (none)')
    for a in plan['actions']:
        params = ', '.join('%s=%s' % (k, v) for k, v in
                           sorted(a['parameters'].items()))
        lines.append('    %d. %s %s' % (a['index'], a['type'], params))
    lines.append('  applied to the emulated cluster: %d, rejected: %d'
                 % (r['applied'], len(r['rejected'])))
    for rej in r['rejected']:
        lines.append('    rejected %s: %s' % (rej['action'], rej['reason']))
    lines += ['', 'per socket, before -> after the plan [%s]' % LABEL,
              '  %-10s %6s %22s %10s' % ('host', 'socket',
                                         'LLC misses (M/s)', 'VMs')]
    for s in r['sockets']:
        lines.append('  %-10s %6s %10s -> %-9s %4d -> %d' % (
            s['host'], s['socket'], _m(s['misses_before']),
            _m(s['misses_after']), s['vms_before'], s['vms_after']))
    lines += ['', 'per VM, before -> after the plan [%s]' % LABEL,
              '  %-22s %-10s %-17s %-17s %14s' % (
                  'vm', 'profile', 'before (host/s)', 'after (host/s)',
                  'perf (norm.)')]
    for v in r['vms']:
        where_b = ('%s/%s' % (v['host_before'], v['socket_before'])
                   if v['host_before'] else '-')
        where_a = '%s/%s' % (v['host_after'], v['socket_after'])
        lines.append('  %-22s %-10s %-17s %-17s %6s -> %-6s%s' % (
            v['name'][:22], v['profile'][:10], where_b, where_a,
            _fmt(v['perf_before'], '.3f'), _fmt(v['perf_after'], '.3f'),
            ' *' if moved(v) else ''))
    lines += ['  (* moved by the plan; perf = normalised performance, '
              '1 = running alone)', '',
              'totals [%s]' % LABEL,
              '  normalised performance, mean    %.3f -> %.3f (%+.1f %%)'
              % (t['perf_mean_before'], t['perf_mean_after'],
                 100 * (t['perf_mean_after'] - t['perf_mean_before'])
                 / t['perf_mean_before']),
              '  normalised performance, minimum %.3f -> %.3f'
              % (t['perf_min_before'], t['perf_min_after']),
              '  per-socket LLC-miss spread (CV) %.3f -> %.3f'
              % (t['socket_spread_before'], t['socket_spread_after'])]
    lines += ['', 'the plan\'s prediction (its efficacy indicators) and '
              'what the emulated cluster measured [%s]' % LABEL,
              '  %-44s %10s %10s' % ('', 'predicted', 'measured')]
    shown = {i['name']: i['value'] for i in plan['indicators']}
    for name, label, key in PREDICTED:
        if name in shown:
            lines.append('  %-44s %+9.1f%% %+9.1f%%'
                         % (label, shown[name], t[key]))
    return '\n'.join(lines) + '\n'


#: (indicator, what it measures, the totals' key of the measurement):
#: the same reading of the VMs' changes, :func:`contention.swap.
#: performance_change`, predicted by the plan and measured.
PREDICTED = (
    ('predicted_mean_performance_change',
     'mean change of the VMs\' performance', 'perf_change_mean'),
    ('predicted_worst_performance_change',
     'worst change of one VM\'s performance', 'perf_change_worst'),
)


def moved(vm):
    """Whether the plan moved ``vm`` (host or socket)."""
    return ((vm['host_before'], vm['socket_before'])
            != (vm['host_after'], vm['socket_after']))


def vm_layout(vms, gap=1.0):
    """Bar positions of the VMs grouped by where the plan left them.

    ([(x, vm)], [(first x, last x, host)]): VMs ordered by host, socket
    and name after the plan, ``gap`` between hosts, so a host's VMs stand
    together and the spans label them.
    """
    order = sorted(vms, key=lambda v: (v['host_after'], v['socket_after']
                                       if v['socket_after'] is not None
                                       else -1, v['name']))
    placed, spans = [], []
    x = 0.0
    for vm in order:
        if spans and spans[-1][2] != vm['host_after']:
            x += gap
        if not spans or spans[-1][2] != vm['host_after']:
            spans.append([x, x, vm['host_after']])
        spans[-1][1] = x
        placed.append((x, vm))
        x += 1.0
    return placed, [tuple(span) for span in spans]


def plot(result, path):
    """Write the before/after PNG; returns ``path``.

    Needs matplotlib (the ``plot`` extra). The lower panel groups the VMs
    by the host the plan left them on, marks those it moved, and draws
    the line a VM would reach running alone (1.0).
    """
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import patches
    from matplotlib import pyplot

    fig, (ax1, ax2) = pyplot.subplots(2, 1, figsize=(12, 8.5),
                                      gridspec_kw=dict(height_ratios=(2, 3)))
    before, after = 'tab:blue', 'tab:orange'
    sockets = result['sockets']
    totals = result['totals']
    x = range(len(sockets))
    w = 0.4
    ax1.bar([i - w / 2 for i in x], [s['misses_before'] / 1e6
                                     for s in sockets], w, color=before)
    ax1.bar([i + w / 2 for i in x], [s['misses_after'] / 1e6
                                     for s in sockets], w, color=after)
    ax1.set_xticks(list(x))
    ax1.set_xticklabels(['%s\ns%s' % (s['host'], s['socket'])
                         for s in sockets], fontsize=8)
    ax1.set_ylabel('LLC misses (M/s)')
    ax1.set_title('Per-socket LLC misses, spread (CV) %.2f -> %.2f; a '
                  'socket\'s misses per second rise where its VMs run '
                  'faster (%s)' % (totals['socket_spread_before'],
                                   totals['socket_spread_after'], LABEL),
                  fontsize=10)
    placed, spans = vm_layout(result['vms'])
    xs = [px for px, _ in placed]
    vms = [vm for _, vm in placed]
    ax2.bar([px - w / 2 for px in xs], [v['perf_before'] or 0 for v in vms],
            w, color=before)
    ax2.bar([px + w / 2 for px in xs], [v['perf_after'] or 0 for v in vms],
            w, color=after, hatch=None)
    for px, vm in placed:
        if moved(vm):
            ax2.bar(px + w / 2, vm['perf_after'] or 0, w, color=after,
                    hatch='///', edgecolor='black', linewidth=0.5)
    ax2.axhline(1.0, color='grey', linestyle='--', linewidth=1)
    ax2.set_xticks(xs)
    ax2.set_xticklabels(['%s%s' % (v['name'], '*' if moved(v) else '')
                         for v in vms], rotation=90, fontsize=7)
    for first, last, host in spans:
        ax2.text((first + last) / 2, 1.09, host, ha='center', fontsize=8)
        ax2.axvspan(first - 0.5, last + 0.5, ymin=0, ymax=1,
                    color='grey', alpha=0.06, linewidth=0)
    ax2.set_ylabel('normalised performance (1 = alone)')
    ax2.set_ylim(0, 1.15)
    ax2.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax2.set_title('Per-VM performance, grouped by host after the plan; '
                  'mean %.3f -> %.3f, minimum %.3f -> %.3f (%s)'
                  % (totals['perf_mean_before'], totals['perf_mean_after'],
                     totals['perf_min_before'], totals['perf_min_after'],
                     LABEL), fontsize=10)
    handles = [
        patches.Patch(color=before, label='before the plan'),
        patches.Patch(color=after, label='after the plan'),
        patches.Patch(facecolor=after, hatch='///', edgecolor='black',
                      label='moved by the plan (*: host or socket)'),
        matplotlib.lines.Line2D([], [], color='grey', linestyle='--',
                                label='running alone')]
    fig.legend(handles=handles, loc='upper center', ncol=4,
               bbox_to_anchor=(0.5, 0.955), frameon=False, fontsize=9)
    fig.suptitle('%s, seed %s: before and after the Watcher plan '
                 '(SIMULATED)' % (result['scenario'], result['seed']))
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(path, dpi=100)
    pyplot.close(fig)
    return path

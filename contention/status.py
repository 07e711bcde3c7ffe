"""``contention-status``: the operator's view of the telemetry store.

    contention-status                              # every host, per NUMA node
    contention-status --instances                  # plus every instance
    contention-status --host compute-1 --format json
    contention-status --store postgresql+psycopg2://.../contention

:func:`render` is a pure function from what the store returned (latest
reports, ingestion counters) and the time to the text printed, so it is
tested without a database; :func:`main` only reads the store and prints.
The store URL comes from ``--store``, else from ``[store] connection`` of
the ``--config-file`` given, else of ``/etc/contention/collector.conf``
when it exists (the collector's own file), else the embedded default.
"""

import json
import os
import sys
import time

from oslo_config import cfg
import sqlalchemy as sa

from contention import reportview
from contention import store as api
from contention.store import opts as store_opts

DEFAULT_CONFIG = '/etc/contention/collector.conf'
#: Six agent intervals (default 10 s): a host that missed that many
#: reports is marked stale.
DEFAULT_STALE_AFTER = 60.0
FORMATS = ('table', 'json')

LEGEND = '''\
MPKI: summed L3 misses per 1000 instructions of the node's instances;
MF: miss-weighted Memory Factor; OVERHEAD: Liu & Li level total
(llc/mc/ic/remote); MC/IC relief: summed MPKI over Merlin's node trigger;
-: not measured on this host.'''
NODE_COLUMNS = ('HOST', 'NODE', 'AGE', 'MPKI', 'MF', 'MEM BW', 'LLC OCC',
                'OVERHEAD', 'MC/IC', 'CLASSES')
INSTANCE_COLUMNS = ('HOST', 'NODE', 'UUID', 'NAME', 'VCPUS', 'CPU', 'IPC',
                    'MPKI', 'MF', 'MEM BW', 'CLASS')


# -- plain data ------------------------------------------------------------

def _overhead(agg):
    if agg is None or agg.overhead is None:
        return None
    o = agg.overhead
    return {'llc': o.llc, 'mc': o.mc, 'ic': o.ic, 'remote': o.remote,
            'total': o.total}


def _node(node_id, agg):
    """One NUMA node's figures; all None when the report had none."""
    return {
        'node': node_id,
        'instances': agg.instances if agg else 0,
        'vcpus': agg.vcpus if agg else 0.0,
        'mpki_sum': agg.mpki_sum if agg else None,
        'mf': agg.mf if agg else None,
        'mem_bw_bps': agg.mem_bw_bps if agg else None,
        'llc_occupancy_bytes': agg.llc_occupancy_bytes if agg else None,
        'overhead': _overhead(agg),
        'mc_ic_pressure': agg.mc_ic_pressure if agg else False,
        'classes': dict(sorted(agg.classes.items())) if agg else {},
    }


def _instance(report, rec):
    m = rec.metrics
    return {
        'uuid': rec.uuid, 'name': rec.name, 'image_id': rec.image_id,
        'node': reportview.dominant_node(rec, report.topology),
        'vcpus': rec.vcpus, 'cpu_util': m.cpu_util, 'ipc': m.ipc,
        'mpki': m.mpki, 'mf': m.mf, 'mem_bw_bps': m.mem_bw_total_bps,
        'merlin_class': rec.merlin_class,
    }


def host_status(report, now, stale_after, instances=False):
    """Plain dict of one host's latest report, as ``--format json`` shows."""
    aggregates = {agg.node: agg for agg in report.nodes}
    node_ids = sorted(set(report.topology.node_ids) | set(aggregates))
    age = now - report.timestamp
    out = {
        'host': report.host, 'timestamp': report.timestamp,
        'age_s': round(age, 3), 'stale': age > stale_after,
        'interval_s': report.interval_s,
        'nodes': [_node(n, aggregates.get(n)) for n in node_ids],
    }
    if instances:
        rows = [_instance(report, rec) for rec in report.instances]
        out['instances'] = sorted(rows, key=lambda r: (
            r['node'] is None, r['node'] or 0, r['uuid']))
    return out


def status(reports, now, stale_after=DEFAULT_STALE_AFTER, hosts=None,
           instances=False, counters=None, known_hosts=None):
    """Plain dict of the whole view (the JSON output).

    ``reports`` is ``{host: HostReport}`` as the store's
    :meth:`~contention.store.TelemetryStore.latest_reports` returns it;
    ``hosts`` limits the view to those (the ones without a report are
    listed under ``missing``); ``counters`` are the store's ingestion
    counters; ``known_hosts`` (only for the text) names the hosts that do
    report, so a mistyped ``--host`` is told which exist.
    """
    wanted = sorted(reports) if hosts is None else sorted(set(hosts))
    return {
        'generated_at': now,
        'stale_after_s': stale_after,
        'hosts': [host_status(reports[h], now, stale_after, instances)
                  for h in wanted if h in reports],
        'missing': [h for h in wanted if h not in reports],
        'ingestion': dict(sorted((counters or {}).items())),
    }


# -- text ------------------------------------------------------------------

def _num(value, fmt='%.2f'):
    return '-' if value is None else fmt % value


def _si(value, units, base):
    """``value`` scaled to the largest unit it reaches, e.g. 1.2 GB/s."""
    if value is None:
        return '-'
    unit = units[0]
    for unit in units:
        if abs(value) < base or unit == units[-1]:
            break
        value /= base
    return ('%.0f %s' if unit == units[0] else '%.1f %s') % (value, unit)


def bandwidth(bps):
    return _si(bps, ('B/s', 'kB/s', 'MB/s', 'GB/s', 'TB/s'), 1000.0)


def size(n_bytes):
    return _si(n_bytes, ('B', 'KiB', 'MiB', 'GiB', 'TiB'), 1024.0)


def age(seconds):
    """Short age: 42s, 3m05s, 2h10m, 4d03h."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return '%ds' % s
    if s < 3600:
        return '%dm%02ds' % divmod(s, 60)
    if s < 86400:
        return '%dh%02dm' % (s // 3600, s % 3600 // 60)
    return '%dd%02dh' % (s // 86400, s % 86400 // 3600)


def _overhead_text(overhead):
    if overhead is None:
        return '-'
    return '%(total)d (%(llc)d/%(mc)d/%(ic)d/%(remote)d)' % overhead


def _classes_text(classes):
    return ' '.join('%s:%d' % item for item in classes.items() if item[1])


def table(columns, rows):
    """Left-aligned columns separated by two spaces, with a header."""
    rows = [tuple(str(cell) for cell in row) for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in rows])
              for i, c in enumerate(columns)]
    lines = ['  '.join(cell.ljust(w) for cell, w in zip(row, widths))
             .rstrip() for row in [tuple(columns)] + rows]
    return '\n'.join(lines)


def node_rows(view):
    for host in view['hosts']:
        when = age(host['age_s']) + (' STALE' if host['stale'] else '')
        for node in host['nodes']:
            yield (host['host'], node['node'], when, _num(node['mpki_sum'],
                                                          '%.1f'),
                   _num(node['mf']), bandwidth(node['mem_bw_bps']),
                   size(node['llc_occupancy_bytes']),
                   _overhead_text(node['overhead']),
                   'relief' if node['mc_ic_pressure'] else '',
                   _classes_text(node['classes']))


def instance_rows(view):
    for host in view['hosts']:
        for inst in host.get('instances', ()):
            cpu = inst['cpu_util']
            yield (host['host'], _num(inst['node'], '%d'), inst['uuid'],
                   inst['name'], inst['vcpus'],
                   '-' if cpu is None else '%.0f%%' % (100 * cpu),
                   _num(inst['ipc']), _num(inst['mpki'], '%.1f'),
                   _num(inst['mf']), bandwidth(inst['mem_bw_bps']),
                   inst['merlin_class'] or '-')


def render(reports, now, fmt='table', **kwargs):
    """The text ``contention-status`` prints; ``kwargs`` as :func:`status`."""
    if fmt not in FORMATS:
        raise ValueError('unknown format %r (known: %s)'
                         % (fmt, ', '.join(FORMATS)))
    view = status(reports, now, **kwargs)
    if fmt == 'json':
        return json.dumps(view, indent=2, sort_keys=False)
    parts = []
    if view['hosts']:
        parts.append(table(NODE_COLUMNS, node_rows(view)))
    elif not view['missing']:
        parts.append('No host reports in the store.')
    stale = [h['host'] for h in view['hosts'] if h['stale']]
    if stale:
        parts.append('%d stale host(s): no report for over %gs.'
                     % (len(stale), view['stale_after_s']))
    if kwargs.get('instances'):
        rows = list(instance_rows(view))
        parts.append(table(INSTANCE_COLUMNS, rows) if rows
                     else 'No instances.')
    if view['missing']:
        known = kwargs.get('known_hosts')
        parts.append('No report in the store from: %s%s' % (
            ', '.join(view['missing']),
            '' if known is None else ' (hosts that report: %s)'
            % (', '.join(sorted(known)) or 'none')))
    parts.append(LEGEND)
    if view['ingestion']:
        parts.append(ingestion_text(view['ingestion']))
    return '\n\n'.join(parts)


#: What each ingestion counter means, in the order they are printed.
INGESTION_WORDS = (
    ('accepted', 'became their host\'s latest'),
    ('stale', 'kept in the history only (a newer report of their host was '
              'already latest)'),
    ('duplicates', 'already stored, ignored'),
)


def ingestion_text(counters):
    """The ingestion counters in words.

    ``stale`` reports are stored (history, training) like ``accepted``
    ones; printed bare, "accepted 12, stale 24" read as if two thirds were
    refused, so every figure says what happened to the reports it counts.
    """
    stored = sum(counters.get(k, 0) for k in ('accepted', 'stale'))
    parts = ['%d %s' % (counters[k], words)
             for k, words in INGESTION_WORDS if counters.get(k)]
    parts += ['%d rejected (%s)' % (n, k.split(':', 1)[1])
              for k, n in counters.items() if k.startswith('rejected:')]
    return 'Reports ingested since the store was created: %d stored: %s.' % (
        stored, '; '.join(parts))


# -- command line ----------------------------------------------------------

cli_opts = [
    cfg.StrOpt('store', dest='store_url', metavar='URL',
               help='SQLAlchemy URL of the store; overrides [store] '
                    'connection of the configuration file.'),
    cfg.BoolOpt('instances', default=False,
                help='Also list every instance.'),
    cfg.MultiStrOpt('host', default=[], metavar='HOST',
                    help='Only this host, with its instances (repeatable).'),
    cfg.StrOpt('format', default='table', choices=FORMATS,
               help='Output format.'),
    cfg.FloatOpt('stale-after', default=DEFAULT_STALE_AFTER, min=0,
                 help='Seconds after which a host\'s report is stale.'),
]


def parse_args(argv):
    conf = cfg.ConfigOpts()
    conf.register_cli_opts(cli_opts)
    store_opts.register(conf)
    defaults = [DEFAULT_CONFIG] if os.path.exists(DEFAULT_CONFIG) else []
    conf(argv, project='contention', prog='contention-status',
         default_config_files=defaults)
    return conf


def read(store, hosts=None):
    """(latest reports, ingestion counters, hosts that report).

    :raises LookupError: when the store has no schema.
    """
    if store.schema_revision() is None:
        raise LookupError('the store has no schema; run contention-collector '
                          '--upgrade-db first')
    reports = store.latest_reports(hosts=hosts)
    known = None
    if hosts and set(hosts) - set(reports):
        known = sorted(store.latest_reports(with_instances=False))
    return reports, store.ingestion_counters(), known


def missing_sqlite_file(url):
    """The path of a SQLite file ``url`` names that does not exist, or None.

    Opening it would create an empty database: a typo in ``--store`` must
    not leave a stray file behind and report an "empty" store.
    """
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        return None
    path = parsed.database
    if (parsed.get_backend_name() == 'sqlite' and path
            and path != ':memory:' and not path.startswith('file:')
            and not os.path.exists(path)):
        return path
    return None


def safe_url(url):
    """``url`` without its password, for messages."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return '<unparsable URL>'


def main(argv=None):
    conf = parse_args(sys.argv[1:] if argv is None else argv)
    url = conf.store_url or conf[store_opts.GROUP].connection
    shown = safe_url(url)
    missing = missing_sqlite_file(url)
    if missing:
        sys.stderr.write('contention-status: store %s: no such file %s\n'
                         % (shown, missing))
        return 2
    try:
        store = api.open_store(url)
        try:
            reports, counters, known = read(store, conf.host or None)
        finally:
            store.dispose()
    except (LookupError, ValueError, sa.exc.SQLAlchemyError) as exc:
        sys.stderr.write('contention-status: store %s: %s\n'
                         % (shown, str(exc).splitlines()[0]))
        return 2
    sys.stdout.write(render(
        reports, time.time(), fmt=conf.format, stale_after=conf.stale_after,
        hosts=conf.host or None, instances=conf.instances or bool(conf.host),
        counters=counters, known_hosts=known) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())

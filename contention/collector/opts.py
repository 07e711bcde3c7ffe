"""The collector's options (``[collector]``) and the store's (``[store]``).

``list_opts`` is the ``oslo.config.opts`` entry point
``contention.collector``; ``oslo-config-generator --config-file
etc/oslo-config-generator/contention-collector.conf`` writes
``etc/contention/collector.conf.sample`` from it.
"""

from oslo_config import cfg

from contention import report
from contention import telemetry_bus
from contention.store import opts as store_opts

GROUP = 'collector'

collector_opts = [
    cfg.StrOpt('topic', default=report.TOPIC,
               help='Notification topic the agents publish host reports '
                    'on (their [oslo_messaging_notifications] topics).'),
    cfg.StrOpt('pool', default=None,
               help='Listener pool name. Unset (the default), collectors '
                    'consume the topic\'s own queue (<topic>.info), the '
                    'one the agents\' notifier declares, and share its '
                    'reports. A pool consumes a queue of its own and the '
                    'topic\'s queue still gets a copy of every report, '
                    'which nobody reads unless another consumer does: '
                    'set a pool only for a second, independent consumer, '
                    'and bound the queues (doc/telemetry.md, "Queues").'),
    cfg.IntOpt('batch_size', default=100, min=1,
               help='Most reports written in one transaction. The '
                    'collector takes what is queued, up to this many.'),
    cfg.FloatOpt('batch_timeout', default=0.2, min=0.01,
                 help='Seconds to wait for more queued reports before '
                      'writing a batch smaller than batch_size.'),
    cfg.IntOpt('workers', default=1, min=1,
               help='Collector processes to run. Each is a listener on '
                    'the same queue (the topic\'s, or [collector] pool\'s) '
                    'with its own database connection; '
                    'one of them also enforces retention. Python validates '
                    'and encodes reports on one core per process, so a '
                    'controller storing more reports a second than one '
                    'process manages (see doc/benchmarks.md) needs more '
                    'workers, up to about its core count less what the '
                    'database uses. A worker that dies is restarted.'),
    cfg.FloatOpt('max_clock_skew', default=60.0, min=0,
                 help='Seconds a report\'s timestamp may be ahead of the '
                      'collector\'s clock. A later one is refused and '
                      'counted (rejected:future): it would become its '
                      'host\'s latest report and make every real one '
                      'after it stale.'),
    cfg.BoolOpt('check_publisher', default=True,
                help='Refuse (and count as rejected:sender) a report '
                     'whose host is not its publisher\'s, '
                     'contention-agent.<host>.'),
    cfg.IntOpt('max_report_bytes', default=16 * 1024 * 1024, min=1024,
               help='Largest decompressed report, in bytes. A compressed '
                    'message that inflates past it is refused before it '
                    'is inflated whole, and counted (rejected:too_large).'),
    cfg.FloatOpt('db_retry_max', default=30.0, min=0.1,
                 help='Longest wait, in seconds, before a batch is handed '
                      'back to the broker while the database is '
                      'unavailable; the wait starts at 0.5 s and doubles '
                      'with each failure of the outage.'),
    cfg.IntOpt('retention_interval', default=300, min=1,
               help='Seconds between two retention passes over the '
                    'history ([store] history_max_age and '
                    'history_max_rows_per_host).'),
]


def register(conf):
    conf.register_opts(collector_opts, group=GROUP)
    store_opts.register(conf)
    telemetry_bus.register(conf)


def list_opts():
    return ([(GROUP, collector_opts),
             (store_opts.GROUP, store_opts.store_opts)]
            + telemetry_bus.list_opts())

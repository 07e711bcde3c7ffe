"""The collector's options (``[collector]``) and the store's (``[store]``).

``list_opts`` is the ``oslo.config.opts`` entry point
``contention.collector``; ``oslo-config-generator --config-file
etc/oslo-config-generator/contention-collector.conf`` writes
``etc/contention/collector.conf.sample`` from it.
"""

from oslo_config import cfg

from contention import report
from contention.store import opts as store_opts

GROUP = 'collector'

collector_opts = [
    cfg.StrOpt('topic', default=report.TOPIC,
               help='Notification topic the agents publish host reports '
                    'on (their [oslo_messaging_notifications] topics).'),
    cfg.StrOpt('pool', default='contention-collector',
               help='Listener pool name. Collectors in the same pool share '
                    'the reports (each report goes to one of them); a '
                    'collector in another pool gets its own copy.'),
    cfg.IntOpt('batch_size', default=100, min=1,
               help='Most reports written in one transaction. The '
                    'collector takes what is queued, up to this many.'),
    cfg.FloatOpt('batch_timeout', default=0.2, min=0.01,
                 help='Seconds to wait for more queued reports before '
                      'writing a batch smaller than batch_size.'),
    cfg.IntOpt('workers', default=1, min=1,
               help='Collector processes to run. Each is a listener in '
                    '[collector] pool with its own database connection; '
                    'one of them also enforces retention. Python validates '
                    'and encodes reports on one core per process, so a '
                    'controller storing more reports a second than one '
                    'process manages (see doc/benchmarks.md) needs more '
                    'workers, up to about its core count less what the '
                    'database uses. A worker that dies is restarted.'),
    cfg.IntOpt('retention_interval', default=300, min=1,
               help='Seconds between two retention passes over the '
                    'history ([store] history_max_age and '
                    'history_max_rows_per_host).'),
]


def register(conf):
    conf.register_opts(collector_opts, group=GROUP)
    store_opts.register(conf)


def list_opts():
    return [(GROUP, collector_opts), (store_opts.GROUP, store_opts.store_opts)]

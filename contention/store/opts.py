"""Options of the telemetry store, in the ``[store]`` group.

Shared by every program that opens the store from a config file: the
collector (which writes and enforces retention) and ``contention-status``.
"""

from oslo_config import cfg

from contention.store import api
from contention.store import records

GROUP = 'store'

store_opts = [
    cfg.StrOpt('connection', default=records.DEFAULT_URL, secret=True,
               help='SQLAlchemy URL of the telemetry store, e.g. '
                    'postgresql+psycopg2://user:pass@db/contention or '
                    'mysql+pymysql://user:pass@db/contention. The default '
                    'is an embedded SQLite file, for one controller.'),
    cfg.IntOpt('history_max_age', default=7 * 86400, min=60,
               help='Seconds of report history to keep (training data and '
                    'repercussion checks). Hosts silent for longer leave '
                    'the latest-report table too.'),
    cfg.IntOpt('history_max_rows_per_host', default=10000, min=1,
               help='At most this many reports per host are kept; the '
                    'oldest go first.'),
    cfg.FloatOpt('profile_alpha', default=records.DEFAULT_PROFILE_ALPHA,
                 min=0.001, max=1.0,
                 help='Weight of a new sample in the per-image rolling '
                      'means (about the last 1/alpha samples count).'),
    cfg.FloatOpt('instance_sample_interval',
                 default=records.DEFAULT_SAMPLE_INTERVAL_S, min=0,
                 help='Seconds between the per-instance sample rows stored '
                      'for a host (the instance history that repercussion '
                      'checks read). A report is sampled when its interval '
                      'holds a multiple of this period, so every collector '
                      'agrees; 0 samples every report. Every report is '
                      'still kept whole in the report history, its host\'s '
                      'latest report and the image profiles. Sample rows '
                      'are most of what the database writes: at 10 s agent '
                      'intervals, 60 stores a sixth of them.'),
]


def register(conf):
    conf.register_opts(store_opts, group=GROUP)


def open_from_conf(conf):
    """The store the ``[store]`` options describe."""
    return api.open_store(
        conf.store.connection,
        history_max_age_s=conf.store.history_max_age,
        history_max_rows_per_host=conf.store.history_max_rows_per_host,
        profile_alpha=conf.store.profile_alpha,
        sample_interval_s=conf.store.instance_sample_interval)

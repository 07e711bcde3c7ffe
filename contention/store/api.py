"""The telemetry store: what the collector writes and the plugins read.

One store behind any SQLAlchemy URL (SQLite embedded by default,
PostgreSQL or MySQL in production). :class:`TelemetryStore` is its four
jobs in one object: :mod:`~contention.store.migrate` (schema),
:mod:`~contention.store.write` (ingest, counters, moves),
:mod:`~contention.store.read` (latest reports, profiles) and
:mod:`~contention.store.history` (past reports, retention). Other parts
import the package, :mod:`contention.store`, not these modules.

See ``doc/store.md`` for the operator's view and the design decisions.
"""

import os
import threading

import sqlalchemy as sa
from sqlalchemy import pool as sa_pool

from contention import reportview
from contention.store import history
from contention.store import migrate
from contention.store import read
from contention.store.records import DEFAULT_PROFILE_ALPHA
from contention.store.records import DEFAULT_SAMPLE_INTERVAL_S
from contention.store.records import DEFAULT_URL
from contention.store import write


def open_store(url=DEFAULT_URL, *, history_max_age_s=7 * 86400,
               history_max_rows_per_host=10000,
               profile_alpha=DEFAULT_PROFILE_ALPHA,
               sample_interval_s=DEFAULT_SAMPLE_INTERVAL_S):
    """A :class:`TelemetryStore` on ``url`` (any SQLAlchemy URL)."""
    return TelemetryStore(_engine(url),
                          history_max_age_s=history_max_age_s,
                          history_max_rows_per_host=history_max_rows_per_host,
                          profile_alpha=profile_alpha,
                          sample_interval_s=sample_interval_s)


def _engine(url):
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() != 'sqlite':
        options = {}
        if parsed.get_driver_name() == 'psycopg2':
            # The image profiles' upsert (one row per image and host, a
            # few per instance report) cannot be one multi-row INSERT, so
            # psycopg2 would send it a row per round trip: in pages.
            options['executemany_mode'] = 'values_plus_batch'
        return sa.create_engine(url, pool_pre_ping=True, **options)
    path = parsed.database
    if not path or path == ':memory:':
        # One shared connection, or every checkout sees an empty database.
        return sa.create_engine(
            url, poolclass=sa_pool.StaticPool,
            connect_args={'check_same_thread': False})
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ValueError('telemetry store %s: directory %s does not exist'
                         % (url, directory))
    engine = sa.create_engine(url, connect_args={'timeout': 30})

    @sa.event.listens_for(engine, 'connect')
    def _pragmas(dbapi_conn, _record):
        # WAL: readers (status, plugins) never block the collector.
        cursor = dbapi_conn.cursor()
        cursor.execute('PRAGMA journal_mode=WAL')
        cursor.execute('PRAGMA synchronous=NORMAL')
        cursor.close()
    return engine


#: instance_samples columns, in the order :func:`_sample_rows` fills them.
_SAMPLE_COLUMNS = (
    'report_id', 'host', 'timestamp', 'uuid', 'image_id', 'vcpus',
    'memory_mib', 'node', 'mpki', 'mf', 'ipc', 'llc_misses_per_s',
    'cpu_util', 'merlin_class')


def _sample_rows(report, report_id):
    topology = report.topology
    cpu_node = reportview.node_of_cpu(topology)
    host, ts = report.host, report.timestamp
    rows = []
    for rec in report.instances:
        m = rec.metrics
        rows.append((report_id, host, ts, rec.uuid, rec.image_id,
                     rec.vcpus, rec.memory_mib,
                     reportview.dominant_node(rec, topology, cpu_node),
                     m.mpki, m.mf, m.ipc,
                     m.llc_misses_per_s, m.cpu_util, rec.merlin_class))
    return rows


class TelemetryStore(migrate.Migrations, write.Writer, read.Reader,
                     history.History):
    """Reports, history, image profiles, counters and moves in one database.

    Thread-safe: every call checks a connection out of SQLAlchemy's pool.
    Safe for several collectors on one database: duplicates and races are
    settled by the database's unique keys and conditional upserts.
    """

    def __init__(self, engine, *, history_max_age_s=7 * 86400,
                 history_max_rows_per_host=10000,
                 profile_alpha=DEFAULT_PROFILE_ALPHA,
                 sample_interval_s=DEFAULT_SAMPLE_INTERVAL_S):
        if history_max_rows_per_host < 1:
            raise ValueError('history_max_rows_per_host must be >= 1')
        if not 0 < profile_alpha <= 1:
            raise ValueError('profile_alpha must be in (0, 1]')
        self.engine = engine
        self.history_max_age_s = history_max_age_s
        self.history_max_rows_per_host = history_max_rows_per_host
        self.profile_alpha = profile_alpha
        if not sample_interval_s >= 0:
            raise ValueError('sample_interval_s must be >= 0')
        self.sample_interval_s = sample_interval_s
        # Decoded latest reports by host: {host: (timestamp, HostReport)}.
        # A reader that asks again only decodes hosts that reported since.
        self._decoded = {}
        # The same for the node-level view; {digest: topology with no host
        # name} and {host: (digest, its topology)}.
        self._summaries = {}
        self._shapes = {}
        self._topologies = {}
        self._decoded_lock = threading.Lock()
        # Whether the last node-level read of every host found most of
        # them changed (see latest_reports).
        self._mostly_changed = False
        # Digests this object has seen committed to ``topologies`` (which
        # retention never prunes), so each is sent to the database once.
        self._stored_digests = set()

    #: How the writer flattens a report's instances into sample rows.
    sample_columns = _SAMPLE_COLUMNS
    sample_rows = staticmethod(_sample_rows)

    def dispose(self):
        """Close the pooled connections."""
        self.engine.dispose()

"""The telemetry store: what the collector writes and the plugins read.

One store behind any SQLAlchemy URL (SQLite embedded by default,
PostgreSQL or MySQL in production). Writes go through :meth:`ingest`, one
transaction per batch, so a batch is stored whole or not at all and the
collector acknowledges its messages only after the commit. Reads return the
core's dataclasses (:class:`~contention.report.HostReport`) so Nova's
weigher, Watcher's strategies and ``contention-status`` never see SQL.

See ``doc/store.md`` for the operator's view and the design decisions.
"""

import collections
import dataclasses
import math
import os
import threading
import time
from typing import Optional

import alembic.command
import alembic.config
import sqlalchemy as sa
from sqlalchemy import pool as sa_pool

from contention import gc_pause
from contention import llc_share
from contention import reportview
from contention.store import codec
from contention.store import dialects
from contention.store import models

DEFAULT_URL = 'sqlite:////var/lib/contention/telemetry.sqlite'
#: Weight of a new sample in an image's rolling means: about the last
#: 1 / alpha samples count, so a profile follows an image whose workload
#: changes, without being swayed by one odd interval.
DEFAULT_PROFILE_ALPHA = 0.1
#: Seconds between stored instance samples of a host (see :func:`sampled`).
#: A 40-instance host reporting every 10 s would add 345,600 sample rows a
#: day, the database's main cost; the history is read a minute or more at
#: a time (repercussion checks, training), and every report's full body
#: stays in the report history anyway.
DEFAULT_SAMPLE_INTERVAL_S = 60.0
_CHUNK = 500


@dataclasses.dataclass(frozen=True)
class ImageProfile:
    """What instances of one Glance image did so far (rolling means)."""

    image_id: str
    mpki: Optional[float]
    mf: Optional[float]
    ipc: Optional[float]
    merlin_class: Optional[str]
    #: Instance samples folded in (including ones without counters).
    samples: int
    #: When the profile last changed, seconds since the epoch.
    updated_at: float
    #: MF over the intervals in which its instances held about a quarter
    #: of their LLC (:mod:`contention.llc_share`); None until one did.
    mf_small_llc: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class InstanceSampleRow:
    """One instance in one stored report, flattened for history queries."""

    timestamp: float
    host: str
    uuid: str
    image_id: Optional[str]
    vcpus: int
    memory_mib: int
    #: NUMA node most of its vCPUs ran on (else most of its memory), or
    #: None when the report said neither.
    node: Optional[int]
    mpki: Optional[float]
    mf: Optional[float]
    ipc: Optional[float]
    llc_misses_per_s: Optional[float]
    cpu_util: Optional[float]
    merlin_class: Optional[str]


@dataclasses.dataclass(frozen=True)
class MoveRecord:
    """An instance moved between hosts by an action (``origin`` says who)."""

    uuid: str
    source_host: str
    dest_host: str
    moved_at: float
    origin: str


@dataclasses.dataclass(frozen=True)
class IngestResult:
    """What one :meth:`TelemetryStore.ingest` did with its reports.

    The three add up to the number of reports given: ``accepted`` were new
    and are now their host's latest; ``stale`` were new and stored in the
    history, but an equal-or-newer report of their host was already latest
    (out-of-order delivery); ``duplicates`` were already stored (same host
    and timestamp) and changed nothing.
    """

    accepted: int = 0
    duplicates: int = 0
    stale: int = 0


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
        return sa.create_engine(url, pool_pre_ping=True)
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


def latest_row(report, now, parts=None):
    """The ``latest_reports`` row of ``report``.

    ``parts`` is :func:`codec.encode_latest` of it, if already computed.
    """
    _body, summary, _topology, digest = parts or codec.encode_latest(report)
    return {'host': report.host, 'timestamp': report.timestamp,
            'received_at': now, 'summary': summary,
            'topology_digest': digest}


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


def sampled(report, interval_s):
    """Whether ``report``'s instance samples are stored.

    When its interval, ``(timestamp - interval_s, timestamp]``, holds a
    multiple of ``interval_s`` (the sampling period; 0 samples every
    report): about one report per period per host, decided by the report
    alone, so redeliveries and several collectors agree on it.
    """
    if interval_s <= 0 or report.interval_s >= interval_s:
        return True
    return (math.floor(report.timestamp / interval_s)
            != math.floor((report.timestamp - report.interval_s)
                          / interval_s))


def _profile_values(record, topology):
    """``record``'s values of :data:`dialects.PROFILE_METRICS`, in order."""
    m = record.metrics
    return (m.mpki, m.mf, m.ipc, llc_share.small_llc_mf(record, topology))


def _ewma(values, alpha):
    """(initial mean, decay, add) of folding ``values`` in, in order.

    Starting from a previous mean ``p`` the result is ``p * decay + add``;
    with no previous mean it is the initial mean (the first value, then
    the rest folded in).
    """
    if not values:
        return None, 1.0, 0.0
    decay, add = 1.0, 0.0
    for value in values:
        decay *= 1.0 - alpha
        add = add * (1.0 - alpha) + alpha * value
    initial = values[0]
    for value in values[1:]:
        initial = initial * (1.0 - alpha) + alpha * value
    return initial, decay, add


class TelemetryStore:
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

    # -- schema ---------------------------------------------------------

    def upgrade(self, revision='head'):
        """Create or migrate the schema (alembic ``upgrade head``)."""
        self._migrate(alembic.command.upgrade, revision)

    def downgrade(self, revision):
        """Migrate the schema back to ``revision`` ('base' = empty)."""
        self._migrate(alembic.command.downgrade, revision)

    def _migrate(self, command, revision):
        config = alembic.config.Config()
        config.set_main_option('script_location',
                               'contention.store:migrations')
        with self.engine.begin() as conn:
            config.attributes['connection'] = conn
            command(config, revision)

    @staticmethod
    def head_revision():
        """The revision this code's migrations end at."""
        from alembic import script
        config = alembic.config.Config()
        config.set_main_option('script_location',
                               'contention.store:migrations')
        return script.ScriptDirectory.from_config(config).get_current_head()

    def schema_revision(self):
        """The alembic revision the database is at (None = empty)."""
        from alembic.runtime import migration
        with self.engine.connect() as conn:
            return migration.MigrationContext.configure(
                conn).get_current_revision()

    # -- writing --------------------------------------------------------

    def ingest(self, reports, now=None, rejections=None):
        """Store validated reports in one transaction; see IngestResult.

        ``rejections`` ({reason: n}) are counted in the same transaction,
        so a batch the collector retries is never counted twice.
        """
        now = time.time() if now is None else now
        if not reports:
            if rejections:
                self._count_rejections(rejections)
            return IngestResult()
        # Sorted, so concurrent batches take row locks in the same order
        # and cannot deadlock each other.
        ordered = sorted(reports, key=lambda r: (r.host, r.timestamp))
        unique = {}
        for report in ordered:
            unique.setdefault((report.host, report.timestamp), report)
        # One walk of each report gives its body and its latest-row parts.
        parts = {key: codec.encode_latest(report)
                 for key, report in unique.items()}
        rows = [{'host': h, 'timestamp': t, 'received_at': now,
                 'body': parts[(h, t)][0]} for (h, t) in unique]
        with self.engine.begin() as conn:
            inserted = {}
            for start in range(0, len(rows), _CHUNK):
                inserted.update(dialects.insert_new_reports(
                    conn, models.reports, rows[start:start + _CHUNK]))
            new = [unique[key] for key in unique if key in inserted]
            self._insert_samples(conn, [
                r for r in new if sampled(r, self.sample_interval_s)],
                inserted)
            newest = {}
            for report in new:
                newest[report.host] = report        # sorted: last is newest
            latest_rows = [latest_row(r, now, parts[(r.host, r.timestamp)])
                           for r in newest.values()]
            promoted = set()
            for start in range(0, len(latest_rows), _CHUNK):
                promoted |= dialects.upsert_newer(
                    conn, models.latest_reports,
                    latest_rows[start:start + _CHUNK])
            topologies = {parts[key][3]: parts[key][2] for key in unique}
            fresh_digests = sorted(set(topologies) - self._stored_digests)
            dialects.insert_missing(conn, models.topologies, [
                {'digest': d, 'topology': topologies[d]}
                for d in fresh_digests], 'digest')
            self._update_profiles(conn, new, now)
            accepted = sum(1 for r in newest.values() if r.host in promoted)
            result = IngestResult(accepted=accepted,
                                  duplicates=len(reports) - len(new),
                                  stale=len(new) - accepted)
            counts = {name: n for name, n in dataclasses.asdict(
                result).items() if n}
            for reason, n in (rejections or {}).items():
                counts['rejected:%s' % reason] = n
            dialects.add_to_counters(conn, models.ingestion_counters, counts)
        self._stored_digests.update(fresh_digests)
        return result

    def _insert_samples(self, conn, reports, ids):
        rows = []
        for report in reports:
            rows += _sample_rows(report, ids[(report.host, report.timestamp)])
        dialects.insert_rows(conn, models.instance_samples, _SAMPLE_COLUMNS,
                             rows)

    def _update_profiles(self, conn, reports, now):
        by_image = collections.defaultdict(list)
        for report in sorted(reports, key=lambda r: r.timestamp):
            for rec in report.instances:
                if rec.image_id:
                    by_image[rec.image_id].append(
                        (rec, _profile_values(rec, report.topology)))
        rows = []
        for image_id in sorted(by_image):
            samples = by_image[image_id]
            row = {'image_id': image_id, 'samples': len(samples),
                   'updated_at': now, 'merlin_class': None}
            for k, metric in enumerate(dialects.PROFILE_METRICS):
                (row[metric], row['decay_' + metric],
                 row['add_' + metric]) = _ewma(
                    [v[k] for _, v in samples if v[k] is not None],
                    self.profile_alpha)
            for rec, _ in samples:
                row['merlin_class'] = rec.merlin_class or row['merlin_class']
            rows.append(row)
        dialects.update_profiles(conn, models.image_profiles, rows)

    def record_rejection(self, reason, n=1):
        """Count ``n`` reports rejected for ``reason`` (``rejected:<reason>``)."""
        self._count_rejections({reason: n})

    def _count_rejections(self, rejections):
        with self.engine.begin() as conn:
            dialects.add_to_counters(conn, models.ingestion_counters, {
                'rejected:%s' % reason: n
                for reason, n in rejections.items()})

    def record_moves(self, moves):
        """Remember instance moves (Watcher actions call this on success)."""
        if not moves:
            return
        with self.engine.begin() as conn:
            conn.execute(sa.insert(models.moves),
                         [dataclasses.asdict(m) for m in moves])

    def enforce_retention(self, now=None):
        """Drop history older than the age limit or past the row limit.

        Also drops the latest report of hosts silent for longer than the age
        limit (decommissioned hosts), and moves older than it. Returns the
        number of rows deleted.
        """
        now = time.time() if now is None else now
        cutoff = now - self.history_max_age_s
        r, s = models.reports, models.instance_samples
        ranked = sa.select(
            r.c.id, sa.func.row_number().over(
                partition_by=r.c.host,
                order_by=r.c.timestamp.desc()).label('rank')).subquery()
        doomed = sa.select(r.c.id).where(r.c.timestamp < cutoff).union(
            sa.select(ranked.c.id).where(
                ranked.c.rank > self.history_max_rows_per_host))
        deleted = 0
        with self.engine.begin() as conn:
            ids = [row.id for row in conn.execute(doomed)]
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start:start + _CHUNK]
                deleted += conn.execute(sa.delete(s).where(
                    s.c.report_id.in_(chunk))).rowcount
                deleted += conn.execute(sa.delete(r).where(
                    r.c.id.in_(chunk))).rowcount
            latest = models.latest_reports
            deleted += conn.execute(sa.delete(latest).where(
                latest.c.timestamp < cutoff)).rowcount
            deleted += conn.execute(sa.delete(models.moves).where(
                models.moves.c.moved_at < cutoff)).rowcount
        return deleted

    # -- reading --------------------------------------------------------

    def latest_reports(self, hosts=None, max_age_s=None, now=None,
                       with_instances=True):
        """{host: newest HostReport}, optionally only fresh ones.

        ``hosts`` limits the answer to those names (unknown ones are simply
        absent); ``max_age_s`` drops reports whose timestamp is older than
        ``now - max_age_s``.

        ``with_instances=False`` is the node-level view: each report has
        its topology, node aggregates, sources and events but an empty
        ``instances`` (the aggregates still count them). It decodes a few
        hundred bytes per host instead of the whole report, which is what
        lets the Nova weigher read 10,000 hosts per cache TTL.

        Decoded reports are kept per host, so a second call only decodes
        the hosts that reported since.
        """
        latest = models.latest_reports
        query = sa.select(latest.c.host, latest.c.timestamp)
        if max_age_s is not None:
            now = time.time() if now is None else now
            query = query.where(latest.c.timestamp >= now - max_age_s)
        cache = self._decoded if with_instances else self._summaries
        # A reader refreshing once per agent interval finds most hosts
        # changed each time: then one pass reads the node-level rows with
        # their timestamps, rather than a pass for the timestamps and
        # another for what changed.
        one_pass = (hosts is None and not with_instances
                    and self._mostly_changed)
        prefetched = None
        with self.engine.connect() as conn:
            if one_pass:
                summaries = self._summary_query()
                if max_age_s is not None:
                    summaries = summaries.where(
                        latest.c.timestamp >= now - max_age_s)
                prefetched = conn.execute(summaries).all()
                stamps = {row[0]: row[1] for row in prefetched}
            elif hosts is None:
                stamps = dict(conn.execute(query).all())
            else:
                hosts = sorted(set(hosts))
                stamps = {}
                for start in range(0, len(hosts), _CHUNK):
                    stamps.update(conn.execute(query.where(
                        latest.c.host.in_(hosts[start:start + _CHUNK]))).all())
            with self._decoded_lock:
                known = {h: cache.get(h) for h in stamps}
            stale = sorted(h for h, ts in stamps.items()
                           if known[h] is None or known[h][0] != ts)
            # Most of a big table: one pass over it beats IN lists.
            whole = hosts is None and 2 * len(stale) > len(stamps) > _CHUNK
            if hosts is None and not with_instances:
                self._mostly_changed = whole
            with gc_pause.paused():
                if with_instances:
                    fresh = self._fetch_reports(conn, stale, whole=whole)
                else:
                    if prefetched is not None:
                        wanted = set(stale)
                        prefetched = [row for row in prefetched
                                      if row[0] in wanted]
                    fresh = self._fetch_summaries(conn, stale, whole=whole,
                                                  rows=prefetched)
        with self._decoded_lock:
            cache.update(fresh)
        result = {}
        for host in stamps:
            entry = fresh.get(host) or known[host]
            # None: the host's row went (retention) between the queries.
            if entry is not None:
                result[host] = entry[1]
        return result

    @staticmethod
    def _latest_rows(conn, query, hosts, whole=False):
        """The rows of ``query`` (on ``latest_reports``) for ``hosts``.

        ``whole``: read the whole table once and keep the hosts asked
        for, rather than asking for them in chunks of IN (...).
        """
        if whole:
            wanted = set(hosts)
            return [row for row in conn.execute(query) if row[0] in wanted]
        rows = []
        for start in range(0, len(hosts), _CHUNK):
            rows += conn.execute(query.where(models.latest_reports.c.host.in_(
                hosts[start:start + _CHUNK]))).all()
        return rows

    def _fetch_reports(self, conn, hosts, strip=False, whole=False):
        """{host: (timestamp, HostReport)} decoded from the whole body."""
        latest, r = models.latest_reports, models.reports
        joined = latest.join(r, sa.and_(r.c.host == latest.c.host,
                                        r.c.timestamp == latest.c.timestamp))
        query = sa.select(latest.c.host, latest.c.timestamp,
                          r.c.body).select_from(joined)
        fresh = {}
        for host, ts, body in self._latest_rows(conn, query, hosts, whole):
            report = codec.decode(body)
            if strip:
                report = dataclasses.replace(report, instances=())
            # Keyed by the row's timestamp, which the next call's first
            # query compares with.
            fresh[host] = (ts, report)
        return fresh

    @staticmethod
    def _summary_query():
        latest = models.latest_reports
        return sa.select(latest.c.host, latest.c.timestamp,
                         latest.c.summary, latest.c.topology_digest)

    def _fetch_summaries(self, conn, hosts, whole=False, rows=None):
        """{host: (timestamp, HostReport without instances)}.

        ``rows``: the hosts' rows of :meth:`_summary_query`, when the
        caller already has them.

        One topology is decoded per digest (a hardware model), and each
        host's renamed copy is kept until its digest changes. A row written
        before the summary columns existed, whose summary is of another
        layout (see :mod:`codec`), or whose topology text is missing, is
        decoded from its whole history row instead.
        """
        if rows is None:
            rows = self._latest_rows(conn, self._summary_query(), hosts,
                                     whole)
        legacy = [row[0] for row in rows if row[2] is None]
        unknown = sorted({row[3] for row in rows if row[2] is not None}
                         - self._shapes.keys())
        topologies = models.topologies
        for start in range(0, len(unknown), _CHUNK):
            for digest, text in conn.execute(sa.select(
                    topologies.c.digest, topologies.c.topology).where(
                    topologies.c.digest.in_(unknown[start:start + _CHUNK]))):
                self._shapes[digest] = codec.decode_topology(text)
        shapes, named = self._shapes, self._topologies
        decode_summary, with_topology = (codec.decode_summary,
                                         codec.with_topology)
        fresh = {}
        for host, ts, summary, digest in rows:
            if summary is None:
                continue                    # in legacy already
            shape = shapes.get(digest)
            head = None if shape is None else decode_summary(summary)
            if head is None:
                legacy.append(host)
                continue
            hostname, report = head
            # The host's renamed copy of its hardware's topology, kept
            # while its digest and name stay.
            topology = named.get(host)
            if topology is None or topology[0] != digest or (
                    topology[1].hostname != hostname):
                topology = named[host] = (
                    digest, dataclasses.replace(shape, hostname=hostname))
            fresh[host] = (ts, with_topology(report, topology[1]))
        fresh.update(self._fetch_reports(conn, sorted(legacy), strip=True))
        return fresh

    def image_profile(self, image_id):
        """The rolling profile of a Glance image, or None if never seen."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(models.image_profiles).where(
                models.image_profiles.c.image_id == image_id)).first()
        return ImageProfile(**row._mapping) if row else None

    def instance_history(self, uuid, since=None):
        """The instance's samples, oldest first, across hosts."""
        s = models.instance_samples
        query = sa.select(*[s.c[f.name] for f in dataclasses.fields(
            InstanceSampleRow)]).where(s.c.uuid == uuid)
        if since is not None:
            query = query.where(s.c.timestamp >= since)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(s.c.timestamp, s.c.host))
            return [InstanceSampleRow(**row._mapping) for row in rows]

    def host_history(self, host, since=None):
        """The host's stored reports, oldest first."""
        r = models.reports
        query = sa.select(r.c.body).where(r.c.host == host)
        if since is not None:
            query = query.where(r.c.timestamp >= since)
        with self.engine.connect() as conn:
            return [codec.decode(b) for b in conn.execute(
                query.order_by(r.c.timestamp)).scalars()]

    def training_samples(self, since=None, limit=None):
        """Stored reports of all hosts, oldest first, for model training."""
        r = models.reports
        query = sa.select(r.c.body)
        if since is not None:
            query = query.where(r.c.timestamp >= since)
        query = query.order_by(r.c.timestamp, r.c.host)
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            return [codec.decode(b) for b in conn.execute(query).scalars()]

    def moves_since(self, t):
        """Moves at or after ``t``, oldest first."""
        m = models.moves
        query = sa.select(m.c.uuid, m.c.source_host, m.c.dest_host,
                          m.c.moved_at, m.c.origin).where(
            m.c.moved_at >= t).order_by(m.c.moved_at, m.c.id)
        with self.engine.connect() as conn:
            return [MoveRecord(**row._mapping) for row in conn.execute(query)]

    def ingestion_counters(self):
        """{name: count}: accepted, duplicates, stale, rejected:<reason>."""
        c = models.ingestion_counters
        with self.engine.connect() as conn:
            return dict(conn.execute(sa.select(c.c.name, c.c.value)).all())

    def dispose(self):
        """Close the pooled connections."""
        self.engine.dispose()


class CachedReader:
    """Latest reports with one store round trip per TTL (Nova's weigher).

    The weigher is called once per host per request; without a cache,
    10,000 hosts would be 10,000 queries per boot. The reader fetches every
    host's latest report at most once per ``ttl_s`` and answers from
    memory in between; filtering by hosts and freshness happens on the
    cached copy, so the answer is as fresh as the last fetch.

    ``with_instances=False`` caches the node-level view (see
    :meth:`TelemetryStore.latest_reports`): what a reader that only needs
    node aggregates and topologies should use at thousands of hosts.
    """

    def __init__(self, store, ttl_s=10, clock=time.monotonic,
                 with_instances=True):
        self.store = store
        self.ttl_s = ttl_s
        self.clock = clock
        self.with_instances = with_instances
        self._lock = threading.Lock()
        self._fetched_at = None
        self._reports = {}

    def latest_reports(self, hosts=None, max_age_s=None, now=None):
        with self._lock:
            tick = self.clock()
            if self._fetched_at is None or tick - self._fetched_at >= self.ttl_s:
                # Only pass the flag when set: any object with a plain
                # latest_reports() still works as the store.
                self._reports = (
                    self.store.latest_reports() if self.with_instances
                    else self.store.latest_reports(with_instances=False))
                self._fetched_at = tick
            reports = self._reports
        if hosts is not None:
            reports = {h: reports[h] for h in hosts if h in reports}
        if max_age_s is not None:
            now = time.time() if now is None else now
            reports = {h: r for h, r in reports.items()
                       if r.timestamp >= now - max_age_s}
        return dict(reports)

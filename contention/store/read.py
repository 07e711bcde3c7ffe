"""The store's reads: latest reports, image profiles, counters."""

import dataclasses
import threading
import time

import sqlalchemy as sa

from contention import gc_pause
from contention.store import codec
from contention.store import models
from contention.store.records import CHUNK
from contention.store.records import ImageProfile


class Reader:
    """Latest reports (decoded once per host and timestamp) and profiles."""

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
                for start in range(0, len(hosts), CHUNK):
                    stamps.update(conn.execute(query.where(
                        latest.c.host.in_(hosts[start:start + CHUNK]))).all())
            with self._decoded_lock:
                known = {h: cache.get(h) for h in stamps}
            stale = sorted(h for h, ts in stamps.items()
                           if known[h] is None or known[h][0] != ts)
            # Most of a big table: one pass over it beats IN lists.
            whole = hosts is None and 2 * len(stale) > len(stamps) > CHUNK
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
        for start in range(0, len(hosts), CHUNK):
            rows += conn.execute(query.where(models.latest_reports.c.host.in_(
                hosts[start:start + CHUNK]))).all()
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
        for start in range(0, len(unknown), CHUNK):
            for digest, text in conn.execute(sa.select(
                    topologies.c.digest, topologies.c.topology).where(
                    topologies.c.digest.in_(unknown[start:start + CHUNK]))):
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

    def ingestion_counters(self):
        """{name: count}: accepted, duplicates, stale, rejected:<reason>."""
        c = models.ingestion_counters
        with self.engine.connect() as conn:
            return dict(conn.execute(sa.select(c.c.name, c.c.value)).all())


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

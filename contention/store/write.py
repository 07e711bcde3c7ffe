"""The store's writes: reports, their samples, profiles, counters, moves.

:meth:`Writer.ingest` stores a batch in one transaction, so a batch is
stored whole or not at all and the collector acknowledges its messages
only after the commit.
"""

import collections
import dataclasses
import math
import statistics
import time

import sqlalchemy as sa

from contention import llc_share
from contention.store import codec
from contention.store import dialects
from contention.store import models
from contention.store.records import CHUNK
from contention.store.records import IngestResult

#: Hosts whose means of an image vote on its profile: the most recently
#: updated ones. Enough for a robust median, few enough that a popular
#: image on thousands of hosts costs a bounded read per batch.
PROFILE_VOTERS = 25


def latest_row(report, now, parts=None):
    """The ``latest_reports`` row of ``report``.

    ``parts`` is :func:`codec.encode_latest` of it, if already computed.
    """
    _body, summary, _topology, digest = parts or codec.encode_latest(report)
    return {'host': report.host, 'timestamp': report.timestamp,
            'received_at': now, 'summary': summary,
            'topology_digest': digest}


def _latest_timestamps(conn, hosts):
    """{host: timestamp of its latest report} before this batch."""
    latest = models.latest_reports
    found = {}
    for start in range(0, len(hosts), CHUNK):
        found.update(conn.execute(sa.select(
            latest.c.host, latest.c.timestamp).where(
            latest.c.host.in_(hosts[start:start + CHUNK]))).all())
    return found


def _count_newer(reports, new_keys, before):
    """The batch's ``accepted``: reports newer than their host's so far.

    In the order given, a report counts when it is newer than every report
    of its host stored before it. ``new_keys`` are the (host, timestamp)
    newly stored; ``before`` the hosts' latest timestamps when the batch
    began.
    """
    newest = dict(before)
    accepted, seen = 0, set()
    for report in reports:
        key = (report.host, report.timestamp)
        if key not in new_keys or key in seen:
            continue
        seen.add(key)
        if report.timestamp > newest.get(report.host, -math.inf):
            accepted += 1
            newest[report.host] = report.timestamp
    return accepted


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


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def profile_row(image_id, voters, now):
    """An ``image_profiles`` row from its hosts' rows (newest first)."""
    row = {'image_id': image_id, 'updated_at': now,
           'samples': sum(v.samples for v in voters)}
    for metric in dialects.PROFILE_METRICS:
        row[metric] = _median([getattr(v, metric) for v in voters])
    classes = collections.Counter(v.merlin_class for v in voters
                                  if v.merlin_class)
    # The most common class; a tie goes to the most recent host's.
    row['merlin_class'] = max(
        classes, key=lambda c: (classes[c], -[v.merlin_class
                                              for v in voters].index(c)),
        default=None)
    return row


class Writer:
    """Ingest, counters and moves. See :class:`IngestResult`."""

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
            for start in range(0, len(rows), CHUNK):
                inserted.update(dialects.insert_new_reports(
                    conn, models.reports, rows[start:start + CHUNK]))
            new = [unique[key] for key in unique if key in inserted]
            before = _latest_timestamps(conn, sorted({r.host for r in new}))
            self._insert_samples(conn, [
                r for r in new if sampled(r, self.sample_interval_s)],
                inserted)
            newest = {}
            for report in new:
                newest[report.host] = report        # sorted: last is newest
            latest_rows = [latest_row(r, now, parts[(r.host, r.timestamp)])
                           for r in newest.values()]
            for start in range(0, len(latest_rows), CHUNK):
                dialects.upsert_newer(conn, models.latest_reports,
                                      latest_rows[start:start + CHUNK])
            topologies = {parts[key][3]: parts[key][2] for key in unique}
            fresh_digests = sorted(set(topologies) - self._stored_digests)
            dialects.insert_missing(conn, models.topologies, [
                {'digest': d, 'topology': topologies[d]}
                for d in fresh_digests], 'digest')
            self._update_profiles(conn, new, now)
            accepted = _count_newer(reports, {(r.host, r.timestamp)
                                              for r in new}, before)
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
            rows += self.sample_rows(report,
                                     ids[(report.host, report.timestamp)])
        dialects.insert_rows(conn, models.instance_samples,
                             self.sample_columns, rows)

    def _update_profiles(self, conn, reports, now):
        """Fold ``reports`` into each (image, host) mean, then re-vote.

        Every host keeps its own rolling means of an image
        (``image_host_profiles``); the image's profile is, per metric, the
        median of the means of the :data:`PROFILE_VOTERS` hosts that ran
        it most recently. A host reporting absurd (but physically
        possible) values moves only its own mean, so with three or more
        hosts it cannot move the profile outside the others' range.
        """
        by_key = collections.defaultdict(list)
        for report in sorted(reports, key=lambda r: r.timestamp):
            for rec in report.instances:
                if rec.image_id:
                    by_key[(rec.image_id, report.host)].append(
                        (rec, _profile_values(rec, report.topology)))
        rows = []
        for image_id, host in sorted(by_key):
            samples = by_key[(image_id, host)]
            row = {'image_id': image_id, 'host': host,
                   'samples': len(samples), 'updated_at': now,
                   'merlin_class': None}
            for k, metric in enumerate(dialects.PROFILE_METRICS):
                (row[metric], row['decay_' + metric],
                 row['add_' + metric]) = _ewma(
                    [v[k] for _, v in samples if v[k] is not None],
                    self.profile_alpha)
            for rec, _ in samples:
                row['merlin_class'] = rec.merlin_class or row['merlin_class']
            rows.append(row)
        dialects.update_profiles(conn, models.image_host_profiles, rows,
                                 keys=('image_id', 'host'))
        images = sorted({image_id for image_id, _ in by_key})
        for start in range(0, len(images), CHUNK):
            self._vote(conn, images[start:start + CHUNK], now)

    @staticmethod
    def _vote(conn, images, now):
        """Rewrite ``images``' profiles from their hosts' means."""
        p = models.image_host_profiles
        ranked = sa.select(
            p, sa.func.row_number().over(
                partition_by=p.c.image_id,
                order_by=(p.c.updated_at.desc(), p.c.host)).label('rank')
        ).where(p.c.image_id.in_(images)).subquery()
        voters = collections.defaultdict(list)
        for row in conn.execute(sa.select(ranked).where(
                ranked.c.rank <= PROFILE_VOTERS)):
            voters[row.image_id].append(row)
        rows = [profile_row(image_id, voters[image_id], now)
                for image_id in images if voters[image_id]]
        dialects.replace_rows(conn, models.image_profiles, rows,
                              ('image_id',))

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

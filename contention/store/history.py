"""The store's history: past reports, samples, moves, and their retention."""

import dataclasses
import time

import sqlalchemy as sa

from contention.store import codec
from contention.store import models
from contention.store.records import CHUNK
from contention.store.records import InstanceSampleRow
from contention.store.records import MoveRecord


class History:
    """Reads over time, and the limits that keep the history bounded."""

    def instance_history(self, uuid, since=None):
        """The instance's samples, oldest first, across hosts."""
        return self.instances_history([uuid], since).get(uuid, [])

    def instances_history(self, uuids, since=None, until=None):
        """{uuid: its samples in ``[since, until]``, oldest first}.

        One query per ``CHUNK`` instances, not one per instance: an audit
        reads the history of every instance on the hosts it judges. An
        instance with no sample there is left out.
        """
        s = models.instance_samples
        columns = [s.c[f.name] for f in dataclasses.fields(InstanceSampleRow)]
        uuids = sorted(set(uuids))
        found = {}
        with self.engine.connect() as conn:
            for start in range(0, len(uuids), CHUNK):
                query = sa.select(*columns).where(
                    s.c.uuid.in_(uuids[start:start + CHUNK]))
                if since is not None:
                    query = query.where(s.c.timestamp >= since)
                if until is not None:
                    query = query.where(s.c.timestamp <= until)
                for row in conn.execute(
                        query.order_by(s.c.timestamp, s.c.host)):
                    sample = InstanceSampleRow(**row._mapping)
                    found.setdefault(sample.uuid, []).append(sample)
        return found

    def host_history(self, host, since=None, until=None):
        """The host's stored reports in ``[since, until]``, oldest first."""
        r = models.reports
        query = sa.select(r.c.body).where(r.c.host == host)
        if since is not None:
            query = query.where(r.c.timestamp >= since)
        if until is not None:
            query = query.where(r.c.timestamp <= until)
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

    def enforce_retention(self, now=None):
        """Drop history older than the age limit or past the row limit.

        Also drops the latest report of hosts silent for longer than the age
        limit (decommissioned hosts), moves older than it, and the image
        means of hosts that have not run the image for as long (an image's
        profile keeps its last vote until one of its hosts reports again).
        Returns the number of rows deleted.
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
            for start in range(0, len(ids), CHUNK):
                chunk = ids[start:start + CHUNK]
                deleted += conn.execute(sa.delete(s).where(
                    s.c.report_id.in_(chunk))).rowcount
                deleted += conn.execute(sa.delete(r).where(
                    r.c.id.in_(chunk))).rowcount
            latest = models.latest_reports
            deleted += conn.execute(sa.delete(latest).where(
                latest.c.timestamp < cutoff)).rowcount
            deleted += conn.execute(sa.delete(models.moves).where(
                models.moves.c.moved_at < cutoff)).rowcount
            # A host that stopped running an image stops voting on it.
            votes = models.image_host_profiles
            deleted += conn.execute(sa.delete(votes).where(
                votes.c.updated_at < cutoff)).rowcount
        return deleted

"""The telemetry store's tables (SQLAlchemy Core).

The alembic migrations in ``migrations/versions`` create exactly these; a
unit test compares the two so they cannot drift.

* ``reports``: the bounded history, one row per (host, timestamp); the
  unique constraint is what makes ingestion idempotent, also between two
  collectors writing at once.
* ``latest_reports``: one row per host, naming its newest report (the
  ``reports`` row with the same host and timestamp), replaced only by a
  newer one (a conditional upsert, so the database decides, not a lock).
  It holds the report without its instances (``summary``) and the digest
  of its topology, which is all the node-level read (the Nova weigher's)
  decodes.
* ``topologies``: each distinct topology text (host name blanked) once,
  by digest: hosts of one hardware model share one row.
* ``instance_samples``: one row per instance per stored report, the
  normalised columns that history queries and training filter on.
* ``image_profiles``: per Glance image, the median over its recent hosts
  of ``image_host_profiles``.
* ``image_host_profiles``: exponentially weighted means per image and
  host.
* ``ingestion_counters``: name -> count, incremented in the ingest
  transaction.
* ``moves``: migrations done by Watcher actions (cool-down, repercussion
  checks).
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

metadata = sa.MetaData()

#: Auto-increment ids: BIGINT where the database has it; SQLite only
#: auto-increments an INTEGER PRIMARY KEY.
BigId = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')
#: Compressed report JSON; MySQL's BLOB stops at 64 KiB.
Body = sa.LargeBinary().with_variant(mysql.LONGBLOB(), 'mysql')
HOST_LEN = 255

reports = sa.Table(
    'reports', metadata,
    sa.Column('id', BigId, primary_key=True, autoincrement=True),
    sa.Column('host', sa.String(HOST_LEN), nullable=False),
    sa.Column('timestamp', sa.Double(), nullable=False),
    sa.Column('received_at', sa.Double(), nullable=False),
    sa.Column('body', Body, nullable=False),
    sa.UniqueConstraint('host', 'timestamp', name='uq_reports_host_ts'),
    sa.Index('ix_reports_timestamp', 'timestamp'),
)

latest_reports = sa.Table(
    'latest_reports', metadata,
    sa.Column('host', sa.String(HOST_LEN), primary_key=True),
    sa.Column('timestamp', sa.Double(), nullable=False),
    sa.Column('received_at', sa.Double(), nullable=False),
    # NULL in rows written before revision 0002.
    sa.Column('summary', sa.Text(), nullable=True),
    sa.Column('topology_digest', sa.String(64), nullable=True),
)

topologies = sa.Table(
    'topologies', metadata,
    sa.Column('digest', sa.String(64), primary_key=True),
    sa.Column('topology', sa.Text(), nullable=False),
)

instance_samples = sa.Table(
    'instance_samples', metadata,
    sa.Column('id', BigId, primary_key=True, autoincrement=True),
    sa.Column('report_id', BigId, sa.ForeignKey('reports.id'),
              nullable=False),
    sa.Column('host', sa.String(HOST_LEN), nullable=False),
    sa.Column('timestamp', sa.Double(), nullable=False),
    sa.Column('uuid', sa.String(255), nullable=False),
    sa.Column('image_id', sa.String(255), nullable=True),
    sa.Column('vcpus', sa.Integer(), nullable=False),
    sa.Column('memory_mib', sa.BigInteger(), nullable=False),
    sa.Column('node', sa.Integer(), nullable=True),
    sa.Column('mpki', sa.Double(), nullable=True),
    sa.Column('mf', sa.Double(), nullable=True),
    sa.Column('ipc', sa.Double(), nullable=True),
    sa.Column('llc_misses_per_s', sa.Double(), nullable=True),
    sa.Column('cpu_util', sa.Double(), nullable=True),
    sa.Column('merlin_class', sa.String(32), nullable=True),
    sa.Index('ix_instance_samples_uuid_ts', 'uuid', 'timestamp'),
    sa.Index('ix_instance_samples_report', 'report_id'),
)

image_profiles = sa.Table(
    'image_profiles', metadata,
    sa.Column('image_id', sa.String(255), primary_key=True),
    sa.Column('mpki', sa.Double(), nullable=True),
    sa.Column('mf', sa.Double(), nullable=True),
    sa.Column('ipc', sa.Double(), nullable=True),
    sa.Column('merlin_class', sa.String(32), nullable=True),
    sa.Column('samples', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.Double(), nullable=False),
    # 0004: MF with a quarter of the LLC (contention.llc_share)
    sa.Column('mf_small_llc', sa.Double(), nullable=True),
)

#: 0005: each host's rolling means of an image; the image's profile is
#: their median (contention.store.write), so one host cannot move it.
image_host_profiles = sa.Table(
    'image_host_profiles', metadata,
    sa.Column('image_id', sa.String(255), primary_key=True),
    sa.Column('host', sa.String(HOST_LEN), primary_key=True),
    sa.Column('mpki', sa.Double(), nullable=True),
    sa.Column('mf', sa.Double(), nullable=True),
    sa.Column('ipc', sa.Double(), nullable=True),
    sa.Column('mf_small_llc', sa.Double(), nullable=True),
    sa.Column('merlin_class', sa.String(32), nullable=True),
    sa.Column('samples', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.Double(), nullable=False),
    sa.Index('ix_image_host_profiles_updated_at', 'updated_at'),
)

ingestion_counters = sa.Table(
    'ingestion_counters', metadata,
    sa.Column('name', sa.String(255), primary_key=True),
    sa.Column('value', sa.BigInteger(), nullable=False),
)

moves = sa.Table(
    'moves', metadata,
    sa.Column('id', BigId, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(255), nullable=False),
    sa.Column('source_host', sa.String(HOST_LEN), nullable=False),
    sa.Column('dest_host', sa.String(HOST_LEN), nullable=False),
    sa.Column('moved_at', sa.Double(), nullable=False),
    sa.Column('origin', sa.String(255), nullable=False),
    sa.Index('ix_moves_moved_at', 'moved_at'),
)

"""Latest reports by reference: no second copy of each report.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23

Until 0002 every ingested report was written twice (the history row and
the latest row each held the compressed body) and the latest row also held
the host's topology text, several KiB that hardly ever change. At
thousands of reports a second that was most of what the database wrote.
Now:

* ``latest_reports`` keeps the host, the timestamp, the node-level summary
  and the topology digest; the whole report is the history row with the
  same host and timestamp (which retention never removes while it is a
  host's latest);
* ``topologies`` holds each distinct topology text (host name blanked)
  once, by digest;
* on PostgreSQL, ``reports.body`` is stored without TOAST compression: it
  is zlib already, and trying to compress it again only cost CPU.

Upgrade keeps every latest report: one without its history row (written
by hand, or by a version before the history existed) gets one first.
Downgrade restores the copies.
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

Body = sa.LargeBinary().with_variant(mysql.LONGBLOB(), 'mysql')


def upgrade():
    op.create_table(
        'topologies',
        sa.Column('digest', sa.String(64), primary_key=True),
        sa.Column('topology', sa.Text(), nullable=False))
    op.execute(
        'INSERT INTO reports (host, timestamp, received_at, body) '
        'SELECT l.host, l.timestamp, l.received_at, l.body '
        'FROM latest_reports l WHERE NOT EXISTS (SELECT 1 FROM reports r '
        'WHERE r.host = l.host AND r.timestamp = l.timestamp)')
    op.execute(
        'INSERT INTO topologies (digest, topology) '
        'SELECT topology_digest, MIN(topology) FROM latest_reports '
        'WHERE topology_digest IS NOT NULL AND topology IS NOT NULL '
        'GROUP BY topology_digest')
    with op.batch_alter_table('latest_reports') as batch:
        batch.drop_column('topology')
        batch.drop_column('body')
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('ALTER TABLE reports ALTER COLUMN body SET STORAGE '
                   'EXTERNAL')


def downgrade():
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('ALTER TABLE reports ALTER COLUMN body SET STORAGE '
                   'EXTENDED')
    with op.batch_alter_table('latest_reports') as batch:
        batch.add_column(sa.Column('body', Body, nullable=True))
        batch.add_column(sa.Column('topology', sa.Text(), nullable=True))
    op.execute(
        'UPDATE latest_reports SET body = (SELECT r.body FROM reports r '
        'WHERE r.host = latest_reports.host '
        'AND r.timestamp = latest_reports.timestamp), '
        'topology = (SELECT t.topology FROM topologies t '
        'WHERE t.digest = latest_reports.topology_digest)')
    with op.batch_alter_table('latest_reports') as batch:
        batch.alter_column('body', existing_type=Body, nullable=False)
    op.drop_table('topologies')

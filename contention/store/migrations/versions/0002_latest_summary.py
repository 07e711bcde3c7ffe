"""Node-level view of the latest reports: summary and topology columns.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23

Rows written before this revision keep NULL there; readers decode the
whole body for those until the host reports again.
"""

from alembic import op
import sqlalchemy as sa

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

COLUMNS = ('summary', 'topology', 'topology_digest')


def upgrade():
    with op.batch_alter_table('latest_reports') as batch:
        batch.add_column(sa.Column('summary', sa.Text(), nullable=True))
        batch.add_column(sa.Column('topology', sa.Text(), nullable=True))
        batch.add_column(sa.Column('topology_digest', sa.String(64),
                                   nullable=True))


def downgrade():
    with op.batch_alter_table('latest_reports') as batch:
        for name in reversed(COLUMNS):
            batch.drop_column(name)

"""Image profiles learn their Memory Factor with a small share of the LLC.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23

``image_profiles.mf_small_llc`` is the rolling mean of the MF of the
image's instances over the intervals in which they held about a quarter
of their LLC (``contention.llc_share``). Existing profiles start with
NULL and learn it from the next such interval; no data is rewritten.
"""

from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('image_profiles') as batch:
        batch.add_column(sa.Column('mf_small_llc', sa.Double(),
                                   nullable=True))


def downgrade():
    with op.batch_alter_table('image_profiles') as batch:
        batch.drop_column('mf_small_llc')

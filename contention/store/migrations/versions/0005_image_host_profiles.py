"""Image profiles become the median of per-host means.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25

One report could move an image's profile as far as its values went, and
one host's reports could pull it anywhere (issue 21). Each host now keeps
its own rolling means of an image (``image_host_profiles``) and the
profile is their median. Existing profiles are kept, as the vote of a host
named ``""`` (the history before this revision), which the next reports
outvote and retention removes after ``[store] history_max_age``.
"""

from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'image_host_profiles',
        sa.Column('image_id', sa.String(255), primary_key=True),
        sa.Column('host', sa.String(255), primary_key=True),
        sa.Column('mpki', sa.Double(), nullable=True),
        sa.Column('mf', sa.Double(), nullable=True),
        sa.Column('ipc', sa.Double(), nullable=True),
        sa.Column('mf_small_llc', sa.Double(), nullable=True),
        sa.Column('merlin_class', sa.String(32), nullable=True),
        sa.Column('samples', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.Double(), nullable=False),
    )
    op.create_index('ix_image_host_profiles_updated_at',
                    'image_host_profiles', ['updated_at'])
    op.execute(
        "INSERT INTO image_host_profiles (image_id, host, mpki, mf, ipc, "
        "mf_small_llc, merlin_class, samples, updated_at) "
        "SELECT image_id, '', mpki, mf, ipc, mf_small_llc, merlin_class, "
        "samples, updated_at FROM image_profiles")


def downgrade():
    op.drop_index('ix_image_host_profiles_updated_at',
                  table_name='image_host_profiles')
    op.drop_table('image_host_profiles')

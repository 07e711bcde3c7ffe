"""Initial telemetry store schema.

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')
Body = sa.LargeBinary().with_variant(mysql.LONGBLOB(), 'mysql')


def upgrade():
    op.create_table(
        'reports',
        sa.Column('id', BigId, primary_key=True, autoincrement=True),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('timestamp', sa.Double(), nullable=False),
        sa.Column('received_at', sa.Double(), nullable=False),
        sa.Column('body', Body, nullable=False),
        sa.UniqueConstraint('host', 'timestamp', name='uq_reports_host_ts'))
    op.create_index('ix_reports_timestamp', 'reports', ['timestamp'])
    op.create_table(
        'latest_reports',
        sa.Column('host', sa.String(255), primary_key=True),
        sa.Column('timestamp', sa.Double(), nullable=False),
        sa.Column('received_at', sa.Double(), nullable=False),
        sa.Column('body', Body, nullable=False))
    op.create_table(
        'instance_samples',
        sa.Column('id', BigId, primary_key=True, autoincrement=True),
        sa.Column('report_id', BigId, sa.ForeignKey('reports.id'),
                  nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
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
        sa.Column('merlin_class', sa.String(32), nullable=True))
    op.create_index('ix_instance_samples_uuid_ts', 'instance_samples',
                    ['uuid', 'timestamp'])
    op.create_index('ix_instance_samples_report', 'instance_samples',
                    ['report_id'])
    op.create_table(
        'image_profiles',
        sa.Column('image_id', sa.String(255), primary_key=True),
        sa.Column('mpki', sa.Double(), nullable=True),
        sa.Column('mf', sa.Double(), nullable=True),
        sa.Column('ipc', sa.Double(), nullable=True),
        sa.Column('merlin_class', sa.String(32), nullable=True),
        sa.Column('samples', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.Double(), nullable=False))
    op.create_table(
        'ingestion_counters',
        sa.Column('name', sa.String(255), primary_key=True),
        sa.Column('value', sa.BigInteger(), nullable=False))
    op.create_table(
        'moves',
        sa.Column('id', BigId, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(255), nullable=False),
        sa.Column('source_host', sa.String(255), nullable=False),
        sa.Column('dest_host', sa.String(255), nullable=False),
        sa.Column('moved_at', sa.Double(), nullable=False),
        sa.Column('origin', sa.String(255), nullable=False))
    op.create_index('ix_moves_moved_at', 'moves', ['moved_at'])


def downgrade():
    for table in ('moves', 'ingestion_counters', 'image_profiles',
                  'instance_samples', 'latest_reports', 'reports'):
        op.drop_table(table)

"""Throwaway databases and broker settings on the local services.

Functional tests talk to the real PostgreSQL and RabbitMQ on localhost
(``.ci/run`` starts them). Each test gets its own database, dropped
afterwards, so tests never see each other's rows.
"""

import os
import uuid

import fixtures
import sqlalchemy as sa

PG_ADMIN_URL = os.environ.get(
    'CONTENTION_TEST_PG_URL',
    'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres')
RABBIT_URL = os.environ.get('CONTENTION_TEST_RABBIT_URL',
                            'rabbit://guest:guest@127.0.0.1:5672/')


class PostgresDatabase(fixtures.Fixture):
    """A fresh, empty PostgreSQL database; ``url`` is its SQLAlchemy URL."""

    def _setUp(self):
        name = 'contention_test_%s' % uuid.uuid4().hex[:12]
        admin = sa.create_engine(PG_ADMIN_URL, isolation_level='AUTOCOMMIT')
        with admin.connect() as conn:
            conn.execute(sa.text('CREATE DATABASE %s' % name))
        self.url = str(sa.engine.make_url(PG_ADMIN_URL).set(database=name)
                       .render_as_string(hide_password=False))

        def drop():
            with admin.connect() as conn:
                conn.execute(sa.text(
                    'DROP DATABASE IF EXISTS %s WITH (FORCE)' % name))
            admin.dispose()
        self.addCleanup(drop)

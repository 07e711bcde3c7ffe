"""Migrations build the schema the code uses, from an empty database."""

from alembic import autogenerate
from alembic.runtime import migration
from oslotest import base
import sqlalchemy as sa

from contention.store import codec
from contention.store import models
from contention.store import open_store
from tests.unit.store import reports


class TestMigrations(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.store = open_store('sqlite://')
        self.addCleanup(self.store.dispose)

    def test_empty_database_has_no_revision(self):
        self.assertIsNone(self.store.schema_revision())

    def test_upgrade_from_empty_matches_models(self):
        self.store.upgrade()
        self.assertEqual('0002', self.store.schema_revision())
        with self.store.engine.connect() as conn:
            context = migration.MigrationContext.configure(conn)
            diff = autogenerate.compare_metadata(context, models.metadata)
        self.assertEqual([], diff)

    def test_upgrade_twice_is_harmless(self):
        self.store.upgrade()
        self.store.upgrade()
        self.assertEqual('0002', self.store.schema_revision())

    def test_downgrade_to_empty(self):
        self.store.upgrade()
        self.store.downgrade('base')
        names = sa.inspect(self.store.engine).get_table_names()
        self.assertEqual(['alembic_version'], names)

    def test_upgrade_reaches_the_code_head(self):
        self.store.upgrade()
        self.assertEqual(self.store.head_revision(),
                         self.store.schema_revision())

    def test_upgrade_keeps_the_reports_of_the_previous_revision(self):
        self.store.upgrade('0001')
        rep = reports.host_report('a', 100, [reports.instance('u1')])
        with self.store.engine.begin() as conn:
            conn.execute(sa.text(
                'INSERT INTO latest_reports (host, timestamp, received_at, '
                'body) VALUES (:h, :t, :t, :b)'), dict(
                    h='a', t=100.0, b=codec.encode(rep)))
        self.store.upgrade()
        self.assertEqual({'a': rep}, self.store.latest_reports())
        self.assertEqual((), self.store.latest_reports(
            with_instances=False)['a'].instances)
        self.store.ingest([reports.host_report('a', 110)])
        self.assertEqual(110.0, self.store.latest_reports(
            with_instances=False)['a'].timestamp)

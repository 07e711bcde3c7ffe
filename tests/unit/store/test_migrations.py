"""Migrations build the schema the code uses, from an empty database."""

from alembic import autogenerate
from alembic.runtime import migration
from oslotest import base
import sqlalchemy as sa

from contention.store import models
from contention.store import open_store


class TestMigrations(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.store = open_store('sqlite://')
        self.addCleanup(self.store.dispose)

    def test_empty_database_has_no_revision(self):
        self.assertIsNone(self.store.schema_revision())

    def test_upgrade_from_empty_matches_models(self):
        self.store.upgrade()
        self.assertEqual('0001', self.store.schema_revision())
        with self.store.engine.connect() as conn:
            context = migration.MigrationContext.configure(conn)
            diff = autogenerate.compare_metadata(context, models.metadata)
        self.assertEqual([], diff)

    def test_upgrade_twice_is_harmless(self):
        self.store.upgrade()
        self.store.upgrade()
        self.assertEqual('0001', self.store.schema_revision())

    def test_downgrade_to_empty(self):
        self.store.upgrade()
        self.store.downgrade('base')
        names = sa.inspect(self.store.engine).get_table_names()
        self.assertEqual(['alembic_version'], names)

    def test_upgrade_reaches_the_code_head(self):
        self.store.upgrade()
        self.assertEqual(self.store.head_revision(),
                         self.store.schema_revision())

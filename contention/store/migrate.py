"""Schema migrations of the store (alembic, ``contention.store:migrations``)."""

import alembic.command
import alembic.config


class Migrations:
    """Create, migrate and inspect the schema of ``self.engine``."""

    def upgrade(self, revision='head'):
        """Create or migrate the schema (alembic ``upgrade head``)."""
        self._migrate(alembic.command.upgrade, revision)

    def downgrade(self, revision):
        """Migrate the schema back to ``revision`` ('base' = empty)."""
        self._migrate(alembic.command.downgrade, revision)

    def _migrate(self, command, revision):
        config = alembic.config.Config()
        config.set_main_option('script_location',
                               'contention.store:migrations')
        with self.engine.begin() as conn:
            config.attributes['connection'] = conn
            command(config, revision)

    @staticmethod
    def head_revision():
        """The revision this code's migrations end at."""
        from alembic import script
        config = alembic.config.Config()
        config.set_main_option('script_location',
                               'contention.store:migrations')
        return script.ScriptDirectory.from_config(config).get_current_head()

    def schema_revision(self):
        """The alembic revision the database is at (None = empty)."""
        from alembic.runtime import migration
        with self.engine.connect() as conn:
            return migration.MigrationContext.configure(
                conn).get_current_revision()

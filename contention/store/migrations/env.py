"""Alembic environment: runs on the connection TelemetryStore.upgrade gives.

Run through :meth:`contention.store.TelemetryStore.upgrade` (or
``contention-collector --upgrade-db``), never with a separate alembic.ini:
the store URL comes from the service's configuration.
"""

from alembic import context

from contention.store import models

connection = context.config.attributes['connection']
context.configure(connection=connection,
                  target_metadata=models.metadata,
                  render_as_batch=connection.dialect.name == 'sqlite')
with context.begin_transaction():
    context.run_migrations()

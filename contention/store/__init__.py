"""The telemetry store: latest reports, history, image profiles, counters.

This package is the store's face: other parts import these names from
``contention.store`` and nothing from its modules::

    store = open_store(url)
    store.upgrade()
    store.ingest(reports)
    store.latest_reports(hosts, max_age_s)

Inside, one module per job: :mod:`~contention.store.migrate`,
:mod:`~contention.store.write`, :mod:`~contention.store.read`,
:mod:`~contention.store.history`, put together by
:mod:`~contention.store.api`; ``doc/store.md`` has the operator's view.
"""

from contention.store.api import open_store
from contention.store.api import TelemetryStore
from contention.store.read import CachedReader
from contention.store.records import DEFAULT_PROFILE_ALPHA
from contention.store.records import DEFAULT_SAMPLE_INTERVAL_S
from contention.store.records import DEFAULT_URL
from contention.store.records import ImageProfile
from contention.store.records import IngestResult
from contention.store.records import InstanceSampleRow
from contention.store.records import MoveRecord
from contention.store.write import latest_row
from contention.store.write import sampled

__all__ = [
    'CachedReader', 'DEFAULT_PROFILE_ALPHA', 'DEFAULT_SAMPLE_INTERVAL_S',
    'DEFAULT_URL', 'ImageProfile', 'IngestResult', 'InstanceSampleRow',
    'MoveRecord', 'TelemetryStore', 'latest_row', 'open_store', 'sampled',
]

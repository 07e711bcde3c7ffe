"""The telemetry store: latest reports, history, image profiles, counters.

Public API (other parts import only these)::

    store = open_store(url)
    store.upgrade()
    store.ingest(reports)
    store.latest_reports(hosts, max_age_s)

See :mod:`contention.store.api` and ``doc/store.md``.
"""

from contention.store.api import CachedReader  # noqa: F401
from contention.store.api import ImageProfile  # noqa: F401
from contention.store.api import IngestResult  # noqa: F401
from contention.store.api import InstanceSampleRow  # noqa: F401
from contention.store.api import MoveRecord  # noqa: F401
from contention.store.api import open_store  # noqa: F401
from contention.store.api import TelemetryStore  # noqa: F401

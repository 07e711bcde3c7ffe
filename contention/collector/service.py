"""The collector service: a batch notification listener and retention.

Several collectors may run against one store: they consume the same
queue (the topic's own, ``<topic>.info``, unless ``[collector] pool`` names
another) and the bus hands each report to one of them; the store's unique
keys make a report that still arrives twice harmless.
"""

import threading

from oslo_log import log as logging
import oslo_messaging

from contention.collector import endpoint as endpoint_mod
from contention.collector import inflate
from contention import telemetry_bus

LOG = logging.getLogger(__name__)


def make_endpoint(conf, store):
    """The report endpoint configured by ``[collector]``."""
    c = conf.collector
    return endpoint_mod.ReportEndpoint(
        store, max_skew_s=c.max_clock_skew, check_publisher=c.check_publisher,
        backoff=endpoint_mod.Backoff(longest=c.db_retry_max))


def make_listener(transport, endpoint, topic, pool, batch_size,
                  batch_timeout):
    """An unstarted batch listener handing batches to ``endpoint``.

    ``allow_requeue`` lets the endpoint hand a batch back when the
    database is unavailable; the threading executor runs the endpoint in a
    worker thread, so the SQL driver's blocking calls are fine.
    """
    return oslo_messaging.get_batch_notification_listener(
        transport, [oslo_messaging.Target(topic=topic)], [endpoint],
        executor='threading', allow_requeue=True, pool=pool,
        batch_size=batch_size, batch_timeout=batch_timeout)


class RetentionLoop:
    """Enforce the store's history limits every ``interval`` seconds."""

    def __init__(self, store, interval):
        self.store = store
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='retention')

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()

    def run_once(self):
        try:
            deleted = self.store.enforce_retention()
        except Exception:
            # A failed pass is retried at the next interval; the listener
            # must keep running meanwhile.
            LOG.exception('Retention pass failed')
            return None
        if deleted:
            LOG.info('Retention removed %d rows', deleted)
        return deleted

    def _run(self):
        while not self._stop.wait(self.interval):
            self.run_once()


class CollectorService:
    """The listener plus the retention loop, started and stopped together.

    ``retention=False`` leaves the history limits to another collector
    process (only one of a host's workers needs to enforce them).
    """

    def __init__(self, conf, store, transport=None, retention=True):
        self.store = store
        self._own_transport = transport is None
        self.transport = transport or (
            telemetry_bus.notification_transport(conf))
        c = conf.collector
        inflate.install(c.max_report_bytes)
        self.endpoint = make_endpoint(conf, store)
        self.listener = make_listener(self.transport, self.endpoint, c.topic,
                                      c.pool, c.batch_size, c.batch_timeout)
        self.retention = (RetentionLoop(store, c.retention_interval)
                          if retention else None)

    def start(self):
        self.listener.start()
        if self.retention:
            self.retention.start()
        LOG.info('Collecting host reports')

    def stop(self):
        """Stop consuming, finish the batches in hand, then close."""
        self.endpoint.stop()
        self.listener.stop()
        self.listener.wait()
        if self.retention:
            self.retention.stop()
        if self._own_transport:
            self.transport.cleanup()

"""The notification endpoint: validate a batch, store it, then acknowledge.

At-least-once: oslo.messaging acknowledges the batch only when
:meth:`ReportEndpoint.info` returns HANDLED, which happens after the
store's commit; a database that is down or busy gives REQUEUE, after a
wait that doubles with each failure of the outage (so a database outage is
not a requeue loop four times a second), and the reports come back later
(the store ignores the ones it already has). A report that can never be
stored (invalid, impossible, from the wrong sender, dated in the future,
or data the database refuses) is logged, counted and acknowledged, so it
cannot loop forever. Nothing is raised out of the endpoint: whatever a
sender puts on the bus, the worst outcome is a counted rejection.
"""

import threading
import time

from oslo_log import log as logging
import oslo_messaging
from sqlalchemy import exc as sa_exc

from contention.collector import bounds
from contention.collector import inflate
from contention import gc_pause
from contention import report as report_mod

LOG = logging.getLogger(__name__)

HANDLED = oslo_messaging.NotificationResult.HANDLED
REQUEUE = oslo_messaging.NotificationResult.REQUEUE

#: Database errors caused by one report's data, not by the database's
#: state: retrying cannot help, so such a report is rejected. ValueError
#: and TypeError would be a report the validator let through that the
#: store cannot encode: the same, not worth a retry loop.
DATA_ERRORS = (sa_exc.DataError, sa_exc.IntegrityError, ValueError,
               TypeError)

DEFAULT_MAX_SKEW_S = 60.0


def _host_of(payload):
    host = payload.get('host') if isinstance(payload, dict) else None
    return host[:100] if isinstance(host, str) else '<unknown host>'


class Backoff:
    """Waits that double from ``first`` to ``longest`` until a success.

    :meth:`wait` returns early once :meth:`cancel` is called, so a
    collector asked to stop does not sit out a long wait.
    """

    def __init__(self, first=0.5, longest=30.0):
        self.first = first
        self.longest = longest
        self.failures = 0
        self._cancel = threading.Event()

    def delay(self):
        return min(self.first * 2 ** max(self.failures - 1, 0), self.longest)

    def failed(self):
        self.failures += 1
        return self.delay()

    def succeeded(self):
        failures, self.failures = self.failures, 0
        return failures

    def wait(self):
        self._cancel.wait(self.delay())

    def cancel(self):
        self._cancel.set()


class ReportEndpoint:
    """Batch endpoint for ``contention.host.report`` notifications.

    :param max_skew_s: how far ahead of this collector's clock a report's
        timestamp may be.
    :param check_publisher: refuse reports whose host is not their
        publisher's (``contention-agent.<host>``).
    """

    filter_rule = oslo_messaging.NotificationFilter(
        event_type='^%s$' % report_mod.EVENT_TYPE.replace('.', r'\.'))

    def __init__(self, store, max_skew_s=DEFAULT_MAX_SKEW_S,
                 check_publisher=True, clock=time.time, backoff=None):
        self.store = store
        self.max_skew_s = max_skew_s
        self.check_publisher = check_publisher
        self.clock = clock
        self.backoff = backoff or Backoff()

    def info(self, messages):
        try:
            # A message without a publisher id is from no agent: '' fails
            # the sender check (None would skip it).
            return self.handle([m.get('payload') for m in messages],
                               [m.get('publisher_id') or ''
                                for m in messages])
        except Exception:
            LOG.exception('Unexpected error storing %d reports; requeued',
                          len(messages))
            return REQUEUE

    # Agents publish at INFO; accept SAMPLE too (what meters use).
    sample = info

    def stop(self):
        """End a backoff wait in progress (the collector is stopping)."""
        self.backoff.cancel()

    def handle(self, payloads, senders=None):
        """Validate and store ``payloads``; return HANDLED or REQUEUE.

        ``senders`` are the publisher ids, in the same order; None skips
        the sender check (a caller that has no messages, e.g. a bench).
        """
        valid, rejections = [], {}
        now = self.clock()
        if senders is None:
            senders = [None] * len(payloads)
        with gc_pause.paused():
            for payload, sender in zip(payloads, senders):
                report, reason = self.validate(payload, sender, now)
                if report is None:
                    rejections[reason] = rejections.get(reason, 0) + 1
                else:
                    valid.append(report)
        for reason, n in inflate.take_refused().items():
            rejections[reason] = rejections.get(reason, 0) + n
        try:
            self._store(valid, rejections)
        except sa_exc.SQLAlchemyError as exc:
            self._unavailable(exc, len(payloads))
            inflate.give_back(rejections)
            return REQUEUE
        failures = self.backoff.succeeded()
        if failures:
            LOG.info('Store available again after %d failed attempts',
                     failures)
        return HANDLED

    def _unavailable(self, exc, n):
        before = self.backoff.delay() if self.backoff.failures else 0.0
        delay = self.backoff.failed()
        # Logged while the wait grows, then every tenth attempt.
        if before < delay or self.backoff.failures % 10 == 0:
            LOG.warning('Store unavailable (%s); %d reports requeued in '
                        '%.1f s (attempt %d)', exc.__class__.__name__, n,
                        delay, self.backoff.failures)
        self.backoff.wait()

    def validate(self, payload, sender=None, now=None):
        """(HostReport, None) or (None, rejection reason), logged."""
        try:
            report = report_mod.HostReport.from_dict(payload)
        except report_mod.InvalidReport as exc:
            LOG.warning('Rejected report from %s: %s: %s', _host_of(payload),
                        exc.path[:200], exc.problem[:200])
            return None, 'invalid'
        except Exception as exc:
            # The validator itself failed (e.g. absurdly deep nesting):
            # still the sender's fault, still not stored.
            LOG.warning('Rejected unreadable report from %s: %s: %s',
                        _host_of(payload), exc.__class__.__name__,
                        str(exc)[:200])
            return None, 'unreadable'
        try:
            bounds.check(report, sender, self.clock() if now is None else now,
                         self.max_skew_s,
                         check_publisher=self.check_publisher
                         and sender is not None)
        except bounds.Violation as exc:
            LOG.warning('Rejected report from %s at %s (%s): %s: %s',
                        report.host[:100], report.timestamp, exc.reason,
                        exc.path[:200], exc.problem[:200])
            return None, exc.reason
        except Exception as exc:
            # A check that fails on a value it did not foresee must refuse
            # that report, not requeue its whole batch for ever.
            LOG.warning('Rejected report from %s: the bounds check failed: '
                        '%s: %s', report.host[:100], exc.__class__.__name__,
                        str(exc)[:200])
            return None, 'unreadable'
        return report, None

    def _store(self, reports, rejections):
        """Store ``reports``; a part the database refuses is split in two.

        One report the database refuses costs about 2 log2(n) extra
        transactions, not one per report of its batch.
        """
        try:
            self.store.ingest(reports, rejections=rejections)
            return
        except DATA_ERRORS as exc:
            if not reports:
                raise
            if len(reports) == 1:
                report = reports[0]
                LOG.warning('Rejected report from %s at %s: the store '
                            'refused it: %s', report.host[:100],
                            report.timestamp, str(exc)[:200])
                rejections = dict(rejections)
                rejections['unstorable'] = rejections.get('unstorable',
                                                          0) + 1
                self.store.ingest([], rejections=rejections)
                return
        half = len(reports) // 2
        self._store(reports[:half], rejections)
        self._store(reports[half:], {})

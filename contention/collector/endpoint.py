"""The notification endpoint: validate a batch, store it, then acknowledge.

At-least-once: oslo.messaging acknowledges the batch only when
:meth:`ReportEndpoint.info` returns HANDLED, which happens after the
store's commit; a database that is down or busy gives REQUEUE and the
reports come back later (the store ignores the ones it already has). A
report that can never be stored (invalid, or data the database refuses) is
logged, counted and acknowledged, so it cannot loop forever. Nothing is
raised out of the endpoint: whatever a sender puts on the bus, the worst
outcome is a counted rejection.
"""

from oslo_log import log as logging
import oslo_messaging
from sqlalchemy import exc as sa_exc

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


def _host_of(payload):
    host = payload.get('host') if isinstance(payload, dict) else None
    return host[:100] if isinstance(host, str) else '<unknown host>'


class ReportEndpoint:
    """Batch endpoint for ``contention.host.report`` notifications."""

    filter_rule = oslo_messaging.NotificationFilter(
        event_type='^%s$' % report_mod.EVENT_TYPE.replace('.', r'\.'))

    def __init__(self, store):
        self.store = store

    def info(self, messages):
        try:
            return self.handle([m.get('payload') for m in messages])
        except Exception:
            LOG.exception('Unexpected error storing %d reports; requeued',
                          len(messages))
            return REQUEUE

    # Agents publish at INFO; accept SAMPLE too (what meters use).
    sample = info

    def handle(self, payloads):
        """Validate and store ``payloads``; return HANDLED or REQUEUE."""
        valid, rejections = [], {}
        with gc_pause.paused():
            for payload in payloads:
                report, reason = self.validate(payload)
                if report is None:
                    rejections[reason] = rejections.get(reason, 0) + 1
                else:
                    valid.append(report)
        try:
            self.store.ingest(valid, rejections=rejections)
        except DATA_ERRORS:
            return self._one_by_one(valid, rejections)
        except sa_exc.SQLAlchemyError as exc:
            LOG.warning('Store unavailable (%s); %d reports requeued',
                        exc.__class__.__name__, len(payloads))
            return REQUEUE
        return HANDLED

    def validate(self, payload):
        """(HostReport, None) or (None, rejection reason), logged."""
        try:
            return report_mod.HostReport.from_dict(payload), None
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

    def _one_by_one(self, reports, rejections):
        """Store what the database accepts; reject the rest by name."""
        for report in reports:
            try:
                self.store.ingest([report])
            except DATA_ERRORS as exc:
                LOG.warning('Rejected report from %s at %s: the store '
                            'refused it: %s', report.host[:100],
                            report.timestamp, str(exc)[:200])
                rejections['unstorable'] = rejections.get('unstorable',
                                                          0) + 1
        self.store.ingest([], rejections=rejections)
        return HANDLED

"""Publishing host reports without ever blocking the collection loop.

Reports go into a bounded buffer; a background thread sends them, oldest
first, as oslo.messaging notifications (``Notifier`` with the
``messagingv2`` driver, topic ``contention_telemetry``, event type
``contention.host.report``, publisher id ``contention-agent.<host>``).
While the broker is unreachable the sending thread waits inside
oslo.messaging's reconnect loop (``retry=-1``) and the buffer fills; when it
is full the oldest buffered report is dropped and counted. The count is
added, as ``reports_dropped:N``, to the events of the next report that is
actually sent, so the collector learns of every gap even when the reports
collected during the outage were dropped too. The report being sent when
the broker went away is not in the buffer: it is delivered first after
reconnecting.
"""

import collections
import dataclasses
import threading

from oslo_log import log as logging
import oslo_messaging

from contention import report as report_mod

LOG = logging.getLogger(__name__)

#: Event added to the first report sent after drops: "reports_dropped:N".
DROPPED_EVENT = 'reports_dropped'


def make_notifier(transport, host, topic=report_mod.TOPIC):
    return oslo_messaging.Notifier(
        transport, publisher_id='contention-agent.%s' % host,
        driver='messagingv2', topics=[topic], retry=-1)


class Publisher(object):
    """A bounded buffer in front of a notifier, drained by one thread.

    :param send: callable taking a report; blocks until delivered.
    """

    def __init__(self, send, capacity):
        if capacity < 1:
            raise ValueError('buffer capacity must be >= 1, got %r'
                             % (capacity,))
        self._send = send
        self.capacity = capacity
        self._buffer = collections.deque()
        self._cond = threading.Condition()
        self._dropped_unreported = 0
        self.dropped_total = 0
        self.sent_total = 0
        self._sending = False
        self._stopping = False
        self._thread = threading.Thread(target=self._run,
                                        name='contention-publisher',
                                        daemon=True)
        self._thread.start()

    @classmethod
    def for_notifier(cls, notifier, capacity):
        def send(report):
            notifier.info({}, report_mod.EVENT_TYPE, report.to_dict())
        return cls(send, capacity)

    def submit(self, report):
        """Queue ``report``; never blocks. Drops the oldest when full."""
        with self._cond:
            if len(self._buffer) >= self.capacity:
                self._buffer.popleft()
                if not self._dropped_unreported:
                    LOG.warning('Report buffer full (%d): dropping the '
                                'oldest reports until the message broker '
                                'takes them again', self.capacity)
                self._dropped_unreported += 1
                self.dropped_total += 1
            self._buffer.append(report)
            # notify_all: flush() waits on the same condition.
            self._cond.notify_all()

    @property
    def pending(self):
        """Reports not yet delivered (buffered plus the one in flight)."""
        with self._cond:
            return len(self._buffer) + (1 if self._sending else 0)

    def _run(self):
        while True:
            with self._cond:
                while not self._buffer and not self._stopping:
                    self._cond.wait()
                if not self._buffer:
                    return
                report = self._buffer.popleft()
                dropped, self._dropped_unreported = (
                    self._dropped_unreported, 0)
                self._sending = True
            if dropped:
                LOG.warning('%d report(s) were dropped while the broker was '
                            'unreachable', dropped)
                report = dataclasses.replace(
                    report, events=report.events + (
                        '%s:%d' % (DROPPED_EVENT, dropped),))
            try:
                self._send(report)
                self.sent_total += 1
            except Exception:
                # The messagingv2 driver logs and swallows delivery errors;
                # anything reaching here is a bug in serialisation. The
                # report is lost: count it like a dropped one.
                LOG.exception('Could not publish the report of %s at %s',
                              report.host, report.timestamp)
                with self._cond:
                    self._dropped_unreported += 1
                    self.dropped_total += 1
            finally:
                with self._cond:
                    self._sending = False
                    self._cond.notify_all()

    def flush(self, timeout):
        """Wait up to ``timeout`` s until everything queued is sent."""
        with self._cond:
            return self._cond.wait_for(
                lambda: not self._buffer and not self._sending, timeout)

    def stop(self, timeout=5.0):
        """Send what is buffered (up to ``timeout`` s), then end the thread."""
        self.flush(timeout)
        with self._cond:
            self._stopping = True
            left = len(self._buffer) + (1 if self._sending else 0)
            self._cond.notify_all()
        if left:
            LOG.warning('Stopping with %d report(s) not delivered', left)
        self._thread.join(0.1)

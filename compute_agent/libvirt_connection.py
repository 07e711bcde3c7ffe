"""One libvirt connection, reopened with exponential backoff when it drops.

libvirtd restarts (package upgrades, crashes) must not stop the agent: the
collection loop asks :meth:`LibvirtConnection.get` for the connection every
cycle; while libvirt is unreachable it gets :class:`Disconnected` with the
reason and reports the libvirt-based sources as unavailable for that cycle.
Reconnection attempts are spaced by a doubling wait, so a dead libvirtd is
not hammered every interval.
"""

import threading
import time

import libvirt
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

#: libvirt error codes that mean the connection itself is gone, whatever
#: ``isAlive`` says (other errors count only when the connection is dead).
_CONNECTION_ERRORS = frozenset([
    libvirt.VIR_ERR_NO_CONNECT,
    libvirt.VIR_ERR_INVALID_CONN,
])

RECONNECTED = 'libvirt_reconnected'
DISCONNECTED = 'libvirt_disconnected'


def _log_libvirt_error(ctx, err):
    """libvirt-python's error handler: to the debug log, not stderr.

    The default handler prints every libvirt error on stderr ("libvirt:
    error : Perf error ..."), including those the agent expects and
    handles, for every domain and cycle. The same errors reach the agent
    as exceptions, which say what matters in its own log.
    """
    LOG.debug('libvirt: %s', err[2] if err and len(err) > 2 else err)


class Disconnected(Exception):
    """libvirt is unreachable now; the message says why and when to retry."""


class LibvirtConnection(object):
    """Holds the connection to ``uri`` and reopens it when it is lost.

    :param opener: ``libvirt.open`` or a fake taking the URI.
    :param clock: monotonic seconds (injectable for tests).
    """

    def __init__(self, uri, opener=None, clock=time.monotonic,
                 min_wait=1.0, max_wait=60.0):
        self.uri = uri
        self._opener = opener or libvirt.open
        self._clock = clock
        self._min_wait = min_wait
        self._max_wait = max_wait
        self._conn = None
        self._wait = 0.0
        self._next_attempt = 0.0
        self._last_error = None
        self._ever_connected = False
        self._events = []
        self._lock = threading.Lock()
        libvirt.registerErrorHandler(_log_libvirt_error, None)

    def get(self):
        """The open connection; raise :class:`Disconnected` if there is none.

        Tries to (re)open the connection when the backoff wait has passed.
        """
        with self._lock:
            if self._conn is not None:
                return self._conn
            now = self._clock()
            if now < self._next_attempt:
                # The same words every cycle: the loop logs a source's
                # status only when it changes.
                raise Disconnected('cannot connect to libvirt at %s: %s'
                                   % (self.uri, self._last_error))
            try:
                conn = self._opener(self.uri)
            except libvirt.libvirtError as exc:
                self._wait = min(self._max_wait,
                                 max(self._min_wait, self._wait * 2))
                self._next_attempt = now + self._wait
                self._last_error = exc.get_error_message() or str(exc)
                LOG.warning('Cannot connect to libvirt at %(uri)s: %(err)s; '
                            'retrying in %(wait).0f s. Check that libvirtd '
                            'runs and that the agent\'s user may use it '
                            '(group libvirt).',
                            {'uri': self.uri, 'err': self._last_error,
                             'wait': self._wait})
                raise Disconnected('cannot connect to libvirt at %s: %s'
                                   % (self.uri, self._last_error)) from None
            if self._ever_connected:
                LOG.info('Reconnected to libvirt at %s', self.uri)
                self._events.append(RECONNECTED)
            self._ever_connected = True
            self._wait = 0.0
            self._conn = conn
            return conn

    def check_error(self, exc):
        """Drop the connection if ``exc`` means it is gone; True if so."""
        code = exc.get_error_code()
        with self._lock:
            conn = self._conn
            if conn is None:
                return True
            alive = True
            try:
                alive = bool(conn.isAlive())
            except libvirt.libvirtError:
                alive = False
            if alive and code not in _CONNECTION_ERRORS:
                return False
            LOG.warning('Lost the libvirt connection to %(uri)s: %(err)s',
                        {'uri': self.uri, 'err': exc})
            self._conn = None
            self._events.append(DISCONNECTED)
            try:
                conn.close()
            except libvirt.libvirtError:
                pass
            return True

    def pop_events(self):
        """Connection events since the last call (for the host report)."""
        with self._lock:
            events, self._events = self._events, []
            return events

    def close(self):
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                except libvirt.libvirtError:
                    pass
                self._conn = None

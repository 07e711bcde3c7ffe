"""The running agent: the collection timer, the publisher, the RPC server.

Collection runs in the calling thread every ``[agent] interval`` seconds
(measured from the start of one cycle to the next, so a slow cycle does
not shift later ones by its own duration); publishing and RPC run in their
own threads, so neither a dead broker nor a long RPC delays a measurement.
"""

import threading
import time

from oslo_log import log as logging

from compute_agent import loop

LOG = logging.getLogger(__name__)


class AgentService(object):

    def __init__(self, collector, publisher=None, clock=time.monotonic):
        self.collector = collector
        self.publisher = publisher
        self.latest = None
        self._clock = clock
        self._stop = threading.Event()

    def run_once(self):
        """Collect one report, hand it to the publisher, return it."""
        report = self.collector.collect()
        self.latest = report
        if self.publisher is not None:
            self.publisher.submit(report)
        return report

    def run(self):
        """Collect every interval until :meth:`stop`."""
        interval = self.collector.interval
        next_start = self._clock()
        while not self._stop.is_set():
            try:
                self.run_once()
            except loop.NoTopology as exc:
                LOG.warning('No report this cycle: %s', exc)
            except Exception:
                LOG.exception('Collection cycle failed')
            next_start += interval
            now = self._clock()
            if next_start < now:
                # Overran by more than an interval: skip, don't burst.
                next_start = now + interval
            self._stop.wait(next_start - now)

    def stop(self):
        self._stop.set()

"""Stage 2: one agent per emulated host, the bus, the collector, the store.

Every agent is the real :class:`compute_agent.loop.Collector` with the
``sim`` counter source bound to its host of the demo's one shared
simulator, publishing through the real
:class:`compute_agent.publisher.Publisher` (an oslo.messaging
``Notifier``). The collector is the real batch notification listener and
:class:`contention.collector.endpoint.ReportEndpoint` writing to the
store. The transport is oslo.messaging's in-process ``fake://`` driver
unless a URL is given (``rabbit://...``).

Time is the emulated cluster's: :class:`EmulatedClock` advances by the
simulated seconds (an agent interval, or an epoch when the demo runs
one), so the counters and the intervals the agents divide them by always
agree, whatever the wall time.
"""

import re
import time
import uuid as uuidlib

from oslo_config import cfg
import oslo_messaging

from compute_agent import loop
from compute_agent import publisher as publisher_mod
from contention.collector import endpoint as endpoint_mod
from contention.collector import service as collector_service
from contention import report as report_mod
from compute_agent.sources import sim as agent_source


def masked(url):
    """``url`` with any password replaced by ``***``."""
    return re.sub(r'([/,][^:/@,]*:)[^@/,]*@', r'\1***@', url)


class EmulatedClock:
    """Seconds since the epoch on the emulated cluster.

    Starts ``lead_s`` seconds before the wall clock, so that after the
    demo's planned emulated time the reports are about as fresh as a
    real agent's.
    """

    def __init__(self, lead_s):
        self.start = time.time() - lead_s
        self.elapsed = 0.0

    def advance(self, seconds):
        self.elapsed += seconds

    def __call__(self):
        return self.start + self.elapsed


class _ReadOnlyClock:
    """An agent clock that never measures: someone else advances the sim."""

    def step(self, sim, now):
        """Nothing: :meth:`Telemetry.cycle` measured this interval."""


class SharedSimSource(agent_source.SimSource):
    """The ``sim`` source on one host of a simulator the demo owns.

    The demo advances the simulator once per cycle for all hosts
    (:meth:`Telemetry.cycle`); this source only reads it. Were each agent
    to measure too, the counters of one interval would grow N + 1 times
    while the agents divide them by one interval.
    """

    def __init__(self, sim, host_name):
        super().__init__()
        self.sim = sim
        self._host_name = host_name
        self._host = sim.state.host_index[host_name]
        self._clock = _ReadOnlyClock()

    def open(self, conf):
        """Nothing to open: the emulated cluster is already in memory."""


class Telemetry:
    """The agents, the bus and the collector of one demo run."""

    def __init__(self, sim, store, clock, interval_s=10.0,
                 transport_url=None):
        self.sim = sim
        self.store = store
        self.clock = clock
        self.interval_s = interval_s
        self.transport_url = transport_url or 'fake://'
        self.conf = cfg.ConfigOpts()
        self.conf([], project='contention-demo')
        self.transport = oslo_messaging.get_notification_transport(
            self.conf, url=self.transport_url)
        suffix = uuidlib.uuid4().hex[:8]
        # Own topic and pool per run: a shared broker never mixes runs.
        self.topic = '%s_demo_%s' % (report_mod.TOPIC, suffix)
        # The collector judges report times by the emulated clock.
        self.listener = collector_service.make_listener(
            self.transport, endpoint_mod.ReportEndpoint(store, clock=clock),
            self.topic, 'contention-demo-%s' % suffix,
            batch_size=100, batch_timeout=0.1)
        self.agents = []
        self.publishers = []
        for host in sim.state.hosts:
            source = SharedSimSource(sim, host.name)
            self.agents.append(loop.Collector(
                host.name, [source], interval_s, clock=clock,
                nova_cpus=host.model.nova_cpus()))
            notifier = publisher_mod.make_notifier(self.transport, host.name,
                                                   topic=self.topic)
            self.publishers.append(publisher_mod.Publisher.for_notifier(
                notifier, capacity=60))
        self.published = 0

    def start(self):
        self.listener.start()

    def cycle(self):
        """One collection interval on every host: measure, collect, publish."""
        dt = self.interval_s
        self.clock.advance(dt)
        self.sim.measure(self.clock.elapsed - dt / 2.0, dt)
        for agent, pub in zip(self.agents, self.publishers):
            pub.submit(agent.collect())
            self.published += 1

    def run(self, cycles, timeout_s=60.0):
        """``cycles`` intervals, then wait until the store has them all."""
        for _ in range(cycles):
            self.cycle()
        for pub in self.publishers:
            if not pub.flush(timeout_s):
                raise RuntimeError('the message bus (%s) did not take the '
                                   'reports within %.0f s'
                                   % (masked(self.transport_url),
                                      timeout_s))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            stored = self.stored()
            if stored >= self.published:
                return stored
            time.sleep(0.05)
        raise RuntimeError('the collector stored %d of %d reports within '
                           '%.0f s' % (self.stored(), self.published,
                                       timeout_s))

    def stored(self):
        counts = self.store.ingestion_counters()
        return sum(v for k, v in counts.items()
                   if k in ('accepted', 'stale', 'duplicates')
                   or k.startswith('rejected'))

    def rejected(self):
        return {k: v for k, v in self.store.ingestion_counters().items()
                if k.startswith('rejected')}

    def stop(self):
        for pub in self.publishers:
            pub.stop(timeout=5.0)
        self.listener.stop()
        self.listener.wait()
        self.transport.cleanup()

"""The bounded, non-blocking publisher and the agent service around it."""

import dataclasses
import threading

from oslotest import base

from compute_agent import publisher as publisher_mod
from compute_agent import service
from tests.unit.fixtures import example_report

WAIT = 10.0


_EXAMPLE = []


def _report(n):
    if not _EXAMPLE:
        _EXAMPLE.append(example_report.example_report())   # slow to build
    return dataclasses.replace(_EXAMPLE[0], timestamp=1000.0 + n)


class _Broker(object):
    """A send() that blocks while the broker is 'down'."""

    def __init__(self):
        self.up = threading.Event()
        self.up.set()
        self.sending = threading.Event()
        self.received = []
        self.fail = False

    def send(self, report):
        self.sending.set()
        if not self.up.wait(WAIT):
            raise AssertionError('broker never came back')
        if self.fail:
            raise TypeError('not serialisable')
        self.received.append(report)


class TestPublisher(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.broker = _Broker()

    def publisher(self, capacity):
        pub = publisher_mod.Publisher(self.broker.send, capacity)
        self.addCleanup(pub.stop, 0)
        return pub

    def test_sends_in_order(self):
        pub = self.publisher(5)
        for n in range(4):
            pub.submit(_report(n))
        self.assertTrue(pub.flush(WAIT))
        self.assertEqual([1000.0, 1001.0, 1002.0, 1003.0],
                         [r.timestamp for r in self.broker.received])
        self.assertEqual((4, 0), (pub.sent_total, pub.dropped_total))
        self.assertEqual(0, pub.pending)

    def test_full_buffer_drops_oldest_counts_and_never_blocks(self):
        pub = self.publisher(3)
        self.broker.up.clear()
        pub.submit(_report(0))          # in flight when the broker died
        self.assertTrue(self.broker.sending.wait(WAIT))
        for n in range(1, 11):          # returns at once although down
            pub.submit(_report(n))
        self.assertEqual(4, pub.pending)
        self.assertEqual(7, pub.dropped_total)
        self.broker.up.set()
        self.assertTrue(pub.flush(WAIT))
        got = self.broker.received
        self.assertEqual([1000.0, 1008.0, 1009.0, 1010.0],
                         [r.timestamp for r in got])
        # The first report sent after the drops carries their count.
        self.assertEqual(('reports_dropped:7',),
                         got[1].events[-1:])
        self.assertFalse(any(e.startswith('reports_dropped')
                             for r in (got[0], got[2], got[3])
                             for e in r.events))
        self.assertEqual(11, pub.sent_total + pub.dropped_total)

    def test_drops_during_a_blocked_send_go_with_the_next(self):
        pub = self.publisher(1)
        self.broker.up.clear()
        pub.submit(_report(0))
        self.assertTrue(self.broker.sending.wait(WAIT))
        for n in range(1, 4):
            pub.submit(_report(n))
        self.broker.up.set()
        self.assertTrue(pub.flush(WAIT))
        counts = [e for r in self.broker.received for e in r.events
                  if e.startswith('reports_dropped')]
        self.assertEqual(['reports_dropped:2'], counts)

    def test_failed_send_is_counted_as_dropped(self):
        pub = self.publisher(5)
        self.broker.fail = True
        pub.submit(_report(0))
        self.assertTrue(pub.flush(WAIT))
        self.broker.fail = False
        pub.submit(_report(1))
        self.assertTrue(pub.flush(WAIT))
        self.assertEqual(1, pub.dropped_total)
        self.assertIn('reports_dropped:1',
                      self.broker.received[0].events)

    def test_capacity_must_be_positive(self):
        self.assertRaises(ValueError, publisher_mod.Publisher,
                          self.broker.send, 0)

    def test_stop_sends_what_is_buffered(self):
        pub = publisher_mod.Publisher(self.broker.send, 5)
        pub.submit(_report(0))
        pub.submit(_report(1))
        pub.stop(WAIT)
        self.assertEqual(2, len(self.broker.received))


class _Collector(object):
    interval = 0.01

    def __init__(self, fail_first=0):
        self.count = 0
        self.fail_first = fail_first

    def collect(self):
        self.count += 1
        if self.count <= self.fail_first:
            raise RuntimeError('cycle failed')
        return _report(self.count)


class TestAgentService(base.BaseTestCase):

    def test_run_once_publishes_and_keeps_the_latest(self):
        broker = _Broker()
        pub = publisher_mod.Publisher(broker.send, 5)
        self.addCleanup(pub.stop, 0)
        agent = service.AgentService(_Collector(), pub)
        report = agent.run_once()
        self.assertIs(report, agent.latest)
        self.assertTrue(pub.flush(WAIT))
        self.assertEqual([report], broker.received)

    def test_run_survives_failed_cycles_until_stopped(self):
        collector = _Collector(fail_first=2)
        agent = service.AgentService(collector)
        thread = threading.Thread(target=agent.run)
        thread.start()
        self.addCleanup(thread.join, WAIT)
        self.addCleanup(agent.stop)
        for _ in range(1000):
            if agent.latest is not None:
                break
            threading.Event().wait(0.01)
        agent.stop()
        thread.join(WAIT)
        self.assertFalse(thread.is_alive())
        self.assertGreater(collector.count, 2)
        self.assertIsNotNone(agent.latest)

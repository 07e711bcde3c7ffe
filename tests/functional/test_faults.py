"""The fault suite (``tox -e faults``): issue 21's faults and attacks.

Each test breaks something of its own, never the machine's services: the
database is cut through :class:`~tests.functional.tcp_proxy.CuttableProxy`
in front of a throwaway PostgreSQL database, the broker restarts are on a
private node (``test_agent_rabbit.TestBrokerRestart``), and the fuzzers
write to a throwaway PostgreSQL database as well as SQLite. Every test
prints what it measured (``FAULT <name>: ...``), the figures
``doc/reliability.md`` quotes.
"""

import json
import time

import hypothesis
from oslotest import base
import sqlalchemy as sa

from contention.collector import endpoint
from contention import store as store_mod
from tests.functional import services
from tests.functional import tcp_proxy
from tests.functional import test_collector
from tests.unit.contention.collector import test_endpoint
from tests.unit.contention.store import reports

WAIT = 60.0


def measured(name, **figures):
    print('FAULT %s: %s' % (name, json.dumps(figures, sort_keys=True)))


class TestDatabaseCut(test_collector.CollectorTestCase):
    """The database goes away for OUTAGE_S while agents keep publishing."""

    OUTAGE_S = 20.0

    def test_nothing_is_lost_and_retries_back_off(self):
        url = sa.engine.make_url(self.db.url)
        proxy = self.useFixture(tcp_proxy.CuttableProxy(
            (url.host or '127.0.0.1', url.port or 5432)))
        proxied = url.set(host='127.0.0.1', port=proxy.port).render_as_string(
            hide_password=False)
        store = store_mod.open_store(proxied, sample_interval_s=0)
        self.addCleanup(store.dispose)
        collector = self.start_collector(store)
        requeues = []
        real_handle = collector.endpoint.handle

        def counting(*args, **kwargs):
            result = real_handle(*args, **kwargs)
            if result == endpoint.REQUEUE:
                requeues.append(time.monotonic())
            return result
        collector.endpoint.handle = counting

        def publish(first, n):
            for i in range(first, first + n):
                self.bus.publish(reports.host_report(
                    'h%03d' % (i % 50), 1000 + i).to_dict())
        publish(0, 50)
        test_collector.wait_for(
            lambda: test_collector.stored(self.store) == 50, '50 stored')
        proxy.cut()
        cut_at = time.monotonic()
        publish(50, 100)            # during the outage
        time.sleep(self.OUTAGE_S)
        proxy.restore()
        test_collector.wait_for(
            lambda: test_collector.stored(self.store) == 150,
            'the reports of the outage', timeout=WAIT + 30)
        counters = self.store.ingestion_counters()
        # Redelivered batches can arrive out of order: some count stale,
        # stored all the same; none rejected, none lost, none twice.
        self.assertLessEqual(set(counters), {'accepted', 'stale'})
        self.assertEqual(150, sum(counters.values()))
        self.assertEqual(150, len(self.store.training_samples()))
        during = [t for t in requeues if t - cut_at < self.OUTAGE_S]
        # Without backoff: about 4 a second (80 in 20 s).
        self.assertLess(len(during), 15)
        measured('database_cut', outage_s=self.OUTAGE_S, published=150,
                 stored=test_collector.stored(self.store),
                 requeues_during_outage=len(during), counters=counters)


class TestHostileOverTheBroker(test_collector.CollectorTestCase):
    """Forged, impossible and future reports sent through the real bus."""

    def test_refused_and_counted_nothing_stored(self):
        self.start_collector(self.store)
        now = time.time()
        honest = reports.host_report('h1', now, [reports.instance('u1')])
        huge = reports.host_report('h2', now, [reports.instance(
            'u2', mpki=1e300)])
        ahead = reports.host_report('h3', now + 86400)
        self.bus.publish(huge.to_dict())
        self.bus.publish(ahead.to_dict())
        self.bus.publish(honest.to_dict(), publisher='contention-agent.h9')
        self.bus.publish(honest.to_dict())
        test_collector.wait_for(
            lambda: sum(self.store.ingestion_counters().values()) >= 4,
            'four reports handled')
        counters = self.store.ingestion_counters()
        self.assertEqual({'accepted': 1, 'rejected:out_of_bounds': 1,
                          'rejected:future': 1, 'rejected:sender': 1},
                         counters)
        self.assertEqual(['h1'], list(self.store.latest_reports()))
        self.assertEqual(1.0, self.store.image_profile('image-a').mpki)
        measured('hostile_reports', counters=counters)


class TestFuzzOnPostgreSQL(base.BaseTestCase):
    """The endpoint fuzzers of the unit tests, on PostgreSQL."""

    def setUp(self):
        super().setUp()
        db = self.useFixture(services.PostgresDatabase())
        self.store = store_mod.open_store(db.url)
        self.addCleanup(self.store.dispose)
        self.store.upgrade()
        self.endpoint = endpoint.ReportEndpoint(self.store)
        self.addCleanup(lambda: measured(
            'fuzz_postgresql_' + self._testMethodName,
            counters=self.store.ingestion_counters()))

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(test_endpoint.mutated_reports())
    def test_mutated_reports(self, payload):
        before = sum(self.store.ingestion_counters().values())
        result = self.endpoint.info([test_endpoint.message(payload)])
        self.assertEqual(endpoint.HANDLED, result)
        after = self.store.ingestion_counters()
        # Each report is counted once: stored, duplicate or rejected.
        self.assertEqual(before + 1, sum(after.values()), after)
        # Nothing stored lies outside the bounds (issue 21 item 2).
        with self.store.engine.connect() as conn:
            top = conn.execute(sa.text(
                'SELECT max(mpki) FROM image_host_profiles')).scalar()
        self.assertTrue(top is None or top <= 1e4, top)

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(hypothesis.strategies.lists(
        test_endpoint.json_junk, min_size=1, max_size=3))
    def test_arbitrary_json(self, payloads):
        result = self.endpoint.info([test_endpoint.message(p)
                                     for p in payloads])
        self.assertEqual(endpoint.HANDLED, result)
        self.assertEqual({}, self.store.latest_reports())

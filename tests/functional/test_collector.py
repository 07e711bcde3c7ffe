"""The collector on the real RabbitMQ and PostgreSQL on localhost.

Reports are published the way the agent publishes them (an
oslo.messaging ``Notifier``, driver ``messagingv2``) on a topic and pool
unique to each test, so tests running at the same time on the shared
broker never see each other's messages; the queues are deleted afterwards.
Every wait is bounded: a collector that never stores fails the test
instead of hanging it.
"""

import os
import signal
import subprocess
import sys
import time
import uuid

import fixtures
import kombu
from oslo_config import cfg
import oslo_messaging
from oslotest import base

from compute_agent import publisher as publisher_mod
from contention.collector import opts
from contention.collector import service
from contention import report as report_mod
from contention import telemetry_bus
from contention.store import open_store
from tests.functional import private_broker
from tests.functional import services
from tests.unit.contention.store import reports

WAIT = 30.0
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def wait_for(predicate, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError('timed out after %.0f s waiting for %s'
                                 % (timeout, what))
        time.sleep(0.05)


def read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except FileNotFoundError:
        return ''


def stored(store):
    """Reports the store has taken in (new ones, latest or not)."""
    counters = store.ingestion_counters()
    return counters.get('accepted', 0) + counters.get('stale', 0)


class Bus(fixtures.Fixture):
    """A topic and pool of our own on the shared broker, and a notifier."""

    def _setUp(self):
        suffix = uuid.uuid4().hex[:12]
        self.topic = 'contention_telemetry_test_%s' % suffix
        self.pool = 'contention-collector-test-%s' % suffix
        # The agent's side of the bus: its exchange and durability.
        self.conf = cfg.ConfigOpts()
        telemetry_bus.register(self.conf)
        self.conf([], project='contention')
        self.conf.set_override('transport_url', services.RABBIT_URL)
        self.transport = telemetry_bus.notification_transport(self.conf)
        self.addCleanup(self.transport.cleanup)
        self.addCleanup(self._delete_queues)
        self.notifier = oslo_messaging.Notifier(
            self.transport, publisher_id='contention-agent.test',
            driver='messagingv2', topics=[self.topic], retry=3)

    def publish(self, payload, publisher=None):
        """Publish as the report's host's agent (or as ``publisher``)."""
        if publisher is None and isinstance(payload.get('host'), str):
            publisher = 'contention-agent.%s' % payload['host']
        notifier = (self.notifier if publisher is None
                    else self.notifier.prepare(publisher_id=publisher))
        notifier.info({}, report_mod.EVENT_TYPE, payload)

    def _delete_queues(self):
        # oslo.messaging declares durable queues that outlive the test:
        # the notifier's default one and the listener pool's.
        url = services.RABBIT_URL.replace('rabbit://', 'amqp://', 1)
        with kombu.Connection(url) as conn:
            channel = conn.channel()
            for queue in (self.pool, '%s.info' % self.topic,
                          '%s.sample' % self.topic):
                channel.queue_delete(queue)
            channel.close()


def children(pid):
    """Worker processes started by ``pid`` (from /proc).

    Only multiprocessing's spawned workers, not its resource tracker.
    """
    found = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as fh:
                stat = fh.read()
            with open('/proc/%s/cmdline' % name, 'rb') as fh:
                cmdline = fh.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces.
        if (int(stat.rsplit(')', 1)[1].split()[1]) == pid
                and b'spawn_main' in cmdline):
            found.append(int(name))
    return sorted(found)


class CollectorTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(services.PostgresDatabase())
        self.bus = self.useFixture(Bus())
        self.store = self.open_store()
        self.store.upgrade()

    def open_store(self):
        # Every report's instances sampled: the tests read them back.
        store = open_store(self.db.url, sample_interval_s=0)
        self.addCleanup(store.dispose)
        return store

    def start_collector(self, store, pool=True):
        """An in-process collector in this test's pool (or none: default).

        It has its own connection to the broker, as a second process would.
        """
        conf = cfg.ConfigOpts()
        opts.register(conf)
        conf([], project='contention')
        conf.set_override('topic', self.bus.topic, group='collector')
        if pool:
            conf.set_override('pool', self.bus.pool, group='collector')
        conf.set_override('batch_timeout', 0.05, group='collector')
        conf.set_override('transport_url', services.RABBIT_URL)
        transport = telemetry_bus.notification_transport(conf)
        self.addCleanup(transport.cleanup)
        collector = service.CollectorService(conf, store, transport)
        collector.start()
        self.addCleanup(collector.stop)
        return collector

    def config_file(self, tmp):
        path = os.path.join(tmp, 'collector.conf')
        with open(path, 'w') as fh:
            fh.write('[DEFAULT]\ntransport_url = %s\nlog_file = %s\n'
                     '[store]\nconnection = %s\n'
                     'instance_sample_interval = 0\n'
                     '[collector]\ntopic = %s\npool = %s\n'
                     'batch_timeout = 0.05\n'
                     % (services.RABBIT_URL, os.path.join(tmp, 'log'),
                        self.db.url, self.bus.topic, self.bus.pool))
        return path

    def spawn(self, *args):
        """A Python child process; its stderr is in ``proc.errors()``."""
        err = self.useFixture(fixtures.TempDir()).join('stderr')
        with open(err, 'w') as fh:
            proc = subprocess.Popen([sys.executable] + list(args), cwd=REPO,
                                    stdout=subprocess.DEVNULL, stderr=fh)

        def errors():
            with open(err) as fh:
                return fh.read()[-3000:]
        proc.errors = errors

        def reap():
            if proc.poll() is None:
                proc.kill()
            proc.wait(WAIT)
        self.addCleanup(reap)
        return proc


class TestCollector(CollectorTestCase):

    def test_cli_stores_what_agents_publish(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        conf = self.config_file(tmp)
        # A fresh database, migrated by the command line.
        self.store.downgrade('base')
        upgrade = self.spawn('-m', 'contention.collector.cmd',
                             '--config-file', conf, '--upgrade-db')
        code = upgrade.wait(WAIT)
        self.assertEqual(0, code, upgrade.errors())
        self.assertIsNotNone(self.store.schema_revision())

        proc = self.spawn('-m', 'contention.collector.cmd',
                          '--config-file', conf)
        log = os.path.join(tmp, 'log')
        wait_for(lambda: 'Collecting host reports' in read(log)
                 or proc.poll() is not None, 'the collector to listen')
        self.assertIsNone(proc.poll(), proc.errors())
        first = reports.host_report('c1', 100, [
            reports.instance('i-1', mpki=4.0)])
        newer = reports.host_report('c1', 110, [
            reports.instance('i-1', mpki=8.0)])
        other = reports.host_report('c2', 105, [
            reports.instance('i-2', image_id='image-b')])
        bad = dict(newer.to_dict(), host='c3', interval_s='soon')
        for rep in (first, newer, other):
            self.bus.publish(rep.to_dict())
        self.bus.publish(bad)
        wait_for(lambda: sum(self.store.ingestion_counters().values()) >= 4,
                 'four reports handled')

        latest = self.store.latest_reports()
        self.assertEqual({'c1': newer, 'c2': other}, latest)
        self.assertEqual([4.0, 8.0], [
            s.mpki for s in self.store.instance_history('i-1')])
        self.assertEqual(1, self.store.image_profile('image-b').samples)
        counters = self.store.ingestion_counters()
        self.assertEqual(1, counters['rejected:invalid'])
        self.assertEqual(3, counters.get('accepted', 0)
                         + counters.get('stale', 0))
        self.assertIn('Rejected report from c3: report.interval_s',
                      read(log))

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, proc.wait(WAIT))

    def test_default_settings_leave_no_unread_queue(self):
        # Issue 21 item 1: with a listener pool by default, the notifier's
        # own <topic>.info queue filled with every report and nobody read
        # it (34 MB in 4 minutes of four agents).
        self.start_collector(self.store, pool=False)
        for i in range(20):
            self.bus.publish(reports.host_report('h%d' % i, 100).to_dict())
        wait_for(lambda: stored(self.store) >= 20, 'twenty reports stored')
        url = services.RABBIT_URL.replace('rabbit://', 'amqp://', 1)
        with kombu.Connection(url) as conn:
            channel = conn.channel()
            left = channel.queue_declare('%s.info' % self.bus.topic,
                                         passive=True).message_count
            channel.close()
        self.assertEqual(0, left)

    def test_sigterm_stops_it_while_the_broker_is_unreachable(self):
        # Issue 21 item 8: it ignored SIGTERM for over 10 minutes.
        tmp = self.useFixture(fixtures.TempDir()).path
        conf = self.config_file(tmp)
        with open(conf) as fh:
            text = fh.read()
        with open(conf, 'w') as fh:
            fh.write(text.replace(services.RABBIT_URL,
                                  'rabbit://guest:guest@127.0.0.1:%d/'
                                  % private_broker.free_port()))
        proc = self.spawn('-m', 'contention.collector.cmd',
                          '--config-file', conf)
        log = os.path.join(tmp, 'log')
        wait_for(lambda: 'Starting the listener' in read(log)
                 or proc.poll() is not None,
                 'the collector to start its listener', timeout=60)
        time.sleep(3)           # in the broker's reconnect loop now
        self.assertIsNone(proc.poll(), proc.errors())
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, proc.wait(WAIT))
        took = time.monotonic() - start
        self.assertLess(took, 10.0)
        print('FAULT sigterm_broker_unreachable: {"exit_s": %.1f}' % took)

    def test_workers_store_each_report_once_and_a_dead_one_is_restarted(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        conf = self.config_file(tmp)
        with open(conf, 'a') as fh:
            fh.write('workers = 2\n')
        log = os.path.join(tmp, 'log')
        proc = self.spawn('-m', 'contention.collector.cmd',
                          '--config-file', conf)
        wait_for(lambda: read(log).count('Collecting host reports') == 2
                 or proc.poll() is not None, 'two workers to listen')
        self.assertIsNone(proc.poll(), proc.errors())
        workers = children(proc.pid)
        self.assertEqual(2, len(workers))

        def publish(first, n):
            for i in range(first, first + n):
                self.bus.publish(reports.host_report('h%d' % i, 100).to_dict())
        publish(0, 40)
        wait_for(lambda: stored(self.store) == 40, '40 reports stored')

        os.kill(workers[0], signal.SIGKILL)
        wait_for(lambda: read(log).count('Collecting host reports') == 3,
                 'the dead worker to be replaced')
        self.assertEqual(2, len(children(proc.pid)))
        self.assertIn('exited with -9; restarting it', read(log))
        publish(40, 20)
        wait_for(lambda: stored(self.store) == 60, '60 reports stored')
        counters = self.store.ingestion_counters()
        # Reports the killed worker had stored but not yet acknowledged
        # come back and count as duplicates: stored once all the same.
        self.assertEqual(60, counters['accepted'])
        self.assertLessEqual(set(counters), {'accepted', 'duplicates'})

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, proc.wait(WAIT))
        self.assertEqual([], children(proc.pid))

    def test_two_collectors_in_one_pool_store_each_report_once(self):
        counts = []
        for _ in range(2):
            store = self.open_store()
            real, seen = store.ingest, []

            def ingest(batch, *args, _real=real, _seen=seen, **kwargs):
                _seen.append(len(batch))
                return _real(batch, *args, **kwargs)
            store.ingest = ingest
            counts.append(seen)
            self.start_collector(store)
        published = [reports.host_report('h%02d' % (i % 20), 100 + i, [
            reports.instance('u%02d' % (i % 20))]) for i in range(60)]
        for rep in published:
            self.bus.publish(rep.to_dict())
        # The agent resending a report it was not sure went out.
        self.bus.publish(published[0].to_dict())
        wait_for(lambda: sum(self.store.ingestion_counters().values()) >= 61,
                 'all reports handled')

        counters = self.store.ingestion_counters()
        # 'stale' counts reports one collector stored after the other
        # had stored a newer one of the same host: timing, not an error.
        self.assertLessEqual(set(counters), {'accepted', 'duplicates',
                                             'stale'})
        self.assertEqual(1, counters['duplicates'])
        self.assertEqual(60, stored(self.store))
        self.assertEqual(60, len(self.store.training_samples()))
        for i in range(20):
            self.assertEqual(3, len(self.store.host_history('h%02d' % i)))
        latest = self.store.latest_reports()
        self.assertEqual(20, len(latest))
        self.assertEqual(159.0, latest['h19'].timestamp)
        # Both collectors took part (the broker shares a pool's queue).
        self.assertTrue(all(sum(seen) for seen in counts), counts)

    def test_collector_killed_before_commit_loses_nothing(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        ready = os.path.join(tmp, 'ready')
        received = os.path.join(tmp, 'received')
        child = self.spawn('-m', 'tests.functional.collector_child',
                           self.config_file(tmp), ready, received)
        wait_for(lambda: os.path.exists(ready) or child.poll() is not None,
                 'the doomed collector to listen')
        if child.poll() is not None:
            self.fail('the collector exited: %s' % child.errors())
        rep = reports.host_report('k1', 100, [reports.instance('i-k')])
        self.bus.publish(rep.to_dict())
        wait_for(lambda: os.path.exists(received),
                 'the doomed collector to receive the report')
        # Inserted in its transaction, not committed: invisible.
        self.assertEqual({}, self.store.latest_reports())

        child.kill()
        child.wait(WAIT)
        self.start_collector(self.open_store())
        wait_for(lambda: stored(self.store), 'the redelivered report')

        self.assertEqual({'k1': rep}, self.store.latest_reports())
        self.assertEqual(1, len(self.store.host_history('k1')))
        self.assertEqual(1, len(self.store.instance_history('i-k')))
        self.assertEqual({'accepted': 1}, self.store.ingestion_counters())
        self.assertEqual(1, self.store.image_profile('image-a').samples)
        print('FAULT kill9_mid_batch: {"published": 1, "stored_once": 1}')


class TestDurableTelemetry(base.BaseTestCase):
    """Issue 21 item 8: reports queued on the broker when it stops.

    Agents publish on the broker while no collector reads, the broker
    restarts (a node of the test's own), then a collector starts: with the
    default ``[telemetry] durable`` every report is stored; without it the
    queue, and what it held, is gone.
    """

    REPORTS = 5

    def setUp(self):
        super().setUp()
        self.broker = private_broker.start_for(self)
        tmp = self.useFixture(fixtures.TempDir()).path
        self.store = open_store('sqlite:///%s' % os.path.join(tmp, 'db'),
                                sample_interval_s=0)
        self.addCleanup(self.store.dispose)
        self.store.upgrade()

    def conf(self, durable):
        conf = cfg.ConfigOpts()
        opts.register(conf)
        conf([], project='contention')
        conf.set_override('transport_url', self.broker.url)
        conf.set_override('batch_timeout', 0.05, group='collector')
        if durable is not None:
            conf.set_override('durable', durable, group='telemetry')
        return conf

    def publish_and_restart(self, conf):
        """Publish as the agents do, then restart the broker.

        Returns the broker's exchanges before the restart and its queues
        after it, as ``rabbitmqctl`` lines.
        """
        transport = telemetry_bus.notification_transport(conf)
        for i in range(self.REPORTS):
            host = 'd%d' % i
            notifier = publisher_mod.make_notifier(transport, host)
            notifier.info({}, report_mod.EVENT_TYPE,
                          reports.host_report(host, 100).to_dict())
        transport.cleanup()
        exchanges = self.broker.ctl('list_exchanges', 'name',
                                    'durable').stdout.splitlines()
        self.broker.stop_app()
        self.broker.start_app()
        queues = self.broker.ctl('list_queues', 'name', 'durable',
                                 'messages').stdout.splitlines()
        return exchanges, queues

    def test_reports_queued_at_a_broker_restart_are_stored(self):
        conf = self.conf(durable=None)      # the default
        exchanges, queues = self.publish_and_restart(conf)
        self.assertIn('%s\ttrue' % telemetry_bus.EXCHANGE, exchanges)
        self.assertIn('%s.info\ttrue\t%d' % (report_mod.TOPIC, self.REPORTS),
                      queues)
        collector = service.CollectorService(conf, self.store)
        collector.start()
        self.addCleanup(collector.stop)
        wait_for(lambda: stored(self.store) >= self.REPORTS,
                 'the reports queued before the restart')
        self.assertEqual(self.REPORTS, stored(self.store))
        print('FAULT broker_restart_durable: {"queued": %d, "stored": %d}'
              % (self.REPORTS, stored(self.store)))

    def test_without_durability_they_are_lost(self):
        exchanges, queues = self.publish_and_restart(self.conf(False))
        self.assertIn('%s\tfalse' % telemetry_bus.EXCHANGE, exchanges)
        self.assertFalse([q for q in queues
                          if q.startswith(report_mod.TOPIC + '.info\t')],
                         queues)

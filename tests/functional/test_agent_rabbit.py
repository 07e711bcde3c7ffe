"""The agent over a real RabbitMQ.

Every test uses its own topic (uuid suffix) so that engineers sharing the
machine's broker never see each other's messages. The broker-restart test
stops a RabbitMQ node it starts itself (:mod:`tests.functional.
private_broker`), never the machine's.
"""

import io
import json
import os
import queue
import subprocess
import threading
import time
import uuid

import fixtures
from oslo_config import cfg
import oslo_messaging

from compute_agent import actions
from compute_agent import cmd
from compute_agent import publisher as publisher_mod
from compute_agent import rpc
from compute_agent import service
from contention import agent_rpc
from contention import report as report_mod
from contention import telemetry_bus
from tests.functional import agent_base
from tests.functional import private_broker
from tests.functional import services

WAIT = 60.0


class _Listener(object):
    """Notification endpoint collecting host reports."""

    def __init__(self):
        self.reports = queue.Queue()
        self.errors = []

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        try:
            report = report_mod.HostReport.from_dict(payload)
        except Exception as exc:     # record, do not requeue forever
            self.errors.append(exc)
            return
        self.reports.put((publisher_id, event_type, report))

    def get(self, timeout=WAIT):
        return self.reports.get(timeout=timeout)


def _rabbitmqctl(*args):
    return subprocess.run(['rabbitmqctl'] + list(args), capture_output=True,
                          text=True, timeout=120)


class RabbitCase(agent_base.TestDriverCase):

    def broker_url(self):
        """The shared broker; tests that break theirs start their own."""
        return services.RABBIT_URL

    def setUp(self):
        super().setUp()
        self.topic = 'contention_telemetry_test_%s' % uuid.uuid4().hex[:12]
        self.url = self.broker_url()
        self.conf.set_override('transport_url', self.url)
        self.transport = telemetry_bus.notification_transport(self.conf)
        self.addCleanup(self.transport.cleanup)
        self.listener = _Listener()
        # No pool: the listener consumes the topic's default queue, the one
        # the notifier declares before publishing. A pool's own queue is
        # not durable, and after a broker restart reports published before
        # the listener has declared it again would bypass it.
        server = oslo_messaging.get_notification_listener(
            self.transport, [oslo_messaging.Target(topic=self.topic)],
            [self.listener], executor='threading')
        self.addCleanup(self.delete_queues, self.topic + '.info')
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)

    def delete_queues(self, *names):
        """Leave the shared broker as we found it (queues are named by us)."""
        if self.url != services.RABBIT_URL:
            return      # a private node, discarded with its data
        for name in names:
            _rabbitmqctl('delete_queue', name)

    def agent(self, buffer_size=60, interval=10.0):
        self.conf.set_override('interval', interval, 'agent')
        collector, local = cmd.build(self.conf)
        self.addCleanup(collector.close)
        notifier = publisher_mod.make_notifier(self.transport, self.host,
                                               topic=self.topic)
        publisher = publisher_mod.Publisher.for_notifier(notifier,
                                                         buffer_size)
        self.addCleanup(publisher.stop, 0)
        return service.AgentService(collector, publisher), local


class TestPublish(RabbitCase):

    def test_listener_receives_a_valid_report(self):
        dom = self.define()
        agent, _ = self.agent()
        sent = agent.run_once()
        publisher_id, event_type, report = self.listener.get()
        self.assertEqual([], self.listener.errors)
        self.assertEqual('contention-agent.%s' % self.host, publisher_id)
        self.assertEqual(report_mod.EVENT_TYPE, event_type)
        self.assertEqual(sent, report)
        self.assertIn(dom.UUIDString(), [r.uuid for r in report.instances])


class TestOnceCommandPublishes(RabbitCase):

    def test_once_publishes_on_the_configured_topic(self):
        config = os.path.join(self.tmp, 'agent.conf')
        with open(config, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = %s\n'
                    '[agent]\nhost = %s\nnotification_topic = %s\n'
                    'sources = libvirt\nlibvirt_uri = %s\n'
                    % (services.RABBIT_URL, self.host, self.topic,
                       agent_base.TEST_URI))
        out = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out))
        self.useFixture(fixtures.MonkeyPatch(
            'compute_agent.cmd.logging.setup', lambda *a, **k: None))
        conf = cfg.ConfigOpts()
        self.assertEqual(0, cmd.main(['--config-file', config, '--once'],
                                     conf=conf))
        # Sent gzip-compressed ([agent] compress_reports); the listener's
        # transport decompresses.
        self.assertEqual('gzip', conf.oslo_messaging_rabbit.kombu_compression)
        printed = report_mod.HostReport.from_dict(json.loads(out.getvalue()))
        publisher_id, _, report = self.listener.get()
        self.assertEqual('contention-agent.%s' % self.host, publisher_id)
        self.assertEqual(printed, report)


class TestBrokerRestart(RabbitCase):
    """Issue 21 defect 9: the broker stopped is the test's own node."""

    OUTAGE_S = 4.0
    INTERVAL_S = 0.5
    BUFFER = 3

    def broker_url(self):
        self.broker = private_broker.start_for(self)
        return self.broker.url

    def test_reports_buffered_dropped_and_counted(self):
        self.define()
        agent, _ = self.agent(buffer_size=self.BUFFER,
                              interval=self.INTERVAL_S)
        collected = []
        run_once = agent.run_once

        def counting_run_once():
            report = run_once()
            collected.append(report.timestamp)
            return report
        agent.run_once = counting_run_once
        thread = threading.Thread(target=agent.run, daemon=True)
        thread.start()
        self.addCleanup(thread.join, WAIT)
        self.addCleanup(agent.stop)
        received = [self.listener.get()[2]]     # the broker is up

        self.broker.stop_app()
        outage_start = time.time()
        time.sleep(self.OUTAGE_S)
        self.broker.start_app()
        outage_end = time.time()

        # Collection went on during the outage, without crashing.
        self.assertTrue(thread.is_alive())
        during = [t for t in collected if outage_start < t < outage_end]
        self.assertGreater(len(during), self.BUFFER + 1)

        agent.stop()
        thread.join(WAIT)
        self.assertFalse(thread.is_alive())
        publisher = agent.publisher
        self.assertTrue(publisher.flush(WAIT), 'reports left unsent')
        total = len(collected)
        deadline = time.time() + WAIT
        while (len(received) + publisher.dropped_total < total
               and time.time() < deadline):
            try:
                received.append(self.listener.get(timeout=1)[2])
            except queue.Empty:
                pass
        self.assertEqual([], self.listener.errors)
        stamps = [r.timestamp for r in received]
        self.assertEqual(len(stamps), len(set(stamps)), 'duplicates')
        # Buffered reports collected during the outage arrived after it.
        self.assertTrue(any(outage_start < t < outage_end for t in stamps),
                        'outage %.1f-%.1f, collected %s, received %s, '
                        'dropped %d' % (outage_start, outage_end, collected,
                                        sorted(stamps),
                                        publisher.dropped_total))
        # Every report was either delivered or dropped and counted, and
        # the counts the collector sees add up to the publisher's.
        self.assertGreater(publisher.dropped_total, 0)
        self.assertEqual(total, len(received) + publisher.dropped_total)
        counted = sum(int(e.split(':')[1]) for r in received
                      for e in r.events
                      if e.startswith(publisher_mod.DROPPED_EVENT + ':'))
        self.assertEqual(publisher.dropped_total, counted)
        print('FAULT broker_restart: %s' % json.dumps({
            'outage_s': round(outage_end - outage_start, 1),
            'collected': total, 'delivered': len(received),
            'dropped_and_counted': publisher.dropped_total,
            'buffer': self.BUFFER}, sort_keys=True))


class TestRpc(RabbitCase):

    def _rpc_transport(self, control_exchange):
        conf = cfg.ConfigOpts()
        telemetry_bus.register_messaging_opts(conf)
        conf([])
        conf.set_override('control_exchange', control_exchange)
        transport = oslo_messaging.get_rpc_transport(
            conf, url=self.url,
            allowed_remote_exmods=['compute_agent.actions'])
        self.addCleanup(transport.cleanup)
        return transport

    def test_repin_over_the_broker_changes_the_domain(self):
        dom = self.define(vcpus=2)
        agent, local = self.agent()
        agent.run_once()        # the topology the actions check
        # The host name is unique to the test: its queue is ours.
        self.addCleanup(self.delete_queues,
                        '%s.%s' % (agent_rpc.TOPIC, self.host))
        # Issue 24: Watcher's applier runs with control_exchange "watcher",
        # the agent with the default "openstack"; the contract's explicit
        # exchange makes them meet anyway.
        server = rpc.make_server(self._rpc_transport('openstack'), self.host,
                                 rpc.AgentEndpoint(local,
                                                   lambda: agent.latest))
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        client = agent_rpc.AgentClient(self._rpc_transport('watcher'),
                                       self.host, timeout=WAIT)

        result = client.repin_instance(dom.UUIDString(), cpus='2,4')
        self.assertEqual([2, 4], result['cpus'])
        self.assertEqual([frozenset([2, 4])] * 2, self.affinity(dom))
        exc = self.assertRaises(actions.ActionError, client.repin_instance,
                                dom.UUIDString(), cpus='12')
        self.assertIn('outside the shared', str(exc))
        report = report_mod.HostReport.from_dict(client.get_report())
        self.assertEqual(self.host, report.host)

        # Issue 21 item 4: an anonymous caller gets nothing, and a huge
        # CPU list is refused at once with a short message.
        raw = oslo_messaging.get_rpc_client(
            self._rpc_transport('openstack'), agent_rpc.target(self.host),
            timeout=WAIT)
        exc = self.assertRaises(actions.ActionError, raw.call, {},
                                agent_rpc.GET_REPORT)
        self.assertIn('holds none of the roles', str(exc))
        start = time.monotonic()
        exc = self.assertRaises(actions.ActionError, client.repin_instance,
                                dom.UUIDString(), cpus='0-10000000')
        self.assertLess(time.monotonic() - start, 5.0)
        self.assertIn('beyond this host', str(exc))
        # The message; oslo.messaging appends the agent's traceback.
        self.assertLess(len(str(exc).splitlines()[0]), 300)

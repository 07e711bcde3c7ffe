"""The telemetry's place on the bus, one rule for the agent and collector.

The broker-side behaviour (durable exchange and queue survive a restart)
is ``tests/functional/test_collector.py``'s ``TestDurableTelemetry``.
"""

from oslo_config import cfg
import oslo_messaging
import testtools

from compute_agent import cmd as agent_cmd
from compute_agent import opts as agent_opts
from contention.collector import opts as collector_opts
from contention import telemetry_bus

RABBIT = 'rabbit://u:p@broker:5672/vhost'


def _conf(register=telemetry_bus.register, **overrides):
    conf = cfg.ConfigOpts()
    register(conf)
    conf([], project='contention', default_config_files=[])
    for name, value in overrides.items():
        group = 'telemetry' if name == 'durable' else None
        conf.set_override(name, value, group=group)
    return conf


class TestTelemetryBus(testtools.TestCase):

    def test_own_exchange_by_default_on_both_ends(self):
        def agent(conf):
            agent_opts.register_opts(conf)
            telemetry_bus.register(conf)
        for register in (agent, collector_opts.register):
            conf = _conf(register)
            self.assertEqual(telemetry_bus.EXCHANGE, conf.control_exchange)
            self.assertTrue(conf.telemetry.durable)
        # An operator's choice still wins.
        conf = _conf(control_exchange='telemetry_b')
        self.assertEqual('telemetry_b', conf.control_exchange)

    def test_durability_goes_in_the_rabbit_url_only(self):
        url = telemetry_bus.transport_url(_conf(transport_url=RABBIT))
        self.assertEqual({'amqp_durable_queues': 'true'}, url.query)
        self.assertEqual('vhost', url.virtual_host)
        url = telemetry_bus.transport_url(
            _conf(transport_url=RABBIT, durable=False))
        self.assertEqual({'amqp_durable_queues': 'false'}, url.query)
        # Other drivers have no such option: their URL is left alone.
        url = telemetry_bus.transport_url(_conf(transport_url='fake://'))
        self.assertEqual({}, url.query)

    def test_notifications_url_wins_and_none_without_one(self):
        self.assertIsNone(telemetry_bus.transport_url(_conf(transport_url='')))
        conf = _conf(transport_url=RABBIT)
        conf.set_override('transport_url', 'rabbit://n:q@other:5672/',
                          group='oslo_messaging_notifications')
        url = telemetry_bus.transport_url(conf)
        self.assertEqual('other', url.hosts[0].hostname)
        self.assertEqual({'amqp_durable_queues': 'true'}, url.query)

    def test_the_rabbit_driver_reads_it(self):
        # What the driver's connection will use: oslo.messaging's proxy of
        # [oslo_messaging_rabbit] reads the URL's query over the file.
        from oslo_messaging._drivers import common
        conf = _conf(transport_url=RABBIT)
        url = telemetry_bus.transport_url(conf)
        proxy = common.ConfigOptsProxy(conf, url, 'oslo_messaging_rabbit')
        self.assertFalse(conf.oslo_messaging_rabbit.amqp_durable_queues)
        self.assertTrue(
            proxy.oslo_messaging_rabbit.amqp_durable_queues)

    def test_agent_publishes_only_with_a_transport(self):
        self.assertFalse(agent_cmd._transport_configured(
            _conf(transport_url='')))
        self.assertTrue(agent_cmd._transport_configured(
            _conf(transport_url='fake://')))

    def test_transport_on_the_fake_driver(self):
        transport = telemetry_bus.notification_transport(
            _conf(transport_url='fake://'))
        self.addCleanup(transport.cleanup)
        self.assertIsInstance(transport, oslo_messaging.Transport)

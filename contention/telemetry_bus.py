"""Where host reports travel on the bus: one rule for both ends.

The agent publishes host reports and the collector consumes them; both
build their transport here, as :mod:`contention.agent_rpc` does for the
agent's RPC, so that the exchange and the queues' durability cannot
disagree between them.

**An exchange of its own.** A notification goes on its transport's
``[DEFAULT] control_exchange``. oslo.messaging's default, ``openstack``,
is declared by Nova and the other services as well, non-durable, so the
telemetry could not be made durable there (RabbitMQ refuses a second
declaration that differs: ``PRECONDITION_FAILED - inequivalent arg
'durable'``). :func:`register` defaults ``control_exchange`` to
:data:`EXCHANGE` on the agent's and the collector's configuration; the
agent's RPC names its exchange in its target and is unaffected.

**Durable by default.** ``[telemetry] durable`` (true by default)
declares that exchange and the topic's queue durable, and the rabbit
driver then publishes persistent messages: a report queued on the broker
when it stops is still there when it starts again, where a non-durable
queue loses it. The setting reaches the telemetry only: it goes in the
query of the notification transport's URL, which oslo.messaging's rabbit
driver reads over ``[oslo_messaging_rabbit]``, so the agent's RPC (whose
exchange Watcher's applier declares too) keeps ``amqp_durable_queues``.
"""

import importlib

from oslo_config import cfg
import oslo_messaging
from oslo_messaging import opts as messaging_opts

GROUP = 'telemetry'

#: The default ``[DEFAULT] control_exchange`` of the agent and collector.
EXCHANGE = 'contention_telemetry'

#: The rabbit driver option a transport URL's query may override.
_DURABLE_QUERY = 'amqp_durable_queues'
_RABBIT_DRIVERS = frozenset(['rabbit', 'kombu'])

telemetry_opts = [
    cfg.BoolOpt('durable', default=True,
                help='Declare the telemetry exchange and the topic\'s '
                     'queue durable and publish reports as persistent '
                     'messages (RabbitMQ transports), so that reports '
                     'queued on the broker survive its restart. Set it '
                     'alike on the agents and the collectors. Durability '
                     'is fixed when RabbitMQ first declares a queue: '
                     'to change it, stop the agents and collectors and '
                     'delete the topic\'s queue (<topic>.info) first '
                     '(doc/telemetry.md, "Queues"). Does not affect the '
                     'agent\'s RPC. The reports go on [DEFAULT] '
                     'control_exchange, which the agents and collectors '
                     'default to %s, an exchange of their own.' % EXCHANGE),
]

#: (module, attribute, group) of the oslo.messaging options that
#: ``list_opts()`` leaves out although its RPC client and server read them
#: (it registers them on ``cfg.CONF`` only). The same list as
#: ``oslo_messaging.conffixture``, which cannot be used here: it imports
#: ``fixtures``, a test-only package a production install does not have.
_UNLISTED_MESSAGING_OPTS = (
    ('oslo_messaging._metrics.client', 'oslo_messaging_metrics',
     'oslo_messaging_metrics'),
    ('oslo_messaging._tracing.client', 'oslo_messaging_tracing',
     'oslo_messaging_tracing'),
)


def register_messaging_opts(conf):
    """Every oslo.messaging option, as its drivers expect them."""
    for group, group_opts in messaging_opts.list_opts():
        conf.register_opts(group_opts, group=group)
    for module, attribute, group in _UNLISTED_MESSAGING_OPTS:
        try:
            group_opts = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError):
            continue    # an oslo.messaging without that feature
        conf.register_opts(group_opts, group=group)


def register(conf):
    """The messaging options, ``[telemetry]``, and the exchange default."""
    register_messaging_opts(conf)
    conf.register_opts(telemetry_opts, group=GROUP)
    conf.set_default('control_exchange', EXCHANGE)


def list_opts():
    return [(GROUP, telemetry_opts)]


def transport_url(conf):
    """The notification transport's URL, with ``[telemetry] durable``.

    ``None`` when no transport is configured. The value goes in the URL's
    query only for the rabbit driver, the one that reads it.
    """
    url = (conf.oslo_messaging_notifications.transport_url
           or conf.transport_url)
    if not url:
        return None
    parsed = oslo_messaging.TransportURL.parse(conf, url)
    if parsed.transport.split('+')[0] in _RABBIT_DRIVERS:
        parsed.query[_DURABLE_QUERY] = (
            'true' if conf.telemetry.durable else 'false')
    return parsed


def notification_transport(conf):
    """The transport the agent publishes and the collector listens on."""
    return oslo_messaging.get_notification_transport(
        conf, url=transport_url(conf))

"""``contention-agent``: run the agent, or collect one report (``--once``).

    contention-agent --config-file /etc/contention/agent.conf
    contention-agent --once --libvirt-uri test:///default

``--once`` prints the report as JSON on stdout (and publishes it when a
transport URL is configured) so an operator can check what a node
measures; exit status 1 when no report could be built.
"""

import json
import signal
import sys

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from compute_agent import actions
from compute_agent import libvirt_connection
from compute_agent import loop
from compute_agent import opts
from compute_agent import publisher as publisher_mod
from compute_agent import rpc
from compute_agent import service
from contention import agent_rpc
from contention import opts as core_opts
from contention import telemetry_bus
from contention import topology_parse

LOG = logging.getLogger(__name__)

cli_opts = [
    cfg.BoolOpt('once', default=False,
                help='Collect one report, print it as JSON to stdout, '
                     'publish it if a transport is configured, and exit.'),
    cfg.StrOpt('libvirt-uri', dest='cli_libvirt_uri',
               help='Override [agent] libvirt_uri.'),
]

FLUSH_TIMEOUT = 10.0


def _register(conf):
    conf.register_cli_opts(cli_opts)
    opts.register_opts(conf)
    telemetry_bus.register(conf)
    # oslo.messaging defaults transport_url to "rabbit://" (guest on this
    # host); the agent publishes and serves only where one is configured.
    conf.set_default('transport_url', None)
    logging.register_options(conf)


def apply_compression(conf):
    """[agent] compress_reports -> the rabbit driver's kombu_compression."""
    rabbit = conf.oslo_messaging_rabbit
    if conf.agent.compress_reports and rabbit.kombu_compression is None:
        conf.set_override('kombu_compression', 'gzip',
                          group='oslo_messaging_rabbit')


def _transport_configured(conf):
    return telemetry_bus.transport_url(conf) is not None


def _cpuset(text, name):
    if not text:
        return None
    return frozenset(topology_parse.parse_cpulist(text, name))


def build(conf):
    """Collector and the local actions of this host, from ``conf``."""
    agent = conf.agent
    thresholds, overhead_thresholds = core_opts.thresholds_from_conf(conf)
    shared = _cpuset(agent.shared_cpu_set, '[agent] shared_cpu_set')
    dedicated = _cpuset(agent.dedicated_cpu_set, '[agent] dedicated_cpu_set')
    nova_cpus = (None if shared is None and dedicated is None
                 else (shared or frozenset()) | (dedicated or frozenset()))
    collector = loop.Collector(agent.host, loop.load_sources(agent.sources),
                               agent.interval, thresholds=thresholds,
                               overhead_thresholds=overhead_thresholds,
                               nova_cpus=nova_cpus)
    collector.open(conf)
    emulating = [s for s in collector.sources if s.emulates_host]
    if emulating:
        # The source plays the host: its re-pins and caps go there.
        local = actions.EmulatedActions(
            agent.host, emulating[0], lambda: collector.topology,
            shared_cpus=shared, dedicated_cpus=dedicated,
            cpu_period_us=agent.cpu_period_us)
        return collector, local
    connection = libvirt_connection.LibvirtConnection(
        agent.libvirt_uri, min_wait=agent.libvirt_reconnect_min,
        max_wait=agent.libvirt_reconnect_max)
    local = actions.LocalActions(
        agent.host, connection, lambda: collector.topology,
        shared_cpus=shared, dedicated_cpus=dedicated,
        cpu_period_us=agent.cpu_period_us)
    return collector, local


def _publisher(conf):
    transport = telemetry_bus.notification_transport(conf)
    notifier = publisher_mod.make_notifier(
        transport, conf.agent.host, topic=conf.agent.notification_topic)
    return publisher_mod.Publisher.for_notifier(notifier,
                                                conf.agent.buffer_size)


def run_once(conf, out=None):
    out = out if out is not None else sys.stdout
    collector, _ = build(conf)
    publisher = _publisher(conf) if _transport_configured(conf) else None
    agent = service.AgentService(collector, publisher)
    try:
        report = agent.run_once()
    except loop.NoTopology as exc:
        sys.stderr.write('contention-agent: %s\n' % exc)
        return 1
    finally:
        collector.close()
    out.write(json.dumps(report.to_dict(), indent=2, sort_keys=True) + '\n')
    out.flush()
    if publisher is not None:
        delivered = publisher.flush(FLUSH_TIMEOUT)
        publisher.stop(timeout=0)
        if not delivered:
            sys.stderr.write('contention-agent: report not delivered within '
                             '%.0f s\n' % FLUSH_TIMEOUT)
            return 2
    return 0


def run_service(conf):
    collector, local = build(conf)
    publisher = None
    server = None
    if _transport_configured(conf):
        publisher = _publisher(conf)
    else:
        LOG.warning('No transport_url configured: reports are not '
                    'published.')
    if not conf.transport_url:
        LOG.warning('No [DEFAULT] transport_url configured: the RPC '
                    'actions (topic %s) are not served.', agent_rpc.TOPIC)
    agent = service.AgentService(collector, publisher)
    if conf.transport_url:
        rpc_transport = oslo_messaging.get_rpc_transport(conf)
        server = rpc.make_server(
            rpc_transport, conf.agent.host,
            rpc.AgentEndpoint(local, lambda: agent.latest))
        server.start()

    def _stop(signum, frame):
        LOG.info('Signal %d: stopping', signum)
        agent.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    LOG.info('contention-agent on %s: sources %s, every %.1f s',
             conf.agent.host, ', '.join(conf.agent.sources),
             conf.agent.interval)
    try:
        agent.run()
    finally:
        if server is not None:
            server.stop()
            server.wait()
        if publisher is not None:
            publisher.stop()
        collector.close()
    return 0


def main(argv=None, conf=None):
    conf = conf if conf is not None else cfg.CONF
    _register(conf)
    conf(sys.argv[1:] if argv is None else argv, project='contention',
         prog='contention-agent')
    if conf.cli_libvirt_uri:
        conf.set_override('libvirt_uri', conf.cli_libvirt_uri, 'agent')
    apply_compression(conf)
    if conf.once:
        # stdout carries the report; oslo.log writes to stdout when no log
        # file is set.
        conf.set_override('use_stderr', True)
    logging.setup(conf, 'contention-agent')
    try:
        if conf.once:
            return run_once(conf)
        return run_service(conf)
    except ValueError as exc:
        # Configuration problems (unknown source, bad CPU set): say which.
        sys.stderr.write('contention-agent: %s\n' % exc)
        return 1


if __name__ == '__main__':
    sys.exit(main())

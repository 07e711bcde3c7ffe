"""The agent RPC contract: one exchange, topic and version for both ends."""

from oslo_config import cfg
import oslo_messaging
from oslo_messaging import conffixture
import testtools

from contention import agent_rpc


class _Server(object):
    target = oslo_messaging.Target(version=agent_rpc.VERSION)

    def __init__(self):
        self.contexts = []

    def get_report(self, ctxt):
        self.contexts.append(ctxt)
        return {'host': 'h1'}


class TestContract(testtools.TestCase):

    def test_target_names_the_exchange(self):
        # Issue 24: a target without an exchange lands on the transport's
        # control_exchange, "watcher" in Watcher's applier and "openstack"
        # in the agent.
        target = agent_rpc.target('compute-1')
        self.assertEqual(agent_rpc.EXCHANGE, target.exchange)
        self.assertEqual(agent_rpc.TOPIC, target.topic)
        self.assertEqual('compute-1', target.server)
        self.assertEqual(agent_rpc.VERSION, target.version)

    def test_authorise(self):
        for ctxt in ({'roles': ['service']}, {'roles': ['reader', 'admin']}):
            agent_rpc.authorise(ctxt, 'get_report')
        for ctxt in ({}, None, [], {'roles': 'service'}, {'roles': [1]},
                     {'roles': ['member'], 'user_name': 'x' * 10000}):
            exc = self.assertRaises(agent_rpc.NotAuthorised,
                                    agent_rpc.authorise, ctxt, 'get_report')
            self.assertIn('get_report refused', str(exc))
            self.assertLess(len(str(exc)), 200)

    def test_short(self):
        self.assertEqual('abc', agent_rpc.short('abc'))
        text = agent_rpc.short('x' * 1000, 10)
        self.assertEqual('xxxxxxxxxx... (990 more characters)', text)

    def test_client_sends_a_service_context(self):
        conf = cfg.ConfigOpts()
        # Registers every group the RPC client reads (tracing, metrics).
        conffixture.ConfFixture(conf)
        transport = oslo_messaging.get_rpc_transport(conf, url='fake:/')
        self.addCleanup(transport.cleanup)
        endpoint = _Server()
        server = oslo_messaging.get_rpc_server(
            transport, agent_rpc.target('h1'), [endpoint],
            executor='threading')
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        client = agent_rpc.AgentClient(transport, 'h1', timeout=10,
                                       caller='tester')
        self.assertEqual({'host': 'h1'}, client.get_report())
        ctxt = endpoint.contexts[0]
        agent_rpc.authorise(ctxt, 'get_report')
        self.assertEqual('tester', ctxt['user_name'])
        self.assertTrue(ctxt['request_id'].startswith('req-'))

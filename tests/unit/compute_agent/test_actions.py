"""Local actions (repin, CPU quota) and the RPC endpoint serving them."""

import logging
from unittest import mock
import zlib

import fixtures
import libvirt
from oslo_config import cfg
import oslo_messaging

from compute_agent import actions
from compute_agent import libvirt_connection
from compute_agent import rpc
from contention import agent_rpc
from contention.collector import inflate
from contention import telemetry_bus
from contention import topology_parse
from tests.unit.compute_agent import base
from tests.unit.compute_agent import fake_libvirt

SHARED = frozenset(range(0, 8)) | frozenset(range(10, 18))


class ActionsTestCase(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.topology = topology_parse.from_capabilities_xml(
            base.INTEL_CAPS, 'compute-1')
        self.opener = fake_libvirt.FakeOpener(self.conn)
        self.connection = libvirt_connection.LibvirtConnection(
            'qemu:///system', opener=self.opener)
        self.actions = self.make(shared_cpus=SHARED)
        self.dom = self.conn.add(vcpus=2, cpus_on=[0, 1])

    def make(self, **kwargs):
        return actions.LocalActions('compute-1', self.connection,
                                    lambda: self.topology, **kwargs)

    def affinity(self, dom=None):
        return {frozenset(a) for a in (dom or self.dom).affinity}


class TestRepin(ActionsTestCase):

    def test_to_a_node_uses_its_shared_cpus(self):
        result = self.actions.repin_instance(self.dom.uuid, node=1)
        self.assertEqual({frozenset(range(10, 18))}, self.affinity())
        self.assertEqual(list(range(10, 18)), result['cpus'])
        self.assertTrue(result['changed'])
        self.assertIsNone(result['memory_nodes'])
        self.assertEqual('', self.dom.numa['numa_nodeset'])

    def test_is_idempotent(self):
        self.actions.repin_instance(self.dom.uuid, cpus='3')
        pins = self.dom.calls.count('pinVcpu')
        again = self.actions.repin_instance(self.dom.uuid, cpus=[3])
        self.assertFalse(again['changed'])
        self.assertEqual(pins, self.dom.calls.count('pinVcpu'))
        # The live XML now pins each vCPU to CPU 3 alone; the instance is
        # still shared (Nova's persistent pinning decides).
        self.assertIn("cpuset='3'", self.dom.XMLDesc(0))

    def test_with_memory(self):
        result = self.actions.repin_instance(self.dom.uuid, cpus='2-4,12',
                                             move_memory=True)
        self.assertEqual([0, 1], result['memory_nodes'])
        self.assertEqual('0,1', self.dom.numa['numa_nodeset'])
        self.assertEqual({frozenset([2, 3, 4, 12])}, self.affinity())
        again = self.actions.repin_instance(self.dom.uuid, cpus='2-4,12',
                                            move_memory=True)
        self.assertFalse(again['changed'])
        self.assertEqual(1, self.dom.calls.count('setNumaParameters'))

    def test_memory_of_a_strict_numatune_is_refused_first(self):
        # Nova writes mode='strict'; libvirt 9.0 moves the nodeset of a
        # running domain only in restrictive mode. The refusal comes
        # before any change and says what to do instead.
        dom = self.conn.add(vcpus=2, cpus_on=[0, 1],
                            xml_kwargs={'numa_nodeset': '0'})
        exc = self.assertRaises(actions.ActionError,
                                self.actions.repin_instance, dom.uuid,
                                node=1, move_memory=True)
        self.assertIn('numatune mode strict', str(exc))
        self.assertIn('without move_memory', str(exc))
        self.assertNotIn('setNumaParameters', dom.calls)
        self.assertNotIn('pinVcpu', dom.calls)
        # Without move_memory its vCPUs move.
        self.actions.repin_instance(dom.uuid, node=1)
        self.assertEqual({frozenset(range(10, 18))}, self.affinity(dom))

    def test_memory_refused_leaves_the_vcpus(self):
        def refuse(params, flags=0):
            raise fake_libvirt.error(
                libvirt.VIR_ERR_OPERATION_INVALID,
                'Requested operation is not valid: can change nodeset for '
                'running domain only in strict mode')
        self.dom.setNumaParameters = refuse
        exc = self.assertRaises(actions.ActionError,
                                self.actions.repin_instance, self.dom.uuid,
                                node=0, move_memory=True)
        self.assertIn('strict mode', str(exc))
        self.assertNotIn('pinVcpu', self.dom.calls)

    def test_stays_inside_the_shared_set(self):
        exc = self.assertRaises(actions.ActionError,
                                self.actions.repin_instance, self.dom.uuid,
                                cpus='7-9')
        self.assertIn('8,9 are outside the shared', str(exc))
        self.assertNotIn('pinVcpu', self.dom.calls)

    def test_without_shared_set_avoids_the_dedicated_set(self):
        act = self.make(dedicated_cpus=frozenset(range(20, 40)))
        result = act.repin_instance(self.dom.uuid, node=0)
        self.assertEqual(list(range(0, 10)), result['cpus'])
        self.assertRaises(actions.ActionError, act.repin_instance,
                          self.dom.uuid, cpus='20')

    def test_offline_cpu_refused(self):
        self.conn.online.discard(5)
        exc = self.assertRaises(actions.ActionError,
                                self.actions.repin_instance, self.dom.uuid,
                                cpus='4-5')
        self.assertIn('5 are outside the shared, online', str(exc))
        result = self.actions.repin_instance(self.dom.uuid, node=0)
        self.assertNotIn(5, result['cpus'])

    def test_refuses_dedicated_and_mixed(self):
        for pins in ({0: '2', 1: '3'}, {0: '4', 1: '10-17'}):
            dom = self.conn.add(vcpus=2, xml_kwargs=dict(vcpupin=pins))
            for call in (lambda: self.actions.repin_instance(dom.uuid,
                                                             node=0),
                         lambda: self.actions.set_cpu_quota(dom.uuid,
                                                            50000)):
                exc = self.assertRaises(actions.ActionError, call)
                self.assertIn('hw:cpu_policy', str(exc))
            self.assertNotIn('pinVcpu', dom.calls)
            self.assertNotIn('setSchedulerParametersFlags', dom.calls)

    def test_refuses_by_the_dedicated_set(self):
        act = self.make(dedicated_cpus=frozenset([30]))
        dom = self.conn.add(vcpus=2, xml_kwargs=dict(
            vcpupin={0: '0-7', 1: '30'}))
        exc = self.assertRaises(actions.ActionError, act.repin_instance,
                                dom.uuid, node=0)
        self.assertIn('mixed', str(exc))

    def test_validation(self):
        u = self.dom.uuid
        cases = [
            (dict(instance_uuid='nope', node=0), 'not a uuid'),
            (dict(instance_uuid=u), 'exactly one of node and cpus'),
            (dict(instance_uuid=u, node=0, cpus='1'), 'exactly one'),
            (dict(instance_uuid=u, node='0'), 'expected a NUMA node'),
            (dict(instance_uuid=u, node=True), 'expected a NUMA node'),
            (dict(instance_uuid=u, node=5), 'no NUMA node 5'),
            (dict(instance_uuid=u, cpus='1-'), 'malformed CPU list'),
            (dict(instance_uuid=u, cpus=[1, -2]), 'expected a CPU list'),
            (dict(instance_uuid=u, cpus=''), 'empty CPU set'),
            (dict(instance_uuid=u, cpus='99'), 'CPU 99 is beyond'),
            (dict(instance_uuid=u, cpus=[3, 99]), 'CPU 99 is beyond'),
            (dict(instance_uuid=u, node=0, move_memory='yes'),
             'move_memory'),
        ]
        for kwargs, message in cases:
            exc = self.assertRaises(actions.ActionError,
                                    self.actions.repin_instance, **kwargs)
            self.assertIn(message, str(exc), kwargs)
        self.assertNotIn('pinVcpu', self.dom.calls)

    def test_huge_cpu_lists_refused_before_expansion(self):
        # Issue 21 item 4: "0-10000000" took the agent to 1.84 GB and its
        # refusal listed ten million CPUs. The bound is checked before the
        # range is expanded, and the message stays short.
        for cpus in ('0-10000000', '0-3,5-%d' % (2 ** 31),
                     '1' * 5000, ','.join(['1'] * 10000) + ',x' * 1000):
            exc = self.assertRaises(actions.ActionError,
                                    self.actions.repin_instance,
                                    self.dom.uuid, cpus=cpus)
            self.assertLess(len(str(exc)), 300)
        self.assertNotIn('pinVcpu', self.dom.calls)

    def test_refuses_a_domain_nova_did_not_create(self):
        dom = self.conn.add(vcpus=1, cpus_on=[0],
                            xml_kwargs={'nova': False})
        for call in (lambda: self.actions.repin_instance(dom.uuid, node=0),
                     lambda: self.actions.set_cpu_quota(dom.uuid, 50000)):
            exc = self.assertRaises(actions.ActionError, call)
            self.assertIn('not a Nova instance', str(exc))
        self.assertNotIn('pinVcpu', dom.calls)
        self.assertNotIn('setSchedulerParametersFlags', dom.calls)

    def test_only_instances_of_this_host(self):
        exc = self.assertRaises(
            actions.ActionError, self.actions.repin_instance,
            '12345678-1234-5678-1234-567812345678', node=0)
        self.assertIn('not on host compute-1', str(exc))
        self.dom.active = False
        exc = self.assertRaises(actions.ActionError,
                                self.actions.repin_instance, self.dom.uuid,
                                node=0)
        self.assertIn('not running', str(exc))

    def test_vanishing_mid_action(self):
        self.conn.hooks[(self.dom.uuid, 'pinVcpu')] = (
            fake_libvirt.FakeDomain.vanish)
        exc = self.assertRaises(actions.ActionError,
                                self.actions.repin_instance, self.dom.uuid,
                                node=0)
        self.assertIn('vanished', str(exc))

    def test_recovers_from_a_libvirtd_restart(self):
        # The first call after a restart fails on the old socket; the
        # action reconnects and succeeds, and so do the next ones.
        self.actions.repin_instance(self.dom.uuid, cpus='3')
        self.conn.alive = False
        result = self.actions.repin_instance(self.dom.uuid, cpus='4')
        self.assertEqual([4], result['cpus'])
        self.assertEqual({frozenset([4])}, self.affinity())
        self.assertEqual(2, self.opener.calls)
        self.assertFalse(
            self.actions.set_cpu_quota(self.dom.uuid, -1)['changed'])

    def test_libvirtd_down_is_a_clear_error(self):
        self.actions.repin_instance(self.dom.uuid, cpus='3')
        self.conn.alive = False
        self.opener.failures = 1
        exc = self.assertRaises(actions.ActionError,
                                self.actions.set_cpu_quota, self.dom.uuid,
                                50000)
        self.assertIn('cannot connect to libvirt', str(exc))

    def test_no_topology_yet(self):
        self.topology = None
        exc = self.assertRaises(actions.ActionError,
                                self.actions.repin_instance, self.dom.uuid,
                                node=0)
        self.assertIn('topology', str(exc))


class TestCpuQuota(ActionsTestCase):

    def test_sets_quota_and_period_live_once(self):
        result = self.actions.set_cpu_quota(self.dom.uuid, 50000)
        self.assertEqual(50000, self.dom.sched['vcpu_quota'])
        self.assertEqual(100000, self.dom.sched['vcpu_period'])
        self.assertTrue(result['changed'])
        self.assertFalse(self.actions.set_cpu_quota(self.dom.uuid,
                                                    50000)['changed'])
        self.assertEqual(1, self.dom.calls.count(
            'setSchedulerParametersFlags'))
        self.assertTrue(self.actions.set_cpu_quota(self.dom.uuid,
                                                   -1)['changed'])
        self.assertEqual(-1, self.dom.sched['vcpu_quota'])

    def test_validation(self):
        for bad in (999, 0, -2, True, '5000', 5000.0,
                    actions.MAX_QUOTA_US + 1):
            exc = self.assertRaises(actions.ActionError,
                                    self.actions.set_cpu_quota,
                                    self.dom.uuid, bad)
            self.assertIn('quota_us', str(exc))
        self.assertNotIn('setSchedulerParametersFlags', self.dom.calls)

    def test_driver_without_quota_is_a_clear_error(self):
        def unsupported(flags=0):
            raise fake_libvirt.error(
                libvirt.VIR_ERR_INVALID_ARG, 'unsupported flags (0x5) in '
                'function testDomainGetSchedulerParametersFlags')
        self.dom.schedulerParametersFlags = unsupported
        exc = self.assertRaises(actions.ActionError,
                                self.actions.set_cpu_quota, self.dom.uuid,
                                20000)
        self.assertIn('cannot set the CPU quota', str(exc))


SERVICE = {'roles': ['service'], 'user_name': 'watcher-applier'}


class TestEndpoint(ActionsTestCase):

    def setUp(self):
        super().setUp()
        self.latest = None
        self.endpoint = rpc.AgentEndpoint(self.actions, lambda: self.latest)

    def refusal(self, call, *args, **kwargs):
        try:
            call(*args, **kwargs)
        except oslo_messaging.ExpectedException as exc:
            self.assertIsInstance(exc.exc_info[1], actions.ActionError)
            return str(exc.exc_info[1])
        self.fail('no ExpectedException')

    def test_calls_the_actions(self):
        result = self.endpoint.repin_instance(SERVICE, self.dom.uuid, node=1)
        self.assertEqual(list(range(10, 18)), result['cpus'])
        result = self.endpoint.set_cpu_quota(SERVICE, self.dom.uuid, 30000)
        self.assertEqual(30000, result['quota_us'])

    def test_refusal_is_an_expected_exception(self):
        self.assertIn('not a uuid', self.refusal(
            self.endpoint.repin_instance, SERVICE, 'bad', node=0))

    def test_the_agent_logs_what_it_did_and_refused(self):
        logged = self.useFixture(fixtures.FakeLogger(
            name='compute_agent.rpc', level=logging.INFO))
        ctxt = dict(SERVICE, user_name='watcher-applier',
                    request_id='req-1')
        self.endpoint.repin_instance(ctxt, self.dom.uuid, node=1)
        self.refusal(self.endpoint.set_cpu_quota, ctxt, self.dom.uuid, 5)
        lines = logged.output.splitlines()
        self.assertEqual(2, len(lines), lines)
        self.assertIn("repin_instance for 'watcher-applier' 'req-1': {",
                      lines[0])
        self.assertIn("set_cpu_quota for 'watcher-applier' 'req-1' "
                      "refused: quota_us", lines[1])

    def test_callers_without_a_service_role_are_refused(self):
        # Issue 21 item 4: anonymous callers got the whole inventory and
        # could re-pin anything.
        self.latest = mock.Mock(to_dict=mock.Mock(return_value={'a': 1}))
        for ctxt in ({}, {'roles': ['member']}, {'roles': 'service'},
                     {'roles': None}, None):
            for call, args in (
                    (self.endpoint.get_report, ()),
                    (self.endpoint.repin_instance, (self.dom.uuid, 1)),
                    (self.endpoint.set_cpu_quota, (self.dom.uuid, 30000))):
                message = self.refusal(call, ctxt, *args)
                self.assertIn('holds none of the roles admin, service',
                              message)
        self.assertEqual([], self.dom.calls)

    def test_errors_are_short(self):
        message = self.refusal(self.endpoint.repin_instance, SERVICE,
                               self.dom.uuid, cpus=list(range(10 ** 5)))
        self.assertLess(len(message), 400)

    def test_get_report(self):
        self.assertIsNone(self.endpoint.get_report(SERVICE))
        self.latest = mock.Mock(to_dict=mock.Mock(return_value={'a': 1}))
        self.assertEqual({'a': 1}, self.endpoint.get_report(
            {'roles': ['admin']}))

    def test_the_server_bounds_decompression(self):
        # A compressed request is inflated whole before its caller is
        # checked: the agent's server stops at MAX_REQUEST_BYTES.
        from kombu import compression
        saved = dict(compression._decoders)
        self.addCleanup(compression._decoders.update, saved)
        self.addCleanup(inflate.take_refused)
        conf = cfg.ConfigOpts()
        telemetry_bus.register_messaging_opts(conf)
        transport = oslo_messaging.get_rpc_transport(conf, url='fake:/')
        self.addCleanup(transport.cleanup)
        rpc.make_server(transport, 'compute-1', self.endpoint)
        bomb = zlib.compress(b'\0' * (64 << 20), 9)
        self.assertRaises(inflate.TooLarge,
                          compression.get_decoder('application/x-gzip'), bomb)

    def test_over_the_fake_transport(self):
        conf = cfg.ConfigOpts()
        telemetry_bus.register_messaging_opts(conf)
        transport = oslo_messaging.get_rpc_transport(conf, url='fake:/')
        self.addCleanup(transport.cleanup)
        server = rpc.make_server(transport, 'compute-1', self.endpoint)
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        client = agent_rpc.AgentClient(transport, 'compute-1', timeout=10)
        result = client.repin_instance(self.dom.uuid, cpus='5,6')
        self.assertEqual([5, 6], result['cpus'])
        self.assertEqual({frozenset([5, 6])}, self.affinity())
        # The fake driver hands the exception back as it is; over a real
        # broker it is a RemoteError unless allowed_remote_exmods lists
        # compute_agent.actions.
        exc = self.assertRaises(
            (actions.ActionError, oslo_messaging.RemoteError),
            client.set_cpu_quota, self.dom.uuid, 10)
        self.assertIn('quota_us', str(exc))
        # A raw client without the service context is refused.
        raw = oslo_messaging.get_rpc_client(
            transport, agent_rpc.target('compute-1'), timeout=10)
        exc = self.assertRaises(
            (actions.ActionError, oslo_messaging.RemoteError),
            raw.call, {}, agent_rpc.GET_REPORT)
        self.assertIn('holds none of the roles', str(exc))

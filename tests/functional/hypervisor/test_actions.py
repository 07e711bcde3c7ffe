"""The agent's RPC actions on real guests, through a libvirtd restart.

The agent runs as the operator runs it (``contention-agent
--config-file``), serving RPC over the RabbitMQ on localhost; the test
calls it with :class:`contention.agent_rpc.AgentClient`, the client
Watcher's ``contention_repin`` action uses, and checks each effect where
the kernel applies it: the vCPU thread's ``Cpus_allowed_list`` and its
cgroup's CFS quota.
"""

# First: oslo_messaging's import picks oslo.service's eventlet backend
# unless compute_agent registered threading as the default before.
import compute_agent  # noqa: F401

import os
import signal
import subprocess
import sys
import time
import uuid

import oslo_messaging

from compute_agent import actions
from contention import agent_rpc
from tests.functional.hypervisor import base
from tests.functional import services

WAIT = 60.0


class TestActions(base.HypervisorCase):

    def setUp(self):
        super().setUp()
        self.topic = 'contention_telemetry_hyp_%s' % uuid.uuid4().hex[:12]
        self.addCleanup(subprocess.run,
                        ['rabbitmqctl', 'delete_queue', self.topic + '.info'],
                        capture_output=True, timeout=120)

    def start_agent(self):
        config = os.path.join(self.tmp, 'agent.conf')
        with open(config, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = %s\n'
                    '[agent]\nhost = %s\nnotification_topic = %s\n'
                    'libvirt_uri = %s\ninterval = 2\n'
                    'libvirt_reconnect_min = 0.5\n'
                    'libvirt_reconnect_max = 2\n'
                    % (services.RABBIT_URL, self.host, self.topic,
                       self.libvirtd.uri))
        self.agent_log = os.path.join(self.tmp, 'agent.log')
        agent = subprocess.Popen(
            [os.path.join(os.path.dirname(sys.executable),
                          'contention-agent'),
             '--config-file', config, '--log-file', self.agent_log],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT)
        self.addCleanup(self._stop_agent, agent)
        transport = oslo_messaging.get_rpc_transport(
            self.conf, url=services.RABBIT_URL,
            allowed_remote_exmods=['compute_agent.actions'])
        self.addCleanup(transport.cleanup)
        client = agent_rpc.AgentClient(transport, self.host, timeout=10)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                if client.get_report() is not None:
                    return agent, client
            except oslo_messaging.MessagingTimeout:
                pass
            self.assertIsNone(agent.poll(), self._log())
            time.sleep(0.5)
        self.fail('the agent never answered: %s' % self._log())

    def _stop_agent(self, agent):
        if agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(timeout=30)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()

    def _log(self):
        try:
            with open(self.agent_log) as f:
                return f.read()[-3000:]
        except OSError:
            return '(no log)'

    def test_actions_take_effect_and_survive_a_libvirtd_restart(self):
        shared = self.guest('shared', vcpupin={0: '0-1'},
                            numa_nodeset='0',
                            extra_specs={'hw:cpu_policy': 'shared'})
        pinned = self.guest('pinned', vcpupin={0: '1'},
                            extra_specs={'hw:cpu_policy': 'dedicated'})
        agent, client = self.start_agent()
        tid = self.vcpu_threads(self.qemu_pid(shared.UUIDString()))[0]
        uuid_ = shared.UUIDString()

        result = client.set_cpu_quota(uuid_, 50000)
        self.assertTrue(result['changed'])
        self.assertEqual(50000, self.cfs_quota_us(tid))
        self.assertFalse(client.set_cpu_quota(uuid_, 50000)['changed'])

        result = client.repin_instance(uuid_, cpus='0')
        self.assertEqual([0], result['cpus'])
        self.assertEqual('0', self.status_field(tid, 'Cpus_allowed_list'))

        # Refusals come back as the agent's own exception, before any
        # change: Nova's pinning, and a live memory move libvirt cannot
        # make in Nova's strict numatune mode.
        exc = self.assertRaises(actions.ActionError, client.repin_instance,
                                pinned.UUIDString(), cpus='0')
        self.assertIn('hw:cpu_policy dedicated', str(exc))
        exc = self.assertRaises(actions.ActionError, client.repin_instance,
                                uuid_, cpus='1', move_memory=True)
        self.assertIn('numatune mode strict', str(exc))
        self.assertEqual('0', self.status_field(tid, 'Cpus_allowed_list'))

        # libvirtd restarts; the guests run on; the next calls work.
        self.libvirtd.restart()
        result = client.set_cpu_quota(uuid_, 40000)
        self.assertTrue(result['changed'])
        self.assertEqual(40000, self.cfs_quota_us(tid))
        client.repin_instance(uuid_, cpus='0-1')
        self.assertEqual('0-1', self.status_field(tid, 'Cpus_allowed_list'))
        self.assertFalse(client.set_cpu_quota(uuid_, 40000)['changed'])

        # And the reports go on, with the new cap.
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            report = client.get_report()
            caps = {r['uuid']: r['cpu_quota'] for r in report['instances']}
            if caps.get(uuid_) == 0.4:
                break
            time.sleep(1)
        else:
            self.fail('no report with the new cap: %s' % self._log())
        with open(self.agent_log) as f:
            self.assertNotIn('Host topology changed', f.read())

        agent.send_signal(signal.SIGTERM)
        self.assertEqual(0, agent.wait(timeout=30), self._log())

"""End to end in Watcher's functional harness: audit, plan, apply.

The real Watcher REST API, decision engine and applier run in process
against Watcher's Nova and Placement emulators; the telemetry store is a
SQLite file in a temporary directory, seeded with host reports for the
emulated instances.
"""

import watcher.tests.unit  # noqa: F401  (must precede other watcher imports)

import dataclasses
import os
import tempfile
import time

import oslo_messaging
from oslo_config import cfg
import requests
import sqlalchemy as sa
from watcher import conf as watcher_conf
from watcher.tests.functional import base
from watcher.tests.functional import topology

from contention import agent_rpc
from contention import store as store_api
from tests.unit.contention.store import reports
from tests.unit.watcher_strategies import fixtures as f
from watcher_strategies import actions
from watcher_strategies import strategies

CONF = watcher_conf.CONF
M = 1e6

TOPOLOGY = (
    topology.ComputeTopology()
    .add_computes(count=2, vcpus=16, memory=32768, disk=500)
    .add_instances(computes=['compute-1'], count=3, vcpus=2, memory=2048,
                   disk=10)
    .add_instances(computes=['compute-2'], count=2, vcpus=2, memory=2048,
                   disk=10)
)
#: LLC misses/s per instance, in TOPOLOGY's instance order.
MISSES = (5 * M, 4 * M, 3 * M, 1 * M, 2 * M)
#: Memory Factors and Merlin classes: compute-2's instances suffer little
#: from new co-runners (the harm check's concern, not these tests'): they
#: hardly reach memory or the LLC (0.05 accesses per kilo-instruction).
MFS = (0.3, 0.3, 0.3, 0.01, 0.01)
MPKIS = (5.0, 5.0, 5.0, 0.0005, 0.0005)
CLASSES = ('medium/medium',) * 3 + ('low/low',) * 2


def _register(group, opts):
    try:
        CONF.register_opts(opts, group=group)
    except cfg.DuplicateOptError:  # registered by an earlier test
        pass


class _EndToEnd(base.WatcherFunctionalTestCase):
    """Watcher's services and emulators, our store and configuration."""

    COMPUTE_TOPOLOGY = topology.ComputeTopology()

    def setUp(self):
        super().setUp()
        self.flags(migration_max_retries=5, group='nova')
        self.flags(migration_interval=0.1, group='nova')
        tmp = self.useFixture(_TempDir()).path
        self.url = 'sqlite:///%s' % os.path.join(tmp, 'telemetry.sqlite')
        store = store_api.open_store(self.url)
        store.upgrade()
        self.addCleanup(store.dispose)
        self.store = store
        for group in ('watcher_strategies.cache_aware_swap',
                      'watcher_strategies.numa_aware_swap'):
            _register(group, strategies.strategy_opts())
            self.flags(connection=self.url, group=group)
        _register('watcher_actions.contention_swap',
                  actions.store_opts() + actions.agent_opts())
        self.flags(connection=self.url,
                   group='watcher_actions.contention_swap')
        # No agent listens in these tests: the best-effort re-pin after each
        # leg gives up quickly instead of holding the plan for a minute.
        self.flags(rpc_timeout=1, group='watcher_actions.contention_swap')
        strategies._STORES.clear()
        self.addCleanup(strategies._STORES.clear)
        self.load_topology(TOPOLOGY)
        self._seed()

    def _seed(self):
        now = time.time()
        by_host = {}
        for inst, misses, mf, mpki, klass in zip(
                TOPOLOGY.instances, MISSES, MFS, MPKIS, CLASSES):
            rec = f.record(inst.name, misses, socket=0, vcpus=2, mf=mf,
                           mpki=mpki, merlin_class=klass)
            rec = type(rec)(**dict(rec.__dict__, uuid=inst.uuid))
            by_host.setdefault(inst.host, []).append(rec)
        # Sockets of 8 cores: the three busy 2-vCPU instances of
        # compute-1 fit its first socket's cores, so the swap takes no
        # instance's share of them (the harm check's other concern).
        self.store.ingest([dataclasses.replace(
            reports.host_report(host, now - 5, recs),
            topology=reports.small_topology(host, cpus_per_node=8))
            for host, recs in sorted(by_host.items())], now=now)

    def _audit(self, parameters):
        resp = self.admin_api.post('/audits', {
            'audit_type': 'ONESHOT', 'goal': 'contention_reduction',
            'strategy': 'cache_aware_swap', 'parameters': parameters})
        self.assertEqual(201, resp.status_code, resp.text)
        audit_uuid = resp.json()['uuid']
        self._wait_for_audit_state(audit_uuid, 'SUCCEEDED')
        plans = self.admin_api.get(
            '/action_plans?audit_uuid=%s' % audit_uuid).json()[
            'action_plans']
        self.assertEqual(1, len(plans))
        plan = self._get_latest('/action_plans/%s' % plans[0]['uuid'])
        acts = self.admin_api.get('/actions?action_plan_uuid=%s'
                                  % plan['uuid']).json()['actions']
        details = [self.admin_api.get('/actions/%s' % a['uuid']).json()
                   for a in acts]
        return plan, details

    def _start(self, plan_uuid, state):
        resp = self.admin_api.patch(
            '/action_plans/%s' % plan_uuid,
            [{'op': 'replace', 'path': '/state', 'value': 'PENDING'}])
        self.assertEqual(200, resp.status_code)
        return self._wait_for_action_plan_state(plan_uuid, state)

    def _get_latest(self, url):
        """GET at the newest API microversion (status_message is 1.5+)."""
        headers = dict(self.admin_api._headers())
        headers['OpenStack-API-Version'] = 'infra-optim latest'
        resp = requests.get(self.admin_api.base_url + url, headers=headers)
        self.assertEqual(200, resp.status_code, resp.text)
        return resp.json()

    def _host_of(self, inst):
        server = self.env.nova_fixture.nova_emulator.servers[inst.uuid]
        return server['OS-EXT-SRV-ATTR:host']


class TestContentionSwapEndToEnd(_EndToEnd):

    # The swap here gains little more than it costs (1.2M predicted drop
    # for a 1M cost): no margin, since what is tested is applying it (the
    # margin has unit tests).
    PARAMETERS = {'threshold': 1 * M, 'max_swaps': 1,
                  'victim_selection': 'extreme', 'local_phase': False,
                  'min_predicted_gain': 0}

    def test_swap_planned_and_applied(self):
        plan, acts = self._audit(self.PARAMETERS)
        self.assertEqual('RECOMMENDED', plan['state'])
        self.assertEqual(['contention_swap'],
                         [a['action_type'] for a in acts])
        vm1, vm4 = TOPOLOGY.instances[0], TOPOLOGY.instances[3]
        params = acts[0]['input_parameters']
        self.assertEqual(vm1.uuid, params['resource_id'])
        self.assertEqual('compute-2', params['destination_node'])
        self.assertEqual(vm4.uuid, params['partner_id'])
        self.assertEqual('compute-1', params['partner_destination_node'])
        indicators = {i['name']: i['value']
                      for i in plan['efficacy_indicators']}
        self.assertEqual(5, indicators['instances_count'])
        self.assertEqual(2, indicators['instance_migrations_count'])
        self.assertEqual(1, indicators['swaps_count'])
        self.assertLess(indicators['llc_miss_spread_after'],
                        indicators['llc_miss_spread_before'])
        # What the swap is predicted to do, through Watcher's API.
        self.assertGreater(indicators['predicted_mean_performance_change'],
                           0)
        self.assertLessEqual(
            indicators['predicted_worst_performance_change'], 0)
        self.assertGreater(plan['global_efficacy'][0]['value'], 0)
        self.assertIn('1 action(s)', plan['status_message'])

        done = self._start(plan['uuid'], 'SUCCEEDED')
        self.assertEqual('SUCCEEDED', done['state'])
        self.assertEqual('compute-2', self._host_of(vm1))
        self.assertEqual('compute-1', self._host_of(vm4))
        moved = {m.uuid for m in self.store.moves_since(0)}
        self.assertEqual({vm1.uuid, vm4.uuid}, moved)

    def test_failed_second_leg_is_undone(self):
        emulator = self.env.nova_fixture.nova_emulator
        vm1, vm4 = TOPOLOGY.instances[0], TOPOLOGY.instances[3]
        real_move = emulator._move_server

        def move(server_id, dest):
            if server_id == vm4.uuid:
                return  # the second leg never lands
            real_move(server_id, dest)
        emulator._move_server = move

        plan, acts = self._audit(self.PARAMETERS)
        self.assertEqual(['contention_swap'],
                         [a['action_type'] for a in acts])
        done = self._start(plan['uuid'], 'FAILED')
        self.assertEqual('FAILED', done['state'])
        action = self._get_latest('/actions/%s' % acts[0]['uuid'])
        self.assertEqual('FAILED', action['state'])
        self.assertIn('leg two failed', action['status_message'])
        self.assertIn('undone', action['status_message'])
        self.assertEqual('compute-1', self._host_of(vm1))
        self.assertEqual('compute-2', self._host_of(vm4))
        # Both instances are back where they were, and the failed swap is
        # recorded for each, so the cool-down holds them back (issue 18).
        self.assertEqual(
            {(vm1.uuid, 'compute-1', 'compute-1',
              'watcher:contention_swap:failed'),
             (vm4.uuid, 'compute-2', 'compute-2',
              'watcher:contention_swap:failed')},
            {(m.uuid, m.source_host, m.dest_host, m.origin)
             for m in self.store.moves_since(0)})

    def test_missing_telemetry_fails_the_audit_with_a_reason(self):
        # Only compute-1 reports: 2 of 5 instances have no telemetry.
        with self.store.engine.begin() as conn:
            conn.execute(sa.text(
                "DELETE FROM latest_reports WHERE host = 'compute-2'"))
        resp = self.admin_api.post('/audits', {
            'audit_type': 'ONESHOT', 'goal': 'contention_reduction',
            'strategy': 'cache_aware_swap',
            'parameters': dict(self.PARAMETERS, max_missing_ratio=0.2)})
        audit_uuid = resp.json()['uuid']
        self._wait_for_audit_state(audit_uuid, 'FAILED')
        audit = self._get_latest('/audits/%s' % audit_uuid)
        self.assertIn('no fresh telemetry', audit['status_message'])


class _Agent:
    """Stands in for contention-agent's RPC endpoint on one host."""

    target = oslo_messaging.Target(version='1.0')

    def __init__(self, host):
        self.host = host
        self.calls = []

    def repin_instance(self, ctxt, instance_uuid, node=None, cpus=None,
                       move_memory=False):
        self.calls.append((instance_uuid, node, cpus, move_memory))
        return {'instance_uuid': instance_uuid, 'host': self.host,
                'changed': True}


class TestContentionRepinEndToEnd(_EndToEnd):
    """The local phase's re-pins reach the host's agent over RPC."""

    def setUp(self):
        super().setUp()
        _register('watcher_actions.contention_repin', actions.agent_opts())
        self.flags(rpc_timeout=10, group='watcher_actions.contention_repin')
        actions._TRANSPORTS.clear()
        self.addCleanup(actions._TRANSPORTS.clear)
        self.agents = {}
        for host in ('compute-1', 'compute-2'):
            agent = self.agents[host] = _Agent(host)
            server = oslo_messaging.get_rpc_server(
                actions.transport(None),
                agent_rpc.target(host),
                [agent], executor='threading')
            server.start()
            self.addCleanup(server.wait)
            self.addCleanup(server.stop)

    def test_local_phase_repins(self):
        # All of compute-1's instances run on socket 0 (see _seed): the
        # local phase deals them over both sockets.
        plan, acts = self._audit({'threshold': 1e12, 'max_swaps': 0,
                                  'local_phase': True})
        self.assertTrue(acts)
        self.assertEqual({'contention_repin'},
                         {a['action_type'] for a in acts})
        indicators = {i['name']: i['value']
                      for i in plan['efficacy_indicators']}
        self.assertEqual(len(acts), indicators['repins_count'])
        self.assertEqual(0, indicators['instance_migrations_count'])
        self._start(plan['uuid'], 'SUCCEEDED')
        for host, agent in self.agents.items():
            planned = sorted(
                (a['input_parameters']['resource_id'],
                 a['input_parameters']['node'], None,
                 a['input_parameters']['move_memory'])
                for a in acts if a['input_parameters']['host'] == host)
            self.assertEqual(planned, sorted(agent.calls), host)
            self.assertTrue(all(node == 1 for _, node, _, _ in planned))
        self.assertTrue(self.agents['compute-1'].calls)


class _TempDir:
    """A fixtures-style temporary directory (no extra dependency)."""

    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.path = self._dir.name

    def cleanUp(self):
        self._dir.cleanup()

    def getDetails(self):
        return {}

"""contention_swap against a fake Nova; repin and CPU quota over fake RPC."""

import watcher.tests.unit  # noqa: F401  (must precede other watcher imports)

import threading
import uuid as uuidlib
from unittest import mock

import jsonschema
import oslo_messaging
from watcher.common import exception
from watcher.common import utils
from watcher.tests.unit import base

from contention import agent_rpc
from contention import store as store_api
from watcher_strategies import actions

A = str(uuidlib.uuid4())
B = str(uuidlib.uuid4())


class FakeNova:
    """Instances on hosts; live migrations that may be made to fail."""

    def __init__(self, where, fail=(), raises=(), stuck=(), lost=None,
                 unstoppable=(), abort_raises=()):
        self.where = dict(where)
        self.fail = set(fail)
        #: (uuid, dest) whose migration raises a Nova error.
        self.raises = set(raises)
        #: (uuid, dest) whose migration still runs after Watcher's wait
        #: (until aborted).
        self.stuck = set(stuck)
        #: {(uuid, dest): n}: after that migration is asked for, the next
        #: n lookups of uuid fail with a 503.
        self.lost = dict(lost or {})
        #: uuids whose running migration an abort does not stop.
        self.unstoppable = set(unstoppable)
        #: uuids whose abort fails with a 503 (the migration runs on).
        self.abort_raises = set(abort_raises)
        self.errors = {}
        self.running = {}
        self.calls = []
        self.aborted = []

    def find_instance(self, uuid):
        if self.errors.get(uuid):
            self.errors[uuid] -= 1
            raise exception.NovaClientError(reason='503 Service Unavailable')
        if uuid not in self.where:
            raise exception.ComputeResourceNotFound(name=uuid)
        return mock.Mock(host=self.where[uuid], status='ACTIVE',
                         task_state=self.running.get(uuid))

    def abort_live_migrate(self, instance_id, source, destination):
        self.aborted.append(instance_id)
        if instance_id in self.abort_raises:
            raise exception.NovaClientError(reason='503 Service Unavailable')
        if instance_id not in self.unstoppable:
            self.running.pop(instance_id, None)
        return True

    def get_compute_node_by_hostname(self, host):
        if host == 'missing':
            raise exception.ComputeNodeNotFound(name=host)
        return mock.Mock(status='disabled' if host == 'off' else 'enabled')

    def live_migrate_instance(self, instance_id, dest_hostname):
        self.calls.append((instance_id, dest_hostname))
        self.errors[instance_id] = self.lost.get((instance_id, dest_hostname))
        if (instance_id, dest_hostname) in self.raises:
            raise exception.NovaClientError(reason='boom')
        if (instance_id, dest_hostname) in self.stuck:
            self.running[instance_id] = 'migrating'
            return False
        if (instance_id, dest_hostname) in self.fail:
            return False
        self.where[instance_id] = dest_hostname
        return True


def _swap(nova, **extra):
    action = actions.ContentionSwap(utils.Struct(connection=None))
    params = {'resource_id': A, 'source_node': 'h1',
              'destination_node': 'h2', 'partner_id': B,
              'partner_source_node': 'h2', 'partner_destination_node': 'h1',
              'migration_type': 'live'}
    params.update(extra)
    action.input_parameters = params
    action._nova = lambda: nova
    action.LOOKUP_DELAY_S = 0
    return action


def _moves(action):
    return {(m.uuid, m.source_host, m.dest_host, m.origin)
            for m in action.moved}


SWAP = 'watcher:contention_swap:'


class TestContentionSwap(base.TestCase):

    def _failed(self, nova, **extra):
        """The swap on ``nova`` and the failure its execute() raises."""
        action = _swap(nova, **extra)
        return action, self.assertRaises(actions.ContentionActionFailed,
                                         action.execute)

    def _short_wait(self):
        self.flags(migration_max_retries=2, migration_interval=0.1,
                   group='nova')

    def test_both_legs_in_order(self):
        nova = FakeNova({A: 'h1', B: 'h2'})
        action = _swap(nova)
        action.validate_parameters()
        action.pre_condition()
        self.assertTrue(action.execute())
        self.assertEqual([(A, 'h2'), (B, 'h1')], nova.calls)
        self.assertEqual({A: 'h2', B: 'h1'}, nova.where)
        self.assertEqual([A, B], [m.uuid for m in action.moved])

    def test_the_roll_backs_swap_is_recorded_as_an_undo(self):
        # The roll-back never undoes an undo: the move log must say so,
        # the failed outcome after the mark.
        action = _swap(FakeNova({A: 'h1', B: 'h2'}), undo=True)
        action.validate_parameters()
        self.assertTrue(action.execute())
        self.assertEqual(['watcher:contention_swap:undo'] * 2,
                         [m.origin for m in action.moved])
        action, _ = self._failed(FakeNova({A: 'h1', B: 'h2'},
                                          raises={(A, 'h2')}), undo=True)
        self.assertEqual(['watcher:contention_swap:undo:failed'],
                         [m.origin for m in action.moved])

    def test_numa_legs_are_repinned_where_they_landed(self):
        nova = FakeNova({A: 'h1', B: 'h2'})
        action = _swap(nova, destination_cpus=[4, 5],
                       partner_destination_cpus=[0, 1])
        with mock.patch.object(actions, 'repin') as repin:
            self.assertTrue(action.execute())
        self.assertEqual(
            [mock.call(action.config, 'h2', A, cpus=[4, 5],
                       move_memory=True),
             mock.call(action.config, 'h1', B, cpus=[0, 1],
                       move_memory=True)],
            repin.call_args_list)

    def test_repin_failure_after_landing_does_not_fail_the_swap(self):
        nova = FakeNova({A: 'h1', B: 'h2'})
        action = _swap(nova, destination_cpus=[4, 5])
        with mock.patch.object(actions, 'repin',
                               side_effect=oslo_messaging.MessagingTimeout):
            self.assertTrue(action.execute())
        self.assertEqual({A: 'h2', B: 'h1'}, nova.where)

    def test_leg_two_failure_undoes_leg_one(self):
        nova = FakeNova({A: 'h1', B: 'h2'}, fail={(B, 'h1')})
        action, exc = self._failed(nova)
        self.assertEqual([(A, 'h2'), (B, 'h1'), (A, 'h1')], nova.calls)
        self.assertEqual({A: 'h1', B: 'h2'}, nova.where)
        self.assertIn('leg two failed', str(exc))
        self.assertIn('undone', str(exc))
        # Both legs are recorded, failed: the cool-down holds them back.
        self.assertEqual({(A, 'watcher:contention_swap:failed'),
                          (B, 'watcher:contention_swap:failed')},
                         {(m.uuid, m.origin) for m in action.moved})

    def test_half_done_swap_is_recorded_and_reported(self):
        nova = FakeNova({A: 'h1', B: 'h2'}, fail={(B, 'h1'), (A, 'h1')})
        action, exc = self._failed(nova)
        self.assertIn('NOT undone: %s is on h2' % A, str(exc))
        self.assertIn('recorded', str(exc))
        self.assertEqual({(A, 'h2', 'watcher:contention_swap:half_done'),
                          (B, 'h2', 'watcher:contention_swap:failed')},
                         {(m.uuid, m.dest_host, m.origin)
                          for m in action.moved})

    def test_nova_error_is_a_failed_leg(self):
        nova = FakeNova({A: 'h1', B: 'h2'}, raises={(A, 'h2')})
        action, exc = self._failed(nova)
        self.assertIn('leg one failed: %s is on h1' % A, str(exc))
        self.assertEqual([(A, 'h1', 'watcher:contention_swap:failed')],
                         [(m.uuid, m.dest_host, m.origin)
                          for m in action.moved])

    def test_timed_out_migration_is_aborted(self):
        nova = FakeNova({A: 'h1', B: 'h2'}, stuck={(A, 'h2')})
        action = _swap(nova)
        self.assertRaises(actions.ContentionActionFailed, action.execute)
        self.assertEqual([A], nova.aborted)
        self.assertEqual([(A, 'h2')], nova.calls)
        self.assertEqual('h1', nova.where[A])

    def test_lookup_error_after_leg_one_is_not_taken_for_its_source(self):
        # A landed on h2; Nova then answers 503 to every lookup of A.
        nova = FakeNova({A: 'h1', B: 'h2'}, lost={(A, 'h2'): 99})
        action, exc = self._failed(nova)
        self.assertEqual([(A, 'h2')], nova.calls)
        self.assertEqual({(A, 'h1', 'h2', SWAP + 'unknown')},
                         _moves(action))
        self.assertIn('%s is on an UNKNOWN host' % A, str(exc))
        self.assertIn('leg two (%s) not started' % B, str(exc))

    def test_one_lookup_error_after_leg_two_is_retried(self):
        nova = FakeNova({A: 'h1', B: 'h2'}, lost={(B, 'h1'): 1})
        action = _swap(nova)
        self.assertTrue(action.execute())
        self.assertEqual({A: 'h2', B: 'h1'}, nova.where)
        self.assertEqual([(A, 'h2'), (B, 'h1')], nova.calls)

    def test_lookup_error_after_leg_two_does_not_undo_leg_one(self):
        # B landed on h1; moving A back to h1 would put both there.
        nova = FakeNova({A: 'h1', B: 'h2'}, lost={(B, 'h1'): 99})
        action, exc = self._failed(nova)
        self.assertEqual([(A, 'h2'), (B, 'h1')], nova.calls)
        self.assertEqual({(A, 'h1', 'h2', SWAP + 'half_done'),
                          (B, 'h2', 'h1', SWAP + 'unknown')},
                         _moves(action))
        self.assertIn('%s is on an UNKNOWN host' % B, str(exc))
        self.assertIn('NOT undone: %s is on h2' % A, str(exc))
        self.assertNotIn('undone:', str(exc).replace('NOT undone:', ''))

    def test_leg_two_still_running_after_the_wait_does_not_undo_leg_one(
            self):
        self._short_wait()
        nova = FakeNova({A: 'h1', B: 'h2'}, stuck={(B, 'h1')},
                        unstoppable={B})
        action, exc = self._failed(nova)
        self.assertEqual([B], nova.aborted)
        self.assertEqual([(A, 'h2'), (B, 'h1')], nova.calls)
        self.assertEqual({(A, 'h1', 'h2', SWAP + 'half_done'),
                          (B, 'h2', 'h1', SWAP + 'unknown')},
                         _moves(action))
        self.assertIn('NOT undone', str(exc))

    def test_abort_that_fails_then_a_wait_that_ends_is_unknown(self):
        self._short_wait()
        nova = FakeNova({A: 'h1', B: 'h2'}, stuck={(A, 'h2')},
                        abort_raises={A})
        action, exc = self._failed(nova)
        self.assertEqual([A], nova.aborted)
        self.assertEqual([(A, 'h2')], nova.calls)
        self.assertEqual({(A, 'h1', 'h2', SWAP + 'unknown')},
                         _moves(action))
        self.assertIn('%s is on an UNKNOWN host' % A, str(exc))

    def test_a_failed_swap_is_recorded_in_the_store(self):
        store = store_api.open_store('sqlite://')
        store.upgrade()
        nova = FakeNova({A: 'h1', B: 'h2'}, fail={(A, 'h2')})
        action = _swap(nova)
        action._store = lambda: mock.Mock(
            record_moves=store.record_moves, dispose=lambda: None)
        self.assertRaises(actions.ContentionActionFailed, action.execute)
        self.assertEqual([(A, 'watcher:contention_swap:failed')],
                         [(m.uuid, m.origin) for m in store.moves_since(0)])


class TestContentionMigrate(base.TestCase):

    def _migrate(self, nova):
        action = actions.ContentionMigrate(utils.Struct(connection=None))
        action.input_parameters = {'resource_id': A, 'source_node': 'h1',
                                   'destination_node': 'h2',
                                   'migration_type': 'live'}
        action._nova = lambda: nova
        return action

    def test_one_way_move_is_recorded(self):
        nova = FakeNova({A: 'h1'})
        action = self._migrate(nova)
        self.assertTrue(action.execute())
        self.assertEqual('h2', nova.where[A])
        self.assertEqual([(A, 'h1', 'h2', 'watcher:contention_migrate')],
                         [(m.uuid, m.source_host, m.dest_host, m.origin)
                          for m in action.moved])

    def test_failure_is_recorded_too(self):
        nova = FakeNova({A: 'h1'}, fail={(A, 'h2')})
        action = self._migrate(nova)
        self.assertRaises(actions.ContentionActionFailed, action.execute)
        self.assertEqual(['watcher:contention_migrate:failed'],
                         [m.origin for m in action.moved])

    def test_leg_one_failure_does_not_start_leg_two(self):
        nova = FakeNova({A: 'h1', B: 'h2'}, fail={(A, 'h2')})
        action = _swap(nova)
        exc = self.assertRaises(actions.ContentionActionFailed,
                                action.execute)
        self.assertEqual([(A, 'h2')], nova.calls)
        self.assertIn('leg two (%s) not started' % B, str(exc))

    def test_undo_that_fails_is_reported(self):
        nova = FakeNova({A: 'h1', B: 'h2'}, fail={(B, 'h1'), (A, 'h1')})
        exc = self.assertRaises(actions.ContentionActionFailed,
                                _swap(nova).execute)
        self.assertIn('NOT undone', str(exc))

    def test_pre_condition(self):
        self.assertRaises(exception.ActionSkipped,
                          _swap(FakeNova({A: 'h3', B: 'h2'})).pre_condition)
        self.assertRaises(exception.ActionSkipped,
                          _swap(FakeNova({B: 'h2'})).pre_condition)
        self.assertRaises(actions.ContentionActionFailed,
                          _swap(FakeNova({A: 'h1', B: 'h2'}),
                                destination_node='off').pre_condition)
        self.assertRaises(actions.ContentionActionFailed,
                          _swap(FakeNova({A: 'h1', B: 'h2'}),
                                destination_node='missing').pre_condition)

    def test_schema(self):
        action = _swap(FakeNova({}), unexpected=1)
        self.assertRaises(jsonschema.ValidationError,
                          action.validate_parameters)
        action = _swap(FakeNova({}), resource_id='not-a-uuid')
        self.assertRaises(jsonschema.ValidationError,
                          action.validate_parameters)
        self.assertTrue(_swap(FakeNova({}), destination_cpus=[0, 1])
                        .validate_parameters())
        self.assertIn('second only if the first',
                      _swap(FakeNova({})).get_description())

    def test_revert_puts_back_what_moved(self):
        nova = FakeNova({A: 'h2', B: 'h2'})
        _swap(nova).revert()
        self.assertEqual({A: 'h1', B: 'h2'}, nova.where)

    def test_revert_moves_nothing_while_a_location_is_unknown(self):
        nova = FakeNova({A: 'h2', B: 'h1'})
        nova.errors[B] = 99
        action = _swap(nova)
        action.revert()
        self.assertEqual([], nova.calls)
        nova.errors[B] = 0
        nova.running[B] = 'migrating'
        action.revert()
        self.assertEqual([], nova.calls)

    def test_success_is_recorded_in_the_store(self):
        store = store_api.open_store('sqlite://')
        store.upgrade()
        nova = FakeNova({A: 'h1', B: 'h2'})
        action = _swap(nova)
        action._store = lambda: mock.Mock(
            record_moves=store.record_moves, dispose=lambda: None)
        action.execute()
        moves = store.moves_since(0)
        self.assertEqual({(A, 'h1', 'h2'), (B, 'h2', 'h1')},
                         {(m.uuid, m.source_host, m.dest_host)
                          for m in moves})


class _Agent:
    target = oslo_messaging.Target(version='1.0')

    def __init__(self):
        self.calls = []
        self.contexts = []
        self.done = threading.Event()

    def repin_instance(self, ctxt, instance_uuid, node=None, cpus=None,
                       move_memory=False):
        self.contexts.append(ctxt)
        self.calls.append((instance_uuid, node, cpus, move_memory))
        return {'instance_uuid': instance_uuid, 'changed': True}

    def set_cpu_quota(self, ctxt, instance_uuid, quota_us):
        self.calls.append((instance_uuid, quota_us))
        return {'instance_uuid': instance_uuid, 'quota_us': quota_us}


def _agent_on(test, host):
    """A fake agent answering RPCs for ``host`` on the fake bus."""
    transport = actions.transport('fake:/')
    agent = _Agent()
    server = oslo_messaging.get_rpc_server(
        transport, agent_rpc.target(host),
        [agent], executor='threading')
    server.start()
    test.addCleanup(server.wait)
    test.addCleanup(server.stop)
    return agent


class TestContentionRepin(base.TestCase):

    def test_asks_the_hosts_agent(self):
        host = 'host-%s' % uuidlib.uuid4().hex[:8]
        agent = _agent_on(self, host)
        action = actions.ContentionRepin(utils.Struct(
            transport_url='fake:/', rpc_timeout=5))
        action.input_parameters = {'resource_id': A, 'host': host,
                                   'socket': 1, 'node': 1,
                                   'move_memory': False}
        action.validate_parameters()
        self.assertTrue(action.execute())
        self.assertEqual([(A, 1, None, False)], agent.calls)
        # The contract's service context, which the agent authorises.
        agent_rpc.authorise(agent.contexts[0], 'repin_instance')
        self.assertEqual('watcher-applier', agent.contexts[0]['user_name'])

    def test_pre_condition_skips_a_moved_instance(self):
        action = actions.ContentionRepin(utils.Struct())
        action.input_parameters = {'resource_id': A, 'host': 'h1'}
        action._nova = lambda: FakeNova({A: 'h2'})
        self.assertRaises(exception.ActionSkipped, action.pre_condition)

    def test_agent_refusal_fails_with_its_reason(self):
        action = actions.ContentionRepin(utils.Struct())
        action.input_parameters = {'resource_id': A, 'host': 'h1'}
        with mock.patch.object(actions, 'repin', side_effect=(
                oslo_messaging.RemoteError('ActionError', 'busy'))):
            exc = self.assertRaises(actions.ContentionActionFailed,
                                    action.execute)
        self.assertIn('refused', str(exc))

    def test_agent_refusal_carries_its_reason_not_its_traceback(self):
        action = actions.ContentionRepin(utils.Struct())
        action.input_parameters = {'resource_id': A, 'host': 'h1'}
        trace = ['Traceback (most recent call last):\n',
                 '  File "compute_agent/actions.py", line 1, in repin\n'] * 50
        with mock.patch.object(actions, 'repin', side_effect=(
                oslo_messaging.RemoteError('ActionError', 'busy', trace))):
            exc = self.assertRaises(actions.ContentionActionFailed,
                                    action.execute)
        self.assertIn('busy', str(exc))
        self.assertNotIn('Traceback', str(exc))
        self.assertLess(len(str(exc)), 200)

    def test_a_repin_and_a_quota_change_are_recorded(self):
        store = store_api.open_store('sqlite://')
        store.upgrade()
        for cls, params, call, origin in (
                (actions.ContentionRepin, {'node': 1}, 'repin',
                 'watcher:contention_repin'),
                (actions.ContentionRepin, {'node': 1, 'undo': True}, 'repin',
                 'watcher:contention_repin:undo'),
                (actions.ContentionCpuQuota, {'quota': 0.5},
                 'set_cpu_quota', 'watcher:contention_cpu_quota')):
            action = cls(utils.Struct(connection=None))
            action.input_parameters = dict(params, resource_id=A,
                                           host='h1')
            action._store = lambda: mock.Mock(
                record_moves=store.record_moves, dispose=lambda: None)
            with mock.patch.object(actions, call, return_value='ok'):
                self.assertTrue(action.execute())
            self.assertEqual((A, 'h1', 'h1', origin), [
                (m.uuid, m.source_host, m.dest_host, m.origin)
                for m in store.moves_since(0)][-1])


class TestContentionCpuQuota(base.TestCase):

    def _action(self, quota, **config):
        action = actions.ContentionCpuQuota(utils.Struct(
            transport_url='fake:/', rpc_timeout=5, **config))
        action.input_parameters = {'resource_id': A, 'host': 'h1',
                                   'quota': quota, 'old_quota': 0.5}
        action.validate_parameters()
        return action

    def test_asks_the_hosts_agent_in_microseconds(self):
        host = 'host-%s' % uuidlib.uuid4().hex[:8]
        agent = _agent_on(self, host)
        action = self._action(0.75, cpu_period_us=100000)
        action.input_parameters['host'] = host
        self.assertTrue(action.execute())
        self.assertEqual([(A, 75000)], agent.calls)

    def test_quota_follows_the_agents_period_and_one_lifts_the_cap(self):
        self.assertEqual(37500, self._action(
            0.75, cpu_period_us=50000).quota_us())
        self.assertEqual(-1, self._action(1.0).quota_us())
        # The agent's floor is 1000 us.
        self.assertEqual(1000, self._action(0.001).quota_us())

    def test_schema_refuses_quotas_outside_0_1(self):
        for bad in (0, 1.5, -0.25, 'half'):
            action = actions.ContentionCpuQuota(utils.Struct())
            action.input_parameters = {'resource_id': A, 'host': 'h1',
                                       'quota': bad}
            self.assertRaises(jsonschema.ValidationError,
                              action.validate_parameters)

    def test_pre_condition_skips_a_moved_instance(self):
        action = self._action(0.75)
        action._nova = lambda: FakeNova({A: 'h2'})
        self.assertRaises(exception.ActionSkipped, action.pre_condition)
        action._nova = lambda: FakeNova({})
        self.assertRaises(exception.ActionSkipped, action.pre_condition)
        action._nova = lambda: FakeNova({A: 'h1'})
        action.pre_condition()

    def test_agent_refusal_fails_with_its_reason(self):
        action = self._action(0.75)
        with mock.patch.object(actions, 'set_cpu_quota', side_effect=(
                oslo_messaging.RemoteError('ActionError', 'dedicated'))):
            exc = self.assertRaises(actions.ContentionActionFailed,
                                    action.execute)
        self.assertIn('refused: dedicated', str(exc))

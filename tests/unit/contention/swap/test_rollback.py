"""The measured roll-back: our moves undone where an instance got slower."""

import dataclasses

from oslotest import base
import testtools

from contention import cluster
from contention import store as store_api
from contention import swap
from contention.swap import rollback
from tests.unit.contention.store import reports
from tests.unit.contention.swap import views as v

M = 1e6
NOW = 10000.0
THEN = NOW - 60
PARAMS = swap.SwapParameters(local_phase=False, numa_repair=False,
                             cpu_quota=False, max_swaps=0,
                             rollback_harm=0.05)


def _vm(uuid, host, socket, ipc, memory_node=None, cpu_util=1.0, **kw):
    return v.vm(uuid, host, 1 * M, socket=socket, node=socket,
                memory_node=socket if memory_node is None else memory_node,
                ipc=ipc, cpu_util=cpu_util, **kw)


def _seen(host, node, ipc=1.0, memory_node=None, cpu_util=1.0):
    return swap.Seen(host, node, node if memory_node is None
                     else memory_node, ipc, cpu_util)


def _log(moves, seen):
    log = swap.InMemoryMoveLog()
    log.record(moves, seen=seen)
    return log


class TestLoss(testtools.TestCase):

    def test_a_throughput_code_loses_what_its_ipc_lost(self):
        self.assertAlmostEqual(0.1, rollback.loss(
            _seen('h', 0, ipc=1.0), _seen('h', 0, ipc=0.9), False))

    def test_a_service_loses_its_queue_stretched(self):
        # 1 % slower at 90 % busy: about 10 % longer response times.
        lost = rollback.loss(_seen('h', 0, 1.0, cpu_util=0.9),
                             _seen('h', 0, 0.99, cpu_util=0.9), True)
        self.assertAlmostEqual(0.1, lost, places=2)
        self.assertAlmostEqual(0.01, rollback.loss(
            _seen('h', 0, 1.0, cpu_util=0.9),
            _seen('h', 0, 0.99, cpu_util=0.9), False))

    def test_a_service_pushed_to_saturation_lost_everything(self):
        self.assertEqual(1.0, rollback.loss(
            _seen('h', 0, 1.0, cpu_util=0.95),
            _seen('h', 0, 0.9, cpu_util=0.95), True))

    def test_a_faster_instance_lost_nothing(self):
        self.assertLess(rollback.loss(_seen('h', 0, 1.0, cpu_util=0.5),
                                      _seen('h', 0, 1.2), True), 0)

    def test_no_instruction_rate_is_no_judgement(self):
        self.assertIsNone(rollback.loss(_seen('h', 0, None),
                                        _seen('h', 0, 1.0), False))
        self.assertIsNone(rollback.loss(_seen('h', 0, 1.0),
                                        _seen('h', 0, None), False))


class TestUndo(testtools.TestCase):
    """a was re-pinned from socket 1 onto b's socket 0, with its memory."""

    def _view(self, b_ipc, hosts=None, **a):
        return v.view(hosts or [v.host('h')],
                      [_vm('a', 'h', 0, 1.0, **a), _vm('b', 'h', 0, b_ipc)],
                      now=NOW)

    def _log(self, *extra, a_before=None):
        seen = {'a': a_before or _seen('h', 1), 'b': _seen('h', 0)}
        return _log([swap.Move('a', 'h', 'h', THEN, 'sim:test')]
                    + list(extra), seen)

    def test_a_slowed_co_runner_undoes_the_repin(self):
        plan = swap.run_audit(self._view(0.8), PARAMS, self._log())
        self.assertEqual(
            (cluster.Repin('a', 'h', 1, move_memory=True, undo=True),),
            plan.actions)

    def test_within_the_bound_nothing_is_undone(self):
        self.assertEqual((), swap.run_audit(self._view(0.97), PARAMS,
                                            self._log()).actions)

    def test_off_nothing_is_undone_nor_held(self):
        params = dataclasses.replace(PARAMS, rollback_harm=0)
        self.assertEqual((), swap.run_audit(self._view(0.8), params,
                                            self._log()).actions)
        log = self._log(swap.Move('a', 'h', 'h', NOW - 30, 'sim:test'))
        view = self._view(0.8)
        self.assertIs(view, rollback.hold(view, log, params))

    def test_the_default_undoes_only_a_vm_made_much_worse(self):
        default = swap.SwapParameters()
        self.assertGreater(default.rollback_harm, default.max_vm_harm)
        params = dataclasses.replace(PARAMS,
                                     rollback_harm=default.rollback_harm)
        # 10 % slower: past max_vm_harm, within the default's net.
        self.assertEqual((), swap.run_audit(self._view(0.9), params,
                                            self._log()).actions)
        self.assertEqual(
            (cluster.Repin('a', 'h', 1, move_memory=True, undo=True),),
            swap.run_audit(self._view(0.8), params, self._log()).actions)

    def test_a_service_is_netted_by_the_same_multiple_of_its_bound(self):
        default = swap.SwapParameters()
        params = dataclasses.replace(PARAMS,
                                     rollback_harm=default.rollback_harm)
        self.assertAlmostEqual(
            default.rollback_harm / default.max_vm_harm,
            rollback.net(default, True) / default.max_latency_harm)
        self.assertEqual(default.rollback_harm,
                         rollback.net(default, False))
        # 4 % fewer instructions per cycle at half its CPU: b's response
        # time 8 % longer, past the service's net and within the batch
        # code's; only the declared service's host is rolled back.
        seen = {'a': _seen('h', 1), 'b': _seen('h', 0, cpu_util=0.5)}
        log = _log([swap.Move('a', 'h', 'h', THEN, 'sim:test')], seen)
        for latency, undone in ((True, True), (False, False)):
            view = v.view([v.host('h')], [
                _vm('a', 'h', 0, 1.0),
                _vm('b', 'h', 0, 0.96, cpu_util=0.5, latency=latency)],
                now=NOW)
            actions = swap.run_audit(view, params, log).actions
            self.assertEqual(undone, bool(actions), latency)

    def test_memory_that_stayed_stays(self):
        # a's memory was on socket 0 before the re-pin too.
        plan = swap.run_audit(self._view(0.8), PARAMS, self._log(
            a_before=_seen('h', 1, memory_node=0)))
        self.assertEqual((cluster.Repin('a', 'h', 1, undo=True),),
                         plan.actions)

    def test_memory_moved_alone_goes_back_with_the_vcpus_for_a_moment(self):
        # a's vCPUs stayed on 0; its memory came from node 1 (a repair).
        plan = swap.run_audit(self._view(0.8), PARAMS, self._log(
            a_before=_seen('h', 0, memory_node=1)))
        self.assertEqual(
            (cluster.Repin('a', 'h', 1, move_memory=True, undo=True),
             cluster.Repin('a', 'h', 0, undo=True)), plan.actions)

    def test_an_undo_is_never_undone_and_holds_the_host(self):
        # a's second move within the cool-down was the undo.
        log = self._log(swap.Move('a', 'h', 'h', NOW - 30, swap.origin_of(
            'sim:test', undo=True)))
        view = self._view(0.8)
        plan = swap.run_audit(view, PARAMS, log)
        self.assertEqual((), plan.actions)
        held = rollback.hold(view, log, PARAMS)
        self.assertFalse(held.hosts[0].enabled)
        self.assertIn('rollback_hold', held.hosts[0].skip_reason)

    def test_a_plan_moving_an_instance_twice_is_undone_as_one(self):
        # A rotation re-pins a twice in one plan (1 -> 2 -> 0): it goes
        # back to where it was seen before the first, and the host is not
        # held (nothing was undone yet).
        log = self._log(swap.Move('a', 'h', 'h', THEN, 'sim:test'))
        view = self._view(0.8)
        self.assertIs(view, rollback.hold(view, log, PARAMS))
        plan = swap.run_audit(view, PARAMS, log)
        self.assertEqual(
            (cluster.Repin('a', 'h', 1, move_memory=True, undo=True),),
            plan.actions)

    def test_the_undo_is_recorded_as_one(self):
        moves = swap.moves_of(
            [cluster.Repin('a', 'h', 1, undo=True), cluster.Repin('b', 'h', 1),
             cluster.Swap(cluster.Migrate('x', 'h1', 'h2', undo=True),
                          cluster.Migrate('y', 'h2', 'h1', undo=True))],
            NOW, 'sim:test')
        self.assertEqual(['sim:test:undo', 'sim:test', 'sim:test:undo',
                          'sim:test:undo'], [m.origin for m in moves])

    def test_a_failed_attempt_is_not_undone(self):
        log = _log([swap.Move('a', 'h', 'h', THEN, 'sim:test:' +
                              swap.FAILED)],
                   {'a': _seen('h', 1), 'b': _seen('h', 0)})
        self.assertEqual((), swap.run_audit(self._view(0.8), PARAMS,
                                            log).actions)

    def test_nothing_to_undo_is_said(self):
        # a's old socket is gone from the view: the undo cannot be built.
        plan = swap.run_audit(self._view(0.8), PARAMS, self._log(
            a_before=_seen('h', 7)))
        self.assertEqual((), plan.actions)
        self.assertIn('rollback_kept',
                      [s.reason.split(':')[0] for s in plan.skipped])

    def test_an_old_move_is_not_judged(self):
        log = _log([swap.Move('a', 'h', 'h', NOW - 4000, 'sim:test')],
                   {'a': _seen('h', 1), 'b': _seen('h', 0)})
        self.assertEqual((), swap.run_audit(self._view(0.8), PARAMS,
                                            log).actions)


class TestSpent(testtools.TestCase):
    """What our moves within the cool-down already cost each instance."""

    def _spent(self, b_ipc, params=PARAMS, measured_since=None,
               settled_at=None):
        view = v.view(
            [v.host('h', measured_since=measured_since), v.host('g')],
            [_vm('a', 'h', 0, 1.0), _vm('b', 'h', 0, b_ipc),
             _vm('c', 'g', 0, 0.5)], now=NOW)
        log = _log([swap.Move('a', 'h', 'h', THEN, 'sim:test',
                              settled_at=settled_at)],
                   {'a': _seen('h', 1), 'b': _seen('h', 0),
                    'c': _seen('g', 0)})
        return rollback.spent(view, params, log)

    def test_the_losses_on_the_hosts_our_moves_landed_on(self):
        # c lost half on g, where we moved nothing: not ours to count.
        spent = self._spent(0.96)
        self.assertEqual(['b'], list(spent))
        self.assertAlmostEqual(0.04, spent['b'])

    def test_below_the_net_and_whatever_the_roll_back_is_set_to(self):
        params = dataclasses.replace(PARAMS, rollback_harm=0)
        self.assertAlmostEqual(0.04, self._spent(0.96, params)['b'])

    def test_a_faster_instance_spent_nothing(self):
        self.assertEqual({}, self._spent(1.1))

    def test_a_measurement_during_the_copy_is_not_counted(self):
        self.assertEqual({}, self._spent(0.96, measured_since=NOW - 60,
                                         settled_at=NOW - 20))
        self.assertEqual(['b'], list(self._spent(
            0.96, measured_since=NOW - 15, settled_at=NOW - 20)))

    def test_without_a_log_or_a_cool_down_nothing_is_spent(self):
        view = v.view([v.host('h')], [_vm('b', 'h', 0, 0.5)], now=NOW)
        self.assertEqual({}, rollback.spent(view, PARAMS, None))
        params = dataclasses.replace(PARAMS, cooldown_s=0)
        self.assertEqual({}, self._spent(0.9, params))


class TestUndoMigrations(testtools.TestCase):

    def test_a_swap_goes_back_as_a_swap(self):
        # x came to h1 from h2 and y went the other way; c on h1 slowed.
        view = v.view([v.host('h1'), v.host('h2')],
                      [_vm('x', 'h1', 0, 1.0), _vm('c', 'h1', 0, 0.7),
                       _vm('y', 'h2', 1, 1.0)], now=NOW)
        log = _log([swap.Move('x', 'h2', 'h1', THEN, 'sim:test'),
                    swap.Move('y', 'h1', 'h2', THEN, 'sim:test')],
                   {'x': _seen('h2', 1), 'y': _seen('h1', 0),
                    'c': _seen('h1', 0)})
        plan = swap.run_audit(view, PARAMS, log)
        self.assertEqual(1, len(plan.actions))
        swapped = plan.actions[0]
        self.assertIsInstance(swapped, cluster.Swap)
        self.assertEqual(
            {cluster.Migrate('x', 'h1', 'h2', 1, undo=True),
             cluster.Migrate('y', 'h2', 'h1', 0, undo=True)},
            {swapped.first, swapped.second})

    def _swapped(self, measured_since, settled_at):
        # As above, with the copies ending at settled_at and both hosts
        # measured since measured_since.
        view = v.view([v.host('h1', measured_since=measured_since),
                       v.host('h2', measured_since=measured_since)],
                      [_vm('x', 'h1', 0, 1.0), _vm('c', 'h1', 0, 0.7),
                       _vm('y', 'h2', 1, 1.0)], now=NOW)
        log = _log([swap.Move('x', 'h2', 'h1', THEN, 'sim:test',
                              settled_at=settled_at),
                    swap.Move('y', 'h1', 'h2', THEN, 'sim:test',
                              settled_at=settled_at)],
                   {'x': _seen('h2', 1), 'y': _seen('h1', 0),
                    'c': _seen('h1', 0)})
        return swap.run_audit(view, PARAMS, log)

    def test_a_measurement_during_the_copy_is_not_judged(self):
        # The copy ran until NOW - 20; the interval began at NOW - 60.
        plan = self._swapped(NOW - 60, NOW - 20)
        self.assertEqual((), plan.actions)
        self.assertEqual(['rollback_wait'],
                         [s.reason.split(':')[0] for s in plan.skipped])
        self.assertIn('c lost 30 %', plan.skipped[0].reason)

    def test_a_measurement_after_the_copy_is_judged(self):
        plan = self._swapped(NOW - 15, NOW - 20)
        self.assertEqual(1, len(plan.actions))
        self.assertIsInstance(plan.actions[0], cluster.Swap)

    def test_a_view_that_says_nothing_of_its_interval_is_judged(self):
        self.assertEqual(1, len(self._swapped(None, NOW - 20).actions))

    def test_watchers_moves_settle_when_recorded(self):
        self.assertEqual(THEN, swap.Move('x', 'h2', 'h1', THEN).settled)
        self.assertEqual(NOW, swap.Move('x', 'h2', 'h1', THEN,
                                        settled_at=NOW).settled)

    def test_an_undo_that_does_not_fit_is_not_proposed(self):
        # x came from h2, which has no room left for it.
        view = v.view([v.host('h1'), v.host('h2', cpus=1)],
                      [_vm('x', 'h1', 0, 1.0), _vm('c', 'h1', 0, 0.7),
                       _vm('z', 'h2', 0, 1.0), _vm('w', 'h2', 1, 1.0)],
                      now=NOW)
        log = _log([swap.Move('x', 'h2', 'h1', THEN, 'sim:test')],
                   {'x': _seen('h2', 1), 'c': _seen('h1', 0)})
        plan = swap.run_audit(view, PARAMS, log)
        self.assertEqual((), plan.actions)
        self.assertIn('rollback_kept',
                      [s.reason.split(':')[0] for s in plan.skipped])


class TestStoreMoveLog(base.BaseTestCase):
    """Watcher's log reads what was seen from the store's history."""

    def _store(self):
        store = store_api.open_store('sqlite://', sample_interval_s=0)
        store.upgrade()
        self.addCleanup(store.dispose)
        return store

    def test_seen_before_a_move(self):
        store = self._store()
        before = reports.instance('u1', ipc=1.5, vcpu_cpus=(4, 5))
        store.ingest([
            reports.host_report('a', 100, [before]),
            reports.host_report('a', 200, [reports.instance('u1', ipc=0.5)]),
        ])
        seen = swap.StoreMoveLog(store).seen_before({'u1': (150, 0)})['u1']
        self.assertEqual(('a', 1, 0, 1.5), (seen.host, seen.node,
                                            seen.memory_node, seen.ipc))
        self.assertEqual({}, swap.StoreMoveLog(store).seen_before(
            {'u1': (50, 0)}))

    def test_each_instance_is_read_in_its_own_window(self):
        store = self._store()
        store.ingest([
            reports.host_report('a', 100, [
                reports.instance('u1', ipc=1.0, merlin_class='high/low'),
                reports.instance('u2', ipc=2.0, merlin_class='low/low')]),
            reports.host_report('b', 200, [
                reports.instance('u1', ipc=3.0, merlin_class=None)]),
        ])
        log = swap.StoreMoveLog(store)
        seen = log.seen_before({'u1': (250, 150), 'u2': (150, 0),
                                'u3': (250, 0)})
        self.assertEqual({'u1': ('b', 3.0), 'u2': ('a', 2.0)},
                         {u: (s.host, s.ipc) for u, s in seen.items()})
        # The class is the last one measured: u1 had none at 200.
        self.assertEqual({'u1': 'high/low', 'u2': 'low/low'},
                         log.classes_before({'u1': (250, 0),
                                             'u2': (250, 0)}))
        self.assertEqual({}, log.classes_before({'u1': (250, 150)}))

    def test_the_store_and_the_memory_agree(self):
        store = self._store()
        store.ingest([reports.host_report('a', 100, [
            reports.instance('u1', ipc=1.0, vcpu_cpus=(4,)),
            reports.instance('u2', ipc=2.0)])])
        memory = swap.InMemoryMoveLog()
        memory.record([swap.Move('u1', 'a', 'b', 100.0)], seen={
            'u1': swap.Seen('a', 1, 0, 1.0, 0.5, 'low/low'),
            'u2': swap.Seen('a', 0, 0, 2.0, 0.5, 'low/low')})
        when = {'u1': (100, 0), 'u2': (100, 0)}
        self.assertEqual(memory.seen_before(when),
                         swap.StoreMoveLog(store).seen_before(when))

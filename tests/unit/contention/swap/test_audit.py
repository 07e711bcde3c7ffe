"""run_audit: the move log drives the cool-down and the repercussion check."""

import testtools

from contention import cluster
from contention import swap
from contention.swap import params as params_mod
from tests.unit.contention.swap import views as v

M = 1e6
NOW = 10000.0
PARAMS = swap.SwapParameters(victim_selection='extreme', local_phase=False,
                             max_swaps=1, threshold=1 * M, cooldown_s=3600,
                             numa_repair=False, cpu_quota=False,
                             min_predicted_gain=0)


def _view():
    # Without a past move, h0 (the most misses on the hot host) is swapped
    # with c0, which suffers little from its new co-runners (the harm
    # check's concern, not this test's).
    return v.view([v.host('hot'), v.host('cold')],
                  [v.vm('h0', 'hot', 9 * M), v.vm('h1', 'hot', 4 * M),
                   v.vm('c0', 'cold', 1 * M, mf=0.01)], now=NOW)


def _moved(plan):
    legs = []
    for action in plan.actions:
        legs += ([action.first, action.second]
                 if isinstance(action, cluster.Swap) else [action])
    return {leg.instance for leg in legs}


def _reasons(plan):
    return {s.subject: s.reason.split(':')[0] for s in plan.skipped}


class TestCooldownFromTheMoveLog(testtools.TestCase):

    def test_no_past_move_moves_h0(self):
        plan = swap.run_audit(_view(), PARAMS, swap.InMemoryMoveLog())
        self.assertIn('h0', _moved(plan))

    def _held_back(self, *moves):
        log = swap.InMemoryMoveLog()
        log.record(moves)
        plan = swap.run_audit(_view(), PARAMS, log)
        self.assertNotIn('h0', _moved(plan))
        self.assertEqual('cooldown', _reasons(plan)['h0'])
        return plan

    def test_a_one_way_move_holds_the_instance_back(self):
        self._held_back(swap.Move('h0', 'cold', 'hot', NOW - 600,
                                  'watcher:contention_migrate'))

    def test_a_half_done_swap_holds_its_instances_back(self):
        # Leg one moved h0 and could not be undone; leg two failed.
        self._held_back(
            swap.Move('h0', 'cold', 'hot', NOW - 600,
                      'watcher:contention_swap:' + swap.HALF_DONE),
            swap.Move('x', 'hot', 'hot', NOW - 600,
                      'watcher:contention_swap:' + swap.FAILED))

    def test_a_failed_leg_holds_the_instance_back(self):
        self._held_back(swap.Move('h0', 'hot', 'hot', NOW - 600,
                                  'watcher:contention_swap:' + swap.FAILED))

    def test_a_repin_and_a_quota_change_hold_it_back(self):
        for origin in ('watcher:contention_repin',
                       'watcher:contention_cpu_quota'):
            self._held_back(swap.Move('h0', 'hot', 'hot', NOW - 600,
                                      origin))

    def test_an_old_move_does_not(self):
        log = swap.InMemoryMoveLog()
        log.record([swap.Move('h0', 'cold', 'hot', NOW - 4000)])
        self.assertIn('h0', _moved(swap.run_audit(_view(), PARAMS, log)))


class TestRepercussionFromTheMoveLog(testtools.TestCase):

    def test_a_hurt_corunner_has_its_host_arbitrated_first(self):
        # x arrived on cold; c0's class went from low/low to high/high.
        view = v.view([v.host('hot'), v.host('cold')],
                      [v.vm('h0', 'hot', 9 * M), v.vm('h1', 'hot', 4 * M),
                       v.vm('c0', 'cold', 1 * M, merlin_class='high/high'),
                       v.vm('x', 'cold', 1 * M)], now=NOW)
        log = swap.InMemoryMoveLog()
        log.record([swap.Move('x', 'hot', 'cold', NOW - 600)],
                   seen={'c0': swap.Seen('cold', merlin_class='low/low')})
        plan = swap.run_audit(view, PARAMS, log)
        self.assertEqual('repercussion', _reasons(plan)['c0'])
        # The cold host is protected: it receives nothing.
        for action in plan.actions:
            legs = ((action.first, action.second)
                    if isinstance(action, cluster.Swap) else (action,))
            for leg in legs:
                if isinstance(leg, cluster.Migrate):
                    self.assertNotEqual('cold', leg.dest_host)

    def test_every_move_kind_is_recorded_by_moves_of(self):
        actions = (
            cluster.Swap(cluster.Migrate('a', 'h1', 'h2'),
                         cluster.Migrate('b', 'h2', 'h1')),
            cluster.Migrate('c', 'h1', 'h2'),
            cluster.Repin('d', 'h1', 1),
            cluster.CpuQuota('e', 'h1', 0.5))
        moves = swap.moves_of(actions, NOW, 'sim:test')
        self.assertEqual(['a', 'b', 'c', 'd', 'e'], [m.uuid for m in moves])
        self.assertEqual(('h1', 'h1'), (moves[3].source_host,
                                        moves[3].dest_host))


class TestParameters(testtools.TestCase):

    def test_schema_defaults_are_the_dataclass_defaults(self):
        for algorithm in swap.ALGORITHMS:
            schema = params_mod.schema(algorithm)
            given = {name: spec['default']
                     for name, spec in schema['properties'].items()}
            self.assertEqual(params_mod.from_input(algorithm),
                             params_mod.from_input(algorithm, given))
        self.assertIn('local_phase',
                      params_mod.schema(swap.CACHE_AWARE)['properties'])
        self.assertNotIn('local_phase',
                         params_mod.schema(swap.NUMA_AWARE)['properties'])
        self.assertNotIn('repercussion_interval',
                         params_mod.schema(swap.NUMA_AWARE)['properties'])

    def test_algorithm_defaults(self):
        self.assertFalse(
            params_mod.from_input(swap.CACHE_AWARE).contention_swaps)
        self.assertTrue(
            params_mod.from_input(swap.NUMA_AWARE).contention_swaps)

    def test_text_is_converted_and_bad_values_named(self):
        p = params_mod.from_input(swap.CACHE_AWARE, {
            'threshold': '2e6', 'numa_repair': 'false', 'cooldown': '60'})
        self.assertEqual((2e6, False, 60.0),
                         (p.threshold, p.numa_repair, p.cooldown_s))
        error = self.assertRaises(ValueError, params_mod.from_input,
                                  swap.CACHE_AWARE, {'tolerance': 2})
        self.assertIn('tolerance', str(error))
        error = self.assertRaises(ValueError, params_mod.from_input,
                                  swap.CACHE_AWARE, {'treshold': 1})
        self.assertIn('treshold', str(error))
        error = self.assertRaises(ValueError, params_mod.from_input,
                                  swap.CACHE_AWARE,
                                  {'victim_selection': 'best'})
        self.assertIn('victim_selection', str(error))

    def test_the_docs_table_is_current(self):
        import os
        path = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                            '..', 'doc', 'watcher.md')
        with open(path) as doc:
            self.assertIn(params_mod.doc_table(), doc.read(),
                          'regenerate it: python -m contention.swap.params')

"""The swap strategies in Watcher's own strategy test base."""

import watcher.tests.unit  # noqa: F401  (must precede other watcher imports)

import dataclasses
import os
from unittest import mock

import fixtures
import jsonschema
import numpy as np
from watcher.common import utils
from watcher import conf as watcher_conf
from watcher.tests.unit.decision_engine.strategy.strategies import \
    test_base

from contention import cluster
from contention import opts as core_opts
from contention.perfmodel import features
from contention.perfmodel import mixes
from contention.perfmodel import train
from contention.sim import training
from contention import store as store_api
from contention import swap
from tests.unit.watcher_strategies import fixtures as f
from watcher_strategies import actions
from watcher_strategies import opts
from watcher_strategies import planner
from watcher_strategies import strategies

NOW = 100000.0
M = f.M


class _StrategyTest(test_base.TestBaseStrategy):

    strategy_cls = strategies.CacheAwareSwap
    #: [watcher_strategies.numa_aware_swap] mix_model (unset: None, as
    #: oslo.config gives it; a bare Mock attribute would be a "path").
    mix_model = None

    def run_strategy(self, model, store, **params):
        self.m_c_model.return_value = model
        strategy = self.strategy_cls(config=mock.Mock(
            connection='sqlite://', repercussion_interval=3600,
            mix_model=self.mix_model))
        strategy.telemetry_store = store
        strategy.clock = lambda: NOW
        defaults = {name: spec['default'] for name, spec in
                    self.strategy_cls.get_schema()['properties'].items()}
        defaults.update(threshold=1 * M)
        defaults.update(params)
        strategy.input_parameters = utils.Struct(defaults)
        self.strategy = strategy
        return strategy.execute()

    def two_hosts(self, hot_locked=(), c0_quota=None, **model_kwargs):
        placements = [('h0', 'hot', 2, 2048), ('h1', 'hot', 2, 2048),
                      ('h2', 'hot', 2, 2048), ('c0', 'cold', 2, 2048),
                      ('c1', 'cold', 2, 2048)]
        model = f.model(['cold', 'hot'], placements, locked=hot_locked,
                        **model_kwargs)
        store = f.store(
            f.host_report('hot', NOW - 10, [
                f.record('h0', 5 * M, socket=0),
                f.record('h1', 4 * M, socket=0),
                f.record('h2', 3 * M, socket=0)]),
            f.host_report('cold', NOW - 10, [
                # The cold host's instances suffer little from new
                # co-runners (the harm check's concern, not these tests'):
                # they hardly reach memory or the LLC (0.05 accesses per
                # kilo-instruction).
                f.record('c0', 1 * M, socket=0, cpu_quota=c0_quota,
                         cpu_util=0.5 if c0_quota else 1.0, mf=0.01,
                         mpki=0.0005, merlin_class='low/low'),
                f.record('c1', 2 * M, socket=1, mf=0.01, mpki=0.0005,
                         merlin_class='low/low')]))
        return model, store


class TestCacheAwareSwap(_StrategyTest):

    def test_plan_order_parameters_and_indicators(self):
        model, store = self.two_hosts()
        # The swap's predicted drop of contention is under the default
        # min_predicted_gain margin; without it the swap runs.
        solution = self.run_strategy(model, store,
                                     victim_selection='extreme',
                                     min_predicted_gain=0)
        self.assertEqual(planner.NAME, self.strategy.planner)
        types = [a['action_type'] for a in solution.actions]
        self.assertIn('contention_repin', types)
        self.assertIn('contention_swap', types)
        # The local phase comes before the global phase.
        self.assertLess(types.index('contention_repin'),
                        types.index('contention_swap'))
        swap_action = solution.actions[types.index('contention_swap')]
        params = swap_action['input_parameters']
        self.assertEqual('hot', params['source_node'])
        self.assertEqual('cold', params['destination_node'])
        self.assertEqual('cold', params['partner_source_node'])
        self.assertEqual('hot', params['partner_destination_node'])
        repin = solution.actions[types.index('contention_repin')]
        self.assertEqual('hot', repin['input_parameters']['host'])
        self.assertIn(repin['input_parameters']['node'], (0, 1))
        indicators = {i.name: i.value for i in solution.efficacy_indicators}
        self.assertEqual(5, indicators['instances_count'])
        self.assertEqual(2, indicators['instance_migrations_count'])
        self.assertEqual(1, indicators['swaps_count'])
        self.assertLess(indicators['llc_miss_spread_after'],
                        indicators['llc_miss_spread_before'])
        self.assertEqual(4.0, indicators['memory_to_migrate'])
        # The swap relieves the hot host's instances; none is predicted
        # to fall past the harm bound.
        self.assertGreater(indicators['predicted_mean_performance_change'],
                           0)
        self.assertGreaterEqual(
            indicators['predicted_worst_performance_change'], -5.0)
        self.assertLessEqual(
            indicators['predicted_worst_performance_change'], 0.0)
        glob = solution.global_efficacy[0]
        self.assertEqual('llc_miss_spread_reduction', glob['name'])
        self.assertGreater(glob['value'], 0)
        # One decimal, as Horizon prints it unformatted.
        self.assertEqual(round(glob['value'], 1), glob['value'])

    def test_one_way_move_names_the_socket_it_lands_on(self):
        # The cold host runs one instance, locked, on socket 0: a one-way
        # move lands on socket 1, and the destination's agent re-pins it
        # there (unnamed, a guest with no NUMA topology floats over the
        # host).
        placements = [('h0', 'hot', 2, 2048), ('h1', 'hot', 2, 2048),
                      ('h2', 'hot', 2, 2048), ('c0', 'cold', 2, 2048)]
        model = f.model(['cold', 'hot'], placements, locked=('c0',))
        store = f.store(
            f.host_report('hot', NOW - 10, [
                f.record('h0', 5 * M, socket=0),
                f.record('h1', 4 * M, socket=0),
                f.record('h2', 3 * M, socket=1)]),
            f.host_report('cold', NOW - 10, [
                f.record('c0', 1 * M, socket=0, mf=0.01, mpki=0.0005,
                         merlin_class='low/low')]))
        solution = self.run_strategy(model, store, local_phase=False,
                                     victim_selection='extreme',
                                     min_predicted_gain=0)
        migrations = [a['input_parameters'] for a in solution.actions
                      if a['action_type'] == 'contention_migrate']
        self.assertEqual(1, len(migrations))
        self.assertEqual('cold', migrations[0]['destination_node'])
        self.assertEqual([4, 5, 6, 7], migrations[0]['destination_cpus'])

    def test_locked_instances_are_never_moved(self):
        model, store = self.two_hosts(hot_locked=('h0', 'h1', 'h2'))
        solution = self.run_strategy(model, store, local_phase=False)
        moved = set()
        for action in solution.actions:
            p = action['input_parameters']
            moved.update({p['resource_id'], p.get('partner_id')})
        self.assertFalse(moved & {f.uid('h0'), f.uid('h1'), f.uid('h2')})
        self.assertIn('3 locked', solution.contention_summary)

    def test_disabled_host_is_never_touched(self):
        model, store = self.two_hosts(disabled=('cold',))
        solution = self.run_strategy(model, store, local_phase=False)
        self.assertEqual([], list(solution.actions))
        self.assertIn('1 disabled', solution.contention_summary)

    def test_missing_telemetry_refuses_to_propose(self):
        model, store = self.two_hosts()
        stale = f.store(f.host_report('hot', NOW - 10, [
            f.record('h0', 5 * M), f.record('h1', 4 * M),
            f.record('h2', 3 * M)]))  # nothing from 'cold': 2 of 5
        audit = mock.Mock(uuid='a')
        self.m_c_model.return_value = model
        self.assertRaises(strategies.TelemetryMissing, self.run_strategy,
                          model, stale, max_missing_ratio=0.2)
        strategy = self.strategy
        self.assertRaises(strategies.TelemetryMissing, strategy.do_execute,
                          audit)
        self.assertIn('2 of 5 instances', audit.status_message)
        audit.save.assert_called_once_with()
        # Tolerated: the host without telemetry is left alone.
        solution = self.run_strategy(model, stale, max_missing_ratio=0.5)
        for action in solution.actions:
            self.assertNotIn('cold', action['input_parameters'].values())
        self.assertIn('no_telemetry', solution.contention_summary)

    def test_empty_compute_model_fails_the_audit(self):
        # Watcher's Nova collector failed: hosts, no instance. An empty
        # plan would read as "balanced".
        model = f.model(['cold', 'hot'], [])
        _, store = self.two_hosts()
        audit = mock.Mock(uuid='a')
        self.assertRaises(strategies.TelemetryMissing, self.run_strategy,
                          model, store)
        self.assertRaises(strategies.TelemetryMissing,
                          self.strategy.do_execute, audit)
        self.assertIn('has no instance in the audit\'s scope (2 host(s)) '
                      'while the agents report 5', audit.status_message)

    def test_the_summary_reaches_the_audit(self):
        model, store = self.two_hosts()
        stale = f.store(f.host_report('hot', NOW - 10, [
            f.record('h0', 5 * M), f.record('h1', 4 * M),
            f.record('h2', 3 * M)]))
        self.run_strategy(model, stale, max_missing_ratio=0.5)
        audit = mock.Mock(uuid='a')
        self.strategy.do_execute(audit)
        self.strategy.post_execute()
        self.assertIn('skipped: ', audit.status_message)
        self.assertIn('no_telemetry', audit.status_message)
        audit.save.assert_called_with()

    def test_unreadable_store_fails_with_a_reason(self):
        model, _ = self.two_hosts()
        broken = mock.Mock()
        broken.latest_reports.side_effect = RuntimeError('database locked')
        self.m_c_model.return_value = model
        self.assertRaises(strategies.TelemetryMissing, self.run_strategy,
                          model, broken)
        audit = mock.Mock(uuid='a')
        self.strategy.config.connection = 'postgresql://u:secret@db/c'
        self.assertRaises(strategies.TelemetryMissing,
                          self.strategy.do_execute, audit)
        self.assertIn('database locked', audit.status_message)
        self.assertIn('postgresql://u:***@db/c', audit.status_message)
        self.assertNotIn('secret', audit.status_message)

    def test_stale_telemetry_is_not_acted_on(self):
        model, _ = self.two_hosts()
        store = f.store(
            f.host_report('hot', NOW - 10, [
                f.record('h0', 5 * M), f.record('h1', 4 * M),
                f.record('h2', 3 * M)]),
            f.host_report('cold', NOW - 1000, [
                f.record('c0', 1 * M), f.record('c1', 2 * M, socket=1)]))
        solution = self.run_strategy(model, store, max_missing_ratio=1.0,
                                     freshness=120)
        for action in solution.actions:
            self.assertNotIn('cold', action['input_parameters'].values())
        self.assertIn('latest report is 1000 s old', ' '.join(
            s.reason for s in self.strategy.skipped_summary()[0]))

    def test_cooldown_from_recorded_moves(self):
        model, store = self.two_hosts()
        store.record_moves([store_api.MoveRecord(
            f.uid('h0'), 'cold', 'hot', NOW - 60, 'test')])
        solution = self.run_strategy(model, store, local_phase=False,
                                     victim_selection='extreme')
        for action in solution.actions:
            self.assertNotEqual(f.uid('h0'),
                                action['input_parameters']['resource_id'])
            self.assertNotEqual(
                f.uid('h0'), action['input_parameters'].get('partner_id'))
        self.assertIn('cooldown', solution.contention_summary)

    def test_repercussion_from_store_history(self):
        model, _ = self.two_hosts()
        hot = [f.record('h0', 5 * M), f.record('h1', 4 * M),
               f.record('h2', 3 * M)]
        store = f.store(
            f.host_report('hot', NOW - 1200, hot),
            f.host_report('cold', NOW - 1200, [
                f.record('c0', 1 * M, merlin_class='low/low')]),
            f.host_report('hot', NOW - 10, hot),
            f.host_report('cold', NOW - 10, [
                f.record('c0', 1 * M, merlin_class='high/high'),
                f.record('c1', 2 * M, socket=0)]),  # shares c0's LLC
            moves=[store_api.MoveRecord(f.uid('c1'), 'hot', 'cold',
                                        NOW - 600, 'test')])
        solution = self.run_strategy(model, store, local_phase=False)
        entries, counts = self.strategy.skipped_summary()
        hurt = [e for e in entries if e.reason.startswith('repercussion')]
        self.assertEqual([f.uid('c0')], [e.subject for e in hurt])
        self.assertIn('low/low to high/high', hurt[0].reason)
        self.assertIn('repercussion', solution.contention_summary)
        for action in solution.actions:
            p = action['input_parameters']
            self.assertNotEqual('cold', p.get('destination_node'))

    def test_schema_rejects_unknown_victim_selection(self):
        schema = strategies.CacheAwareSwap.get_schema()
        self.assertRaises(jsonschema.ValidationError, jsonschema.validate,
                          {'victim_selection': 'random'}, schema)
        jsonschema.validate({'victim_selection': 'extreme',
                             'threshold': 1e6, 'max_swaps': 3}, schema)


class TestNumaAwareSwap(_StrategyTest):

    strategy_cls = strategies.NumaAwareSwap

    def test_swap_carries_destination_cpus(self):
        # Free migrations: with one hot socket's heaviest instance re-pinned
        # to the idle socket first, the swap left predicts less gain than
        # the default price of its 4 GiB.
        model, store = self.two_hosts()
        solution = self.run_strategy(model, store,
                                     victim_selection='extreme',
                                     migration_cost_per_gib=0)
        types = [a['action_type'] for a in solution.actions]
        self.assertIn('contention_swap', types)
        params = solution.actions[types.index('contention_swap')][
            'input_parameters']
        self.assertIn(params['destination_cpus'],
                      ([0, 1, 2, 3], [4, 5, 6, 7]))
        self.assertNotIn('local_phase',
                         strategies.NumaAwareSwap.get_schema()['properties'])

    def test_contention_swaps_default_per_strategy(self):
        def default(cls, name):
            return cls.get_schema()['properties'][name]['default']
        self.assertIs(True, default(strategies.NumaAwareSwap,
                                    'contention_swaps'))
        self.assertIs(False, default(strategies.CacheAwareSwap,
                                     'contention_swaps'))
        model, store = self.two_hosts()
        self.run_strategy(model, store, contention_swaps=False,
                          min_predicted_gain=0.25)
        params = self.strategy.parameters()
        self.assertFalse(params.contention_swaps)
        self.assertEqual(0.25, params.min_predicted_gain)

    def test_remote_memory_is_repaired_through_the_agent(self):
        # The report says h0 runs on node 0 with its memory on node 1,
        # whose socket has CPUs free: a contention_repin moves its vCPUs
        # there (node 1) and leaves its memory where it is.
        model, store = self.two_hosts()
        remote = dataclasses.replace(
            f.record('h0', 5 * M, socket=0, mf=0.9),
            memory_mib_per_node={1: 2048.0})
        store = f.store(
            f.host_report('hot', NOW - 10, [
                remote, f.record('h1', 4 * M, socket=0),
                f.record('h2', 3 * M, socket=0)]),
            f.host_report('cold', NOW - 10, [
                f.record('c0', 1 * M, socket=0),
                f.record('c1', 2 * M, socket=1)]))
        solution = self.run_strategy(model, store, max_swaps=0)
        self.assertEqual(
            [{'action_type': 'contention_repin',
              'input_parameters': {'resource_id': f.uid('h0'), 'host': 'hot',
                                   'socket': 1, 'node': 1,
                                   'move_memory': False}}],
            solution.actions)
        self.assertEqual(1, self.strategy.built.view.instance(
            f.uid('h0')).memory_node)
        solution = self.run_strategy(model, store, max_swaps=0,
                                     numa_repair=False)
        self.assertEqual([], solution.actions)

    def test_the_roll_backs_moves_carry_the_undo_mark(self):
        # The actions record an undo as such (the roll-back never undoes
        # one); the mark passes their schemas.
        model, store = self.two_hosts()
        self.run_strategy(model, store)
        self.strategy.solution._actions = []
        back = cluster.Migrate(f.uid('h0'), 'hot', 'cold', 1, undo=True)
        for action in (cluster.Repin(f.uid('h0'), 'hot', 1, undo=True),
                       back, cluster.Swap(back, cluster.Migrate(
                           f.uid('c0'), 'cold', 'hot', 0, undo=True))):
            self.strategy._add_action(action)
        kinds = {'contention_repin': actions.ContentionRepin,
                 'contention_migrate': actions.ContentionMigrate,
                 'contention_swap': actions.ContentionSwap}
        for added in self.strategy.solution.actions:
            self.assertIs(True, added['input_parameters']['undo'])
            jsonschema.validate(
                added['input_parameters'],
                kinds[added['action_type']](utils.Struct()).schema)


def tiny_model_file(test):
    """A model file trained in well under a second (ahn-wl1, 4 trees)."""
    path = os.path.join(test.useFixture(fixtures.TempDir()).path,
                        'mix.model')
    bundle, _ = training.train_from_sim(
        'ahn-wl1', estimators=4, pv_estimators=3, samples_per_workload=4,
        synthetic=0, copies_samples=2, cross_validate=False)
    train.save(bundle, path)
    return path


class _Flat(object):
    """A model stand-in: every instance at 0.9 wherever it is.

    No move can raise the predicted performance: the check refuses all.
    """

    def predict(self, X):
        return np.column_stack([np.full(len(X), 0.9), np.zeros(len(X))])


class TestModelCheck(_StrategyTest):
    """The mix_model option: the placement model checks every swap."""

    strategy_cls = strategies.NumaAwareSwap

    def setUp(self):
        super().setUp()
        strategies._load_mix_model.cache_clear()
        self.addCleanup(strategies._load_mix_model.cache_clear)
        self.dir = self.useFixture(fixtures.TempDir()).path

    def test_config_option_of_both_strategies(self):
        sections = dict(opts.list_opts())
        for cls in (strategies.NumaAwareSwap, strategies.CacheAwareSwap):
            opt = [o for o in cls.get_config_opts()
                   if o.name == 'mix_model']
            self.assertEqual(1, len(opt))
            self.assertIsNone(opt[0].default)
            self.assertIn('mix_model', [
                o.name for o in sections['watcher_strategies.%s'
                                         % cls.get_name()]])

    def test_unset_means_no_check(self):
        model, store = self.two_hosts()
        self.run_strategy(model, store)
        self.assertIsNone(self.strategy.mix_values(
            self.strategy.built.view))
        self.strategy.config.mix_model = ''
        self.assertIsNone(self.strategy.mix_values(
            self.strategy.built.view))

    def test_unusable_file_is_logged_and_the_audit_runs_without(self):
        model, store = self.two_hosts()
        plain = self.run_strategy(model, store, victim_selection='extreme',
                                  migration_cost_per_gib=0)
        self.assertTrue(plain.actions)
        junk = os.path.join(self.dir, 'junk.model')
        with open(junk, 'w') as out:
            out.write('not a model')
        for path in (junk, os.path.join(self.dir, 'missing.model')):
            self.mix_model = path
            log = self.useFixture(fixtures.MockPatchObject(strategies,
                                                           'LOG'))
            model, store = self.two_hosts()
            solution = self.run_strategy(model, store,
                                         victim_selection='extreme',
                                         migration_cost_per_gib=0)
            self.assertEqual(plain.actions, solution.actions)
            self.assertIsNone(self.strategy.mix_values(
                self.strategy.built.view))
            self.assertTrue(log.mock.error.called)
            self.assertIn(path, str(log.mock.error.call_args))

    def test_model_file_gives_mix_values(self):
        self.mix_model = tiny_model_file(self)
        model, store = self.two_hosts()
        seen = []
        real = swap.run_audit

        def run_audit(view, params, move_log, algorithm, mix_values=None,
                      *args):
            seen.append({'mix_values': mix_values})
            return real(view, params, move_log, algorithm, mix_values, *args)
        self.useFixture(fixtures.MockPatchObject(swap, 'run_audit',
                                                 run_audit))
        solution = self.run_strategy(model, store)
        for action in solution.actions:
            self.assertIn(action['action_type'],
                          ('contention_swap', 'contention_repin',
                           'contention_cpu_quota'))
        values = seen[0]['mix_values']
        self.assertIsInstance(values, mixes.MixValues)
        view = self.strategy.built.view
        self.assertEqual({swap.mix_class(i) for i in view.instances},
                         set(values.profiles))
        self.assertEqual(5, len(values.profiles))
        self.assertEqual((1, 2), values.model.predict(
            np.zeros((1, len(features.FEATURE_NAMES)))).shape)
        # Loaded once per file version: the next audit reuses it, and a
        # retrained file is loaded again.
        again = self.strategy.mix_values(view)
        self.assertIs(values.model, again.model)
        self.assertIsNot(values, again)
        self.assertEqual(1, strategies._load_mix_model.cache_info().misses)
        stat = os.stat(self.mix_model)
        os.utime(self.mix_model, ns=(stat.st_atime_ns,
                                     stat.st_mtime_ns + 10 ** 9))
        retrained = self.strategy.mix_values(view)
        self.assertIsNot(values.model, retrained.model)
        self.assertEqual(2, strategies._load_mix_model.cache_info().misses)

    def test_the_check_refuses_what_the_model_sees_no_gain_in(self):
        model, store = self.two_hosts()
        plain = self.run_strategy(model, store, victim_selection='extreme',
                                  migration_cost_per_gib=0,
                                  numa_repair=False, cpu_quota=False)
        self.assertTrue(plain.actions)
        self.mix_model = '/etc/contention/mix.model'
        self.useFixture(fixtures.MockPatchObject(
            strategies, '_mix_model', lambda path: _Flat()))
        model, store = self.two_hosts()
        checked = self.run_strategy(model, store, victim_selection='extreme',
                                    migration_cost_per_gib=0,
                                    numa_repair=False, cpu_quota=False)
        self.assertEqual([], list(checked.actions))


class TestCpuQuota(_StrategyTest):
    """The quota phase becomes contention_cpu_quota actions."""

    strategy_cls = strategies.NumaAwareSwap

    def run_capped(self, quota=0.5, **params):
        # c0's agent reports a CFS cap of half of each vCPU, all of which
        # it uses (cpu_util 0.5 of its vCPUs); its socket has free cores.
        model, store = self.two_hosts(c0_quota=quota)
        return self.run_strategy(model, store, max_swaps=0, **params)

    def test_capped_instance_using_its_quota_gets_one_more_core(self):
        solution = self.run_capped()
        self.assertEqual(
            [{'action_type': 'contention_cpu_quota',
              'input_parameters': {'resource_id': f.uid('c0'),
                                   'host': 'cold', 'quota': 1.0,
                                   'old_quota': 0.5}}],
            solution.actions)
        # Watcher validates the action's input against its schema.
        from watcher_strategies import actions
        action = actions.ContentionCpuQuota(mock.Mock())
        action.input_parameters = solution.actions[0]['input_parameters']
        action.validate_parameters()

    def test_the_stored_quota_reaches_the_view(self):
        self.run_capped()
        quotas = {i.uuid: i.cpu_quota
                  for i in self.strategy.build_view(NOW).view.instances}
        self.assertEqual(0.5, quotas[f.uid('c0')])
        self.assertIsNone(quotas[f.uid('c1')])

    def test_uncapped_instance_gets_nothing(self):
        # The same load without a reported cap (a 1.0 report, or no CFS
        # quota on the domain): nothing to raise.
        self.assertEqual([], self.run_capped(quota=None).actions)

    def test_decision_engines_thresholds_decide_who_needs_cpu(self):
        # c0 uses all of its 0.5 cap: above the default cpu_needs_more
        # (0.8), below an operator's 1.5.
        core_opts.register_opts(watcher_conf.CONF)
        self.flags(cpu_needs_more=1.5, group=core_opts.GROUP)
        self.assertEqual([], self.run_capped().actions)

    def test_inconsistent_thresholds_fail_the_audit_with_the_group(self):
        core_opts.register_opts(watcher_conf.CONF)
        self.flags(mpki_low=50.0, mpki_high=10.0, group=core_opts.GROUP)
        exc = self.assertRaises(strategies.TelemetryMissing, self.run_capped)
        self.assertIn('[contention_thresholds]', str(exc))

    def test_parameter_turns_it_off(self):
        self.assertEqual([], self.run_capped(cpu_quota=False).actions)
        self.assertIs(True, strategies.CacheAwareSwap.get_schema()[
            'properties']['cpu_quota']['default'])


class TestShippedScenarios(_StrategyTest):
    """Watcher's own scenario models, with telemetry for every instance."""

    def _store_for(self, model):
        host_reports = []
        for n, node in enumerate(sorted(
                model.get_all_compute_nodes().values(),
                key=lambda x: x.hostname)):
            records = []
            for i, inst in enumerate(sorted(model.get_node_instances(node),
                                            key=lambda x: x.uuid)):
                rec = f.record('x', (n * 7 + i * 3) % 11 * M, socket=i % 2,
                               vcpus=max(1, inst.vcpus))
                records.append(dataclasses.replace(rec, uuid=inst.uuid))
            host_reports.append(f.host_report(node.hostname, NOW - 5,
                                              records))
        return f.store(*host_reports)

    def test_every_scenario_runs(self):
        scenarios = [name for name in dir(self.fake_c_cluster)
                     if name.startswith('generate_scenario_')]
        self.assertGreater(len(scenarios), 5)
        for cls in (strategies.CacheAwareSwap, strategies.NumaAwareSwap):
            self.strategy_cls = cls
            for name in scenarios:
                model = getattr(self.fake_c_cluster, name)()
                store = self._store_for(model)
                for selection in ('extreme', 'sensitivity_cost'):
                    solution = self.run_strategy(
                        model, store, victim_selection=selection,
                        max_missing_ratio=1.0)
                    for action in solution.actions:
                        self.assertIn(action['action_type'],
                                      ('contention_swap', 'contention_repin',
                                       'contention_cpu_quota',
                                       'contention_migrate'),
                                      name)

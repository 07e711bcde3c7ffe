"""The swap schedulers as simulator policies."""

import random

import fixtures
import numpy as np
import stevedore
import testtools

from contention import cluster
from contention import swap
from contention.perfmodel import confidence
from contention.perfmodel import features
from contention.perfmodel import mixes
from contention.perfmodel import models
from contention.perfmodel import train
from contention import policy
from contention.sim import generate
from contention.sim import simulator
from contention.sim import training
from contention.sim.policies import swap as swap_policies
from tests.unit.contention.swap import views as v

M = 1e6


def _view(now=10000.0, co_class='low/low'):
    # The cold host's instances suffer little from new co-runners (the
    # harm check's concern, not these tests').
    return v.view([v.host('hot'), v.host('cold')],
                  [v.vm('h0', 'hot', 5 * M, socket=0),
                   v.vm('h1', 'hot', 4 * M, socket=1),
                   v.vm('h2', 'hot', 3 * M, socket=0),
                   v.vm('c0', 'cold', 1 * M, socket=0, mf=0.01,
                        merlin_class=co_class),
                   v.vm('c1', 'cold', 2 * M, socket=1, mf=0.01)], now=now)


class TestSwapPolicies(testtools.TestCase):

    def test_loaded_by_stevedore(self):
        for name in ('cache_aware_swap', 'numa_aware_swap'):
            mgr = stevedore.DriverManager('contention.sim.policies', name,
                                          invoke_on_load=True,
                                          invoke_kwds={'victim_selection':
                                                       'extreme'})
            self.assertIsInstance(mgr.driver, policy.Policy)
            self.assertEqual(name, mgr.driver.name)
            self.assertEqual('extreme',
                             mgr.driver.get_params()['victim_selection'])

    def test_cache_aware_plan_applies(self):
        for selection in ('extreme', 'sensitivity_cost'):
            pol = swap_policies.CacheAwareSwapPolicy(
                threshold=1 * M, victim_selection=selection)
            view = _view()
            plan = pol.rebalance(view, random.Random(0))
            self.assertTrue(plan.actions, selection)
            after = view
            for action in plan.actions:
                after = swap.apply(after, [action])
            self.assertLess(plan.indicators['spread_after'],
                            plan.indicators['spread_before'])

    def test_numa_aware_moves_between_sockets(self):
        pol = swap_policies.NumaAwareSwapPolicy(threshold=1 * M)
        plan = pol.rebalance(_view(), random.Random(0))
        self.assertTrue(plan.actions)
        for action in plan.actions:
            legs = ((action.first, action.second)
                    if isinstance(action, cluster.Swap) else (action,))
            for leg in legs:
                self.assertIsNotNone(leg.dest_socket)

    def test_repercussion_across_periods(self):
        pol = swap_policies.CacheAwareSwapPolicy(threshold=1 * M,
                                                 local_phase=False,
                                                 max_swaps=1)
        first = pol.rebalance(_view(co_class='low/low'), random.Random(0))
        self.assertTrue(first.actions)
        pol.applied(first, simulator.ApplyResult(applied=first.actions),
                    10000.0)
        after = _view(co_class='low/low')
        for action in first.actions:
            after = swap.apply(after, [action])
        # c0's co-runner class worsens after the move.
        worse = cluster.ClusterView(
            after.hosts,
            tuple(i if i.uuid != 'c0' or i.host != 'cold'
                  else cluster.InstanceView(**dict(
                      i.__dict__, merlin_class='high/high'))
                  for i in after.instances),
            now=after.now + 600)
        plan = pol.rebalance(worse, random.Random(0))
        self.assertEqual('cold', worse.instance('c0').host)
        reasons = {s.subject: s.reason for s in plan.skipped}
        self.assertTrue(reasons['c0'].startswith('repercussion'))
        # Nothing new lands where the co-runner was hurt.
        for action in plan.actions:
            legs = ((action.first, action.second)
                    if isinstance(action, cluster.Swap) else (action,))
            for leg in legs:
                if isinstance(leg, cluster.Migrate):
                    self.assertNotEqual('cold', leg.dest_host)

    def test_moves_are_recorded_as_the_simulator_ran_them(self):
        # A refused action's instances stayed home: recorded at their
        # source as a failed attempt (cool-down, no co-runner moved), as
        # Watcher records a failed leg; nothing is recorded before the
        # simulator has run the plan.
        pol = swap_policies.CacheAwareSwapPolicy(threshold=1 * M)
        ran = cluster.Migrate('h0', 'hot', 'cold', 0)
        refused = cluster.Swap(cluster.Migrate('h1', 'hot', 'cold', 1),
                               cluster.Migrate('c1', 'cold', 'hot', 1))
        plan = cluster.Plan(actions=(ran, refused))
        self.assertEqual([], pol.move_log.moves_since(0))
        pol.applied(plan, simulator.ApplyResult(
            applied=(ran,), rejected=(simulator.Rejected(
                refused, 'first leg: no room', 'first_leg'),),
            copy_s={'h0': 90.0}), 500.0)
        moves = {(m.uuid, m.source_host, m.dest_host, m.origin, m.settled)
                 for m in pol.move_log.moves_since(0)}
        # h0's copy runs on for 90 s: its move settles then, as Watcher
        # records a migration once it has ended.
        self.assertEqual({
            ('h0', 'hot', 'cold', 'sim:cache_aware_swap', 590.0),
            ('h1', 'hot', 'hot', 'sim:cache_aware_swap:failed', 500.0),
            ('c1', 'cold', 'cold', 'sim:cache_aware_swap:failed', 500.0)},
            moves)

    def test_balanced_cluster_gives_empty_plan_with_reason(self):
        pol = swap_policies.NumaAwareSwapPolicy(threshold=100 * M,
                                                contention_swaps=False)
        plan = pol.rebalance(_view(), random.Random(0))
        self.assertEqual((), plan.actions)
        self.assertTrue(plan.reason.startswith('balanced'))

    def test_balanced_misses_can_still_hold_avoidable_contention(self):
        # Within the threshold, but h0 (5 M misses/s) shares hot's socket 0
        # with h2 while c0 has cold's socket 0 to itself: numa_aware_swap's
        # contention phase (on by default) swaps h0 with c0.
        pol = swap_policies.NumaAwareSwapPolicy(threshold=100 * M)
        self.assertTrue(pol.get_params()['contention_swaps'])
        self.assertFalse(swap_policies.CacheAwareSwapPolicy().get_params()[
            'contention_swaps'])
        plan = pol.rebalance(_view(), random.Random(0))
        self.assertEqual(
            (cluster.Swap(cluster.Migrate('h0', 'hot', 'cold', 0),
                          cluster.Migrate('c0', 'cold', 'hot', 0)),),
            plan.actions)


class TestModelCheckPolicy(testtools.TestCase):

    def _spy(self, cls):
        """The mix_values each audit of ``cls`` passes the core."""
        seen = []
        real_mix_values = cls.mix_values

        def mix_values(policy, view):
            values = real_mix_values(policy, view)
            seen.append(values)
            return values
        self.useFixture(fixtures.MockPatchObject(cls, 'mix_values',
                                                 mix_values))
        return seen

    def test_scenario_model_checks_every_audit(self):
        real = training.train_from_sim
        trained = []

        def quick(scen, **kwargs):
            trained.append(kwargs)
            kwargs.update(train.QUICK)
            return real(scen, **kwargs)
        self.useFixture(fixtures.MockPatchObject(training, 'train_from_sim',
                                                 quick))
        pol = swap_policies.NumaAwareSwapPolicy(mix_model='scenario',
                                                copies_samples=3)
        self.assertEqual('scenario', pol.get_params()['mix_model'])
        seen = self._spy(swap_policies.NumaAwareSwapPolicy)
        result = simulator.run('ahn-wl1', pol, epochs=2)
        self.assertEqual([3], [k['copies_samples'] for k in trained])
        self.assertEqual(2, len(seen))
        for values in seen:
            self.assertIsInstance(values, mixes.MixValues)
            # Every class of the scenario is described by its counters.
            self.assertEqual(4, len(values.profiles))
        self.assertTrue(any('model check trained from scenario ahn-wl1'
                            in note for note in result.notes), result.notes)
        self.assertEqual(0, result.rejected_actions)

    def test_the_policy_counts_the_checks_abstentions(self):
        # A model whose trees always disagree beyond the limit: every swap
        # the check is asked about is left to the strategy, and counted
        # over the audits of a run (RunResult.model_abstentions).
        rng = np.random.default_rng(0)
        X = rng.random((60, len(features.FEATURE_NAMES)))
        model = models.InterferenceModel(n_estimators=3).fit(
            X, rng.random((60, 2)))
        cls = swap_policies.NumaAwareSwapPolicy
        real_mix_values = cls.mix_values
        seen = []

        def unsure_of_all(policy, view):
            values = real_mix_values(policy, view)
            values.limits = confidence.Limits(max_spread=-1.0)
            seen.append(values)
            return values
        self.useFixture(fixtures.MockPatchObject(cls, 'mix_values',
                                                 unsure_of_all))
        pol = cls(threshold=1 * M)
        pol._model = model
        base = _view()
        # counters for every instance, so the model knows every class
        view = cluster.ClusterView(base.hosts, tuple(
            cluster.InstanceView(**dict(
                i.__dict__, mpki=i.llc_misses_per_s / M, ipc=1.0))
            for i in base.instances), now=base.now)
        for _ in range(2):
            pol.rebalance(view, random.Random(0))
        self.assertEqual(2, len(seen))
        self.assertTrue(all(v.abstentions > 0 for v in seen))
        self.assertEqual(sum(v.abstentions for v in seen),
                         pol.model_abstentions)
        pol.bind(simulator.Simulator('ahn-wl1'))
        self.assertEqual(0, pol.model_abstentions)

    def test_no_model_no_check(self):
        pol = swap_policies.CacheAwareSwapPolicy(threshold=1 * M)
        self.assertIsNone(pol.get_params()['mix_model'])
        seen = self._spy(swap_policies.CacheAwareSwapPolicy)
        pol.rebalance(_view(), random.Random(0))
        self.assertEqual([None], seen)


class TestSameRunInEveryProcess(testtools.TestCase):
    """One audit gives one plan, whatever the process's string hashing.

    A generated cluster on which cache_aware_swap's local phase chose
    between equal re-deals by the order of a set of sockets: two runs of
    the evaluation disagreed on VMs by up to 0.23 (simulated) with the
    same mean.
    """

    SCRIPT = (
        'import json, warnings; warnings.simplefilter("ignore")\n'
        'from contention.sim import generate, simulator\n'
        'spec, seed, name = [i for i in generate.family(19, 24, 2, 0, 5)\n'
        '                    if i[2] == "gen-small-018"][0]\n'
        'r = simulator.run(generate.scenario(spec, seed, name),\n'
        '                  simulator.load_policy("cache_aware_swap"))\n'
        'print(json.dumps({v.name: v.perf_mean for v in r.vms}))\n')

    def _run(self, hash_seed):
        import os
        import subprocess
        import sys
        env = dict(os.environ, PYTHONHASHSEED=str(hash_seed))
        out = subprocess.run([sys.executable, '-c', self.SCRIPT], env=env,
                             check=True, capture_output=True, text=True)
        return out.stdout.strip().splitlines()[-1]

    def test_hash_seed_does_not_change_the_run(self):
        self.assertEqual(self._run(1), self._run(3))


class TestNoPlanPredictedToLowerTheMean(testtools.TestCase):
    """A plan the goal reports as lowering the mean is not proposed.

    On this generated cluster (family seed 83, simulated) the contention
    estimate passed a migration whose own predicted mean change, the
    ``perf_mean_change`` the goal shows the operator, was -0.10 %: it
    measured -0.09 % for the cluster and 5.9 % for the VM it moved.
    """

    def test_every_audit_of_a_generated_cluster(self):
        spec, seed, name = [i for i in generate.family(83, 100, 6, 0, 5)
                            if i[2] == 'gen-medium-003'][0]
        sim = simulator.Simulator(generate.scenario(spec, seed, name))
        pol = simulator.load_policy('cache_aware_swap')
        pol.bind(sim)
        rng = np.random.default_rng([sim.seed, 2])
        changes = []
        for _ in range(3):
            sim.arrive(pol, rng)
            plan, _, _ = sim.audit(pol, rng)
            if plan.actions:
                changes.append(plan.indicators['perf_mean_change'])
            sim.step()
        self.assertTrue(all(c >= 0 for c in changes), changes)
        self.assertEqual(0, sim.result('x', 0.0, ()).migrations)

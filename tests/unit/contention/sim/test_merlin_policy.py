"""Merlin's own arbitration, its need for cache, Local's balancing."""

import numpy as np
from oslotest import base

from contention import cluster
from contention.sim import scenario
from contention.sim import simulator
from contention.sim.policies import baseline
from contention.sim.policies import common
from contention.sim.policies import merlin


def _sim():
    data = {'format': 2, 'name': 'arb', 'placement': 'explicit',
            'hardware': {'h': {'sockets': 2, 'cores_per_node': 4,
                               'memory_gib_per_node': 16}},
            'hosts': [{'class': 'h', 'names': ['h']}],
            'profiles': {'mr': {'vcpus': 4, 'llc_apki': 2, 'mr_min': 0.1},
                         'kv': {'vcpus': 1, 'llc_apki': 20, 'mr_min': 0.7}},
            'instances': [{'profile': 'mr', 'host': 'h', 'socket': 0,
                           'quota': 0.5},
                          {'profile': 'kv', 'host': 'h', 'socket': 0}]}
    return simulator.Simulator(scenario.from_dict(data, 'arb'))


class TestMerlin(base.BaseTestCase):

    def _view(self, sim, **kv):
        view = sim.view()
        mr, other = view.instances
        view = common.update(view, mr.uuid, cpu_util=0.5, mpki=1.0, mf=0.1,
                             merlin_class='low/low')
        return common.update(view, other.uuid, **kv), mr, other

    def test_local_cpu_first_then_the_repercussion_check(self):
        sim = _sim()
        policy = merlin.MerlinPolicy()
        policy.bind(sim)
        rng = np.random.default_rng(0)
        view, mr, kv = self._view(sim, merlin_class='low/low', mpki=1.0,
                                  mf=0.1)
        plan = policy.rebalance(view, rng)
        self.assertEqual((cluster.CpuQuota(mr.uuid, 'h', 0.75),),
                         plan.actions)
        # No co-runner moved in Figure 3's grid: the raise stands.
        view = common.update(view, mr.uuid, cpu_quota=0.75, cpu_util=0.5)
        calm = policy.rebalance(view, rng)
        self.assertFalse([a for a in calm.actions
                          if isinstance(a, cluster.Repin)])

    def test_hurt_corunner_moves_the_insensitive_requester_remote(self):
        sim = _sim()
        policy = merlin.MerlinPolicy()
        policy.bind(sim)
        rng = np.random.default_rng(0)
        view, mr, kv = self._view(sim, merlin_class='low/low', mpki=1.0,
                                  mf=0.1)
        policy.rebalance(view, rng)
        hurt = common.update(view, kv.uuid, merlin_class='high/high',
                             mpki=30.0, mf=0.8)
        hurt = common.update(hurt, mr.uuid, cpu_quota=0.75, cpu_util=0.1)
        plan = policy.rebalance(hurt, rng)
        # (a): a remote CPU for S's most MC/IC-insensitive member (the
        # requester), vCPUs only since it is MC/IC-insensitive.
        self.assertIn(cluster.Repin(mr.uuid, 'h', 1, move_memory=False),
                      plan.actions)

    def test_runs_as_a_peer_row(self):
        result = simulator.run('merlin-mix1', 'merlin', epochs=6)
        self.assertEqual('merlin', result.policy)
        self.assertGreater(result.quota_changes, 0)
        self.assertEqual(0, result.rejected_actions)


def _two_nodes(kv_class, mm_util=0.5, mm_mpki=10.0, kv_mpki=5.0,
               node1_mpki=None):
    """kv and mm on node 0 of a 2-node host; node 1 free (or loaded)."""
    sockets = tuple(cluster.SocketView(s, (s,), 8, 32768) for s in range(2))
    host = cluster.HostView('h', sockets, 16, 2 * 32768)
    insts = [
        cluster.InstanceView(uuid='kv', host='h', vcpus=2, memory_mib=2048,
                             socket=0, node=0, memory_node=0, cpu_util=0.5,
                             cpu_quota=1.0, mpki=kv_mpki, mf=0.5,
                             merlin_class=kv_class),
        cluster.InstanceView(uuid='mm', host='h', vcpus=2, memory_mib=2048,
                             socket=0, node=0, memory_node=0,
                             cpu_util=mm_util, cpu_quota=1.0, mpki=mm_mpki,
                             mf=0.3, merlin_class='medium/medium')]
    if node1_mpki is not None:
        insts.append(cluster.InstanceView(
            uuid='far', host='h', vcpus=2, memory_mib=2048, socket=1,
            node=1, memory_node=1, cpu_util=0.5, cpu_quota=1.0,
            mpki=node1_mpki, mf=0.3, merlin_class='medium/medium'))
    return cluster.ClusterView((host,), tuple(insts))


class TestNeedForCache(base.BaseTestCase):
    """Section 3.4's third trigger, answered as section 5.2.2 says."""

    def test_a_cache_sensitive_instance_moving_down_needs_cache(self):
        before = common.classes(_two_nodes('medium/low'))
        self.assertEqual({('h', 0): frozenset({'kv'})}, common.cache_needs(
            _two_nodes('medium/high'), before))
        # Moving right only (more MPKI, same MF) is no need for cache.
        self.assertEqual({}, common.cache_needs(_two_nodes('high/low'),
                                                before))
        # A low-MPKI class was not cache-sensitive: its MF says little.
        low = common.classes(_two_nodes('low/low'))
        self.assertEqual({}, common.cache_needs(_two_nodes('low/high'),
                                                low))
        # The first reading has nothing to compare with.
        self.assertEqual({}, common.cache_needs(_two_nodes('medium/high'),
                                                {}))

    def _second_audit(self, policy, **kw):
        rng = np.random.default_rng(0)
        first = policy.rebalance(_two_nodes('medium/low', **kw), rng)
        self.assertEqual((), first.actions)
        return policy.rebalance(_two_nodes('medium/high', **kw),
                                rng).actions

    def test_each_policy_frees_cache_through_the_co_runner(self):
        self.assertEqual(
            (cluster.Repin('mm', 'h', 1, move_memory=True),),
            self._second_audit(merlin.LocalPolicy()))
        self.assertEqual((cluster.CpuQuota('mm', 'h', 0.75),),
                         self._second_audit(merlin.LowCostPolicy()))
        self.assertEqual(
            (cluster.Repin('mm', 'h', 1, move_memory=False),),
            self._second_audit(baseline.RandomPolicy()))
        self.assertEqual((cluster.CpuQuota('mm', 'h', 0.75),),
                         self._second_audit(merlin.MerlinPolicy()))

    def test_the_instance_in_need_is_never_the_one_moved(self):
        # kv has the higher MPKI; under MC/IC pressure it would be the
        # victim, for its own need for cache it is not.
        for policy in (merlin.LocalPolicy(), merlin.LowCostPolicy(),
                       baseline.RandomPolicy(), merlin.MerlinPolicy()):
            acts = self._second_audit(policy, kv_mpki=30.0, mm_mpki=10.0)
            self.assertTrue(acts)
            self.assertEqual({'mm'}, {a.instance for a in acts})

    def test_merlin_does_not_cap_a_cpu_sensitive_co_runner(self):
        acts = self._second_audit(merlin.MerlinPolicy(), mm_util=0.95)
        self.assertEqual(
            (cluster.Repin('mm', 'h', 1, move_memory=False),), acts)

    def test_binding_forgets_the_last_classes(self):
        policy = merlin.LowCostPolicy()
        policy.rebalance(_two_nodes('medium/low'), None)
        policy.bind(None)
        self.assertEqual((), policy.rebalance(_two_nodes('medium/high'),
                                              None).actions)


class TestLocalBalancing(base.BaseTestCase):

    def test_periodic_memory_rebalancing(self):
        # Node 0 sums 15 MPKI, node 1 2: no node over 100, no class moved.
        view = _two_nodes('medium/low', node1_mpki=2.0)
        never = merlin.LocalPolicy(balance_every=0)
        self.assertEqual((), never.rebalance(view, None).actions)
        every = merlin.LocalPolicy(balance_every=1)
        # mm (10 MPKI) narrows the gap of 13 without swinging it back.
        self.assertEqual(
            (cluster.Repin('mm', 'h', 1, move_memory=True),),
            every.rebalance(view, None).actions)

    def test_balancing_runs_every_balance_every_audits(self):
        view = _two_nodes('medium/low', node1_mpki=2.0)
        policy = merlin.LocalPolicy(balance_every=3)
        acted = [bool(policy.rebalance(view, None).actions)
                 for _ in range(6)]
        self.assertEqual([False, False, True, False, False, True], acted)

"""Merlin's own arbitration and Local's periodic memory balancing."""

import numpy as np
from oslotest import base

from contention import cluster
from contention.sim import scenario
from contention.sim import simulator
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


class TestLocalBalancing(base.BaseTestCase):

    def test_periodic_memory_rebalancing(self):
        without = simulator.run('merlin-mix2',
                                merlin.LocalPolicy(balance_every=0))
        with_ = simulator.run('merlin-mix2', merlin.LocalPolicy())
        self.assertEqual(0, without.memory_moves)
        self.assertGreater(with_.memory_moves, 0)
        self.assertGreater(with_.perf_mean, without.perf_mean)

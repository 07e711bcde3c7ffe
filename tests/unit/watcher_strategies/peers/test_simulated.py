"""Watcher's own strategies run on a ClusterView through the bridge."""

import watcher.tests.unit  # noqa: F401  (must precede other watcher imports)

import random
from unittest import mock

import numpy as np
from oslotest import base
from watcher.decision_engine.strategy.strategies import noisy_neighbor
from watcher.decision_engine.strategy.strategies import workload_balance
from watcher.decision_engine.strategy.strategies import \
    workload_stabilization

from contention import cluster
from contention import swap
from watcher_strategies.peers import datasource as simulated
from watcher_strategies.peers import policies as peer_policies


def _view(busy_util=0.95):
    sockets = (cluster.SocketView(0, (0,), 8, 32768),
               cluster.SocketView(1, (1,), 8, 32768))
    hosts = tuple(cluster.HostView('host%d' % h, sockets, 16, 65536,
                                   disk_gb_total=500)
                  for h in range(3))
    instances = []
    for i in range(8):
        host = 'host0' if i < 6 else 'host1'
        instances.append(cluster.InstanceView(
            uuid='inst-%d' % i, host=host, vcpus=2, memory_mib=2048,
            disk_gb=10, socket=i % 2, cpu_util=busy_util,
            llc_occupancy_bytes=4e6 * (i + 1)))
    return cluster.ClusterView(hosts, tuple(instances), now=1000.0)


class TestComputeModel(base.BaseTestCase):

    def test_model_holds_hosts_and_instances(self):
        view = _view()
        model = simulated.compute_model_from_view(view)
        self.assertEqual(3, len(model.get_all_compute_nodes()))
        self.assertEqual(8, len(model.get_all_instances()))
        node = model.get_node_by_instance_uuid('inst-7')
        self.assertEqual('host1', node.hostname)
        self.assertNotEqual('host1', node.uuid)

    def test_datasource_units(self):
        view = _view(busy_util=0.5)
        model = simulated.compute_model_from_view(view)
        ds = simulated.SimulatedDatasource(view)
        host0 = model.get_node_by_name('host0')
        # 6 instances x 2 vCPUs x 50 % on 16 vCPUs
        self.assertAlmostEqual(37.5, ds.get_host_cpu_usage(host0))
        self.assertEqual(6 * 2048 * 1024.0, ds.get_host_ram_usage(host0))
        inst = model.get_instance_by_uuid('inst-0')
        self.assertEqual(50.0, ds.get_instance_cpu_usage(inst))
        self.assertEqual(2048.0, ds.get_instance_ram_usage(inst))
        self.assertEqual(4e6, ds.get_instance_l3_cache_usage(inst))


class TestPeerStrategies(base.BaseTestCase):

    def test_workload_balance_moves_off_the_busy_host(self):
        view = _view()
        solution = simulated.run_strategy(
            workload_balance.WorkloadBalance, view,
            {'metrics': 'instance_cpu_usage', 'threshold': 25.0})
        plan = simulated.plan_from_solution(solution, view)
        self.assertTrue(plan.actions)
        for action in plan.actions:
            self.assertEqual('host0', action.source_host)
            self.assertIn(action.dest_host, ('host1', 'host2'))

    def test_workload_stabilization_plan_applies(self):
        view = _view()
        solution = simulated.run_strategy(
            workload_stabilization.WorkloadStabilization, view)
        plan = simulated.plan_from_solution(solution, view)
        after = view
        for action in plan.actions:
            after = swap.apply(after, [action])
        self.assertLess(len(after.instances_on('host0')),
                        len(view.instances_on('host0')))

    def test_node_uuid_destination_is_skipped_not_applied(self):
        view = _view()

        class Solution:
            actions = [{'action_type': 'migrate', 'resource_id': 'inst-0',
                        'input_parameters': {
                            'source_node': simulated.node_uuid('host0'),
                            'destination_node': 'host2'}}]

        plan = simulated.plan_from_solution(Solution, view)
        self.assertEqual((), plan.actions)
        self.assertIn('not a compute host name', plan.skipped[0].reason)

    def test_noisy_neighbor_runs_or_fails_visibly(self):
        # Upstream's noisy_neighbor is broken; whatever it does must come
        # back as a plan or an exception, never as a silently applied move
        # to a node uuid.
        view = _view()
        try:
            solution = simulated.run_strategy(
                noisy_neighbor.NoisyNeighbor, view, {'cache_threshold': 1.0})
        except Exception:
            return
        plan = simulated.plan_from_solution(solution, view)
        hosts = {h.name for h in view.hosts}
        for action in plan.actions:
            self.assertIn(action.dest_host, hosts)


class TestPeerPolicies(base.BaseTestCase):

    def test_policies_load_by_entry_point_and_plan(self):
        from stevedore import driver
        view = _view()
        mgr = driver.DriverManager('contention.sim.policies',
                                   'watcher_workload_balance',
                                   invoke_on_load=True)
        plan = mgr.driver.rebalance(view, rng=None)
        self.assertTrue(plan.actions)

    def test_failing_strategy_becomes_an_empty_plan_with_reason(self):
        class Broken(peer_policies.WatcherStrategyPolicy):
            name = 'broken'
            strategy_cls = object  # no get_schema: fails inside Watcher

        plan = Broken().rebalance(_view(), rng=None)
        self.assertEqual((), plan.actions)
        self.assertIn('broken failed', plan.reason)

    def test_a_run_seeds_watchers_random_and_restores_it(self):
        # workload_stabilization samples hosts from Python's global
        # random; the run's generator seeds it, so two runs agree.
        drawn = []
        real = simulated.run_strategy

        def run_strategy(*args, **kwargs):
            drawn.append(random.random())
            return real(*args, **kwargs)
        random.seed(42)
        before = random.getstate()
        policy = peer_policies.WorkloadStabilizationPolicy()
        with mock.patch.object(simulated, 'run_strategy', run_strategy):
            first = policy.rebalance(_view(), np.random.default_rng(7))
            second = policy.rebalance(_view(), np.random.default_rng(7))
        self.assertEqual(drawn[0], drawn[1])
        self.assertEqual(first.actions, second.actions)
        self.assertEqual(before, random.getstate())

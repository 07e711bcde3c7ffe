"""Shipped simulator policies: loading, Merlin baselines, the oracle."""

import itertools

import fixtures
import numpy as np
from oslotest import base
import stevedore

from contention import cluster
from contention.sim import scenario
from contention.sim import simulator
from contention.sim import state as state_mod
from contention.sim.policies import merlin
from contention.sim.policies import oracle

NAMES = ('none', 'random', 'local', 'low_cost', 'oracle')


def _view(quota=0.5, util=0.5, busy_other=False, mpki=5.0):
    sockets = tuple(cluster.SocketView(s, (s,), 8, 32768) for s in range(3))
    host = cluster.HostView('h', sockets, 24, 3 * 32768)
    insts = [cluster.InstanceView(
        uuid='mm', host='h', vcpus=4, memory_mib=4096, socket=0, node=0,
        memory_node=0, cpu_util=util, cpu_quota=quota, mpki=mpki)]
    if busy_other:
        # socket 0 full: 6 more cores allocated there
        insts.append(cluster.InstanceView(
            uuid='other', host='h', vcpus=6, memory_mib=1024, socket=0,
            node=0, cpu_util=1.0, cpu_quota=1.0, mpki=1.0))
    return cluster.ClusterView((host,), tuple(insts))


class TestLoading(base.BaseTestCase):

    def test_every_policy_loads_by_entry_point(self):
        names = stevedore.ExtensionManager('contention.sim.policies').names()
        for name in NAMES + ('watcher_workload_balance',):
            self.assertIn(name, names)
            self.assertEqual(name, simulator.load_policy(name).name)

    def test_every_policy_runs_on_ahn_and_merlin(self):
        for scen in ('ahn-wl1', 'merlin-mix1'):
            for name in NAMES:
                result = simulator.run(scen, name, epochs=2)
                self.assertEqual(name, result.policy)
                self.assertGreater(result.perf_mean, 0.0)


class TestMerlinBaselines(base.BaseTestCase):

    def test_cpu_need_with_room_at_home_raises_the_cap(self):
        for pol in (merlin.LocalPolicy(), merlin.LowCostPolicy()):
            plan = pol.rebalance(_view(util=0.5), np.random.default_rng(0))
            self.assertEqual((cluster.CpuQuota('mm', 'h', 0.75),),
                             plan.actions)

    def test_no_cpu_need_no_action(self):
        plan = merlin.LocalPolicy().rebalance(_view(util=0.3), None)
        self.assertEqual((), plan.actions)

    def test_full_home_local_moves_memory_low_cost_does_not(self):
        view = _view(util=0.5, busy_other=True)
        local = merlin.LocalPolicy().rebalance(view, None).actions
        low = merlin.LowCostPolicy().rebalance(view, None).actions
        self.assertTrue(local[0].move_memory)
        self.assertFalse(low[0].move_memory)
        self.assertEqual(local[0].dest_socket, low[0].dest_socket)
        self.assertNotEqual(0, local[0].dest_socket)

    def test_node_pressure(self):
        view = _view(quota=1.0, util=1.0, mpki=120.0)
        local = merlin.LocalPolicy().rebalance(view, None).actions
        self.assertIsInstance(local[0], cluster.Repin)
        self.assertTrue(local[0].move_memory)
        low = merlin.LowCostPolicy().rebalance(view, None).actions
        self.assertEqual((cluster.CpuQuota('mm', 'h', 0.75),), low)


class TestOracle(base.BaseTestCase):

    @staticmethod
    def _small_hosts(name, hosts, instances):
        """A scenario on ``hosts`` 2-socket hosts of 2 cores per socket."""
        return scenario.from_dict({
            'name': name, 'placement': 'nova_spread',
            'hardware': {'small': {'sockets': 2, 'cores_per_node': 2,
                                   'l3_mib_per_node': 4,
                                   'memory_gib_per_node': 4}},
            'hosts': [{'class': 'small', 'count': hosts}],
            'profile_library': 'ahn-spec2006',
            'instances': instances,
        }, name + '.yaml')

    def _tiny(self):
        return self._small_hosts('tiny-oracle', 2, [
            {'profile': 'lbm', 'count': 3},
            {'profile': 'omnetpp', 'count': 3},
            {'profile': 'namd', 'count': 2}])

    def _brute_force(self, sim):
        """Best sum of perf over every distinct class-to-slot assignment."""
        st = sim.state
        slots = [(h, s) for h in range(2) for s in (0, 1) for _ in range(2)]
        classes = ['lbm'] * 3 + ['omnetpp'] * 3 + ['namd'] * 2
        assignments = sorted(set(itertools.permutations(classes)))
        hosts = []
        for k in range(len(assignments)):
            for h in range(2):
                hosts.append(state_mod.SimHost('b%d-%d' % (k, h),
                                               st.hosts[h].model,
                                               st.hosts[h].hw))
        big = state_mod.ClusterState(hosts)
        for k, order in enumerate(assignments):
            for (h, s), name in zip(slots, order):
                inst = state_mod.SimInstance(
                    '%d-%d-%d' % (k, h, s), '', sim.scenario.profiles[name])
                big.add(inst)
                big.place(inst, 2 * k + h, s)
        perf = big.performance(big.problem(0.0))[1]
        return perf.reshape(len(assignments), 8).sum(axis=1).max()

    def test_oracle_matches_brute_force(self):
        sim = simulator.Simulator(self._tiny())
        orc = oracle.OraclePolicy()
        orc.bind(sim)
        found, why = orc.search(30.0)
        self.assertIsNone(why)
        self.assertAlmostEqual(self._brute_force(sim), found['value'], 3)

    def test_oracle_plan_reaches_its_value(self):
        sim = simulator.Simulator('ahn-wl1', placement_policy='worst')
        orc = oracle.OraclePolicy()
        orc.bind(sim)
        t = sim.now + sim.scenario.epoch_s / 2.0
        found, _ = orc.search(t)
        plan = orc.rebalance(sim.view(), None)
        outcome = sim.apply(plan)
        self.assertEqual((), outcome.rejected)
        achieved = orc._current_perf(t).sum()
        self.assertAlmostEqual(found['value'], achieved, 3)
        # Nothing left to do at the optimum.
        self.assertEqual((), orc.rebalance(sim.view(), None).actions)

    def test_oracle_keeps_each_instance_among_its_cpu_vendors_hosts(self):
        small = {'sockets': 2, 'cores_per_node': 2, 'l3_mib_per_node': 4,
                 'memory_gib_per_node': 4}
        scen = scenario.from_dict({
            'name': 'two-vendors', 'placement': 'worst',
            'hardware': {'intel': small,
                         'amd': dict(small, cpu_vendor='amd')},
            'hosts': [{'class': 'intel', 'count': 2},
                      {'class': 'amd', 'count': 2}],
            'profile_library': 'ahn-spec2006',
            'instances': [{'profile': 'lbm', 'count': 6},
                          {'profile': 'namd', 'count': 6}],
        }, 'two-vendors.yaml')
        sim = simulator.Simulator(scen)
        vendor = {h.name: h.cpu_vendor for h in sim.view().hosts}
        orc = oracle.OraclePolicy(search_tries=1000)
        orc.bind(sim)
        plan = orc.rebalance(sim.view(), None)
        legs = [leg for a in plan.actions
                for leg in ((a.first, a.second) if isinstance(a, cluster.Swap)
                            else (a,))
                if isinstance(leg, cluster.Migrate)]
        self.assertTrue(legs)
        for leg in legs:
            self.assertEqual(vendor[leg.source_host], vendor[leg.dest_host])
        self.assertEqual((), sim.apply(plan).rejected)
        # what it searched is what Nova lets it reach
        self.assertAlmostEqual(plan.indicators['found_value'],
                               orc._current_perf(orc.decision_time()).sum(),
                               3)

    def test_quota_options_are_one_core_steps_up_to_the_vcpus(self):
        self.assertEqual((0.5, 0.75, 1.0), oracle.quota_options(0.5, 4))
        self.assertEqual((0.5, 1.0), oracle.quota_options(0.5, 1))
        self.assertEqual((1.0,), oracle.quota_options(1.0, 4))
        # pinned instances keep what they have
        self.assertEqual((0.5,), oracle.quota_options(0.5, 4, movable=False))

    def _capped(self):
        return self._small_hosts('tiny-quota', 1, [
            {'profile': 'namd', 'count': 2, 'quota': 0.5},
            {'profile': 'lbm', 'count': 2}])

    def test_oracle_raises_quotas_when_that_is_best(self):
        # Two CPU-bound instances capped at half a core: the optimum over
        # placements and quotas gives them whole cores, so the oracle is an
        # upper bound for policies that raise quotas (Merlin's quota phase).
        sim = simulator.Simulator(self._capped())
        orc = oracle.OraclePolicy()
        orc.bind(sim)
        t = sim.now + sim.scenario.epoch_s / 2.0
        found, why = orc.search(t)
        self.assertIsNone(why)
        self.assertTrue(found['exact'])
        keys, members = orc._classes(t)
        fixed = orc._evaluate(keys, members, found['assignment'],
                              0, 0, t).sum()
        self.assertGreater(found['value'], fixed)
        plan = orc.rebalance(sim.view(), None)
        quotas = [a for a in plan.actions if isinstance(a, cluster.CpuQuota)]
        self.assertEqual(2, len(quotas))
        self.assertTrue(all(a.quota == 1.0 for a in quotas))
        self.assertEqual((), sim.apply(plan).rejected)
        self.assertAlmostEqual(found['value'], orc._current_perf(t).sum(), 3)
        self.assertIn('CPU quota raises', orc.notes[-1])
        # Nothing left to do at the optimum, and a raise is not taken back.
        self.assertEqual((), orc.rebalance(sim.view(), None).actions)

    @staticmethod
    def _streams_together(demand):
        """Two streaming VMs on a socket, two cache-sensitive on the other.

        One host of 2 x 2 cores, memory local. The streaming VMs' CPU
        demand is ``demand``, a number or phases (in step: no phase
        offset). At full demand the streams are best kept together, away
        from the cache-sensitive VMs; at 5 % demand they barely touch the
        cache and the sensitive VMs are best apart, one per socket.
        """
        stream = {'base_cpi': 0.7, 'llc_apki': 35, 'mr_min': 0.85,
                  'working_set_mib': 8, 'mlp': 4, 'desync_phases': False,
                  'cpu_demand': demand}
        if not isinstance(demand, float):
            stream['cpu_demand'] = {'phases': demand}
        return scenario.from_dict({
            'name': 'tiny-phases', 'epochs': 4, 'epoch_s': 60,
            'hardware': {'small': {'sockets': 2, 'cores_per_node': 2,
                                   'l3_mib_per_node': 4,
                                   'memory_gib_per_node': 4}},
            'hosts': [{'class': 'small', 'names': ['h']}],
            'profiles': {'stream': stream,
                         'sensitive': {'llc_apki': 18, 'mr_min': 0.15,
                                       'working_set_mib': 3, 'mlp': 1.5}},
            'instances': [{'profile': p, 'host': 'h', 'socket': s,
                           'memory_socket': s}
                          for p, s in (('stream', 0), ('stream', 0),
                                       ('sensitive', 1), ('sensitive', 1))],
        }, 'tiny-phases.yaml')

    def test_last_interval_oracle_sees_a_phase_one_epoch_late(self):
        # Full demand for the first epoch, 5 % for the second: at the
        # audit before the second epoch the clairvoyant oracle moves for
        # the low phase; the last-interval one still sees full demand,
        # for which the placement is already the best.
        sim = simulator.Simulator(self._streams_together(
            [[60, 1.0], [60, 0.05]]))
        clairvoyant = oracle.OraclePolicy()
        lagged = simulator.load_policy('oracle', demand='last_interval')
        self.assertEqual('current', clairvoyant.demand)
        for orc in (clairvoyant, lagged):
            orc.bind(sim)
            self.assertEqual((), orc.rebalance(sim.view(), None).actions)
        sim.step()
        self.assertEqual(90.0, clairvoyant.decision_time())
        self.assertEqual(30.0, lagged.decision_time())
        self.assertTrue(clairvoyant.rebalance(sim.view(), None).actions)
        self.assertEqual((), lagged.rebalance(sim.view(), None).actions)
        # One epoch later the lagged oracle sees the low phase and moves.
        sim.step()
        self.assertTrue(lagged.rebalance(sim.view(), None).actions)

    def test_with_constant_demand_both_oracles_decide_alike(self):
        for scen, start in ((self._streams_together(0.05), None),
                            (self._tiny(), 'worst')):
            runs = [simulator.run(scen, oracle.OraclePolicy(demand=d),
                                  placement_policy=start)
                    for d in oracle.OraclePolicy.DEMANDS]
            first, second = runs
            self.assertGreater(first.vcpu_moves + first.migrations, 0)
            self.assertEqual(first.perf_mean, second.perf_mean)
            self.assertEqual(first.notes, second.notes)
            self.assertEqual(
                (first.migrations, first.vcpu_moves, first.memory_moves),
                (second.migrations, second.vcpu_moves, second.memory_moves))

    def test_unknown_demand_is_refused(self):
        self.assertRaises(ValueError, oracle.OraclePolicy, demand='next')

    def test_heterogeneous_sockets_say_so(self):
        data = {
            'name': 'mixed-hw',
            'hardware': {'a': {'cores_per_node': 2},
                         'b': {'cores_per_node': 4}},
            'hosts': [{'class': 'a'}, {'class': 'b'}],
            'profiles': {'x': {}},
            'instances': [{'profile': 'x', 'count': 2}],
        }
        sim = simulator.Simulator(scenario.from_dict(data, 'm.yaml'))
        result = simulator.run(sim.scenario, 'oracle', epochs=1)
        self.assertTrue(any('not possible' in n and 'gap to optimum' in n
                            for n in result.notes))

    def test_too_many_states_gives_a_deal_and_a_bound(self):
        sim = simulator.Simulator('ahn-wl1', placement_policy='worst')
        before = sum(sim.performance().values())
        orc = oracle.OraclePolicy()
        orc.bind(sim)
        exact = orc.search(sim.now + sim.scenario.epoch_s / 2.0)[0]['value']
        self.useFixture(fixtures.MockPatchObject(oracle, 'MAX_STATES', 100))
        orc.bind(sim)
        plan = orc.rebalance(sim.view(), None)
        self.assertTrue(plan.actions)
        self.assertEqual((), sim.apply(plan).rejected)
        bound = plan.indicators['gap_bound']
        found = plan.indicators['found_value']
        self.assertGreater(found, before * 1.1)
        self.assertGreaterEqual(bound, 0.0)
        # The exact optimum lies between what was found and the bound.
        self.assertLessEqual(found, exact + 1e-3)
        self.assertGreaterEqual(found + bound, exact)
        self.assertIn('balanced deal', orc.notes[-1])

    def test_too_many_steps_of_the_exact_search_gives_the_local_one(self):
        sim = simulator.Simulator('ahn-wl1', placement_policy='worst')
        orc = oracle.OraclePolicy()
        orc.bind(sim)
        t = orc.decision_time()
        self.assertIsNotNone(orc.search(t)[0])
        self.useFixture(fixtures.MockPatchObject(oracle, 'MAX_DP_STEPS', 1))
        orc.bind(sim)
        found, why = orc.search(t)
        self.assertIsNone(found)
        self.assertIn('compositions', why)
        self.assertIn('too many for the exact search', why)
        plan = orc.rebalance(sim.view(), None)
        self.assertTrue(plan.actions)
        self.assertEqual((), sim.apply(plan).rejected)
        self.assertIn('local search', orc.notes[-1])

    def _local_search(self, **budget):
        sim = simulator.Simulator('ahn-wl1', placement_policy='worst')
        self.useFixture(fixtures.MockPatchObject(oracle, 'MAX_STATES', 100))
        orc = oracle.OraclePolicy(**budget)
        orc.bind(sim)
        return orc._local_search(orc.decision_time())

    def test_the_best_known_search_is_bounded_by_counts_not_time(self):
        # the same budget finds the same placement on any machine and run
        first, again = self._local_search(), self._local_search()
        self.assertEqual(first['assignment'], again['assignment'])
        self.assertEqual(first['value'], again['value'])
        # with no tries it keeps its start, the better of the current
        # placement and the deal; more tries find no worse
        start = self._local_search(search_tries=0)['value']
        some = self._local_search(search_tries=50)['value']
        self.assertLessEqual(start, some)
        self.assertLessEqual(some, first['value'])
        # no composition solved beyond the start: the tries stop at once
        self.assertEqual(start, self._local_search(search_solves=0)['value'])

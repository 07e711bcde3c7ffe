"""Ahn et al.'s schedulers and Merlin's arbitration on plain views."""

import dataclasses

import testtools

from contention import classify
from contention import cluster
from contention import swap
from contention.swap import arbitration
from contention.swap import balance
from contention.swap import feasibility
from contention.swap import harm
from contention.swap import local
from contention.swap import measure
from contention.swap import repair
from contention.swap import state as state_mod
from tests.unit.contention.swap import views as v

M = 1e6
EXTREME = swap.SwapParameters(victim_selection='extreme', local_phase=False,
                              max_swaps=1, threshold=1 * M)


def _reasons(plan):
    return {s.subject: s.reason.split(':')[0] for s in plan.skipped}


def _legs(action):
    if isinstance(action, cluster.Swap):
        return (action.first, action.second)
    return (action,)


def _moved(plan):
    return [leg.instance for a in plan.actions for leg in _legs(a)]


def _apply(view, plan):
    return swap.apply(view, plan.actions)


class TestDeal(testtools.TestCase):

    def test_sort_and_alternate_two_sockets(self):
        # Ahn section 3 / Zhuravlev: largest to 1st, 2nd largest to 2nd,
        # then smallest to 1st, 2nd smallest to 2nd, and so on.
        vms = [v.vm('m%d' % m, 'h', m) for m in (10, 8, 6, 4, 2, 1)]
        groups = local.deal(vms, 2)
        self.assertEqual([['m10', 'm1', 'm6'], ['m8', 'm2', 'm4']],
                         [[i.uuid for i in g] for g in groups])

    def test_three_groups_and_fewer_vms_than_groups(self):
        vms = [v.vm('m%d' % m, 'h', m) for m in (5, 3)]
        groups = local.deal(vms, 3)
        self.assertEqual([['m5'], ['m3'], []],
                         [[i.uuid for i in g] for g in groups])


class TestLocalPhase(testtools.TestCase):

    def test_repins_to_even_sockets(self):
        view = v.view([v.host('a')],
                      [v.vm('x%d' % m, 'a', m * M, socket=0)
                       for m in (10, 8, 6, 4)])
        actions, _ = local.local_phase(view, swap.SwapParameters())
        self.assertTrue(actions)
        self.assertTrue(all(isinstance(a, cluster.Repin) for a in actions))
        after = _apply(view, cluster.Plan(actions=tuple(actions)))
        loads = swap.socket_loads(after)
        self.assertEqual(14 * M, loads[('a', 0)])
        self.assertEqual(14 * M, loads[('a', 1)])

    def test_balanced_host_needs_no_repin(self):
        view = v.view([v.host('a')],
                      [v.vm('x1', 'a', 10 * M, socket=0),
                       v.vm('x2', 'a', 10 * M, socket=1)])
        actions, _ = local.local_phase(view, swap.SwapParameters())
        self.assertEqual([], actions)

    def test_keeps_labels_to_minimise_repins(self):
        # Dealing puts x10 and x1 together; they are both on socket 1
        # already, so the mapping keeps them there: only one re-pin.
        view = v.view([v.host('a')],
                      [v.vm('x10', 'a', 10 * M, socket=1),
                       v.vm('x1', 'a', 1 * M, socket=1),
                       v.vm('x8', 'a', 8 * M, socket=1),
                       v.vm('x2', 'a', 2 * M, socket=0)])
        actions, _ = local.local_phase(view, swap.SwapParameters())
        # mf 0.3 (medium): its memory moves with its vCPUs.
        self.assertEqual([cluster.Repin('x8', 'a', 0, move_memory=True)],
                         actions)

    def test_redeal_whose_memory_moves_cost_more_is_skipped(self):
        # 64 GiB instances: moving one's memory (64 x 2.5e5 = 1.6e7) costs
        # more than the 4M misses/s the re-deal takes off the difference.
        # MF 0.25-0.4: every instance's memory moves with its vCPUs.
        view = v.view([v.host('a', memory_mib=262144)],
                      [v.vm('x%d' % m, 'a', m * M, socket=s,
                            memory_mib=65536, mf=0.2 + 0.05 * m)
                       for m, s in ((4, 0), (3, 0), (2, 1), (1, 1))])
        actions, skipped = local.local_phase(view, swap.SwapParameters())
        self.assertEqual([], actions)
        self.assertEqual('not_worth_it', skipped[0].reason.split(':')[0])
        cheap = swap.SwapParameters(migration_cost_per_gib=0)
        self.assertTrue(local.local_phase(view, cheap)[0])

    def test_memory_stays_only_for_low_mf_instances(self):
        # Merlin: a low-MF instance barely reaches DRAM, so a remote vCPU
        # move (memory left behind) is the cheaper choice; a memory-bound
        # one would pay remote latency on all its DRAM traffic.
        view = v.view([v.host('a')],
                      [v.vm('low', 'a', 10 * M, socket=0, mf=0.1),
                       v.vm('high', 'a', 9 * M, socket=0, mf=0.8),
                       v.vm('unknown', 'a', 2 * M, socket=0, mf=None),
                       v.vm('stay', 'a', 1 * M, socket=0)])
        actions, _ = local.local_phase(view, swap.SwapParameters())
        moved = {a.instance: a.move_memory for a in actions}
        self.assertTrue(moved)
        for uuid, move_memory in moved.items():
            self.assertEqual(uuid != 'low', move_memory, uuid)
        actions, _ = local.local_phase(
            view, swap.SwapParameters(local_memory_mf=0.0))
        self.assertTrue(all(a.move_memory for a in actions))

    def test_memory_left_behind_counts_against_the_re_deal(self):
        # x1's MF (0.15) leaves its memory on socket 1 when the deal sends
        # it to socket 0: all its 1M misses/s would then go remote, more
        # than the co-runner contention the deal removes, the same
        # figure the NUMA repair would count to bring it home again.
        view = v.view([v.host('a')],
                      [v.vm('x%d' % m, 'a', m * M, socket=s)
                       for m, s in ((4, 0), (3, 0), (2, 1), (1, 1))])
        params = swap.SwapParameters(migration_cost_per_gib=0)
        actions, skipped = local.local_phase(view, params)
        self.assertEqual([], actions)
        self.assertEqual('no_predicted_gain',
                         skipped[0].reason.split(':')[0])
        # With its memory moving along, the same deal pays.
        actions, _ = local.local_phase(view, dataclasses.replace(
            params, local_memory_mf=0.0))
        self.assertIn('x1', [a.instance for a in actions])

    def test_a_service_takes_its_memory_along(self):
        # A service answering requests (CPU use under SERVING_UTIL) would
        # pay remote latency on every miss, and its response time grows
        # with any slowdown, however low its MF.
        params = swap.SwapParameters()
        low = v.vm('low', 'a', 10 * M, mf=0.1, cpu_util=1.0)
        self.assertFalse(feasibility.memory_follows(low, params))
        serving = dataclasses.replace(low, cpu_util=0.5)
        self.assertTrue(feasibility.memory_follows(serving, params))

    def test_numa_instances_are_not_repinned(self):
        view = v.view([v.host('a')],
                      [v.vm('n1', 'a', 10 * M, has_numa_topology=True),
                       v.vm('x1', 'a', 6 * M), v.vm('x2', 'a', 5 * M)])
        actions, skipped = local.local_phase(view, swap.SwapParameters())
        self.assertNotIn('n1', [a.instance for a in actions])
        self.assertIn(cluster.Skipped('n1', 'pinned: NUMA topology'),
                      skipped)

    def test_socket_cpu_capacity_refused(self):
        view = v.view([v.host('a', cpus=2)],
                      [v.vm('x%d' % m, 'a', m * M, socket=0, vcpus=4)
                       for m in (10, 8, 6, 4)])
        actions, skipped = local.local_phase(view, swap.SwapParameters())
        self.assertEqual([], actions)
        self.assertEqual('local_capacity', skipped[0].reason.split(':')[0])


class TestCacheAwareGlobal(testtools.TestCase):

    def _two_hosts(self, hot=(5, 4, 3), cold=(1, 2)):
        return v.view([v.host('hot'), v.host('cold')],
                      [v.vm('h%d' % i, 'hot', m * M, socket=i % 2)
                       for i, m in enumerate(hot)]
                      + [v.vm('c%d' % i, 'cold', m * M, socket=i % 2)
                         for i, m in enumerate(cold)])

    def test_algorithm_1_swaps_max_vm_with_min_vm(self):
        view = self._two_hosts()
        plan = swap.cache_aware(view, EXTREME)
        self.assertEqual(1, len(plan.actions))
        action = plan.actions[0]
        self.assertIsInstance(action, cluster.Swap)
        self.assertEqual({('h0', 'hot', 'cold'), ('c0', 'cold', 'hot')},
                         {(leg.instance, leg.source_host, leg.dest_host)
                          for leg in (action.first, action.second)})
        after = _apply(view, plan)
        self.assertEqual({'h0', 'c1'},
                         {i.uuid for i in after.instances_on('cold')})
        self.assertEqual({'c0', 'h1', 'h2'},
                         {i.uuid for i in after.instances_on('hot')})
        self.assertLess(plan.indicators['spread_after'],
                        plan.indicators['spread_before'])
        self.assertEqual(2.0, plan.indicators['migrations'])
        self.assertEqual(1.0, plan.indicators['swaps'])
        self.assertEqual(4.0, plan.indicators['memory_to_migrate_gb'])

    def test_threshold_edge(self):
        # hot: 6M, cold: 3M -> difference exactly 3M.
        view = self._two_hosts(hot=(2, 2, 2), cold=(1, 1, 1))
        # Free migrations: the threshold alone decides.
        at = swap.SwapParameters(victim_selection='extreme',
                                 local_phase=False, threshold=3 * M,
                                 migration_cost_per_gib=0)
        plan = swap.cache_aware(view, at)
        self.assertEqual((), plan.actions)
        self.assertTrue(plan.reason.startswith('balanced'))
        below = swap.SwapParameters(victim_selection='extreme',
                                    local_phase=False, threshold=3 * M - 1,
                                    migration_cost_per_gib=0)
        self.assertEqual(1, len(swap.cache_aware(view, below).actions))

    def test_no_move_when_balanced(self):
        view = self._two_hosts(hot=(3, 1), cold=(2, 2))
        # already dealt evenly inside each host, 4M on each host
        for selection in arbitration.VICTIM_SELECTIONS:
            plan = swap.cache_aware(view, swap.SwapParameters(
                victim_selection=selection, threshold=0.0))
            self.assertEqual((), plan.actions)
            self.assertIsNotNone(plan.reason)

    def test_swap_that_would_not_narrow_is_refused(self):
        # The papers' rule would swap h0 (9M) with c0 (1M) although the
        # hosts differ by only 2M: that overshoots to a 14M difference.
        view = self._two_hosts(hot=(9, 1), cold=(1, 7))
        plan = swap.cache_aware(view, EXTREME)
        self.assertEqual((), plan.actions)
        self.assertEqual('no_gain', _reasons(plan)['hot'])

    def test_capacity_refused(self):
        # cold has as many CPUs as hot (same capacity weight) but its
        # memory is full, and h0 needs more than c0 frees.
        cold = v.host('cold', sockets=1, cpus=16, memory_mib=2048)
        view = v.view([v.host('hot'), cold],
                      [v.vm('h0', 'hot', 9 * M, memory_mib=4096),
                       v.vm('h1', 'hot', 1 * M),
                       v.vm('c0', 'cold', 1 * M, memory_mib=2048)])
        plan = swap.cache_aware(view, EXTREME)
        self.assertEqual((), plan.actions)
        self.assertEqual('no_capacity', _reasons(plan)['hot'])

    def test_a_partner_nearly_as_light_is_tried(self):
        # c0 has the fewest misses but frees too little memory on its
        # socket for h0; c1, within the tolerance of c0's misses, frees
        # enough on its own.
        cold = v.host('cold', sockets=2, cpus=8, memory_mib=4096)
        view = v.view([v.host('hot'), cold],
                      [v.vm('h0', 'hot', 4 * M, memory_mib=4096),
                       v.vm('h1', 'hot', 3.5 * M),
                       v.vm('c0', 'cold', 1 * M, memory_mib=1024),
                       v.vm('c1', 'cold', 1.05 * M, socket=1,
                            memory_mib=4096),
                       v.vm('c2', 'cold', 1.5 * M, memory_mib=3072)])
        free = dataclasses.replace(EXTREME, migration_cost_per_gib=0.0,
                                   min_predicted_gain=0.0)
        plan = swap.cache_aware(view, free)
        self.assertEqual({'h0', 'c1'}, set(_moved(plan)))
        # Past the tolerance it is not the papers' partner.
        plan = swap.cache_aware(view, dataclasses.replace(free,
                                                          tolerance=0.01))
        self.assertEqual((), plan.actions)
        self.assertEqual('no_capacity', _reasons(plan)['hot'])

    def test_transient_capacity_chooses_leg_order(self):
        # cold's memory is full: h0 can only land once c0 has left.
        cold = v.host('cold', sockets=1, cpus=16, memory_mib=2048)
        view = v.view([v.host('hot'), cold],
                      [v.vm('h0', 'hot', 9 * M),
                       v.vm('h1', 'hot', 1 * M),
                       v.vm('c0', 'cold', 1 * M)])
        plan = swap.cache_aware(view, EXTREME)
        action = plan.actions[0]
        self.assertEqual('c0', action.first.instance)
        self.assertEqual('h0', action.second.instance)

    def test_transient_capacity_refused_both_ways(self):
        # Each host is full, so whichever leg runs first has no room,
        # although the final state would fit.
        view = v.view([v.host('hot', cpus=1), v.host('cold', cpus=1)],
                      [v.vm('h0', 'hot', 9 * M, vcpus=1),
                       v.vm('h1', 'hot', 4 * M, vcpus=1),
                       v.vm('c0', 'cold', 1 * M, vcpus=1),
                       v.vm('c1', 'cold', 1 * M, vcpus=1)])
        plan = swap.cache_aware(view, EXTREME)
        self.assertEqual((), plan.actions)
        self.assertEqual('no_capacity', _reasons(plan)['hot'])

    def test_numa_instance_must_fit_a_cell(self):
        # Once c1 has left, cold has 10 free vCPUs but at most 6 per cell.
        cold = [v.vm('c0', 'cold', 1 * M, vcpus=4, socket=0),
                v.vm('c1', 'cold', 0.5 * M, vcpus=4, socket=1),
                v.vm('c2', 'cold', 1 * M, vcpus=2, socket=1)]
        big = v.vm('h0', 'hot', 9 * M, vcpus=7, has_numa_topology=True)
        view = v.view([v.host('hot'), v.host('cold')],
                      [big, v.vm('h1', 'hot', 4 * M)] + cold)
        plan = swap.cache_aware(view, EXTREME)
        self.assertEqual((), plan.actions)
        self.assertEqual('no_capacity', _reasons(plan)['hot'])
        fits = v.vm('h0', 'hot', 9 * M, vcpus=4, has_numa_topology=True)
        view = v.view([v.host('hot'), v.host('cold')],
                      [fits, v.vm('h1', 'hot', 4 * M)] + cold)
        plan = swap.cache_aware(view, EXTREME)
        leg = [leg for leg in (plan.actions[0].first, plan.actions[0].second)
               if leg.instance == 'h0'][0]
        self.assertIn(leg.dest_socket, (0, 1))

    def test_cooldown(self):
        view = v.view([v.host('hot'), v.host('cold')],
                      [v.vm('h0', 'hot', 9 * M, last_moved_at=9000.0),
                       v.vm('h1', 'hot', 4 * M),
                       v.vm('c0', 'cold', 1 * M)], now=10000.0)
        plan = swap.cache_aware(view, swap.SwapParameters(
            victim_selection='extreme', local_phase=False, max_swaps=1,
            threshold=1 * M, cooldown_s=3600))
        self.assertEqual('cooldown', _reasons(plan)['h0'])
        moved = {leg.instance for leg in (plan.actions[0].first,
                                          plan.actions[0].second)}
        self.assertEqual({'h1', 'c0'}, moved)
        plan = swap.cache_aware(view, swap.SwapParameters(
            victim_selection='extreme', local_phase=False, max_swaps=1,
            threshold=1 * M, cooldown_s=600))
        self.assertIn('h0', {plan.actions[0].first.instance,
                             plan.actions[0].second.instance})

    def test_unmovable_and_disabled_are_left_alone(self):
        view = v.view([v.host('hot'), v.host('cold'),
                       v.host('off', enabled=False, skip_reason='down')],
                      [v.vm('h0', 'hot', 9 * M, movable=False,
                            skip_reason='locked'),
                       v.vm('h1', 'hot', 4 * M),
                       v.vm('c0', 'cold', 1 * M)])
        plan = swap.cache_aware(view, EXTREME)
        reasons = _reasons(plan)
        self.assertEqual('not_movable', reasons['h0'])
        self.assertEqual('host_disabled', reasons['off'])
        for action in plan.actions:
            for leg in (action.first, action.second):
                self.assertNotEqual('h0', leg.instance)
                self.assertNotEqual('off', leg.dest_host)

    def test_max_swaps_chains_on_the_updated_state(self):
        hosts = [v.host('h%d' % i) for i in range(4)]
        vms = []
        for i in range(4):
            vms += [v.vm('v%d-%d' % (i, j), 'h%d' % i, (4 - i) * 3 * M / (j + 1))
                    for j in range(3)]
        view = v.view(hosts, vms)
        params = swap.SwapParameters(local_phase=False, max_swaps=3,
                                     threshold=1 * M)
        plan = swap.cache_aware(view, params)
        self.assertGreater(len(plan.actions), 1)
        moved = _moved(plan)
        self.assertEqual(len(moved), len(set(moved)))  # none moved twice
        after = _apply(view, plan)
        self.assertAlmostEqual(
            plan.indicators['spread_after'],
            swap.spread(swap.socket_loads(after).values()))

    def test_local_then_global(self):
        view = v.view([v.host('hot'), v.host('cold')],
                      [v.vm('h0', 'hot', 9 * M, socket=0),
                       v.vm('h1', 'hot', 5 * M, socket=0),
                       v.vm('h2', 'hot', 1 * M, socket=0),
                       v.vm('c0', 'cold', 1 * M, socket=0)])
        plan = swap.cache_aware(view, swap.SwapParameters(threshold=1 * M))
        kinds = [type(a).__name__ for a in plan.actions]
        self.assertEqual('Repin', kinds[0])
        self.assertIn('Swap', kinds)
        self.assertGreater(plan.indicators['repins'], 0)


class TestCpuOversubscription(testtools.TestCase):
    """Moves may use Nova's allocation ratio, not time-share more CPUs."""

    PARAMS = swap.SwapParameters(local_phase=False, threshold=1 * M,
                                 max_swaps=1)

    def _full_hosts(self):
        # Two hosts of 2 sockets x 2 CPUs, cpu_allocation_ratio 4: Nova
        # would accept more, but every CPU already runs a 1-vCPU instance.
        hosts = [v.host(n, cpus=2, cpu_allocation_ratio=4.0)
                 for n in ('hot', 'cold')]
        instances = [v.vm('h%d' % i, 'hot', m * M, socket=i // 2, vcpus=1)
                     for i, m in enumerate((9, 8, 7, 6))]
        instances += [v.vm('c%d' % i, 'cold', m * M, socket=i // 2,
                           vcpus=1) for i, m in enumerate((1, 1, 1, 1))]
        return v.view(hosts, instances)

    def test_one_way_move_onto_busy_cpus_is_refused(self):
        view = self._full_hosts()
        state = swap.State(view, swap.HOST)
        leg = cluster.Migrate('h0', 'hot', 'cold', 0)
        self.assertEqual(('cpu_oversubscribed', None),
                         feasibility.assess(state, (leg,), 0.0, self.PARAMS))
        # The trial move is undone.
        self.assertEqual('hot', state.inst['h0'].host)
        self.assertEqual(4.0, state.used['cold'][0])

    def test_swaps_of_equal_instances_still_run(self):
        plan = swap.cache_aware(self._full_hosts(), self.PARAMS)
        self.assertEqual(1, len(plan.actions))
        self.assertIsInstance(plan.actions[0], cluster.Swap)
        after = _apply(self._full_hosts(), plan)
        for host in ('hot', 'cold'):
            self.assertEqual(4, len(after.instances_on(host)))

    def test_one_way_move_onto_idle_cpus_is_allowed(self):
        view = self._full_hosts()
        idle = [i for i in view.instances if i.host == 'hot'] + [
            v.vm('c0', 'cold', 1 * M, socket=0, vcpus=1)]
        view = v.view(view.hosts, idle)
        state = swap.State(view, swap.HOST)
        leg = cluster.Migrate('h0', 'hot', 'cold', 1)
        why_not, gain = feasibility.assess(state, (leg,), 0.0, self.PARAMS)
        self.assertNotEqual('cpu_oversubscribed', why_not)
        self.assertGreater(gain, 0)


class TestOneWayLanding(testtools.TestCase):
    """A host-level one-way move names the socket it lands on."""

    def _view(self, cold_sockets):
        hosts = [v.host('hot'), v.host('cold')]
        instances = [v.vm('h0', 'hot', 9 * M, socket=0, vcpus=4,
                          memory_mib=8192)]
        for socket, (vcpus, memory_mib) in enumerate(cold_sockets):
            instances.append(v.vm('c%d' % socket, 'cold', 1 * M,
                                  socket=socket, vcpus=vcpus,
                                  memory_mib=memory_mib))
        return v.view(hosts, instances)

    def _legs(self, view):
        state = swap.State(view, swap.HOST)
        cand = arbitration.Candidate(state.inst['h0'], None, 9 * M, 0.0)
        return feasibility.plan_legs(state, cand, 'hot', 'cold', False)

    def test_lands_on_the_socket_with_the_most_free_cpus(self):
        legs = self._legs(self._view([(6, 2048), (2, 2048)]))
        self.assertEqual((cluster.Migrate('h0', 'hot', 'cold', 1),), legs)
        legs = self._legs(self._view([(2, 2048), (6, 2048)]))
        self.assertEqual((cluster.Migrate('h0', 'hot', 'cold', 0),), legs)

    def test_a_socket_without_room_for_its_memory_is_passed_over(self):
        # Socket 1 has the free CPUs, but not 8 GiB of free memory.
        legs = self._legs(self._view([(6, 2048), (2, 28672)]))
        self.assertEqual((cluster.Migrate('h0', 'hot', 'cold', 0),), legs)

    def test_no_socket_with_room_for_its_memory_is_no_landing(self):
        # The host has 24 GiB free in all, no socket 8 GiB: the memory
        # would be split over both nodes.
        self.assertIsNone(self._legs(self._view([(2, 28672), (2, 28672)])))

    def test_the_estimates_see_it_where_it_lands(self):
        view = self._view([(6, 2048), (2, 2048)])
        state = swap.State(view, swap.HOST)
        (leg,) = self._legs(view)
        state.apply(leg)
        self.assertEqual(1, state.inst['h0'].socket)
        self.assertGreater(state.pressure([('cold', 1)]), 0.0)


class TestSensitivityCost(testtools.TestCase):

    def test_prefers_low_mf_among_near_equal_moves(self):
        view = v.view([v.host('hot'), v.host('cold')],
                      [v.vm('sensitive', 'hot', 5.0 * M, mf=0.9),
                       v.vm('insensitive', 'hot', 4.8 * M, mf=0.1),
                       v.vm('c0', 'cold', 0.1 * M)])
        plan = swap.cache_aware(view, swap.SwapParameters(
            local_phase=False, max_swaps=1, threshold=1 * M))
        moved = {leg.instance for a in plan.actions
                 for leg in ((a.first, a.second)
                             if isinstance(a, cluster.Swap) else (a,))}
        self.assertIn('insensitive', moved)
        self.assertNotIn('sensitive', moved)
        extreme = swap.cache_aware(view, EXTREME)
        self.assertIn('sensitive', {extreme.actions[0].first.instance,
                                    extreme.actions[0].second.instance})

    def test_prefers_smaller_memory(self):
        view = v.view([v.host('hot'), v.host('cold')],
                      [v.vm('big', 'hot', 5.0 * M, memory_mib=16384),
                       v.vm('small', 'hot', 4.9 * M, memory_mib=1024),
                       v.vm('c0', 'cold', 0.1 * M)])
        plan = swap.cache_aware(view, swap.SwapParameters(
            local_phase=False, max_swaps=1, threshold=1 * M))
        first = plan.actions[0]
        legs = ((first.first, first.second)
                if isinstance(first, cluster.Swap) else (first,))
        self.assertIn('small', {leg.instance for leg in legs})

    def test_move_not_worth_its_cost_is_skipped(self):
        view = v.view([v.host('hot', memory_mib=1 << 20),
                       v.host('cold', memory_mib=1 << 20)],
                      [v.vm('h0', 'hot', 3 * M, memory_mib=64 * 1024),
                       v.vm('h1', 'hot', 2 * M, memory_mib=64 * 1024),
                       v.vm('c0', 'cold', 0.1 * M, memory_mib=64 * 1024)])
        params = swap.SwapParameters(local_phase=False, threshold=1 * M,
                                     migration_cost_per_gib=1e5)
        plan = swap.cache_aware(view, params)
        self.assertEqual((), plan.actions)
        self.assertEqual('not_worth_it', _reasons(plan)['hot'])

    def test_bad_parameters(self):
        self.assertRaises(ValueError, swap.SwapParameters,
                          victim_selection='random')
        self.assertRaises(ValueError, swap.SwapParameters, threshold=-1)
        self.assertRaises(ValueError, swap.SwapParameters, max_swaps=1.5)


class TestRepercussion(testtools.TestCase):

    def test_hurt_corunner_found(self):
        view = v.view([v.host('a'), v.host('b')],
                      [v.vm('moved', 'b', 5 * M, socket=0),
                       v.vm('co', 'b', 2 * M, socket=0,
                            merlin_class='high/medium'),
                       v.vm('other-socket', 'b', 2 * M, socket=1,
                            merlin_class='high/high'),
                       v.vm('fine', 'b', 2 * M, socket=0,
                            merlin_class='low/low')])
        moves = [swap.Move('moved', 'a', 'b', 9000.0)]
        before = {'co': 'medium/medium', 'other-socket': 'low/low',
                  'fine': 'medium/low'}
        hurt = arbitration.hurt_corunners(view, moves, before)
        self.assertEqual(['co'], [h.uuid for h in hurt])
        self.assertEqual('moved', hurt[0].culprit)

    def test_hurt_host_is_arbitrated_first_and_gets_nothing(self):
        # 'b' is not the most loaded host, but a co-runner there was hurt
        # by the last move: it is relieved first, and never a destination.
        view = v.view([v.host('a'), v.host('b'), v.host('c')],
                      [v.vm('a0', 'a', 9 * M), v.vm('a1', 'a', 1 * M),
                       v.vm('moved', 'b', 5 * M, last_moved_at=1.0),
                       v.vm('co', 'b', 2 * M, merlin_class='high/high'),
                       v.vm('c0', 'c', 1 * M)])
        hurt = [arbitration.Hurt('co', 'b', 0, 'moved', 'high/low',
                                 'high/high')]
        plan = swap.cache_aware(view, swap.SwapParameters(
            local_phase=False, max_swaps=2, threshold=1 * M), hurt=hurt)
        self.assertEqual('repercussion', _reasons(plan)['co'])
        first = plan.actions[0]
        legs = ((first.first, first.second)
                if isinstance(first, cluster.Swap) else (first,))
        self.assertIn('b', {leg.source_host for leg in legs})
        for action in plan.actions:
            legs = ((action.first, action.second)
                    if isinstance(action, cluster.Swap) else (action,))
            for leg in legs:
                if leg.source_host != 'b':
                    self.assertNotEqual('b', leg.dest_host)


class TestMixedHostClasses(testtools.TestCase):
    """Loads per average-sized unit (measure.capacity_weights)."""

    def _view(self, small_misses):
        # A 32-CPU-per-socket host with 8 VMs per socket beside a
        # 4-CPU-per-socket one with two VMs per socket.
        big = [v.vm('b%d%d' % (s, n), 'big', 10 * M, socket=s, mf=0.3)
               for s in (0, 1) for n in range(8)]
        small = [v.vm('s%d%d' % (s, n), 'small', misses, socket=s, mf=0.3)
                 for s in (0, 1)
                 for n, misses in enumerate((small_misses - 1 * M, 1 * M))]
        return v.view([v.host('big', cpus=32), v.host('small', cpus=4)],
                      big + small)

    def test_weights_are_one_on_identical_units(self):
        view = v.view([v.host('a'), v.host('b')], [])
        self.assertEqual({1.0}, set(
            measure.capacity_weights(view).values()))
        self.assertEqual({'a': 1.0, 'b': 1.0},
                         measure.capacity_weights(view, 'host'))

    def test_the_cache_weighs_where_every_socket_says(self):
        # 4 CPUs with 16 MiB of LLC beside 32 CPUs with 32 MiB: per MiB
        # of cache the small socket is the larger one.
        view = self._view(10 * M)

        def sized(llc):
            return dataclasses.replace(view, hosts=tuple(
                dataclasses.replace(h, sockets=tuple(
                    dataclasses.replace(s, llc_kib=llc[h.name])
                    for s in h.sockets)) for h in view.hosts))
        weights = measure.capacity_weights(
            sized({'big': 32768, 'small': 16384}))
        self.assertAlmostEqual(24576.0 / 32768, weights[('big', 0)])
        self.assertAlmostEqual(24576.0 / 16384, weights[('small', 0)])
        # One socket without a size: the CPUs, for every socket.
        weights = measure.capacity_weights(
            sized({'big': 32768, 'small': None}))
        self.assertAlmostEqual(18.0 / 4, weights[('small', 0)])

    def test_even_misses_per_cpu_is_balanced(self):
        # 80 M misses/s on 32 CPUs and 10 M on 4: the same per CPU. Raw
        # figures would send a big-host VM to the small socket.
        view = self._view(10 * M)
        weights = measure.capacity_weights(view)
        self.assertAlmostEqual(18.0 / 32, weights[('big', 0)])
        self.assertAlmostEqual(18.0 / 4, weights[('small', 0)])
        plan = swap.numa_aware(view, EXTREME)
        self.assertEqual((), plan.actions)
        self.assertTrue(plan.reason.startswith('balanced'), plan.reason)

    def test_a_small_socket_carrying_more_per_cpu_gives_load(self):
        view = self._view(40 * M)
        plan = swap.numa_aware(view, dataclasses.replace(
            EXTREME, min_predicted_gain=0.0, migration_cost_per_gib=0.0))
        self.assertEqual(1, len(plan.actions))
        first = plan.actions[0].first
        self.assertEqual('small', first.source_host)
        self.assertEqual('big', first.dest_host)


class TestNumaAware(testtools.TestCase):

    def test_algorithm_2_swaps_between_sockets_of_two_hosts(self):
        view = v.view([v.host('a'), v.host('b')],
                      [v.vm('a0', 'a', 6 * M, socket=0),
                       v.vm('a3', 'a', 3 * M, socket=0),
                       v.vm('a1', 'a', 2 * M, socket=1),
                       v.vm('b0', 'b', 3 * M, socket=0),
                       v.vm('b1', 'b', 1 * M, socket=1)])
        plan = swap.numa_aware(view, swap.SwapParameters(
            victim_selection='extreme', max_swaps=1, threshold=1 * M))
        action = plan.actions[0]
        self.assertIsInstance(action, cluster.Swap)
        legs = {leg.instance: (leg.dest_host, leg.dest_socket)
                for leg in (action.first, action.second)}
        self.assertEqual({'a0': ('b', 1), 'b1': ('a', 0)}, legs)

    def test_same_host_sockets_become_repins_with_memory(self):
        view = v.view([v.host('a')],
                      [v.vm('a0', 'a', 9 * M, socket=0),
                       v.vm('a1', 'a', 2 * M, socket=0),
                       v.vm('a2', 'a', 1 * M, socket=1)])
        plan = swap.numa_aware(view, swap.SwapParameters(
            victim_selection='extreme', max_swaps=1, threshold=1 * M))
        self.assertTrue(plan.actions)
        for action in plan.actions:
            self.assertIsInstance(action, cluster.Repin)
            self.assertTrue(action.move_memory)
        self.assertEqual(0.0, plan.indicators['migrations'])

    def test_socket_memory_must_fit(self):
        view = v.view([v.host('a', memory_mib=4096),
                       v.host('b', memory_mib=4096)],
                      [v.vm('a0', 'a', 9 * M, socket=0, memory_mib=3072),
                       v.vm('b1', 'b', 1 * M, socket=1, memory_mib=1024),
                       v.vm('b2', 'b', 1 * M, socket=1, memory_mib=2048)])
        plan = swap.numa_aware(view, swap.SwapParameters(
            victim_selection='extreme', max_swaps=1, threshold=1 * M))
        for action in plan.actions:
            legs = ((action.first, action.second)
                    if isinstance(action, cluster.Swap) else (action,))
            for leg in legs:
                self.assertNotEqual(('b', 1), (getattr(leg, 'dest_host',
                                                       None),
                                               leg.dest_socket))

    def _memory_view(self, memory_node):
        return v.view(
            [v.host('a', memory_mib=4096), v.host('b', memory_mib=4096)],
            [v.vm('a0', 'a', 6 * M, socket=0, memory_mib=2048),
             v.vm('a1', 'a', 6 * M, socket=0, memory_mib=2048),
             v.vm('a2', 'a', 5 * M, socket=1, memory_mib=2048,
                  memory_node=None if memory_node is None else 0),
             v.vm('b0', 'b', 1 * M, socket=0, memory_mib=3072,
                  memory_node=memory_node)])

    def test_socket_memory_counts_where_the_memory_is(self):
        # b0 runs on socket 0 of b but its 3 GiB live on node 1 (left
        # behind by a re-pin without memory, or Ahn's W-W): socket 1 has
        # 1 GiB free, not 4, so a1 (2 GiB) cannot move there with its
        # memory; without memory_node the same move is planned.
        # Without the NUMA repair, which would first bring b0's memory
        # back (test_numa_repair_* below).
        params = swap.SwapParameters(victim_selection='extreme',
                                     max_swaps=1, threshold=1 * M,
                                     numa_repair=False)
        plan = swap.numa_aware(self._memory_view(None), params)
        self.assertEqual([('b', 1)], [(a.dest_host, a.dest_socket)
                                      for a in plan.actions])
        plan = swap.numa_aware(self._memory_view(1), params)
        self.assertEqual((), plan.actions)
        self.assertIn('no_capacity', ' '.join(s.reason
                                              for s in plan.skipped))

    def test_unknown_socket_is_skipped(self):
        view = v.view([v.host('a'), v.host('b')],
                      [v.vm('a0', 'a', 9 * M, socket=None),
                       v.vm('a1', 'a', 8 * M, socket=0),
                       v.vm('b0', 'b', 1 * M, socket=0)])
        plan = swap.numa_aware(view, swap.SwapParameters(
            victim_selection='extreme', max_swaps=1, threshold=1 * M))
        self.assertNotIn('a0', {leg.instance for a in plan.actions
                                for leg in ((a.first, a.second)
                                            if isinstance(a, cluster.Swap)
                                            else (a,))})


class TestGivingUp(testtools.TestCase):

    def test_stops_after_too_many_units_without_a_move(self):
        # Every loaded host holds one big instance; moving it anywhere
        # overshoots, so no host has an acceptable move.
        hosts = [v.host('h%02d' % i) for i in range(30)] + [v.host('empty')]
        vms = [v.vm('v%02d' % i, 'h%02d' % i, 10 * M) for i in range(30)]
        plan = swap.cache_aware(v.view(hosts, vms), swap.SwapParameters(
            local_phase=False, max_swaps=1, threshold=1 * M))
        self.assertEqual((), plan.actions)
        limit = balance.MAX_FAILED_SOURCES_PER_SWAP
        self.assertEqual('stopped after %d units without an acceptable '
                         'move (see skipped)' % limit, plan.reason)
        self.assertEqual(limit, sum(1 for s in plan.skipped
                                    if s.reason.startswith('no_gain')))

    def test_fast_replace_equals_dataclasses_replace(self):
        import dataclasses
        inst = v.vm('x', 'a', 1 * M, last_moved_at=5.0)
        self.assertEqual(dataclasses.replace(inst, host='b', socket=1),
                         state_mod.replace_instance(inst, host='b', socket=1))
        self.assertEqual('a', inst.host)


class TestNumaRepair(testtools.TestCase):
    """Ahn et al.'s local NUMA-aware step (sections 3 and 4.2)."""

    PARAMS = swap.SwapParameters(local_phase=False, max_swaps=0)

    def _w_w(self, **kwargs):
        # Ahn's W-W: both sockets full (2 CPUs each), every instance's
        # memory on the other socket's node.
        return v.view([v.host('a', cpus=2)],
                      [v.vm('x0', 'a', 8 * M, socket=0, vcpus=1,
                            memory_node=1, **kwargs),
                       v.vm('x1', 'a', 8 * M, socket=0, vcpus=1,
                            memory_node=1, **kwargs),
                       v.vm('y0', 'a', 6 * M, socket=1, vcpus=1,
                            memory_node=0, **kwargs),
                       v.vm('y1', 'a', 6 * M, socket=1, vcpus=1,
                            memory_node=0, **kwargs)])

    def _memory_local(self, view, plan):
        after = swap.State(view, swap.SOCKET)
        for action in plan.actions:
            after.apply(action)
        return {u: after.memory_socket(i) == i.socket
                for u, i in after.inst.items()}

    def test_full_sockets_exchange_vcpus_and_move_no_memory(self):
        for algorithm in (swap.numa_aware, swap.cache_aware):
            view = self._w_w()
            plan = algorithm(view, self.PARAMS)
            self.assertEqual(4, len(plan.actions))
            for action in plan.actions:
                self.assertIsInstance(action, cluster.Repin)
                self.assertFalse(action.move_memory)
                self.assertEqual(1 - view.instance(action.instance).socket,
                                 action.dest_socket)
            self.assertTrue(all(self._memory_local(view, plan).values()))

    def test_full_sockets_in_a_cycle_are_repaired_by_two_exchanges(self):
        # Three full sockets, each instance's memory on the next one's
        # node: no two instances hold each other's socket, so no single
        # exchange makes both local. The first exchange makes one local
        # and leaves its partner, still remote, facing the third instance
        # in a plain exchange.
        view = v.view([v.host('a', sockets=3, cpus=1)],
                      [v.vm('x', 'a', 8 * M, socket=0, vcpus=1,
                            memory_node=1),
                       v.vm('y', 'a', 6 * M, socket=1, vcpus=1,
                            memory_node=2),
                       v.vm('z', 'a', 4 * M, socket=2, vcpus=1,
                            memory_node=0)])
        for algorithm in (swap.numa_aware, swap.cache_aware):
            plan = algorithm(view, self.PARAMS)
            self.assertEqual(4, len(plan.actions))
            for action in plan.actions:
                self.assertIsInstance(action, cluster.Repin)
                self.assertFalse(action.move_memory)
            self.assertTrue(all(self._memory_local(view, plan).values()))
            # y, exchanged first onto a socket that is not its memory's,
            # moves twice; every socket keeps its one vCPU at each step.
            moved = [a.instance for a in plan.actions]
            self.assertEqual(2, moved.count('y'))
            self.assertEqual(2, len(harm.action_groups(view, plan.actions)))

    def test_full_sockets_exchange_one_large_instance_for_two_small(self):
        # Two full sockets of 4 CPUs: x (4 vCPUs) on socket 0 with its
        # memory on node 1, y0 and y1 (2 each) on socket 1 with theirs on
        # node 0. No pair fits (x for one y leaves socket 1 with 6 vCPUs)
        # and no memory may move (each node serves a remote tenant): x
        # exchanges sockets with both, and all three end local.
        view = v.view([v.host('a', cpus=4)],
                      [v.vm('x', 'a', 8 * M, socket=0, vcpus=4,
                            memory_node=1),
                       v.vm('y0', 'a', 3 * M, socket=1, vcpus=2,
                            memory_node=0),
                       v.vm('y1', 'a', 2 * M, socket=1, vcpus=2,
                            memory_node=0)])
        for algorithm in (swap.numa_aware, swap.cache_aware):
            plan = algorithm(view, self.PARAMS)
            self.assertEqual([('x', 1), ('y0', 0), ('y1', 0)],
                             [(a.instance, a.dest_socket)
                              for a in plan.actions])
            self.assertFalse(any(a.move_memory for a in plan.actions))
            self.assertTrue(all(self._memory_local(view, plan).values()))
            self.assertEqual([plan.actions],
                             harm.action_groups(view, plan.actions))

    def test_an_exchange_of_sets_balances_its_vcpus(self):
        # x (4 vCPUs) against partners of 3 and 2: the 3 leaves 1 to
        # balance, the 2 overshoots it, and no instance like x sends 1
        # back: no set balances, and nothing is proposed.
        state = swap.State(v.view([v.host('a', cpus=5)], [
            v.vm('x', 'a', 8 * M, socket=0, vcpus=4, memory_node=1),
            v.vm('y0', 'a', 3 * M, socket=1, vcpus=3, memory_node=0),
            v.vm('y1', 'a', 2 * M, socket=1, vcpus=2, memory_node=0)]),
            swap.SOCKET)
        remote = [(state.inst[u], 1 - state.inst[u].socket, 1.0)
                  for u in ('x', 'y0', 'y1')]
        self.assertEqual([], repair._exchanges(remote[0], remote[1:]))
        # With a 1-vCPU instance like x on socket 0, it goes along.
        z = (dataclasses.replace(remote[0][0], uuid='z', vcpus=1), 1, 1.0)
        found = repair._exchanges(remote[0], remote[1:] + [z])
        self.assertEqual([['x', 'y0', 'y1', 'z']],
                         [[m[0].uuid for m in moves] for moves in found])

    def test_memory_stays_off_a_node_serving_a_remote_tenant(self):
        # z's memory could move to node 0, but node 0 holds the memory of
        # y, which runs on socket 2 (locked, so it stays remote): z's
        # misses would queue at the controller y's already cross the
        # interconnect to.
        hosts = [v.host('a', sockets=3, cpus=1)]
        z = v.vm('z', 'a', 8 * M, socket=0, vcpus=1, memory_node=1)
        local = v.vm('l1', 'a', 1 * M, socket=1, vcpus=1)
        y = v.vm('y', 'a', 2 * M, socket=2, vcpus=1, memory_node=0,
                 movable=False)
        plan = swap.numa_aware(v.view(hosts, [z, local, y]), self.PARAMS)
        self.assertEqual((), plan.actions)
        self.assertEqual('numa_remote', _reasons(plan)['z'])
        # y local on socket 2: the memory comes back.
        y = dataclasses.replace(y, memory_node=None)
        plan = swap.numa_aware(v.view(hosts, [z, local, y]), self.PARAMS)
        self.assertEqual((cluster.Repin('z', 'a', 0, move_memory=True),),
                         plan.actions)

    def test_off_leaves_the_memory_remote(self):
        params = dataclasses.replace(self.PARAMS, numa_repair=False)
        self.assertEqual((), swap.numa_aware(self._w_w(), params).actions)

    def test_memory_moves_when_the_memory_socket_has_no_cpu(self):
        # z runs on socket 0 (room left) with its memory on node 1, whose
        # socket is full of local instances: its memory comes back.
        view = v.view([v.host('a', cpus=2)],
                      [v.vm('z', 'a', 8 * M, socket=0, vcpus=1,
                            memory_node=1),
                       v.vm('l0', 'a', 1 * M, socket=1, vcpus=1),
                       v.vm('l1', 'a', 1 * M, socket=1, vcpus=1)])
        plan = swap.numa_aware(view, self.PARAMS)
        self.assertEqual((cluster.Repin('z', 'a', 0, move_memory=True),),
                         plan.actions)
        # 64 GiB cost 1.6e7, more than its 8M remote accesses/s.
        big = dataclasses.replace(view, instances=tuple(
            dataclasses.replace(i, memory_mib=65536) if i.uuid == 'z'
            else i for i in view.instances))
        big = dataclasses.replace(big, hosts=(v.host('a', cpus=2,
                                                     memory_mib=131072),))
        plan = swap.numa_aware(big, self.PARAMS)
        self.assertEqual((), plan.actions)
        self.assertEqual('numa_remote', _reasons(plan)['z'])

    def test_vcpus_do_not_follow_the_memory_onto_busy_cores(self):
        # Two sockets of 2 cores x 2 threads. z runs on socket 0 with its
        # memory on node 1, where l0 uses ``util`` of its 2 vCPUs. On
        # busy cores z's vCPU would share one with a sibling, and both
        # instances there would lose a third of the CPU they want, more
        # than the remote penalty z sheds; beside an idle l0 a core is
        # free. (l0 is spared the co-runner rule, as the host's other
        # repair candidates are, to judge the CPU alone.)
        socks = tuple(cluster.SocketView(s, (s,), 4, 32768, cores=2)
                      for s in range(2))
        for util, fits in ((1.0, False), (0.2, True)):
            view = v.view([cluster.HostView('a', socks, 8, 65536,
                                            disk_gb_total=500)],
                          [v.vm('z', 'a', 8 * M, socket=0, vcpus=1,
                                memory_node=1, cpu_util=1.0),
                           v.vm('l0', 'a', 1 * M, socket=1, vcpus=2,
                                cpu_util=util)])
            state = swap.State(view, swap.SOCKET)
            tried = repair._try_repair(
                state, [(state.inst['z'], 1, False, 1.0)], self.PARAMS,
                {'z', 'l0'})
            self.assertEqual(fits, tried is not None, util)
            self.assertEqual(0, state.inst['z'].socket)
        # Moving z off a socket it overflows (3 busy vCPUs, 2 cores) onto
        # one where it overflows as much costs nothing: it may move.
        view = v.view([cluster.HostView('a', socks, 8, 65536,
                                        disk_gb_total=500)],
                      [v.vm('z', 'a', 8 * M, socket=0, vcpus=3,
                            memory_node=1, cpu_util=1.0)])
        state = swap.State(view, swap.SOCKET)
        self.assertIsNotNone(repair._try_repair(
            state, [(state.inst['z'], 1, False, 1.0)], self.PARAMS, {'z'}))

    def test_vcpus_follow_the_memory_when_its_socket_has_room(self):
        view = v.view([v.host('a', cpus=2)],
                      [v.vm('z', 'a', 8 * M, socket=0, vcpus=1,
                            memory_node=1),
                       v.vm('l0', 'a', 1 * M, socket=0, vcpus=1)])
        plan = swap.numa_aware(view, self.PARAMS)
        self.assertEqual((cluster.Repin('z', 'a', 1, move_memory=False),),
                         plan.actions)

    def test_both_algorithms_repair_low_mf_instances(self):
        # A low MF (under local_memory_mf) lets the cache-aware local
        # phase leave memory behind when that pays; it is no reason to
        # leave an instance remote that a re-pin makes local for free.
        for algorithm in (swap.cache_aware, swap.numa_aware):
            view = self._w_w(mf=0.1)
            plan = algorithm(view, self.PARAMS)
            self.assertEqual(4, len(plan.actions), algorithm.__name__)
            self.assertTrue(all(self._memory_local(view, plan).values()))

    def test_cooldown_and_pinned_are_left(self):
        view = self._w_w(last_moved_at=9999.0)
        self.assertEqual((), swap.numa_aware(view, self.PARAMS).actions)
        view = self._w_w(has_numa_topology=True)
        self.assertEqual((), swap.numa_aware(view, self.PARAMS).actions)


class TestPredictedContention(testtools.TestCase):
    """A move must lower the predicted contention by more than it costs."""

    def test_pressure_weights_corunner_misses_by_sensitivity(self):
        heavy = v.vm('h', 'a', 10 * M, mf=0.8)
        light = v.vm('l', 'a', 2 * M, mf=0.1)
        self.assertAlmostEqual(0.8 * 2 * M + 0.1 * 10 * M,
                               swap.pressure([heavy, light]))
        self.assertEqual(0.0, swap.pressure([heavy]))

    def test_cache_reuse_counts_as_sensitivity(self):
        # Merlin 3.2: a low MF with many accesses reaching the LLC (MPKI /
        # MF, here 10 per kilo-instruction) is cache reuse, which a heavy
        # co-runner takes; the MF alone (or the LLC's own low MPKI) reads
        # it as insensitive.
        reuser = v.vm('r', 'a', 2 * M, mf=0.1, mpki=1.0)
        light = v.vm('l', 'a', 2 * M, mf=0.1, mpki=0.1)
        streamer = v.vm('s', 'a', 2 * M, mf=0.8, mpki=30.0)
        both = v.vm('b', 'a', 2 * M, mf=0.4, mpki=20.0)
        loop = v.vm('c', 'a', 2 * M, mf=0.1, mpki=0.001)
        self.assertAlmostEqual(0.9, measure.sensitivity(reuser))
        # Fewer accesses than the medium bin's (2 per kilo-instruction):
        # what it can lose, 1 - MF, in proportion to them; a loop that
        # hardly reaches the LLC keeps its MF.
        self.assertAlmostEqual(0.45, measure.sensitivity(light))
        self.assertAlmostEqual(0.1, measure.sensitivity(loop))
        self.assertAlmostEqual(0.8, measure.sensitivity(streamer))
        self.assertAlmostEqual(0.6, measure.sensitivity(both))
        self.assertEqual(1.0, measure.sensitivity(
            dataclasses.replace(reuser, mf=None)))
        # Without an MPKI, the MF alone, as before.
        self.assertAlmostEqual(0.1, measure.sensitivity(
            dataclasses.replace(reuser, mpki=None)))
        # The operator's bins decide what "many accesses" is.
        th = classify.Thresholds(mpki_low=12.0, mpki_high=15.0)
        self.assertAlmostEqual(0.75, measure.sensitivity(reuser, th))
        self.assertAlmostEqual(0.1, measure.sensitivity(light, th))
        self.assertAlmostEqual(
            0.45 * 2 * M + 0.9 * 2 * M, swap.pressure([reuser, light]))
        self.assertAlmostEqual(
            0.1 * 2 * M + 0.75 * 2 * M, swap.pressure([reuser, light], th))

    def _alike(self, y1_misses):
        return v.view([v.host('a', cpus=4)],
                      [v.vm('x0', 'a', 20 * M, socket=0, image_id='img',
                            flavor='f'),
                       v.vm('x1', 'a', 10 * M, socket=0, image_id='img',
                            flavor='f'),
                       v.vm('y0', 'a', 1 * M, socket=1, image_id='img',
                            flavor='f'),
                       v.vm('y1', 'a', y1_misses, socket=1,
                            image_id='other', flavor='f')])

    def test_swap_of_alike_instances_is_not_proposed(self):
        # Same image and flavor: the swap changes no socket's mix, though
        # their measured misses differ.
        view = self._alike(1.5 * M)
        params = swap.SwapParameters(victim_selection='extreme',
                                     threshold=1 * M, max_swaps=1,
                                     migration_cost_per_gib=0)
        # The papers' pair (x0, y0) is alike, and y1 misses more than the
        # tolerance allows: nothing else is tried.
        plan = swap.numa_aware(view, params)
        self.assertEqual((), plan.actions)
        self.assertIn('no_gain', _reasons(plan)['a/socket-0'])
        # y1 as light as y0 is the papers' partner too.
        plan = swap.numa_aware(self._alike(1 * M), params)
        self.assertEqual({'x0', 'y1'}, {a.instance for a in plan.actions})
        params = dataclasses.replace(params,
                                     victim_selection='sensitivity_cost')
        plan = swap.numa_aware(view, params)
        moved = {a.instance for a in plan.actions}
        self.assertEqual(2, len(moved))
        self.assertIn('y1', moved)

    def test_redeal_putting_the_sensitive_beside_the_heavy_is_skipped(self):
        # Even misses per socket (s0: 20+6, s1: 20+6 after the deal) but
        # the two sensitive instances end beside a heavy one each, where
        # before they shared a socket with each other.
        view = v.view([v.host('a', cpus=4)],
                      [v.vm('h0', 'a', 20 * M, socket=0, mf=0.1),
                       v.vm('h1', 'a', 20 * M, socket=0, mf=0.1),
                       v.vm('s0', 'a', 6 * M, socket=1, mf=0.9),
                       v.vm('s1', 'a', 6 * M, socket=1, mf=0.9)])
        actions, skipped = local.local_phase(
            view, swap.SwapParameters(migration_cost_per_gib=0))
        self.assertEqual([], actions)
        self.assertEqual('no_predicted_gain',
                         skipped[0].reason.split(':')[0])
        # Insensitive light instances: the same deal goes ahead.
        view = dataclasses.replace(view, instances=tuple(
            dataclasses.replace(i, mf=0.1) if i.uuid.startswith('s')
            else dataclasses.replace(i, mf=0.9) for i in view.instances))
        actions, _ = local.local_phase(
            view, swap.SwapParameters(migration_cost_per_gib=0))
        self.assertEqual(2, len(actions))


class TestContentionPhase(testtools.TestCase):
    """Swaps for predicted contention alone; the margin every move needs."""

    def _view(self):
        # Each socket holds two instances of one workload: a and b are
        # memory-bound and touchy (MF 0.8), c and d light and indifferent;
        # the threshold below makes the misses count as balanced.
        return v.view([v.host('h1'), v.host('h2')], [
            v.vm('a0', 'h1', 6 * M, socket=0, mf=0.8, image_id='a'),
            v.vm('a1', 'h1', 6 * M, socket=0, mf=0.8, image_id='a'),
            v.vm('b0', 'h1', 6 * M, socket=1, mf=0.8, image_id='b'),
            v.vm('b1', 'h1', 6 * M, socket=1, mf=0.8, image_id='b'),
            v.vm('c0', 'h2', 1 * M, socket=0, mf=0.05, image_id='c'),
            v.vm('c1', 'h2', 1 * M, socket=0, mf=0.05, image_id='c'),
            v.vm('d0', 'h2', 1 * M, socket=1, mf=0.05, image_id='d'),
            v.vm('d1', 'h2', 1 * M, socket=1, mf=0.05, image_id='d')])

    def test_balanced_sockets_still_get_the_swaps_that_lower_contention(self):
        params = swap.SwapParameters(threshold=100 * M, max_swaps=2,
                                     contention_swaps=True)
        plan = swap.numa_aware(self._view(), params)
        self.assertIn('balanced', swap.numa_aware(
            self._view(), dataclasses.replace(
                params, contention_swaps=False)).reason)
        self.assertEqual(2, len(plan.actions))
        after = _apply(self._view(), plan)
        for inst in after.instances:
            if inst.image_id in ('a', 'b'):
                # Every touchy instance now shares with a light one.
                mates = [i for i in after.instances_on(inst.host,
                                                       inst.socket)
                         if i.uuid != inst.uuid]
                self.assertTrue(all(m.image_id in ('c', 'd')
                                    for m in mates), inst.uuid)
        before = sum(swap.pressure(self._view().instances_on(h, s))
                     for h in ('h1', 'h2') for s in (0, 1))
        now = sum(swap.pressure(after.instances_on(h, s))
                  for h in ('h1', 'h2') for s in (0, 1))
        self.assertLess(now, before)

    def test_the_swaps_go_to_the_least_contended_units_within_reach(self):
        # Two idle hosts of another CPU model hold the four least contended
        # sockets of the cloud; no swap may reach them, so the phase swaps
        # within h1 and h2 as it does without them.
        view = self._view()
        view = dataclasses.replace(view, hosts=tuple(
            dataclasses.replace(h, cpu_vendor='intel', cpu_model='old')
            for h in view.hosts) + (
                v.host('x', cpu_vendor='intel', cpu_model='new'),
                v.host('y', cpu_vendor='intel', cpu_model='new')))
        params = swap.SwapParameters(threshold=100 * M, max_swaps=2,
                                     contention_swaps=True)
        plan = swap.numa_aware(view, params)
        self.assertEqual(2, len(plan.actions))
        self.assertEqual({'h1', 'h2'}, {
            getattr(leg, 'dest_host', None) or leg.host
            for a in plan.actions for leg in _legs(a)})

    def test_max_swaps_is_shared_with_the_global_phase(self):
        params = swap.SwapParameters(threshold=100 * M, max_swaps=1,
                                     contention_swaps=True)
        self.assertEqual(1, len(swap.numa_aware(self._view(),
                                                params).actions))
        params = dataclasses.replace(params, max_swaps=0)
        self.assertEqual((), swap.numa_aware(self._view(), params).actions)

    def test_margin_refuses_small_predicted_drops(self):
        # The same swap, asked to lower the touched sockets' predicted
        # contention by more than all of it: never.
        params = swap.SwapParameters(threshold=100 * M, max_swaps=2,
                                     contention_swaps=True,
                                     min_predicted_gain=1.0)
        self.assertEqual((), swap.numa_aware(self._view(), params).actions)
        self.assertRaises(ValueError, swap.SwapParameters,
                          min_predicted_gain=-0.1)


class TestCpuVendors(testtools.TestCase):
    """A live migration stays among the hosts of one CPU vendor."""

    def test_the_rule(self):
        self.assertFalse(cluster.live_migratable('intel', 'amd'))
        self.assertTrue(cluster.live_migratable('amd', 'amd'))
        # unknown is not judged
        self.assertTrue(cluster.live_migratable('intel', None))
        self.assertTrue(cluster.live_migratable('unknown', 'amd'))

    def _cluster(self, light_vendor):
        # Two hot hosts, one of each vendor, and two light ones; the
        # lightest of all is of ``light_vendor``.
        hosts = [v.host('intel-hot', cpu_vendor='intel'),
                 v.host('amd-hot', cpu_vendor='amd'),
                 v.host('intel-light', cpu_vendor='intel'),
                 v.host('amd-light', cpu_vendor='amd')]
        light = {'intel': (1, 2), 'amd': (2, 1)}[light_vendor]
        instances = [v.vm('ih%d' % k, 'intel-hot', m * M, socket=k % 2)
                     for k, m in enumerate((9, 8, 7, 6))]
        instances += [v.vm('ah%d' % k, 'amd-hot', m * M, socket=k % 2)
                      for k, m in enumerate((8.5, 7.5, 6.5, 5.5))]
        instances += [
            v.vm('il0', 'intel-light', light[0] * M, socket=0),
            v.vm('al0', 'amd-light', light[1] * M, socket=0)]
        return v.view(hosts, instances)

    def test_each_vendor_is_balanced_within_itself(self):
        params = swap.SwapParameters(local_phase=False, max_swaps=4,
                                     threshold=1 * M)
        vendor = {'intel-hot': 'intel', 'intel-light': 'intel',
                  'amd-hot': 'amd', 'amd-light': 'amd'}
        for light_vendor in ('intel', 'amd'):
            view = self._cluster(light_vendor)
            plan = swap.cache_aware(view, params)
            legs = [leg for a in plan.actions for leg in _legs(a)
                    if isinstance(leg, cluster.Migrate)]
            # both hot hosts shed load, each to its own vendor's light host
            self.assertEqual({'intel-hot', 'amd-hot'},
                             {leg.source_host for leg in legs})
            for leg in legs:
                self.assertEqual(vendor[leg.source_host],
                                 vendor[leg.dest_host], leg)

    def _models(self):
        # One vendor, two CPU models: the light host is of the other one.
        hosts = [v.host('old-hot', cpu_vendor='intel', cpu_model='old'),
                 v.host('old-light', cpu_vendor='intel', cpu_model='old'),
                 v.host('new-light', cpu_vendor='intel', cpu_model='new')]
        instances = [v.vm('o%d' % k, 'old-hot', m * M, socket=k % 2)
                     for k, m in enumerate((9, 8, 7, 6))]
        instances += [v.vm('ol', 'old-light', 2 * M, socket=0),
                      v.vm('nl', 'new-light', 1 * M, socket=0)]
        return v.view(hosts, instances)

    def test_other_cpu_models_only_when_the_operator_allows(self):
        params = swap.SwapParameters(local_phase=False, max_swaps=1,
                                     threshold=1 * M)
        dest = {leg.dest_host
                for a in swap.cache_aware(self._models(), params).actions
                for leg in _legs(a) if isinstance(leg, cluster.Migrate)}
        self.assertEqual({'old-light'}, dest)
        params = dataclasses.replace(params, across_cpu_models=True)
        dest = {leg.dest_host
                for a in swap.cache_aware(self._models(), params).actions
                for leg in _legs(a) if isinstance(leg, cluster.Migrate)}
        self.assertEqual({'new-light'}, dest)

    def test_reachable(self):
        state = swap.State(self._models(), swap.HOST)
        params = swap.SwapParameters()
        self.assertTrue(feasibility.reachable(state, 'old-hot', 'old-light',
                                              params))
        self.assertFalse(feasibility.reachable(state, 'old-hot',
                                               'new-light', params))
        self.assertTrue(feasibility.reachable(
            state, 'old-hot', 'new-light',
            dataclasses.replace(params, across_cpu_models=True)))
        # a model nobody reported is not judged
        view = self._models()
        view = dataclasses.replace(view, hosts=tuple(
            dataclasses.replace(h, cpu_model=None) if h.name == 'new-light'
            else h for h in view.hosts))
        self.assertTrue(feasibility.reachable(swap.State(view, swap.HOST),
                                              'old-hot', 'new-light',
                                              params))

    def test_no_candidate_crosses_vendors(self):
        view = self._cluster('amd')
        state = swap.State(view, swap.HOST)
        cand = arbitration.Candidate(state.inst['ih0'], None, 1 * M, 0.0)
        self.assertIsNone(feasibility.plan_legs(
            state, cand, 'intel-hot', 'amd-light', False))
        self.assertIsNotNone(feasibility.plan_legs(
            state, cand, 'intel-hot', 'intel-light', False))

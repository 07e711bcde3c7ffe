"""Liu & Li's node overhead levels (section 4.1, Figure 4) and allocator."""

import random

from oslotest import base

from contention import overhead
from contention.report import NodeOverhead
from tests.unit.contention import topologies

TH = overhead.OverheadThresholds()
ZERO = NodeOverhead(0, 0, 0, 0)


def occupant(cpu_nodes, memory, instructions=10 ** 10, cycles=10 ** 10,
             references=10 ** 8, misses=10 ** 7):
    """An instance: vCPUs per node, memory per node, counter deltas."""
    return overhead.Occupant(
        vcpus_per_node=dict(cpu_nodes), memory_mib_per_node=dict(memory),
        instructions=instructions, cycles=cycles,
        cache_references=references, cache_misses=misses)


class TestLevels(base.BaseTestCase):

    def test_level_above_is_strict(self):
        self.assertEqual(0, overhead.level_above(0.1, (0.1, 0.3, 0.5)))
        self.assertEqual(1, overhead.level_above(0.11, (0.1, 0.3, 0.5)))
        self.assertEqual(3, overhead.level_above(0.9, (0.1, 0.3, 0.5)))

    def test_level_below_is_strict(self):
        self.assertEqual(0, overhead.level_below(0.45, (0.45, 0.3, 0.15)))
        self.assertEqual(1, overhead.level_below(0.44, (0.45, 0.3, 0.15)))
        self.assertEqual(3, overhead.level_below(0.1, (0.45, 0.3, 0.15)))


class TestThresholds(base.BaseTestCase):

    def test_order_checked(self):
        error = self.assertRaises(ValueError, overhead.OverheadThresholds,
                                  mc_cycle_loss=(0.3, 0.1))
        self.assertIn('mc_cycle_loss must be ascending', str(error))
        error = self.assertRaises(ValueError, overhead.OverheadThresholds,
                                  llc_hit_rate=(0.1, 0.3))
        self.assertIn('llc_hit_rate must be descending', str(error))

    def test_values_checked(self):
        for bad in ((float('nan'),), (-0.1,), [0.1], ('a',)):
            self.assertRaises(ValueError, overhead.OverheadThresholds,
                              ic_cycle_loss=bad)
        self.assertRaises(ValueError, overhead.OverheadThresholds,
                          miss_stall_cycles=0)

    def test_more_levels_allowed(self):
        th = overhead.OverheadThresholds(mc_cycle_loss=(0.1, 0.2, 0.3, 0.4))
        self.assertEqual(4, overhead.level_above(0.5, th.mc_cycle_loss))


class TestNodeOverheads(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.topo = topologies.host()

    def overheads(self, *occupants, th=TH):
        return overhead.node_overheads(self.topo, occupants, th)

    def test_empty_host_is_all_zero(self):
        self.assertEqual({0: ZERO, 1: ZERO}, self.overheads())

    def test_llc_level_from_hit_rate(self):
        # hit rate 1 - 0.8 = 0.2: below 0.45 and 0.3, not below 0.15.
        result = self.overheads(occupant({0: 2}, {0: 1024},
                                         references=10 ** 8,
                                         misses=8 * 10 ** 7, cycles=10 ** 13))
        self.assertEqual(2, result[0].llc)
        self.assertEqual(ZERO, result[1])

    def test_llc_hit_rate_is_reference_weighted_over_the_node(self):
        # 10 misses of 100 refs and 90 of 100: node hit rate 0.5 -> 0.
        result = self.overheads(
            occupant({0: 1}, {0: 1}, references=100, misses=10),
            occupant({0: 1}, {0: 1}, references=100, misses=90))
        self.assertEqual(0, result[0].llc)

    def test_llc_counts_vcpu_share(self):
        # Half the vCPUs on each node: each node sees half the refs and
        # misses, so the same hit rate (0.1 -> level 3) on both.
        result = self.overheads(occupant({0: 1, 1: 1}, {0: 1, 1: 1},
                                         references=1000, misses=900))
        self.assertEqual(3, result[0].llc)
        self.assertEqual(3, result[1].llc)

    def test_mc_level_from_local_cycle_loss(self):
        # 10**7 misses x 60 stall cycles / 10**9 cycles = 0.6 -> level 3.
        heavy = occupant({0: 1}, {0: 1}, cycles=10 ** 9, misses=10 ** 7,
                         references=2 * 10 ** 7)
        light = occupant({1: 1}, {1: 1}, cycles=10 ** 10, misses=10 ** 7,
                         references=2 * 10 ** 7)
        result = self.overheads(heavy, light)
        self.assertEqual(3, result[0].mc)
        self.assertEqual(0, result[1].mc)  # 0.06
        self.assertEqual(0, result[0].ic)
        self.assertEqual(0, result[0].remote)

    def test_mc_takes_the_worst_domain(self):
        heavy = occupant({0: 1}, {0: 1}, cycles=10 ** 9, misses=4 * 10 ** 6)
        light = occupant({0: 3}, {0: 1}, cycles=10 ** 10, misses=10)
        self.assertEqual(1, self.overheads(heavy, light)[0].mc)  # 0.24

    def test_ic_from_remote_cycle_loss_scaled_by_distance(self):
        # Runs on node 1, memory on node 0: 0.2 x 21/10 = 0.42 -> level 2
        # on node 0's IC; a local run would be level 1 MC.
        remote = occupant({1: 2}, {0: 2048}, cycles=3 * 10 ** 9,
                          misses=10 ** 7)
        baseline = occupant({1: 1}, {1: 1})  # a local IPC to compare with
        result = self.overheads(remote, baseline)
        self.assertEqual(2, result[0].ic)
        self.assertEqual(0, result[0].mc)
        self.assertEqual(0, result[1].ic)
        local = occupant({0: 2}, {0: 2048}, cycles=3 * 10 ** 9,
                         misses=10 ** 7)
        self.assertEqual(1, self.overheads(local)[0].mc)

    def test_misses_split_by_memory_share(self):
        # 3/4 of memory remote: remote loss 0.75 x 0.2 x 2.1 = 0.315;
        # local loss 0.25 x 0.2 = 0.05.
        split = occupant({0: 4}, {0: 512, 1: 1536}, cycles=3 * 10 ** 9,
                         misses=10 ** 7)
        result = self.overheads(split)
        self.assertEqual(0, result[1].remote)  # its own local IPC
        self.assertEqual(2, result[1].ic)
        self.assertEqual(0, result[0].mc)

    def test_cycle_loss_is_capped(self):
        th = overhead.OverheadThresholds(mc_cycle_loss=(0.5, 1.0))
        result = self.overheads(occupant({0: 1}, {0: 1}, cycles=100,
                                         misses=100), th=th)
        self.assertEqual(1, result[0].mc)

    def test_remote_latency_from_ipc_ratio(self):
        local = occupant({0: 1}, {0: 1}, instructions=15 * 10 ** 9)
        remote = occupant({1: 1}, {0: 1}, instructions=10 ** 10)
        result = self.overheads(local, remote)
        self.assertEqual(2, result[0].remote)  # 1.5
        self.assertEqual(0, result[1].remote)

    def test_remote_baseline_from_other_nodes(self):
        # Nobody runs locally on node 0's memory: node 1's local IPC (1.2)
        # is the baseline for the remote IPC (1.0).
        local_on_1 = occupant({1: 1}, {1: 1}, instructions=12 * 10 ** 9)
        remote = occupant({1: 1}, {0: 1}, instructions=10 ** 10)
        self.assertEqual(1, self.overheads(local_on_1, remote)[0].remote)

    def test_remote_without_any_local_baseline_is_unknown(self):
        remote = occupant({1: 1}, {0: 1})
        result = self.overheads(remote)
        self.assertIsNone(result[0])
        self.assertEqual(ZERO, result[1])

    def test_remote_ipc_zero_is_the_top_level(self):
        local = occupant({0: 1}, {0: 1})
        stalled = occupant({1: 1}, {0: 1}, instructions=0)
        self.assertEqual(3, self.overheads(local, stalled)[0].remote)

    def test_total_is_the_sum(self):
        hot = occupant({0: 1, 1: 1}, {0: 1}, cycles=10 ** 9,
                       instructions=10 ** 8, references=10 ** 7,
                       misses=9 * 10 ** 6)
        local = occupant({0: 1}, {0: 1})
        node0 = self.overheads(hot, local)[0]
        self.assertEqual(node0.llc + node0.mc + node0.ic + node0.remote,
                         node0.total)
        self.assertGreater(node0.total, 6)

    def test_missing_counter_makes_touched_nodes_unknown(self):
        blind = occupant({1: 1}, {1: 1}, misses=None)
        fine = occupant({0: 1}, {0: 1})
        result = self.overheads(blind, fine)
        self.assertIsNone(result[1])
        self.assertIsNotNone(result[0])

    def test_missing_counter_with_remote_memory(self):
        blind = occupant({1: 1}, {0: 1, 1: 1}, cycles=None)
        self.assertEqual({0: None, 1: None}, self.overheads(blind))

    def test_unknown_memory_placement_makes_every_node_unknown(self):
        result = self.overheads(occupant({0: 1}, {}))
        self.assertEqual({0: None, 1: None}, result)

    def test_instance_that_did_not_run(self):
        idle = occupant({0: 1}, {0: 1}, instructions=0, cycles=0,
                        references=0, misses=0)
        self.assertEqual({0: ZERO, 1: ZERO}, self.overheads(idle))

    def test_instance_without_vcpu_placement_is_not_running(self):
        self.assertEqual({0: ZERO, 1: ZERO},
                         self.overheads(occupant({}, {0: 1}, misses=None)))

    def test_node_not_in_topology(self):
        error = self.assertRaises(ValueError, self.overheads,
                                  occupant({0: 1}, {5: 1}))
        self.assertIn('[5]', str(error))
        self.assertIn('host-a', str(error))


def slit(a, b):
    """A 4-socket SLIT: 10 local, 20 a hop further per socket."""
    return 10 + 10 * abs(a - b)


class TestZoneOverheads(base.BaseTestCase):
    """Figure 4 lines 16-28: the overhead of memory used from a node."""

    def test_local_memory_costs_its_cache_and_controller(self):
        levels = {0: NodeOverhead(1, 2, 3, 1), 1: NodeOverhead(0, 1, 1, 1),
                  2: None}
        self.assertEqual({0: 3, 1: 3, 2: None},
                         overhead.zone_overheads(levels, 0))
        self.assertEqual({0: 7, 1: 1, 2: None},
                         overhead.zone_overheads(levels, 1))


class TestOverheadAwareAllocation(base.BaseTestCase):
    """Sections 4.2 and 5.2: where a new instance's memory goes."""

    def allocate(self, mib, local, zones, free, idle=()):
        return overhead.overhead_aware_allocation(
            mib, local, zones, free, set(idle), slit)

    def test_power_of_two_weights_of_section_5_2(self):
        self.assertEqual([1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125],
                         [overhead.allocation_weight(o)
                          for o in (0, 1, 2, 3, 4, 5, 8)])

    def test_the_example_of_section_5_2(self):
        # 2^8 GB over nodes A, B, C of overheads 2, 4, 5: 2^7, 2^6, 2^6.
        result = self.allocate(2 ** 8, 0, {0: 2, 1: 4, 2: 5},
                               {0: 10 ** 4, 1: 10 ** 4, 2: 10 ** 4})
        self.assertEqual({0: 2 ** 7, 1: 2 ** 6, 2: 2 ** 6}, result)

    def test_an_idle_local_node_takes_it_all(self):
        result = self.allocate(4096, 2, {0: 0, 1: 0, 2: 5, 3: 0},
                               dict.fromkeys(range(4), 65536), idle={2, 3})
        self.assertEqual({2: 4096}, result)

    def test_the_nearest_idle_remote_node_next_then_the_rest(self):
        # Node 3 (idle, two hops) before node 0 (idle, three hops); what
        # it cannot hold goes by overhead.
        result = self.allocate(4096, 2, {0: 0, 1: 2, 2: 6, 3: 0},
                               {0: 65536, 1: 65536, 2: 65536, 3: 1024},
                               idle={0, 3})
        self.assertEqual({3: 1024, 0: 3072}, result)

    def test_only_the_four_lowest_overheads_take_a_share(self):
        zones = {0: 6, 1: 1, 2: 2, 3: 3, 4: 9}
        result = self.allocate(1000, 0, zones,
                               dict.fromkeys(range(5), 10 ** 4))
        self.assertNotIn(4, result)
        self.assertAlmostEqual(1000 * 1 / 2.25, result[1])
        self.assertAlmostEqual(1000 * 0.25 / 2.25, result[0])

    def test_a_full_node_passes_its_share_on(self):
        result = self.allocate(1000, 0, {0: 1, 1: 1},
                               {0: 100, 1: 10 ** 4})
        self.assertEqual({0: 100, 1: 900}, result)

    def test_unknown_overheads_only_when_nothing_else_has_room(self):
        self.assertEqual({1: 100}, self.allocate(
            100, 0, {0: None, 1: 7}, {0: 10 ** 4, 1: 10 ** 4}))
        self.assertEqual({1: 100, 0: 50}, self.allocate(
            150, 0, {0: None, 1: 7}, {0: 10 ** 4, 1: 100}))

    def test_too_little_room_is_refused_with_the_free_memory(self):
        error = self.assertRaises(ValueError, self.allocate, 4096, 0,
                                  {0: 0, 1: 0}, {0: 1024, 1: 2048})
        self.assertIn('4096 MiB', str(error))
        self.assertIn('{0: 1024, 1: 2048}', str(error))

    def test_a_request_that_fills_the_host_exactly_fits(self):
        # Earlier shares in thirds left 32768 MiB that add up to a hair
        # less in floating point (seen on a full 4-socket host): still
        # room for 32768.
        third = 10922.666666666664
        free = {0: third, 1: 0, 2: third, 3: third}
        self.assertLess(sum(free.values()), 32768)
        result = self.allocate(32768, 1, {0: 1, 2: 1, 3: 1}, free)
        self.assertAlmostEqual(32768, sum(result.values()), places=6)

    def test_every_request_fits_and_is_placed_in_full(self):
        rng = random.Random(7)
        for _ in range(300):
            nodes = range(rng.randint(1, 8))
            free = {n: rng.choice((0, 512, 4096, 65536)) for n in nodes}
            zones = {n: rng.choice((None, 0, 1, 2, 3, 5, 9)) for n in nodes}
            idle = {n for n in nodes if rng.random() < 0.3}
            mib = rng.randint(1, max(1, sum(free.values())))
            if not sum(free.values()):
                continue
            result = self.allocate(mib, rng.choice(list(nodes)), zones,
                                   free, idle)
            self.assertAlmostEqual(mib, sum(result.values()), places=6)
            for node, taken in result.items():
                self.assertGreater(taken, 0)
                self.assertLessEqual(taken, free[node] + 1e-6)

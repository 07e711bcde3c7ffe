"""Important placements (placement-model paper, Algorithms 1-3)."""

import itertools

import testtools

from contention.perfmodel import concerns
from contention.perfmodel import important
from contention.perfmodel import machine

#: An illustrative interconnect for the paper's 8-node AMD Opteron 6272
#: machine (4 packages x 2 dies). The paper's Figure 2b did not survive in
#: the text copy, so this matrix is not the measured one: it is a
#: documented stand-in, in relative link-width units (0 = no direct link;
#: found by searching small integer widths for one meeting these points),
#: that satisfies everything the text says about the real one:
#:
#: * nodes 0 and 5, and 3 and 6, are two hops apart (section 4);
#: * {2,3,4,5} is the 4-node placement with the highest interconnect
#:   score, with {0,1,6,7} its packing partner;
#: * the pair {0,1,4,5} + {2,3,6,7} is dominated by {0,2,4,6} + {1,3,5,7};
#: * the algorithm yields the paper's 13 important placements for 16
#:   vCPUs: two 8-node, three 2-node and eight 4-node ones.
AMD_BANDWIDTH = (
    # 0  1  2  3  4  5  6  7
    (0, 3, 1, 2, 2, 0, 2, 1),   # 0
    (3, 0, 0, 2, 2, 3, 0, 3),   # 1
    (1, 0, 0, 3, 4, 1, 2, 3),   # 2
    (2, 2, 3, 0, 3, 3, 0, 1),   # 3
    (2, 2, 4, 3, 0, 4, 2, 1),   # 4
    (0, 3, 1, 3, 4, 0, 1, 2),   # 5
    (2, 0, 2, 0, 2, 1, 0, 2),   # 6
    (1, 3, 3, 1, 1, 2, 2, 0),   # 7
)


def amd_machine():
    """64 cores, pairs sharing an L2 (the paper's "form of SMT")."""
    return machine.regular_topology(nodes=8, cores_per_node=4,
                                    threads_per_core=2, nodes_per_socket=2,
                                    vendor='amd')


def amd_interconnect():
    return concerns.Interconnect(
        nodes=tuple(range(8)),
        bandwidth=tuple(tuple(float(v) for v in row)
                        for row in AMD_BANDWIDTH))


def intel_machine():
    """Quad Xeon E7-4830 v3: 4 nodes x 12 cores x 2 threads."""
    return machine.regular_topology(nodes=4, cores_per_node=12,
                                    threads_per_core=2)


class TestAlgorithm1(testtools.TestCase):

    def test_intel_scores(self):
        shape = machine.shape_of(intel_machine())
        l2, l3 = concerns.concerns_of(shape)
        self.assertEqual((1, 2, 3, 4), concerns.possible_scores(24, l3))
        self.assertEqual((12, 24), concerns.possible_scores(24, l2))

    def test_amd_scores(self):
        shape = machine.shape_of(amd_machine())
        l2, l3 = concerns.concerns_of(shape)
        self.assertEqual(32, l2.count)
        self.assertEqual((2, 4, 8), concerns.possible_scores(16, l3))
        self.assertEqual((8, 16), concerns.possible_scores(16, l2))

    def test_bad_vcpus(self):
        l2, _ = concerns.concerns_of(machine.shape_of(intel_machine()))
        self.assertRaises(ValueError, concerns.possible_scores, 0, l2)


class TestPackings(testtools.TestCase):

    def test_each_packing_once(self):
        result = important.packings((1, 2), range(4))
        as_sets = [frozenset(p) for p in result]
        self.assertEqual(len(as_sets), len(set(as_sets)))
        # set partitions of 4 items into blocks of 1 or 2: 1 + 6 + 3
        self.assertEqual(10, len(result))
        for packing in result:
            self.assertEqual(set(range(4)), set().union(*packing))

    def test_too_many(self):
        self.patch(important, 'MAX_PACKINGS', 5)
        self.assertRaises(important.TooManyPackings, important.packings,
                          (1, 2), range(6))


class TestImportantPlacements(testtools.TestCase):

    def test_intel_seven(self):
        placements = important.important_placements(intel_machine(), 24)
        self.assertEqual(7, len(placements))
        summary = sorted((p.l3, p.smt) for p in placements)
        # 1 node with SMT; 2, 3 and 4 nodes each with and without SMT.
        self.assertEqual([(1, True), (2, False), (2, True), (3, False),
                          (3, True), (4, False), (4, True)], summary)
        one = important.placements_for_nodes(placements, 1)[0]
        self.assertEqual(4, len(one.members))

    def test_amd_examples(self):
        ic = amd_interconnect()
        self.assertFalse(ic.symmetric)
        self.assertEqual(0, ic.bandwidth[0][5])
        self.assertEqual(0, ic.bandwidth[3][6])
        fours = {frozenset(c): ic.score(c)
                 for c in itertools.combinations(range(8), 4)}
        best = max(fours, key=fours.get)
        self.assertEqual(frozenset({2, 3, 4, 5}), best)
        shape = machine.shape_of(amd_machine())
        l3 = concerns.concerns_of(shape)[1]
        kept = important.pareto_packings(
            important.packings(concerns.possible_scores(16, l3),
                               shape.nodes), ic)
        kept_sets = {frozenset(p) for _, group in kept for p in group}
        f = frozenset
        self.assertIn(f([f({2, 3, 4, 5}), f({0, 1, 6, 7})]), kept_sets)
        self.assertIn(f([f({0, 2, 4, 6}), f({1, 3, 5, 7})]), kept_sets)
        self.assertNotIn(f([f({0, 1, 4, 5}), f({2, 3, 6, 7})]), kept_sets)

    def test_amd_thirteen(self):
        placements = important.important_placements(
            amd_machine(), 16, amd_interconnect())
        self.assertEqual(13, len(placements))
        by_nodes = {}
        for p in placements:
            by_nodes[p.l3] = by_nodes.get(p.l3, 0) + 1
        self.assertEqual({2: 3, 4: 8, 8: 2}, by_nodes)
        eights = important.placements_for_nodes(placements, 8)
        self.assertEqual({8, 16}, {p.l2 for p in eights})
        best4 = max(important.placements_for_nodes(placements, 4),
                    key=lambda p: p.interconnect)
        self.assertIn(frozenset({2, 3, 4, 5}), best4.members)

    def test_distance_estimate_symmetric_is_none(self):
        self.assertIsNone(
            concerns.interconnect_from_distances(intel_machine()))
        two_socket = machine.regular_topology(nodes=4, nodes_per_socket=2)
        ic = concerns.interconnect_from_distances(two_socket)
        self.assertGreater(ic.score({0, 1}), ic.score({0, 2}))

    def test_too_big_instance(self):
        self.assertEqual(
            (), important.important_placements(intel_machine(), 200))

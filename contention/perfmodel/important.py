"""Packings and important placements (Algorithms 2 and 3).

Placement-model paper (``shared/papers/003_*``), section 4:

* Algorithm 2 (:func:`packings`) enumerates every way of filling the
  machine's NUMA nodes with placements whose node counts are possible L3
  scores, because a scheduler that placed one instance must still be able
  to predict the next one on the remaining nodes;
* Algorithm 3 (:func:`important_placements`) removes duplicate packings and
  those that are not Pareto-efficient in interconnect score, then expands
  each surviving node set by every feasible L2/SMT score.

Two readings of the pseudo-code, where it is terse:

* Packings are unordered: a packing is a set of node sets, generated once
  each (the block holding the lowest remaining node comes first), which is
  what "remove duplicates" would otherwise do for reordered copies.
  Duplicates are then packings whose placements have the same multiset of
  (node count, interconnect score); the first in canonical order is kept.
* "Sorted interconnect scores" are compared position by position after
  sorting placements by (node count, interconnect score), so a 4-node
  placement is never compared with a 2-node one of the other packing.
* The L2/SMT expansion also requires the L2 score to be divisible by the
  L3 score (every node gets the same number of cores: the balanced
  assumption of section 3), besides the paper's ``n * L3S >= L2S``.
"""

import dataclasses
import itertools

from contention.perfmodel import concerns as concerns_mod
from contention.perfmodel import machine

#: Packings beyond which enumeration stops with an error (a machine with
#: many nodes and an instance that fits one node has Bell(n) packings).
MAX_PACKINGS = 200000


class TooManyPackings(ValueError):
    """The machine has too many packings to enumerate for this size."""


@dataclasses.dataclass(frozen=True)
class Placement:
    """An important placement: a score vector and the node sets with it.

    ``nodes`` is the representative node set (the first found);
    ``members`` every node set of a surviving packing with this score
    vector, so a scheduler can realise the placement on any of them.
    """

    #: Physical cores in use (the L2/SMT score).
    l2: int
    #: NUMA nodes in use (the L3 score).
    l3: int
    #: Summed interconnect bandwidth among the nodes (0 when symmetric).
    interconnect: float
    nodes: frozenset
    members: tuple[frozenset, ...]

    @property
    def smt(self):
        """True when vCPUs share cores (fewer cores than vCPUs)."""
        return self._vcpus is not None and self.l2 < self._vcpus

    _vcpus: int = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def scores(self):
        return (self.l2, self.l3, self.interconnect)

    def describe(self):
        ic = (', interconnect %g' % self.interconnect
              if self.interconnect else '')
        return '%d node(s) %s, %d cores%s%s' % (
            self.l3, sorted(self.nodes), self.l2,
            ' (SMT shared)' if self.smt else '', ic)


def packings(l3_scores, nodes):
    """Every unordered packing of ``nodes`` into allowed sizes (Alg. 2).

    :returns: a list of tuples of frozensets, in canonical order.
    """
    sizes = sorted(set(l3_scores))
    result = []

    def gen(remaining, current):
        if not remaining:
            result.append(tuple(current))
            if len(result) > MAX_PACKINGS:
                raise TooManyPackings(
                    'more than %d packings of %d nodes into sizes %s'
                    % (MAX_PACKINGS, len(nodes), sizes))
            return
        first, rest = remaining[0], remaining[1:]
        for size in sizes:
            if size > len(remaining):
                continue
            for others in itertools.combinations(rest, size - 1):
                block = frozenset((first,) + others)
                left = tuple(n for n in rest if n not in block)
                gen(left, current + [block])

    gen(tuple(sorted(nodes)), [])
    return result


def _signature(packing, interconnect):
    return tuple(sorted(
        (len(block), concerns_mod.interconnect_score(interconnect, block))
        for block in packing))


def pareto_packings(all_packings, interconnect):
    """Algorithm 3, first half: drop duplicates and dominated packings.

    A packing is dominated by another with the same node counts when its
    sorted interconnect scores are all <= the other's (and not equal).
    Packings with equal signatures are duplicates: the first in canonical
    order represents them, and the others are returned as its
    equivalents.

    :returns: list of (representative packing, equivalent packings).
    """
    unique = {}
    for packing in all_packings:
        unique.setdefault(_signature(packing, interconnect), []).append(
            packing)
    by_l3 = {}
    for sig in unique:
        by_l3.setdefault(tuple(size for size, _ in sig), []).append(sig)
    kept = []
    for sig, group in unique.items():
        rivals = by_l3[tuple(size for size, _ in sig)]
        if not any(other != sig and all(
                a[1] <= b[1] for a, b in zip(sig, other))
                for other in rivals):
            kept.append((group[0], tuple(group)))
    return kept


def important_placements(topology, vcpus, interconnect=None):
    """The important placements of a ``vcpus``-vCPU instance (Alg. 1-3).

    :param topology: a :class:`~contention.topology.HostTopology`.
    :param interconnect: an :class:`~.concerns.Interconnect`, or None for
        none (symmetric). Use
        :func:`~.concerns.interconnect_from_distances` to estimate one.
    :returns: :class:`Placement` tuple, ordered by (nodes, cores,
        -interconnect), so index 0 is the tightest placement.
    """
    shape = machine.shape_of(topology)
    l2_concern, l3_concern = concerns_mod.concerns_of(shape)
    l3_scores = concerns_mod.possible_scores(vcpus, l3_concern)
    l2_scores = concerns_mod.possible_scores(vcpus, l2_concern)
    if not l3_scores or not l2_scores:
        return ()
    kept = pareto_packings(packings(l3_scores, shape.nodes), interconnect)
    found = {}
    for _, group in kept:
        for block in itertools.chain.from_iterable(group):
            l3 = len(block)
            ic = concerns_mod.interconnect_score(interconnect, block)
            for l2 in l2_scores:
                if shape.cores_per_node * l3 >= l2 and l2 % l3 == 0:
                    key = (l2, l3, ic)
                    found.setdefault(key, []).append(block)
    result = []
    for (l2, l3, ic), blocks in found.items():
        members = tuple(sorted(set(blocks), key=sorted))
        result.append(Placement(l2=l2, l3=l3, interconnect=ic,
                                nodes=members[0], members=members,
                                _vcpus=vcpus))
    result.sort(key=lambda p: (p.l3, p.l2, -p.interconnect,
                               sorted(p.nodes)))
    return tuple(result)


def placements_for_nodes(placements, l3):
    """The important placements using ``l3`` NUMA nodes."""
    return tuple(p for p in placements if p.l3 == l3)

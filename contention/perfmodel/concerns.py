"""Scheduling concerns and their possible scores (Algorithm 1).

The placement-model paper (``shared/papers/003_*``, section 4, Table 1)
describes a machine by *scheduling concerns*: one per shared resource (or
inseparable set of resources). A concern scores a vCPU placement by how
much of its resource the placement uses; placements with equal score
vectors are taken to perform alike (section 3), which is what makes the
few *important placements* enough to train a model.

The concerns used here are the paper's three:

* ``l2_smt``: physical cores (L2, front-end and FPUs shared by SMT
  threads) in use. Cost: yes; inverse performance possible: yes.
* ``l3``: NUMA nodes in use (their L3, memory controller and DRAM
  bandwidth); NUMA nodes are the unit of allocation (section 3). On hosts
  with several L3 domains per node (AMD Zen) the node is still the unit.
  Cost: yes; inverse possible: yes.
* ``interconnect``: the summed bandwidth of the links between the nodes a
  placement uses ("we would add up the total available bandwidth of all
  links used by a placement", section 4). Cost: no; inverse: no, so only
  Pareto-efficient packings are kept (Algorithm 3). Omitted on a
  symmetric interconnect, where it cannot tell placements apart (the
  paper's Intel machine).
"""

import dataclasses
from typing import Optional


@dataclasses.dataclass(frozen=True)
class SchedulingConcern:
    """One shared resource as Algorithm 1 sees it (Table 1's columns)."""

    name: str
    #: How many of the resource the machine has (the paper's Count).
    count: int
    #: Hardware threads one instance of the resource serves (Capacity).
    capacity: int
    #: Whether a higher score costs the user more (Table 1 "Cost?").
    cost: bool
    #: Whether a lower score can improve performance ("Inverse Perf
    #: Possible?"). Concerns with neither are only Pareto-filtered.
    inverse: bool


def possible_scores(vcpus, concern):
    """Balanced and feasible scores of one concern (Algorithm 1).

    Balanced: ``vcpus mod s == 0`` (every resource in use gets the same
    number of vCPUs); feasible: ``vcpus / s <= capacity`` (at most one vCPU
    per hardware thread).
    """
    if vcpus < 1:
        raise ValueError('vcpus must be >= 1, got %r' % (vcpus,))
    return tuple(s for s in range(1, concern.count + 1)
                 if vcpus % s == 0 and vcpus / s <= concern.capacity)


def concerns_of(shape):
    """The L2/SMT and L3 (NUMA node) concerns of a :class:`MachineShape`."""
    return (
        SchedulingConcern('l2_smt', count=shape.cores,
                          capacity=shape.threads_per_core,
                          cost=True, inverse=True),
        SchedulingConcern('l3', count=len(shape.nodes),
                          capacity=shape.threads_per_node,
                          cost=True, inverse=True),
    )


@dataclasses.dataclass(frozen=True)
class Interconnect:
    """Link bandwidths between NUMA nodes, for the interconnect concern.

    ``bandwidth[i][j]`` is the bandwidth of the direct link between
    ``nodes[i]`` and ``nodes[j]`` (any unit, e.g. GB/s); 0 means no direct
    link (two hops or more). The diagonal is ignored.
    """

    nodes: tuple[int, ...]
    bandwidth: tuple[tuple[float, ...], ...]

    def __post_init__(self):
        n = len(self.nodes)
        if len(self.bandwidth) != n or any(len(r) != n
                                           for r in self.bandwidth):
            raise ValueError('interconnect bandwidth must be a %dx%d matrix'
                             % (n, n))

    def score(self, node_set):
        """Summed bandwidth of the links among ``node_set`` (section 4)."""
        index = [self.nodes.index(n) for n in sorted(node_set)]
        total = 0.0
        for a_pos, a in enumerate(index):
            for b in index[a_pos + 1:]:
                total += self.bandwidth[a][b]
        return total

    @property
    def symmetric(self):
        """True when every pair of nodes has the same link bandwidth."""
        values = {self.bandwidth[a][b] for a in range(len(self.nodes))
                  for b in range(len(self.nodes)) if a != b}
        return len(values) <= 1


def interconnect_from_distances(topology):
    """An :class:`Interconnect` estimated from the SLIT distances.

    The paper measures each node combination with STREAM; without such a
    measurement the link bandwidth is taken as inversely proportional to
    the distance (``10 / distance``: 1.0 for a link as fast as local
    memory). Returns None for a symmetric interconnect, where the concern
    cannot distinguish placements.
    """
    nodes = topology.node_ids
    bandwidth = tuple(tuple(
        0.0 if a == b else round(10.0 / max(topology.distance(a, b), 10), 6)
        for b in nodes) for a in nodes)
    ic = Interconnect(nodes=nodes, bandwidth=bandwidth)
    return None if ic.symmetric else ic


def interconnect_score(interconnect: Optional[Interconnect], node_set):
    """The interconnect score, 0.0 when there is no interconnect concern."""
    if interconnect is None:
        return 0.0
    return interconnect.score(node_set)

"""How many NUMA nodes a flavor should ask for (section 7 use case).

The placement-model paper's section 7 packs "as many instances of a given
virtual container into a physical server while respecting a performance
target". Here, for an instance profile and a host shape, every balanced
``hw:numa_nodes`` value ``n`` (the possible L3 scores of Algorithm 1) and
every density (instances per host) is tried: each instance's vCPUs are
split evenly over ``n`` nodes, instances are dealt to nodes round-robin,
and the interference model predicts each instance's performance node by
node, as the Nova weigher scores an instance on several nodes
(:func:`contention.perfmodel.scoring.score_hosts`: its even share on each,
the mean over them; the model is trained on single-node landings).

Limits, where the paper's own answer would differ: the interference
model sees co-runner pressure and occupancy, not the interconnect or
communication latency of a spread; the placement-vector model (which does)
needs two measured runs of the workload, which a flavor-level question
does not have. The advice is the ``n`` that packs the most instances
whose predicted performance meets the target (ties: fewer nodes, i.e. a
smaller NUMA footprint per instance; then higher performance).
"""

import dataclasses

import numpy as np

from contention.perfmodel import concerns
from contention.perfmodel import features
from contention.perfmodel import machine
from contention.perfmodel import scoring


@dataclasses.dataclass(frozen=True)
class Option:
    """One ``hw:numa_nodes`` choice at its densest packing meeting target."""

    numa_nodes: int
    #: Instances per host at the densest packing meeting the target (0 =
    #: even one instance misses it).
    instances: int
    #: Predicted performance of the worst instance at that density.
    performance: float
    #: Predicted performance of one instance alone on the host.
    alone: float


@dataclasses.dataclass(frozen=True)
class Advice:
    profile: features.InstanceProfile
    target: float
    options: tuple
    best: Option = None

    def to_dict(self):
        return {'profile': features.format_profile(self.profile),
                'vcpus': self.profile.vcpus, 'target': self.target,
                'options': [dataclasses.asdict(o) for o in self.options],
                'recommended_numa_nodes':
                    self.best.numa_nodes if self.best else None,
                'extra_spec': ('hw:numa_nodes=%d' % self.best.numa_nodes
                               if self.best else None)}


def _predict_packing(model, profile, topology, n_nodes, count):
    shape = machine.shape_of(topology)
    node_cpus = shape.threads_per_node
    per_node = profile.vcpus / n_nodes
    groups = len(shape.nodes) // n_nodes
    # instances per node group, round-robin
    load = [count // groups + (1 if g < count % groups else 0)
            for g in range(groups)]
    if max(load) * per_node > node_cpus:
        return None
    # each of the instance's n nodes holds its share and max(load) - 1
    # co-runner parts, each contributing its share (a report counts an
    # instance on a node by its vCPUs there); the nodes are alike, so
    # the mean over them that the weigher takes is one node's answer
    co = max(load) - 1
    cell = features.CellState(cpus=node_cpus,
                              co_mpki_sum=co * profile.mpki / n_nodes,
                              co_vcpus=co * per_node)
    perf, _ = model.predict(np.asarray(
        [features.feature_row(scoring.node_share(profile, n_nodes), cell)],
        float))[0]
    return float(perf)


def advise(model, profile, topology, target=0.9):
    """The :class:`Advice` for ``profile`` on ``topology`` (section 7)."""
    if not 0 < target <= 1:
        raise ValueError('target must be in (0, 1], got %r' % (target,))
    shape = machine.shape_of(topology)
    _, l3 = concerns.concerns_of(shape)
    options = []
    for n in concerns.possible_scores(profile.vcpus, l3):
        if len(shape.nodes) % n:
            continue
        alone = _predict_packing(model, profile, topology, n, 1)
        best = Option(n, 0, alone, alone)
        count = 1
        while True:
            perf = _predict_packing(model, profile, topology, n, count)
            if perf is None or perf < target:
                break
            best = Option(n, count, perf, alone)
            count += 1
        options.append(best)
    meeting = [o for o in options if o.instances > 0]
    choice = (max(meeting, key=lambda o: (o.instances, -o.numa_nodes,
                                          o.performance))
              if meeting else None)
    return Advice(profile=profile, target=target, options=tuple(options),
                  best=choice)

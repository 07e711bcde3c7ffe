"""A tiny deterministic SYNTHETIC performance source, for tests and bench.

It is not the simulator and not measured: a closed-form toy that follows
the trends the papers describe, so the models have something with
structure to learn in fast unit tests without the simulator (whose
source is ``contention.sim.training.training_source``). Every
figure computed from it is labelled synthetic.

* Alone, a workload gains from more NUMA nodes in proportion to its memory
  bandwidth need (MPKI x MF), loses from more nodes in proportion to its
  communication sensitivity, and loses when SMT siblings are shared in
  proportion to its IPC (placement-model paper, section 1 and Figure 1).
* Beside co-runners on a node, it loses in proportion to its own cache
  and bandwidth sensitivity times the co-runners' summed MPKI (Merlin
  section 3.2; Liu & Li section 3.2), and slows them the same way.
"""

import math
import random

from contention.perfmodel import datasets
from contention.perfmodel import features


def _sensitivity(profile):
    return min(1.0, profile.mpki / 25.0) * (0.4 + profile.mf)


def _pressure(profile):
    return profile.mpki * (0.3 + profile.mf)


def _comm(workload):
    # a hidden trait, stable per workload family
    return (sum(map(ord, workload.name.split('-')[0])) % 5) / 10.0


def performance(trial):
    """The synthetic :data:`~contention.perfmodel.datasets.PerformanceSource`."""
    p = trial.workload.profile
    n_nodes = len(trial.nodes)
    total_nodes = len(trial.topology.nodes)
    bw_need = min(1.0, p.mpki * p.mf / 12.0)
    spread = math.log2(n_nodes) / max(1.0, math.log2(total_nodes))
    alone = (1.0 - 0.35 * bw_need * (1.0 - spread)
             - 0.25 * _comm(trial.workload) * spread)
    if trial.cores < p.vcpus:
        alone -= 0.3 * min(1.0, p.ipc / 2.0)
    co_pressure = 0.0
    for co in trial.corunners:
        if co.nodes & trial.nodes:
            co_pressure += _pressure(co.workload.profile)
    own = alone / (1.0 + _sensitivity(p) * co_pressure / 25.0)
    others = []
    for co in trial.corunners:
        if co.nodes & trial.nodes:
            others.append(1.0 / (1.0 + _sensitivity(co.workload.profile)
                                 * _pressure(p) / 25.0))
        else:
            others.append(1.0)
    return datasets.Outcome(performance=max(0.05, min(1.0, own)),
                            corunner_performance=tuple(others))


FAMILIES = {
    # name: (mpki range, mf range, ipc range)
    'stream': ((18.0, 30.0), (0.7, 0.95), (0.3, 0.6)),
    'cachey': ((4.0, 12.0), (0.05, 0.3), (1.0, 1.8)),
    'compute': ((0.1, 1.5), (0.1, 0.5), (1.8, 2.6)),
    'mixed': ((5.0, 15.0), (0.3, 0.6), (0.7, 1.3)),
    'latency': ((2.0, 6.0), (0.4, 0.7), (0.8, 1.2)),
}


def workloads(per_family=4, vcpus=4, seed=0):
    """Synthetic workloads, ``per_family`` of each family, deterministic."""
    rng = random.Random(seed)
    result = []
    for family, (mpki, mf, ipc) in sorted(FAMILIES.items()):
        for i in range(per_family):
            result.append(datasets.Workload(
                name='%s-%d' % (family, i),
                profile=features.InstanceProfile(
                    mpki=round(rng.uniform(*mpki), 2),
                    mf=round(rng.uniform(*mf), 2),
                    ipc=round(rng.uniform(*ipc), 2),
                    vcpus=vcpus, memory_mib=4096, source='synthetic')))
    return result

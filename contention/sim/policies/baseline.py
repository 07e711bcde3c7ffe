"""The ``none`` and ``random`` baselines.

``random`` is Merlin's Random policy (Tembey et al. section 2, policy 2):
when an instance needs CPU, or runs on a node that needs MC/IC relief or
where a co-runner needs cache (:mod:`contention.sim.policies.common`), it
gets CPU on a node chosen at random among those with room, unaware of
topology and sensitivities: its vCPUs move there (memory stays), and a
capped instance gets one more core. One instance per relieved node
moves, never the one that needs cache (section 5.2.2: Random "chooses a
random node to migrate Matrix-multiplication VCPUs", the co-runner).
"""

from contention import cluster
from contention import policy
from contention.sim.policies import common


class NonePolicy(policy.Policy):
    """Never changes anything: the placement's own performance."""

    name = 'none'

    def rebalance(self, view, rng):
        return cluster.Plan(reason='the none policy never acts')


class RandomPolicy(policy.Policy):
    name = 'random'

    def __init__(self):
        self._cache_needs = common.CacheNeeds()

    def bind(self, simulator):
        self._cache_needs = common.CacheNeeds()

    def rebalance(self, view, rng):
        actions = []
        needs = self._cache_needs(view)
        for host in view.hosts:
            pressured = dict(common.relief_nodes(view, host.name, needs))
            for inst in view.instances_on(host.name):
                if not inst.movable:
                    continue
                wants_cpu = common.needs_cpu(inst)
                relieves = (inst.node in pressured
                            and inst.uuid not in pressured[inst.node])
                if not wants_cpu and not relieves:
                    continue
                free = common.free_cores(view, host.name)
                need = inst.vcpus * (common.one_more_core(inst)
                                     if wants_cpu else
                                     (inst.cpu_quota or 1.0))
                roomy = sorted(s for s, f in free.items()
                               if s != inst.socket
                               and f + 1e-9 >= need)
                if wants_cpu and free.get(inst.socket, 0) >= 1.0 - 1e-9:
                    roomy.append(inst.socket)
                if not roomy:
                    continue
                dest = int(rng.choice(sorted(roomy)))
                if dest != inst.socket:
                    actions.append(cluster.Repin(inst.uuid, host.name, dest,
                                                 move_memory=False))
                    view = common.update(
                        view, inst.uuid, socket=dest,
                        node=common.node_of_socket(view, host.name, dest))
                if wants_cpu:
                    quota = common.one_more_core(inst)
                    actions.append(cluster.CpuQuota(inst.uuid, host.name,
                                                    quota))
                    view = common.update(view, inst.uuid, cpu_quota=quota)
                if relieves:
                    del pressured[inst.node]
        return cluster.Plan(actions=tuple(actions))

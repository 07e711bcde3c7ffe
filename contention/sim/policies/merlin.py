"""Merlin's ``local`` and ``low_cost`` comparison policies.

Tembey et al., "Merlin", section 2 describe the policies Merlin is
compared with (its Table 1 and Figures 7-9); both react to the same
triggers (:mod:`contention.sim.policies.common`): an instance that needs
CPU, and a NUMA node whose summed L3 MPKI is over 100 (section 3.4).

``local`` (policy 1): memory always follows the vCPUs. More CPU comes
from the instance's home node when it has a free core; otherwise the
instance moves to the node with the most free cores *with its memory*.
Under MC/IC pressure it rebalances memory-intensive instances across
nodes ("global memory load balancing", section 5.3): the highest-MPKI
instance of the node moves, vCPUs and memory, to the node with the lowest
summed MPKI that has room.

``low_cost`` (policy 3): the cheapest reconfiguration first (section 3.3
ranking): (i) raise the CPU cap when the home node has a free core;
(ii)/(iii) otherwise move the vCPUs to a remote node with room, leaving
the memory where it is; (iv) memory migration is never needed for these
triggers, so never done. Under MC/IC pressure it caps the CPU of the
node's highest-MPKI instance (by a quarter, to at least a quarter of its
vCPUs) to cut its memory traffic indirectly (section 5.2.2).
"""

from contention import cluster
from contention import policy
from contention.sim.policies import common

MIN_QUOTA = 0.25


def _most_free(free, exclude, need):
    roomy = [(f, -s) for s, f in free.items()
             if s != exclude and f + 1e-9 >= need]
    return -max(roomy)[1] if roomy else None


class _MerlinBaseline(policy.Policy):
    move_memory = False

    def rebalance(self, view, rng):
        actions = []
        touched = set()
        for host in view.hosts:
            view = self._pressure(view, host.name, actions, touched)
            for inst in view.instances_on(host.name):
                if inst.uuid in touched or not common.needs_cpu(inst):
                    continue
                view = self._more_cpu(view, host.name, inst, actions)
                touched.add(inst.uuid)
        return cluster.Plan(actions=tuple(actions))

    def _more_cpu(self, view, host, inst, actions):
        quota = common.one_more_core(inst)
        extra = inst.vcpus * (quota - (inst.cpu_quota or 1.0))
        free = common.free_cores(view, host)
        if free.get(inst.socket, 0.0) + 1e-9 >= extra:
            actions.append(cluster.CpuQuota(inst.uuid, host, quota))
            return common.update(view, inst.uuid, cpu_quota=quota)
        dest = _most_free(free, inst.socket, inst.vcpus * quota)
        if dest is None:
            return view
        actions.append(cluster.Repin(inst.uuid, host, dest,
                                     move_memory=self.move_memory))
        actions.append(cluster.CpuQuota(inst.uuid, host, quota))
        return common.update(view, inst.uuid, socket=dest, cpu_quota=quota,
                             node=common.node_of_socket(view, host, dest))


class LocalPolicy(_MerlinBaseline):
    name = 'local'
    move_memory = True

    def _pressure(self, view, host, actions, touched):
        sums = common.node_mpki(view, host)
        for node in common.pressured_nodes(view, host):
            here = [i for i in view.instances_on(host)
                    if i.node == node and i.movable and i.mpki is not None
                    and i.uuid not in touched]
            if not here:
                continue
            victim = max(here, key=lambda i: (i.mpki, i.uuid))
            free = common.free_cores(view, host)
            need = common.allocated(victim)
            options = [s for s, f in free.items()
                       if s != victim.socket and f + 1e-9 >= need]
            if not options:
                continue
            dest = min(options, key=lambda s: (sums.get(
                common.node_of_socket(view, host, s), 0.0), s))
            actions.append(cluster.Repin(victim.uuid, host, dest,
                                         move_memory=True))
            touched.add(victim.uuid)
            view = common.update(view, victim.uuid, socket=dest,
                                 node=common.node_of_socket(view, host,
                                                            dest))
        return view


class LowCostPolicy(_MerlinBaseline):
    name = 'low_cost'
    move_memory = False

    def _pressure(self, view, host, actions, touched):
        for node in common.pressured_nodes(view, host):
            here = [i for i in view.instances_on(host)
                    if i.node == node and i.movable and i.mpki is not None
                    and (i.cpu_quota or 1.0) > MIN_QUOTA
                    and i.uuid not in touched]
            if not here:
                continue
            victim = max(here, key=lambda i: (i.mpki, i.uuid))
            quota = max(MIN_QUOTA, (victim.cpu_quota or 1.0) * 0.75)
            actions.append(cluster.CpuQuota(victim.uuid, host, quota))
            touched.add(victim.uuid)
            view = common.update(view, victim.uuid, cpu_quota=quota)
        return view

"""Merlin's ``local`` and ``low_cost`` comparison policies, and ``merlin``.

Tembey et al., "Merlin", section 2 describe the policies Merlin is
compared with (its Table 1 and Figures 7-9); both react to the same
triggers (:mod:`contention.sim.policies.common`): an instance that needs
CPU, a NUMA node whose summed L3 MPKI is over 100, and an instance whose
class moved down Figure 3's grid, a need for cache (section 3.4). The
last two are answered alike: each policy relieves the node by its own
means, acting on the instance with the highest MPKI there, and for a
need for cache on a co-runner of the instance in need (section 5.2.2:
"all allocation policies use their respective algorithms to allocate
more LLC to Voldemort's VP").

``local`` (policy 1): memory always follows the vCPUs. More CPU comes
from the instance's home node when it has a free core; otherwise the
instance moves to the node with the most free cores *with its memory*.
Under MC/IC pressure it rebalances memory-intensive instances across
nodes ("global memory load balancing", section 5.3): the highest-MPKI
instance of the node (of its co-runners, for a need for cache) moves,
vCPUs and memory, to the node with the lowest summed MPKI that has room.

``low_cost`` (policy 3): the cheapest reconfiguration first (section 3.3
ranking): (i) raise the CPU cap when the home node has a free core;
(ii)/(iii) otherwise move the vCPUs to a remote node with room, leaving
the memory where it is; (iv) memory migration is never needed for these
triggers, so never done. Under MC/IC pressure or a need for cache it caps
the CPU of the node's highest-MPKI instance (co-runner) by a quarter, to
at least a quarter of its vCPUs, to cut its memory traffic indirectly
(section 5.2.2).
"""

from contention import classify
from contention import cluster
from contention import policy
from contention.sim.policies import common

MIN_QUOTA = 0.25


def _socket_of_node(view, host, node):
    for socket in view.host(host).sockets:
        if node in socket.nodes:
            return socket.id
    return None


def _heaviest(view, host, node, needers, touched):
    """The instance a node's memory pressure is relieved of first, or None.

    The one with most L3 misses per kilo-instruction among those on
    ``node`` that can still be capped (above :data:`MIN_QUOTA`), are not
    the ones needing relief (``needers``) and were not acted on this
    audit (``touched``).
    """
    here = [i for i in view.instances_on(host)
            if i.node == node and i.movable and i.mpki is not None
            and (i.cpu_quota or 1.0) > MIN_QUOTA
            and i.uuid not in touched and i.uuid not in needers]
    return max(here, key=lambda i: (i.mpki, i.uuid)) if here else None


def _reduced_quota(inst):
    """A quarter less CPU for ``inst``, never below :data:`MIN_QUOTA`."""
    return max(MIN_QUOTA, (inst.cpu_quota or 1.0) * 0.75)


def _most_free(free, exclude, need):
    roomy = [(f, -s) for s, f in free.items()
             if s != exclude and f + 1e-9 >= need]
    return -max(roomy)[1] if roomy else None


class _MerlinBaseline(policy.Policy):
    """What the Merlin policies share: the triggers.

    A need for cache is read against the last audit's classes, which
    ``_needs`` keeps (:class:`common.CacheNeeds`).
    """

    move_memory = False

    def __init__(self):
        self._needs = common.CacheNeeds()

    def bind(self, simulator):
        self._needs = common.CacheNeeds()

    def rebalance(self, view, rng):
        actions = []
        touched = set()
        needs = self._needs(view)
        for host in view.hosts:
            view = self._pressure(view, host.name, needs, actions, touched)
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
    """Merlin's Local policy, with its periodic memory load balancing.

    Besides the triggers (module docstring), section 5.3 says Local
    "periodically rebalances memory-intensive workloads across NUMA
    nodes, by migrating their VCPUs and memory pages" (its "global memory
    load balancing algorithm", the paper's reference [2]). Every
    ``balance_every`` audits (5, our choice: the paper gives no period),
    on each host, the instance with the highest MPKI on the node with the
    highest summed MPKI moves, vCPUs and memory, to the socket of the
    node with the lowest sum that has room, when its own MPKI is below
    the difference of the two sums (so the move narrows the imbalance
    and cannot swing it back: the rule converges).
    """

    name = 'local'
    move_memory = True

    def __init__(self, balance_every=5):
        super().__init__()
        self.balance_every = int(balance_every)
        self._audits = 0

    def bind(self, simulator):
        super().bind(simulator)
        self._audits = 0

    def rebalance(self, view, rng):
        plan = super().rebalance(view, rng)
        self._audits += 1
        if self.balance_every <= 0 or self._audits % self.balance_every:
            return plan
        touched = {getattr(a, 'instance', None) for a in plan.actions}
        actions = list(plan.actions)
        for host in view.hosts:
            self._balance(view, host, actions, touched)
        return cluster.Plan(actions=tuple(actions), reason=plan.reason)

    def _balance(self, view, host, actions, touched):
        sums = {n: 0.0 for s in host.sockets for n in s.nodes}
        sums.update(common.node_mpki(view, host.name))
        sums = {n: v for n, v in sums.items()
                if _socket_of_node(view, host.name, n) is not None}
        if len(sums) < 2:
            return
        heavy = max(sums, key=lambda n: (sums[n], -n))
        free = common.free_cores(view, host.name)
        gap_of = {n: sums[heavy] - v for n, v in sums.items() if n != heavy}
        here = [i for i in view.instances_on(host.name)
                if i.node == heavy and i.movable and i.mpki
                and i.uuid not in touched]
        for victim in sorted(here, key=lambda i: (-i.mpki, i.uuid)):
            need = common.allocated(victim)
            options = [n for n, gap in gap_of.items()
                       if victim.mpki < gap
                       and _socket_of_node(view, host.name, n)
                       != victim.socket
                       and free.get(_socket_of_node(
                           view, host.name, n), 0.0) + 1e-9 >= need]
            if not options:
                continue
            light = min(options, key=lambda n: (sums[n], n))
            dest = _socket_of_node(view, host.name, light)
            actions.append(cluster.Repin(victim.uuid, host.name, dest,
                                         move_memory=True))
            touched.add(victim.uuid)
            return

    def _pressure(self, view, host, needs, actions, touched):
        sums = common.node_mpki(view, host)
        for node, needers in common.relief_nodes(view, host, needs):
            here = [i for i in view.instances_on(host)
                    if i.node == node and i.movable and i.mpki is not None
                    and i.uuid not in touched and i.uuid not in needers]
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

    def _pressure(self, view, host, needs, actions, touched):
        for node, needers in common.relief_nodes(view, host, needs):
            victim = _heaviest(view, host, node, needers, touched)
            if victim is None:
                continue
            quota = _reduced_quota(victim)
            actions.append(cluster.CpuQuota(victim.uuid, host, quota))
            touched.add(victim.uuid)
            view = common.update(view, victim.uuid, cpu_quota=quota)
        return view


class MerlinPolicy(_MerlinBaseline):
    """Merlin's own arbitration (Tembey et al. section 3.5, Figure 4).

    Each audit is one arbitration epoch:

    1. **Repercussion check** of the reconfigurations of the previous
       epoch: a co-runner (an instance on the same socket) whose
       sensitivity state moved right or down in Figure 3's grid
       (:func:`contention.classify.transition`, ``worse``) was hurt by
       it; the requester and the hurt co-runners form the set S, and
       Merlin takes the next cheaper option for S (step 3).
    2. **Triggers** (section 3.4, :mod:`contention.sim.policies.common`):
       an instance that needs CPU gets an additional *local* CPU (its cap
       raised by one core) when its home socket has one; a node whose
       summed L3 MPKI is over 100, or where an instance needs cache, is
       relieved through its highest-MPKI instance (co-runner, for a need
       for cache): capped by a quarter (floor 0.25) when it does not use
       over 0.8 of its allocation, and otherwise, "accounting for its CPU
       sensitivity" (section 5.2.2), given step 3's next option without
       a cap. Raises and caps are watched at the next epoch.
    3. **Next option for S** (Figure 4): (a) a remote CPU for the most
       MC/IC-insensitive instance of S, its vCPUs moved without memory
       when it is MC/IC-insensitive (section 3.2, :func:`contention.quota.
       mc_ic_sensitive`), with it otherwise; (b) with no remote CPU free,
       swap its CPUs with an MC/IC-insensitive instance on a remote
       socket; (c) else move the vCPUs and memory of S's smallest VM to a
       remote socket with room. A requester with no local CPU goes to
       step 3 at once.

    Merlin's priorities between applications (section 3.5's Equation 1)
    are not modelled: every instance weighs the same.
    """

    name = 'merlin'

    def __init__(self):
        super().__init__()
        self._watch = []

    def bind(self, simulator):
        super().bind(simulator)
        self._watch = []

    def rebalance(self, view, rng):
        actions = []
        touched = set()
        needs = self._needs(view)
        watch, self._watch = self._watch, []
        present = {i.uuid: i for i in view.instances}
        for host, requester, before in watch:
            if requester in touched or requester not in present:
                continue
            hurt = []
            for uuid, klass in sorted(before.items()):
                now = present.get(uuid)
                move = classify.transition(klass, now and now.merlin_class)
                if move is not None and move.worse:
                    hurt.append(now)
            if hurt:
                group = [present[requester]] + hurt
                view = self._next_option(view, host, group, actions,
                                         touched)
        for host in view.hosts:
            for inst in view.instances_on(host.name):
                if inst.uuid in touched or not common.needs_cpu(inst):
                    continue
                view = self._local_cpu(view, host.name, inst, actions,
                                       touched)
            view = self._pressure(view, host.name, needs, actions, touched)
        return cluster.Plan(actions=tuple(actions))

    def _corunners(self, view, host, inst):
        return {i.uuid: i.merlin_class for i in view.instances_on(host)
                if i.uuid != inst.uuid and i.socket == inst.socket}

    def _local_cpu(self, view, host, inst, actions, touched):
        quota = common.one_more_core(inst)
        extra = inst.vcpus * (quota - (inst.cpu_quota or 1.0))
        free = common.free_cores(view, host)
        touched.add(inst.uuid)
        if free.get(inst.socket, 0.0) + 1e-9 >= extra:
            self._watch.append((host, inst.uuid,
                                self._corunners(view, host, inst)))
            actions.append(cluster.CpuQuota(inst.uuid, host, quota))
            return common.update(view, inst.uuid, cpu_quota=quota)
        return self._next_option(view, host, [inst], actions, touched,
                                 raise_quota=inst.uuid)

    def _pressure(self, view, host, needs, actions, touched):
        for node, needers in common.relief_nodes(view, host, needs):
            victim = _heaviest(view, host, node, needers, touched)
            if victim is None:
                continue
            if common.cpu_sensitive(victim):
                view = self._next_option(view, host, [victim], actions,
                                         touched)
                touched.add(victim.uuid)
                continue
            quota = _reduced_quota(victim)
            actions.append(cluster.CpuQuota(victim.uuid, host, quota))
            touched.add(victim.uuid)
            self._watch.append((host, victim.uuid,
                                self._corunners(view, host, victim)))
            view = common.update(view, victim.uuid, cpu_quota=quota)
        return view

    def _next_option(self, view, host, group, actions, touched,
                     raise_quota=None):
        """Figure 4's options (a), (b), (c) for the set ``group``."""
        movable = [i for i in group if i.movable]
        if not movable:
            return view
        free = common.free_cores(view, host)

        def need(inst):
            quota = (common.one_more_core(inst) if inst.uuid == raise_quota
                     else (inst.cpu_quota or 1.0))
            return inst.vcpus * quota, quota

        x = min(movable, key=lambda i: (common.mc_ic_sensitive(i),
                                        i.mpki or 0.0, i.uuid))
        want, quota = need(x)
        dest = _most_free(free, x.socket, want)
        if dest is not None:                                     # (a)
            return self._move(view, host, x, dest, quota, actions, touched,
                              memory=common.mc_ic_sensitive(x))
        if not common.mc_ic_sensitive(x):                     # (b)
            partners = sorted(
                (i for i in view.instances_on(host)
                 if i.socket != x.socket and i.movable
                 and i.uuid not in touched
                 and not common.mc_ic_sensitive(i)
                 and free[i.socket] + common.allocated(i) + 1e-9 >= want
                 and free[x.socket] + common.allocated(x) + 1e-9
                 >= common.allocated(i)),
                key=lambda i: (i.mpki or 0.0, i.uuid))
            if partners:
                y = partners[0]
                here, there = x.socket, y.socket
                view = self._move(view, host, x, there, quota, actions,
                                  touched, memory=False)
                return self._move(view, host, y, here, y.cpu_quota or 1.0,
                                  actions, touched, memory=False)
        small = min(movable, key=lambda i: (i.memory_mib, i.uuid))  # (c)
        want, quota = need(small)
        dest = _most_free(free, small.socket, want)
        if dest is None:
            return view
        return self._move(view, host, small, dest, quota, actions, touched,
                          memory=True)

    def _move(self, view, host, inst, dest, quota, actions, touched,
              memory):
        actions.append(cluster.Repin(inst.uuid, host, dest,
                                     move_memory=memory))
        if abs(quota - (inst.cpu_quota or 1.0)) > 1e-9:
            actions.append(cluster.CpuQuota(inst.uuid, host, quota))
        touched.add(inst.uuid)
        return common.update(view, inst.uuid, socket=dest, cpu_quota=quota,
                             node=common.node_of_socket(view, host, dest))

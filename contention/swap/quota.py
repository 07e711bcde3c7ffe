"""Merlin's cheapest reconfiguration: give a capped instance more CPU.

Tembey et al., "Merlin" (``shared/papers/000_*``), rank reconfigurations
by cost (section 3.3): raising or lowering an instance's CPU cap costs "a
few CPU cycles", less than any vCPU or memory move. Its trigger (section
3.4): an instance whose CPU use nears what it is allocated ("CPU
sensitivity", use / allocation, above 0.8) "is deemed as being highly
sensitive to the CPU resource type", which "indicates ... the need to
allocate additional CPU capacity"; its arbitration (section 3.5) first
looks for free capacity on the instance's local node and "allocates an
additional local CPU". inTune (``shared/papers/002_*``) calls the same
action *tune*. The agent carries it out as a CFS quota
(``set_cpu_quota``).

More CPU time means proportionally more LLC misses (the instance's misses
per instruction stay), so a raise adds memory traffic on its socket. What
this module adds to Merlin's trigger is the check Merlin makes with
hindsight (its repercussion check, section 3.5), made up front: on
Mix-3 (section 5.3) Merlin gave the Darwin server a local CPU, saw the
extra MC/IC usage hurt the ScalParc VMs beside it and had to redo the
reconfiguration. A raise is therefore refused when a co-runner on the
socket is highly MC/IC sensitive (:func:`mc_ic_sensitive`), or when the
socket already needs MC/IC relief (summed L3 MPKI over Merlin's trigger,
section 3.4): the predicted contention would rise where it hurts.

The helpers (:func:`allocated`, :func:`free_cores`, :func:`needs_cpu`,
:func:`one_more_core`) are also what the simulator's Merlin baselines
(:mod:`contention.sim.policies`) read.
"""

import collections

from contention import classify
from contention import cluster

#: Skip reasons of the quota phase (the first word of Skipped.reason).
REASONS = {
    'quota_no_cpu': 'the instance needs more CPU but its socket has no '
                    'free core for it',
    'quota_contention': 'the instance needs more CPU but the misses it '
                        'would add land on MC/IC-sensitive co-runners, or '
                        'on a socket that already needs MC/IC relief',
}


def quota(inst):
    """The instance's CPU cap as a fraction of its vCPUs (unknown = 1)."""
    return inst.cpu_quota if inst.cpu_quota is not None else 1.0


def allocated(inst):
    """Cores allocated to ``inst``: its vCPUs times its quota."""
    return inst.vcpus * quota(inst)


def free_cores(view, host):
    """{socket id: CPUs not allocated} of a host of ``view``."""
    hv = view.host(host)
    free = {s.id: float(s.cpus) for s in hv.sockets}
    for inst in view.instances_on(host):
        if inst.socket in free:
            free[inst.socket] -= allocated(inst)
    return free


def needs_cpu(inst, th=classify.DEFAULT_THRESHOLDS):
    """Merlin section 3.4: capped, and using over 0.8 of its allocation.

    Only a capped instance (quota below 1) can be given more by raising
    its cap; an unknown quota counts as uncapped.
    """
    q = quota(inst)
    if inst.cpu_util is None or q >= 1.0 or not inst.movable:
        return False
    return classify.cpu_sensitivity(inst.cpu_util / q, th)


def one_more_core(inst):
    """The quota giving ``inst`` one more core (capped at 1).

    Merlin section 3.5: "Merlin allocates an additional local CPU".
    """
    return min(1.0, quota(inst) + 1.0 / inst.vcpus)


def mc_ic_sensitive(inst, th=classify.DEFAULT_THRESHOLDS):
    """Merlin section 3.2: "highly MC/IC sensitive", high MF and MPKI.

    "An application with MF>0.6 and having 'high' memory intensity" (L3
    MPKI over 15 on its platform): most of its accesses reach DRAM, and
    it makes many, so it suffers from every miss its co-runners add at
    the memory controller and interconnect.
    """
    return (inst.mf is not None and inst.mpki is not None
            and inst.mf > th.mf_high and inst.mpki > th.mpki_high)


def phase(state, params):
    """``(actions, skipped)``: :func:`quota_phase` as the audit's last phase.

    Run on the state the moves leave (a raise is judged beside the
    co-runners the instance will have), the raises applied to it.
    """
    if not params.cpu_quota:
        return [], []
    skipped = []
    actions = quota_phase(state.final_view(), skipped, state.thresholds)
    for action in actions:
        state.apply(action)
    return actions, skipped


def quota_phase(view, skipped=None, th=classify.DEFAULT_THRESHOLDS):
    """CpuQuota actions for the capped instances that need more CPU.

    Instances needing CPU (:func:`needs_cpu`), most CPU-starved first,
    each get one more core (:func:`one_more_core`) when their socket has
    that much unallocated (:func:`free_cores`, updated as raises are
    granted) and the raise passes the contention check (module
    docstring). Instances with dedicated
    CPUs are left alone (the agent refuses to change them: their cores are
    Nova's). Returns the actions; reasons for the others are appended to
    ``skipped``.
    """
    skipped = [] if skipped is None else skipped
    by_socket = collections.defaultdict(list)
    for inst in view.instances:
        by_socket[(inst.host, inst.socket)].append(inst)
    # free_cores for every enabled host in one pass (view.instances_on
    # per host would be quadratic at 10,000 hosts).
    free = {(host.name, s.id): float(s.cpus) for host in view.hosts
            if host.enabled for s in host.sockets}
    for key, insts in by_socket.items():
        if key in free:
            free[key] -= sum(allocated(i) for i in insts)
    wanting = [i for i in view.instances
               if needs_cpu(i, th) and i.cpu_policy != 'dedicated'
               and (i.host, i.socket) in free]
    wanting.sort(key=lambda i: (-i.cpu_util / quota(i), i.uuid))
    actions = []
    for inst in wanting:
        key = (inst.host, inst.socket)
        new = one_more_core(inst)
        extra = inst.vcpus * (new - quota(inst))
        if free[key] + 1e-9 < extra:
            skipped.append(cluster.Skipped(
                inst.uuid, 'quota_no_cpu: uses %.0f %% of its %.2f quota; '
                'socket %s has %.2f free cores, it needs %.2f' % (
                    100 * inst.cpu_util / quota(inst), quota(inst),
                    inst.socket, max(0.0, free[key]), extra)))
            continue
        corunners = [c for c in by_socket[key] if c.uuid != inst.uuid]
        sensitive = sorted(c.uuid for c in corunners
                           if mc_ic_sensitive(c, th))
        if sensitive:
            skipped.append(cluster.Skipped(
                inst.uuid, 'quota_contention: its extra misses would land '
                'on MC/IC-sensitive co-runner(s) %s on socket %s'
                % (', '.join(sensitive), inst.socket)))
            continue
        node_mpki = sum(c.mpki for c in by_socket[key]
                        if c.mpki is not None)
        if classify.node_needs_mc_ic_relief(node_mpki, th):
            skipped.append(cluster.Skipped(
                inst.uuid, 'quota_contention: socket %s already needs '
                'MC/IC relief (summed L3 MPKI %.0f)' % (inst.socket,
                                                        node_mpki)))
            continue
        free[key] -= extra
        actions.append(cluster.CpuQuota(inst.uuid, inst.host, new))
    return actions

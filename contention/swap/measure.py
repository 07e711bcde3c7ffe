"""What the audit measures: LLC-miss loads, their spread, predicted pain.

Ahn et al. balance the LLC misses per unit (host or socket); Merlin
arbitrates by who suffers from them. These are the quantities both read,
over a view's instances, with no state of their own.
"""

import math

from contention import classify
from contention.perfmodel import mixes


def misses(instance):
    return instance.llc_misses_per_s or 0.0


def node_sockets(host):
    """``{NUMA node: id of the socket holding it}`` of a HostView."""
    return {n: s.id for s in host.sockets for n in s.nodes}


def remote_fraction(inst, socket, memory_socket):
    """The share of ``inst``'s misses that reach remote memory.

    With its vCPUs on ``socket`` and most of its memory on
    ``memory_socket`` (None where unknown): none when they are the same
    socket; where its memory is already away from its vCPUs' socket the
    report's ``remote_memory_ratio`` (all of it if unknown); all of it
    where a re-pin would leave behind memory that is local now. What the
    NUMA repair removes and a local re-deal that leaves memory behind
    adds (:meth:`.state.State.remote_share`, :mod:`.local`).
    """
    if socket is None or memory_socket is None or memory_socket == socket:
        return 0.0
    ratio = inst.remote_memory_ratio
    if ratio is None or memory_socket == inst.socket:
        return 1.0
    return min(1.0, max(0.0, ratio))


def spread(loads):
    """Coefficient of variation (population std / mean); 0 if no load."""
    loads = list(loads)
    if not loads:
        return 0.0
    mean = sum(loads) / len(loads)
    if mean <= 0:
        return 0.0
    var = sum((x - mean) ** 2 for x in loads) / len(loads)
    return math.sqrt(var) / mean


def capacity_weights(view, unit='socket'):
    """{unit key: how much one LLC miss/s weighs there}, 1 on average.

    Ahn et al.'s hosts are identical, so they balance LLC misses/s as
    they are. On a cluster mixing host classes a 64-core socket absorbs
    the misses of many more instances than an 8-core one, with more
    cache and memory channels: balancing the raw figure moves heavy
    instances onto the small sockets, where they saturate the memory
    controller. A unit's weight is the mean size of the view's enabled
    units over its own (``unit`` ``'host'``: hosts, keyed by name;
    ``'socket'``: sockets, keyed by (host, socket)), so a load is "LLC
    misses/s per average-sized unit": on identical units every weight is
    1 and nothing changes. The size is the last-level cache where the
    reports give it for every socket (the misses compete for it, and the
    LLC per core differs between host classes: a 4-core socket may hold
    more cache per instance than a 20-core one), else the CPU count; a
    unit with neither weighs 1.
    """
    hosts = [h for h in view.hosts if h.enabled]
    socks = [s for h in hosts for s in h.sockets]
    by_cache = bool(socks) and all(s.llc_kib for s in socks)
    sizes = {}
    for host in hosts:
        if unit == 'host':
            sizes[host.name] = (
                sum(s.llc_kib for s in host.sockets) if by_cache
                else sum(s.cpus for s in host.sockets) or host.vcpus_total)
        else:
            for sock in host.sockets:
                sizes[(host.name, sock.id)] = (
                    sock.llc_kib if by_cache else sock.cpus)
    sized = [c for c in sizes.values() if c > 0]
    if not sized:
        return {}
    mean = sum(sized) / len(sized)
    return {key: mean / c for key, c in sizes.items() if c > 0}


def socket_loads(view):
    """{(host, socket): weighted LLC misses/s} over the enabled sockets.

    Each socket's misses/s times its :func:`capacity_weights` weight.
    Instances with no known socket count evenly towards every socket of
    their host.
    """
    loads = {}
    enabled = {}
    for host in view.hosts:
        if host.enabled:
            enabled[host.name] = host
            for sock in host.sockets:
                loads[(host.name, sock.id)] = 0.0
    weights = capacity_weights(view)
    for inst in view.instances:
        contribute(loads, enabled, inst, 1.0, weights)
    return loads


def contribute(loads, enabled, inst, sign, weights):
    """Add (``sign`` 1) or remove (-1) ``inst``'s misses to ``loads``."""
    host = enabled.get(inst.host)
    if host is None or not host.sockets:
        return
    if inst.socket is not None and (inst.host, inst.socket) in loads:
        key = (inst.host, inst.socket)
        loads[key] += sign * misses(inst) * weights.get(key, 1.0)
    else:
        share = sign * misses(inst) / len(host.sockets)
        for sock in host.sockets:
            key = (host.name, sock.id)
            loads[key] += share * weights.get(key, 1.0)


def sensitivity(instance, th=classify.DEFAULT_THRESHOLDS):
    """How much an instance suffers from its co-runners' LLC misses.

    Merlin section 3.2 names two ways to suffer. Applications whose misses
    reach memory (a high Memory Factor: the share of their cache accesses
    that miss the LLC) compete for the memory controller and the
    interconnect: their sensitivity is their MF. Applications "with low
    MF value and relatively high memory intensity exhibit high cache
    footprint reuse" and lose their cache share to co-running
    cache-intensive ones (:func:`cache_reuse`). The larger of the two
    counts. An unknown MF counts as 1, the cautious value, as in
    :func:`arbitration.preference_key`.
    """
    if instance.mf is None:
        return 1.0
    return max(max(0.0, instance.mf), cache_reuse(instance, th))


def cache_reuse(instance, th=classify.DEFAULT_THRESHOLDS):
    """The share of its accesses the LLC serves that a VM can lose.

    Merlin section 3.2's cache-reuse case of :func:`sensitivity`, for an
    MF below ``th``'s high bin: what it can lose is the share of its
    accesses the LLC now serves, 1 - MF. That memory intensity is of the
    accesses that reach the LLC, MPKI / MF (the level above's MPKI,
    section 3.1), not of the LLC's misses: an instance whose working set
    the LLC holds misses little and is the one that has most to lose.
    Below the medium bin of those accesses (Merlin's MPKI bins,
    ``[contention_thresholds]``) the loss counts in proportion to them,
    not as nothing: a CPU-bound VM making 1.4 accesses per
    kilo-instruction, 95 % of them served, was judged by its MF (0.05)
    and swapped beside streamers, which evicted its working set; it ran
    11.7 % slower (family seed 97, gen-small-043, simulated); here its
    sensitivity is 0.68. A loop that hardly reaches the LLC keeps one
    near 0. It is 0 where the MF is unknown, 0 or in the high bin: such
    an instance's co-runners hurt it, if at all, through the memory
    controller and the interconnect.
    """
    mf = instance.mf
    if mf is None or instance.mpki is None or not 0 < mf < th.mf_high:
        return 0.0
    return (1.0 - mf) * min(1.0, instance.mpki / mf / th.mpki_low)


def lives_on_its_cache(instance, th=classify.DEFAULT_THRESHOLDS):
    """Whether co-runners hurt ``instance`` more through its cache share.

    Merlin section 3.2's cache-reuse case (:func:`cache_reuse`) above its
    memory case (the MF): what it can lose is the share of the cache it
    holds, not time at the memory controller.
    """
    return cache_reuse(instance, th) > (instance.mf or 0.0)


def memory_sensitivity(instance, unknown=0.0):
    """How much an instance gains when its LLC misses reach memory faster.

    Its Memory Factor: Merlin section 3.2 reads the MF as the sensitivity
    to memory-controller and interconnect contention, the share of its
    cache accesses that reach memory at all. What a NUMA repair gives
    back is of those accesses only; an instance the LLC serves (a low MF)
    gains little from it, however much it loses to a co-runner taking
    its cache (:func:`sensitivity`), and loses as little to a queue at
    its memory controller. An unknown MF counts as ``unknown``: 0, the
    cautious value for a credit, or 1 for a loss.
    """
    if instance.mf is None:
        return unknown
    return min(1.0, max(0.0, instance.mf))


def pressure(instances, th=classify.DEFAULT_THRESHOLDS, known=None):
    """Predicted contention among instances sharing one socket.

    Sum over each instance of its sensitivity (:func:`sensitivity`) times
    the LLC misses/s of its co-runners: Zhuravlev et al.'s pain model
    (sensitivity x intensity, Ahn et al.'s reference [9], the source of
    their dealing method) with Merlin's MF as the sensitivity. Ahn et
    al.'s even spread of misses ignores who suffers from them; this is
    what lets a move be judged by whom it hurts (Merlin section 3.4,
    "the least hurt to all applications affected"). In LLC misses/s, the
    unit of the migration cost. ``known`` ({uuid: sensitivity}), when
    given, keeps the sensitivities worked out, for a caller that values
    one set of instances in several groupings.
    """
    instances = [i for i in instances if i.llc_misses_per_s is not None]
    load = sum(misses(i) for i in instances)
    if known is None:
        known = {}
    total = 0.0
    for inst in instances:
        sens = known.get(inst.uuid)
        if sens is None:
            sens = known[inst.uuid] = sensitivity(inst, th)
        total += sens * (load - misses(inst))
    return total


#: What a miss served by another socket's memory costs over a local one,
#: unloaded, as a share of the local latency: Liu & Li section 1, with QPI
#: and HyperTransport "the difference between local and remote memory
#: access latencies can be minimized within 30 %". The harm check's
#: bound on the misses a re-pin leaves remote (``harm._remote_harm``).
REMOTE_PENALTY = 0.3

#: What queueing at a memory controller costs a miss, per unit of the
#: controller's M/M/1 queue length ``u / (1 - u)`` at utilisation ``u``,
#: as a share of the unloaded local latency (our choice: a controller at
#: half its sustainable bandwidth adds a quarter of an unloaded miss).
MC_QUEUE_PENALTY = 0.25

#: Utilisation past which a controller's queue is read as at this value:
#: the estimate stays finite where the queue is unstable.
MC_UTIL_MAX = 0.95


def mc_queue(util):
    """The M/M/1 queue length of a memory controller at ``util``."""
    util = min(max(util, 0.0), MC_UTIL_MAX)
    return util / (1.0 - util)


#: Below this share of its allowed CPU an instance is serving requests
#: (:func:`serving`); a CPU-bound code uses all of it.
SERVING_UTIL = 0.97


def serving(inst):
    """Whether ``inst`` is, or looks like, a service answering requests.

    What its flavor declares (:attr:`contention.cluster.InstanceView.
    latency`) decides. Undeclared, it looks like one when it uses less
    than :data:`SERVING_UTIL` of the CPU its vCPUs (and its quota) allow,
    so its work arrives rather than waits: its response time grows as
    1 / (1 - utilisation) with any slowdown (Merlin section 3.1 reads the
    same ratio as CPU sensitivity), so a few per cent more memory stall
    cost it many per cent of latency. A batch code on a crowded socket or
    between phases looks the same and is protected too: the cautious
    error, which a declaration removes.
    """
    if inst.latency is not None:
        return inst.latency
    if inst.cpu_util is None:
        return False
    quota = inst.cpu_quota if inst.cpu_quota else 1.0
    return inst.cpu_util < SERVING_UTIL * min(1.0, quota)


def co_load(instances, inst, host, weights, worst=False, rate=None,
            terms=None):
    """Weighted LLC misses/s of ``inst``'s co-runners on its socket.

    ``instances`` are those of its ``host`` (a HostView); ``weights`` the
    :func:`capacity_weights` of the sockets. An instance whose socket is
    unknown (a migration that let the host choose) runs on any of the
    host's sockets: it counts evenly on each, as in :func:`socket_loads`,
    and faces an even share of the host's other instances, at the mean
    weight of its sockets; with ``worst``, the load of the socket where it
    would face the most, and every co-runner whose socket is unknown on
    it (the harm check's reading of a migration that lets the host choose
    the socket: the plan cannot choose it, and a streamer that lands
    beside cache-bound VMs takes its whole share of their cache).
    ``rate``: each co-runner's LLC misses/s (default :func:`misses`, as
    measured). ``terms``: :func:`co_load_terms` of its socket, where the
    caller kept them (an instance of known socket only).
    """
    rate = rate or misses
    keys = [(host.name, sock.id) for sock in host.sockets]
    if inst.socket is not None:
        return _co_load_on(instances, inst.uuid, host, inst.socket, weights,
                           worst, rate, terms)
    if not keys:
        return 0.0
    if worst:
        return max(_co_load_on(instances, inst.uuid, host, sock.id, weights,
                               worst, rate)
                   for sock in host.sockets)
    total = sum(rate(o) for o in instances if o.uuid != inst.uuid)
    weight = sum(weights.get(k, 1.0) for k in keys) / len(keys)
    return total / len(keys) * weight


def co_load_terms(instances, host, socket, worst=False, rate=misses):
    """[(uuid, LLC misses/s)]: what each of ``instances`` adds on ``socket``.

    The terms :func:`co_load` sums for an instance on ``socket`` of
    ``host`` (all but its own), in order, before the socket's weight: one
    list serves every instance of the socket.
    """
    n = len(host.sockets)
    terms = []
    for other in instances:
        if other.socket == socket:
            terms.append((other.uuid, rate(other)))
        elif other.socket is None and n:
            terms.append((other.uuid, rate(other) / (1 if worst else n)))
    return terms


def _co_load_on(instances, uuid, host, socket, weights, worst=False,
                rate=misses, terms=None):
    """:func:`co_load` of instance ``uuid`` were it on ``socket``."""
    if terms is None:
        terms = co_load_terms(instances, host, socket, worst, rate)
    total = 0.0
    for other, term in terms:
        if other != uuid:
            total += term
    return total * weights.get((host.name, socket), 1.0)


def busy_vcpus(inst):
    """``inst``'s vCPUs x its measured CPU use (unknown: all busy)."""
    util = inst.cpu_util
    return inst.vcpus * (1.0 if util is None else min(1.0, max(0.0, util)))


def wanted_on_socket(instances, sock):
    """{uuid: busy vCPUs it wants} of ``instances`` measured on ``sock``.

    Measured CPU use is what an instance got. On a socket whose busy
    vCPUs (:func:`busy_vcpus`) reach its physical cores, each got one
    common share of what it wants (:func:`core_overflow`), and the
    busiest instance there, a CPU-bound one if any, shows that share:
    each instance's use divided by it is what it wants. Without this a
    socket a plan pushed past its cores looks, at the next audit, as if
    it wanted little more than its cores, and steps each within the harm
    bound add up past it: CPU-bound VMs of a generated cluster lost 5.6 %
    over two audits each judged at 3-4 % (simulated).
    """
    wanted = {inst.uuid: busy_vcpus(inst) for inst in instances}
    if sum(wanted.values()) < (sock.cores or sock.cpus):
        return wanted
    share = max((wanted[i.uuid] / i.vcpus for i in instances
                 if i.vcpus > 0), default=1.0)
    if 0 < share < 1:
        for inst in instances:
            wanted[inst.uuid] = min(float(inst.vcpus),
                                    wanted[inst.uuid] / share)
    return wanted


def host_socket(host, socket):
    """The SocketView ``socket`` of ``host`` (a HostView), or None."""
    return next((s for s in (host.sockets if host is not None else ())
                 if s.id == socket), None)


def core_overflow(instances, host, socket, wanted=busy_vcpus):
    """Share of the CPU wanted on ``socket`` of ``host`` past its cores.

    The busy vCPUs of its instances (``wanted``, a function of an
    instance: :func:`busy_vcpus`, or what :func:`wanted_on_socket` found
    where it was measured; an instance of unknown socket evenly on each
    socket) beyond the socket's physical cores share a core with a
    sibling thread, or take turns: each gets ``E(D) / D`` of what it
    wants, which is ``cores / D`` with nothing gained from SMT. This
    share, the loss without SMT gain, is what the harm check bounds: the
    SMT gain is hardware's and unmeasured, so the bound is on the
    cautious side.
    """
    sock = host_socket(host, socket)
    if sock is None:
        return 0.0
    cores = sock.cores or sock.cpus
    n = len(host.sockets)
    demand = 0.0
    for inst in instances:
        if inst.socket is not None and inst.socket != socket:
            continue
        busy = wanted(inst)
        demand += busy if inst.socket is not None else busy / n
    if demand <= cores:
        return 0.0
    return (demand - cores) / demand


def co_load_base(inst, then, now, typical, own=None,
                 th=classify.DEFAULT_THRESHOLDS):
    """What a rise of the co-runner LLC misses ``inst`` faces is relative to.

    Merlin section 3.2's two ways to suffer (:func:`sensitivity`) call
    for two yardsticks.

    *An instance that lives on its cache* (:func:`lives_on_its_cache`)
    loses its share of the cache. A cache's occupancy
    follows the rate each sharer inserts lines at (the simulator's
    model, and why the estimate counts misses at all), so it holds
    own / (own + co-runners') of it, and a rise of the co-runners' misses
    from ``then`` to ``now`` takes (now - then) / (own + now) of that
    share: the base is its own misses (``own``, in the unit of ``then``
    and ``now``; default as measured) with the co-runners' it will face.
    Relative to a typical socket's load instead, a cache-bound VM on a
    lightly loaded socket was allowed a rise that took a fifth of its
    share: on family seed 191's ``gen-medium-002`` (``intel-4s``, W-W
    start; simulated) two repairs raised such a VM's co-runner misses by
    27 %, which against a typical socket's load, six times its own
    socket's, read as 3 %; it lost 5.2 %.

    *A service answering requests* (:func:`serving`), *or an instance
    whose misses reach memory*, competes for the memory controller and
    the interconnect, whose load the co-runners of its socket do not
    measure (the controller's queue is judged apart, where the agents
    state its bandwidth: ``harm._mc_slowdown``): the base
    is the load it faced (``then``), or the ``typical`` load of a socket
    where that is larger, so that a rise on a quiet socket, far from any
    controller's limit, is read against what sockets commonly carry (a
    service alone on its socket may still get a small neighbour).
    """
    if serving(inst) or not lives_on_its_cache(inst, th):
        return max(then, typical)
    return now + (misses(inst) if own is None else own)


def co_load_slowdown(inst, then, now, typical,
                     th=classify.DEFAULT_THRESHOLDS, gain=0.0, own=None):
    """The slowdown more co-runner load (``then`` -> ``now``) stands for.

    The contention estimate's, for where no performance model values the
    instance: it has no calibration to performance, so it bounds the
    cause, not the effect. The rise, relative to :func:`co_load_base`
    (``typical``, ``own``: see there), weighted by the instance's
    sensitivity (:func:`sensitivity`) unless it serves requests
    (:func:`serving`). ``gain``, the slowdown
    the same plan removes otherwise (a NUMA repair's, a share of its
    time), is set against the rise, weighted by the
    :func:`memory_sensitivity` for every instance: it is a slowdown of
    the accesses that reach memory. Weighted by :func:`sensitivity`, a
    cache-bound VM (MF 0.26, sensitivity 0.74) was credited 0.22 for a
    repair that gave it 0.13, and let in a streamer that cost it 20 %
    (gen-small-011 of family seed 101, simulated).
    """
    base = co_load_base(inst, then, now, typical, own, th)
    rise = now - then
    if not serving(inst):
        rise *= sensitivity(inst, th)
    if gain:
        rise -= gain * memory_sensitivity(inst) * base
    if base <= 0:
        return math.inf if rise > 1e-9 else 0.0
    return rise / base


def hurt(inst, then, now, max_vm_harm, max_latency_harm, typical,
         th=classify.DEFAULT_THRESHOLDS, gain=0.0, own=None):
    """Whether more co-runner load (``then`` -> ``now``) harms ``inst``.

    :func:`co_load_slowdown` may not pass ``max_latency_harm`` for a
    service answering requests (:func:`serving`), nor ``max_vm_harm`` for
    others.
    """
    bound = max_latency_harm if serving(inst) else max_vm_harm
    return co_load_slowdown(inst, then, now, typical, th, gain, own) > (
        bound + 1e-12)


def alike(a, b):
    """Whether two instances run the same image in the same flavor.

    Swapping them leaves every unit with the same mix of workloads, so
    it cannot gain anything, whatever their counters say this period
    (a Memory Factor measured beside a heavy co-runner is higher than the
    same workload's elsewhere); it only costs.

    Both image and flavor must be known: many workloads share one image
    on a real cloud (a base OS image), so the same image with an unknown
    flavor on either side says nothing about the workload, and calling
    such a pair alike would forbid every swap between them.
    """
    known = a.image_id is not None and a.flavor is not None
    return known and mix_class(a) == mix_class(b)


def mix_class(inst):
    """The class of interchangeable instances ``inst`` belongs to.

    Same image, flavor, vCPUs and memory (:func:`alike`); an instance
    whose image or flavor is unknown is a class of its own.
    """
    if inst.image_id is None or inst.flavor is None:
        return ('instance', inst.uuid)
    return (inst.image_id, inst.flavor, inst.vcpus, inst.memory_mib)


def unit_mix(state, key):
    """The mix (:func:`contention.perfmodel.mixes.mix_of`) of a socket."""
    host_name, socket = key
    return mixes.mix_of(mix_class(i) for i in state.on_host[host_name].values()
                        if i.socket == socket)


def performance_change(changes, count):
    """(mean, worst) in % of relative changes of instances' performance.

    ``changes`` are {uuid: after / before - 1} of the instances that
    changed; the others of ``count`` instances kept theirs (0). Mean over
    all ``count``; worst is the lowest change, or 0 when none falls. The
    one reading of a plan's effect the goal's indicators predict
    (:func:`.audit.indicators`) and the demo and ``bench.indicators``
    measure in the simulator.
    """
    if not count:
        return 0.0, 0.0
    values = list(changes.values())
    return (100.0 * sum(values) / count,
            100.0 * min(0.0, min(values, default=0.0)))

"""Initial placement of a scenario's instances, and Nova-like defaults.

* ``explicit``: the scenario gives each instance's host and socket (and
  optionally ``memory_socket``);
* ``nova_spread``: Nova's default weighers (RAM, spread): each instance,
  in file order, goes to the fitting host with the most free RAM, on its
  socket with the most free cores, memory local (a socket's free cores
  are its cores minus the cores allocated there, vCPUs x CPU quota, as
  Merlin allocates "2 physical cores" to a 4-vCPU VM);
* ``nova_pack``: the fitting host with the least free RAM, on its fullest
  socket that still has room for the vCPUs;
* ``random``: a random fitting host and a random socket with room;
* ``worst``: Ahn et al.'s W-W case (section 2.2): instances sorted by
  their LLC misses alone, most first, fill socket after socket, so the
  heaviest share caches (the highest spread of per-socket misses), and
  every instance's memory is on another socket of its host (worst NUMA).

A host *fits* an instance when its vCPUs and memory stay within the
host's usable capacity times Nova's allocation ratios.
"""

import numpy as np

from contention.sim import solver

PLACEMENTS = ('worst', 'random', 'nova_spread', 'nova_pack', 'explicit')
DESCRIPTIONS = {
    'worst': 'heaviest LLC users share sockets, memory remote (Ahn W-W)',
    'random': 'random fitting host and socket',
    'nova_spread': 'host with the most free RAM, emptiest socket',
    'nova_pack': 'host with the least free RAM, fullest socket with room',
    'explicit': 'host and socket given per instance in the scenario',
}


class PlacementError(ValueError):
    """The instances do not fit the hosts."""


def host_capacity(state, h):
    """(vCPUs, memory MiB) a host offers, allocation ratios applied."""
    cache = state.__dict__.setdefault('_capacity', {})
    if h in cache:
        return cache[h]
    host = state.hosts[h]
    model = host.model
    usable = [i for i, n in enumerate(model.node_ids)
              if n not in model.reserved]
    vcpus = float((model.cores[usable] * model.threads[usable]).sum())
    memory = float(model.memory_mib[usable].sum())
    cache[h] = (vcpus * host.hw.cpu_allocation_ratio,
                memory * host.hw.ram_allocation_ratio)
    return cache[h]


def host_free(state, h, exclude=None):
    cpu, mem = host_capacity(state, h)
    used_cpu, used_mem = state.used(h)
    cpu -= used_cpu
    mem -= used_mem
    if exclude is not None and exclude.host == h:
        cpu += exclude.vcpus
        mem += exclude.memory_mib
    return cpu, mem


def fits(state, h, inst):
    cpu, mem = host_free(state, h, exclude=inst)
    return cpu >= inst.vcpus - 1e-9 and mem >= inst.memory_mib - 1e-9


def socket_free_cores(state, h, socket, exclude=None):
    """Cores of a socket not allocated (vCPUs x quota) to instances."""
    used = sum(i.vcpus * i.quota * i.vcpu_frac[list(
        state.hosts[h].model.node_indices_of_socket(socket))].sum()
        for i in state.on_host(h) if i is not exclude)
    return state.cores_of_socket(h, socket) - used


def choose_socket(state, h, inst, pack=False, rng=None):
    """A socket of host ``h`` for ``inst`` (most free cores by default)."""
    sockets = state.hosts[h].model.usable_sockets()
    free = {s: socket_free_cores(state, h, s, exclude=inst)
            for s in sockets}
    need = inst.vcpus * inst.quota - 1e-9
    if rng is not None:
        roomy = [s for s in sockets if free[s] >= need]
        return int(rng.choice(roomy or list(sockets)))
    if pack:
        roomy = [s for s in sockets if free[s] >= need]
        if roomy:
            return min(roomy, key=lambda s: (free[s], s))
    return max(sockets, key=lambda s: (free[s], -s))


def floating_spread(state, h, inst):
    """Node fractions of a floating instance no socket of ``h`` has room for.

    None when ``inst`` has a NUMA topology (``numa_nodes``) or one socket
    has free cores for all its vCPUs (it lands there,
    :func:`choose_socket`). Otherwise its vCPUs spread over the host's
    usable nodes in proportion to their free cores (evenly when none is
    free): a guest without a NUMA topology floats over every CPU of the
    host, and Linux's scheduler balances its threads onto idle cores
    rather than crowd one socket while the other has some. Put on one
    socket, an 8-vCPU VM migrated to a host with 4 free cores a socket
    took 24 vCPUs onto 20 cores, and it and its two neighbours lost 13 %
    of their CPU (family seed 83, gen-small-095, simulated).
    """
    if getattr(inst.profile, 'numa_nodes', None):
        return None
    model = state.hosts[h].model
    need = inst.vcpus * inst.quota - 1e-9
    if any(socket_free_cores(state, h, s, exclude=inst) >= need
           for s in model.usable_sockets()):
        return None
    usable = list(model.usable_node_indices())
    free = np.maximum(state.node_free_cores(h, exclude=inst)[usable], 0.0)
    frac = np.zeros(model.n_nodes)
    frac[usable] = (free / free.sum() if free.sum() > 0
                    else 1.0 / len(usable))
    return frac


def nova_host(state, inst, candidates, pack=False):
    """Nova's RAM weigher: most free RAM (spread) or least (pack)."""
    if not candidates:
        return None

    def key(h):
        return (host_free(state, h)[1], -h)
    return (min(candidates, key=lambda h: (host_free(state, h)[1], h))
            if pack else max(candidates, key=key))


def place_default(state, inst, h, pack=False):
    state.place(inst, h, choose_socket(state, h, inst, pack=pack))


def _fitting(state, inst):
    return [h for h in range(len(state.hosts)) if fits(state, h, inst)]


def initial(state, instances, specs, how, rng):
    """Place ``instances`` (with their scenario ``specs``) by ``how``."""
    if how == 'worst':
        return _worst(state, instances)
    for inst, spec in zip(instances, specs):
        if spec.host is not None and getattr(spec, 'nodes', None):
            state.place_nodes(inst, state.host_index[spec.host], spec.nodes,
                              spec.memory_nodes)
            continue
        if how == 'explicit' or spec.host is not None:
            h = state.host_index[spec.host]
            state.place(inst, h, spec.socket if spec.socket is not None
                        else choose_socket(state, h, inst),
                        spec.memory_socket)
            continue
        candidates = _fitting(state, inst)
        if not candidates:
            raise PlacementError('no host has room for %s (%d vCPUs, %d '
                                 'MiB)' % (inst.name, inst.vcpus,
                                           inst.memory_mib))
        if how == 'random':
            h = int(rng.choice(candidates))
            state.place(inst, h, choose_socket(state, h, inst, rng=rng))
        else:
            pack = how == 'nova_pack'
            place_default(state, inst, nova_host(state, inst, candidates,
                                                 pack), pack)


def _worst(state, instances):
    """Ahn et al.'s W-W placement (see module docstring)."""
    if not instances:
        return
    # Misses alone decide the order: place each on host 0 to build arrays.
    for inst in instances:
        state.place(inst, 0, state.hosts[0].model.usable_sockets()[0])
    p = state.problem(0.0, instances)
    alone = solver.solve(solver.alone(p))
    order = np.argsort(-alone.misses_per_s, kind='stable')
    for inst in instances:
        state.set_host(inst, None)
    slots = [(h, s) for h in range(len(state.hosts))
             for s in state.hosts[h].model.usable_sockets()]
    cursor = 0
    for idx in order:
        inst = instances[idx]
        placed = False
        while cursor < len(slots):
            h, s = slots[cursor]
            if (fits(state, h, inst) and socket_free_cores(state, h, s)
                    >= inst.vcpus * inst.quota - 1e-9):
                others = [x for x in state.hosts[h].model.usable_sockets()
                          if x != s]
                state.place(inst, h, s, others[-1] if others else s)
                placed = True
                break
            cursor += 1
        if not placed:
            # No socket has free cores for it (a flavor wider than a
            # socket, or full sockets): over-commit as Nova's allocation
            # ratio allows, on the fitting host whose socket has the most
            # free cores, memory still remote.
            fitting = _fitting(state, inst)
            if not fitting:
                raise PlacementError('worst placement: no host has room for '
                                     '%s (%d vCPUs, %d MiB)'
                                     % (inst.name, inst.vcpus,
                                        inst.memory_mib))
            h, s = max(((h, s) for h in fitting
                        for s in state.hosts[h].model.usable_sockets()),
                       key=lambda hs: (socket_free_cores(state, *hs),
                                       -hs[0], -hs[1]))
            others = [x for x in state.hosts[h].model.usable_sockets()
                      if x != s]
            state.place(inst, h, s, others[-1] if others else s)

"""The mutable state of a simulated cluster: hosts and where each VM is.

Where a VM is, for the solver, is two vectors over its host's NUMA nodes:
``vcpu_frac`` (the fraction of its vCPUs on each node) and ``mem_frac``
(the fraction of its memory on each). Placing on a *socket* spreads both
evenly over the nodes its flavor takes there (every usable node of the
socket, or ``numa_nodes`` of them, spilling to other sockets when the
flavor spans more nodes than a socket has: :meth:`ClusterState.
flavor_nodes`). Inside a node, vCPUs reach the L3 domains as their CPU
policy says (:meth:`ClusterState.cpu_assignment`): shared vCPUs float
over all the node's CPUs; dedicated vCPUs hold the CPUs Nova's pinning
gives them. :meth:`ClusterState.problem` turns the state at time ``t``
into the arrays of :class:`contention.sim.solver.Problem`.
"""

import dataclasses
from typing import Optional

import numpy as np

from contention import reportview
from contention.sim import solver


@dataclasses.dataclass
class SimHost:
    name: str
    model: object          # hardware.HostModel
    hw: object             # hardware.HardwareClass


@dataclasses.dataclass
class SimInstance:
    uuid: str
    name: str
    profile: object        # profiles.WorkloadProfile
    host: Optional[int] = None
    vcpu_frac: Optional[np.ndarray] = None
    mem_frac: Optional[np.ndarray] = None
    quota: float = 1.0
    phase_offset: float = 0.0
    movable: bool = True
    #: When it was last live-migrated (simulated epoch seconds), what the
    #: policies' view shows as InstanceView.last_moved_at; re-pins on
    #: its own host do not count (Watcher's store records migrations).
    last_moved_at: Optional[float] = None

    @property
    def vcpus(self):
        return self.profile.vcpus

    @property
    def memory_mib(self):
        return self.profile.memory_mib

    def demand_at(self, t):
        return self.profile.demand_at(t + self.phase_offset)


def _rows(insts, attr, width):
    """(I, width) array of each instance's ``attr`` vector, zero-padded.

    Hosts have different node counts; the solver's arrays are as wide as
    the widest host.
    """
    out = np.zeros((len(insts), width))
    for row, inst in zip(out, insts):
        vec = getattr(inst, attr)
        row[:len(vec)] = vec
    return out


def yardstick_index(hosts):
    """The index of the host whose class means performance 1, or None.

    On a cluster of one host class, None: each VM is measured against
    itself alone on its own host's class, as the papers measure. On a
    cluster mixing classes that yardstick would move with the VM (a move
    to a larger cache raised it, so a VM that ran faster looked slower),
    so every VM is measured against itself alone on one class: the most
    common one (the first listed on a tie), at its first host.
    """
    counts = {}
    for host in hosts:
        counts[host.hw.name] = counts.get(host.hw.name, 0) + 1
    if len(counts) < 2:
        return None
    top = max(counts.values())
    return next(i for i, host in enumerate(hosts)
                if counts[host.hw.name] == top)


class ClusterState(object):
    """Hosts, instances and the placement; builds solver problems.

    ``yardstick``: the index of the host whose class performance is
    measured against (:meth:`performance`); by default
    :func:`yardstick_index` of ``hosts``.
    """

    def __init__(self, hosts, yardstick=None):
        self.hosts = list(hosts)
        self.yardstick = (yardstick_index(self.hosts) if yardstick is None
                          else yardstick)
        self.host_index = {h.name: i for i, h in enumerate(self.hosts)}
        self.instances = []
        self.by_uuid = {}
        self.width = max(h.model.n_nodes for h in self.hosts)
        self._static = None
        #: host index -> {uuid: instance}, and (vCPUs, MiB) used, kept up
        #: to date by :meth:`set_host` so capacity checks are O(1).
        self._members = {}
        self._used = {}
        self._position = {}

    # -- placement -------------------------------------------------------

    def add(self, inst):
        self._position[inst.uuid] = len(self.instances)
        self.instances.append(inst)
        self.by_uuid[inst.uuid] = inst
        if inst.host is not None:
            host, inst.host = inst.host, None
            self.set_host(inst, host)

    def set_host(self, inst, host):
        """Move ``inst`` to host index ``host`` (None = unplaced)."""
        if inst.uuid in self.by_uuid and inst.host is not None:
            self._members.get(inst.host, {}).pop(inst.uuid, None)
            used = self._used[inst.host]
            used[0] -= inst.vcpus
            used[1] -= inst.memory_mib
        inst.host = host
        if inst.uuid in self.by_uuid and host is not None:
            self._members.setdefault(host, {})[inst.uuid] = inst
            used = self._used.setdefault(host, [0.0, 0.0])
            used[0] += inst.vcpus
            used[1] += inst.memory_mib

    def used(self, host):
        """(vCPUs, MiB) of the instances on a host."""
        return tuple(self._used.get(host, (0.0, 0.0)))

    def spread(self, host, socket, inst=None):
        """A node-fraction vector over the nodes ``inst`` takes on a socket.

        Without ``inst`` (or with a flavor that does not set
        ``numa_nodes``) every usable node of the socket.
        """
        model = self.hosts[host].model
        if getattr(getattr(inst, 'profile', None), 'numa_nodes', None):
            return self._spread_over(host, socket,
                                     self.flavor_nodes(host, socket, inst))
        # The socket's own nodes: asked for every composition the oracle
        # evaluates, so cached on the (frozen) model.
        cache = model.__dict__.setdefault('_socket_spread', {})
        if socket not in cache:
            cache[socket] = self._spread_over(
                host, socket, self.flavor_nodes(host, socket))
        return cache[socket].copy()

    def _spread_over(self, host, socket, idx):
        if not idx:
            raise ValueError('host %s has no usable node on socket %s'
                             % (self.hosts[host].name, socket))
        frac = np.zeros(self.hosts[host].model.n_nodes)
        frac[list(idx)] = 1.0 / len(idx)
        return frac

    def nodes_frac(self, host, nodes):
        """A node-fraction vector spreading evenly over node ids."""
        model = self.hosts[host].model
        frac = np.zeros(model.n_nodes)
        idx = [model.node_ids.index(n) for n in nodes]
        frac[idx] = 1.0 / len(idx)
        return frac

    def flavor_nodes(self, host, socket, inst=None):
        """Node indices an instance's flavor takes, starting on ``socket``.

        ``hw:numa_nodes = N``: the N usable nodes with the most free cores
        on the socket (ties: lowest index), then, when the socket has
        fewer than N usable nodes, the next sockets' (Nova spans sockets
        only when it must). None: every usable node of the socket.
        """
        model = self.hosts[host].model
        want = getattr(getattr(inst, 'profile', None), 'numa_nodes', None)
        own = list(model.node_indices_of_socket(socket))
        if not want:
            return tuple(own)
        free = self.node_free_cores(host, exclude=inst)
        order = sorted(own, key=lambda k: (-free[k], k))
        others = [k for k in model.usable_node_indices() if k not in own]
        order += sorted(others, key=lambda k: (-free[k], k))
        return tuple(sorted(order[:want]))

    def node_free_cores(self, host, exclude=None):
        """Per node: cores minus cores allocated (vCPUs x quota)."""
        model = self.hosts[host].model
        used = np.zeros(model.n_nodes)
        for i in self.on_host(host):
            if i is not exclude and i.vcpu_frac is not None:
                used += i.vcpus * i.quota * i.vcpu_frac
        return model.cores - used

    def place(self, inst, host, socket, mem_socket=None):
        self.set_host(inst, host)
        inst.vcpu_frac = self.spread(host, socket, inst)
        inst.mem_frac = (inst.vcpu_frac.copy() if mem_socket is None
                         or mem_socket == socket
                         else self.spread(host, mem_socket, inst))

    def place_nodes(self, inst, host, nodes, mem_nodes=None):
        """Place on explicit node ids (memory on ``mem_nodes`` or the same)."""
        self.set_host(inst, host)
        inst.vcpu_frac = self.nodes_frac(host, nodes)
        inst.mem_frac = self.nodes_frac(host, mem_nodes or nodes)

    def socket_of(self, inst, frac=None):
        """The socket holding most of ``frac`` (default: the vCPUs)."""
        frac = inst.vcpu_frac if frac is None else frac
        model = self.hosts[inst.host].model
        per_socket = {}
        for i, share in enumerate(frac):
            s = int(model.sockets[i])
            per_socket[s] = per_socket.get(s, 0.0) + share
        return max(sorted(per_socket), key=lambda s: per_socket[s])

    def node_of(self, inst):
        """The node of its vCPUs, by the reports' rule (busiest_node)."""
        model = self.hosts[inst.host].model
        return reportview.busiest_node(
            {model.node_ids[k]: f for k, f in enumerate(inst.vcpu_frac)},
            {n: int(model.sockets[k]) for k, n in enumerate(model.node_ids)})

    def memory_node_of(self, inst):
        """The node holding most of its memory (ties: the lowest id)."""
        model = self.hosts[inst.host].model
        return model.node_ids[int(np.argmax(inst.mem_frac))]

    def on_host(self, host):
        """Instances on a host, in the order they were added."""
        members = self._members.get(host, {})
        return sorted(members.values(),
                      key=lambda i: self._position[i.uuid])

    def pinned_on_nodes(self, host):
        """Dedicated (pinned) vCPUs on each node of a host."""
        model = self.hosts[host].model
        used = np.zeros(model.n_nodes)
        for inst in self.on_host(host):
            if inst.profile.cpu_policy == 'dedicated':
                used += inst.vcpus * inst.vcpu_frac
        return used

    def memory_on_nodes(self, host):
        """MiB of instance memory on each node of a host."""
        model = self.hosts[host].model
        used = np.zeros(model.n_nodes)
        for inst in self.on_host(host):
            used += inst.memory_mib * inst.mem_frac
        return used

    def cores_of_socket(self, host, socket):
        model = self.hosts[host].model
        return float(model.cores[list(model.node_indices_of_socket(
            socket))].sum())

    # -- solver arrays ----------------------------------------------------

    @property
    def dom_width(self):
        return max(h.model.n_domains for h in self.hosts)

    def _host_arrays(self):
        if self._static is None:
            w = self.width
            wd = self.dom_width
            models = [h.model for h in self.hosts]
            offset = np.cumsum([0] + [m.n_nodes for m in models])[:-1]
            dom_offset = np.cumsum([0] + [m.n_domains
                                          for m in models])[:-1]
            lf = np.ones((len(models), wd, w))
            link = np.ones((len(models), w, w))
            dom_node = np.zeros((len(models), wd), dtype=int)
            split = np.zeros((len(models), w, wd))
            for i, m in enumerate(models):
                lf[i, :m.n_domains, :m.n_nodes] = m.latency_factor[
                    m.dom_node]
                link[i, :m.n_nodes, :m.n_nodes] = m.link_bw
                dom_node[i, :m.n_domains] = m.dom_node
                split[i, :m.n_nodes, :m.n_domains] = m.domain_split()

            def per_dom(fn):
                return np.concatenate([fn(m) for m in models])
            self._static = dict(
                node_cores=per_dom(lambda m: m.dom_cores),
                node_threads=per_dom(lambda m: m.dom_threads),
                node_l3=per_dom(lambda m: m.dom_l3_bytes),
                node_mc_bw=per_dom(lambda m: m.mc_bw),
                node_smt_gain=per_dom(lambda m: np.full(
                    m.n_domains, m.perf.smt_gain)),
                node_mc_q=per_dom(lambda m: np.full(
                    m.n_nodes, m.perf.mc_queue_ns * 1e-9)),
                host_offset=dom_offset,
                host_node_offset=offset,
                host_dom_node=dom_node,
                host_freq=np.array([m.perf.freq_ghz * 1e9 for m in models]),
                host_lat=np.array([m.perf.local_latency_ns * 1e-9
                                   for m in models]),
                host_link_bw=link,
                host_link_q=np.array([m.perf.link_queue_ns * 1e-9
                                      for m in models]),
                host_latency_factor=lf)
            self._split = split
            self._node_dom_share = per_dom(
                lambda m: (m.dom_cores * m.dom_threads)
                / np.maximum((m.cores * m.threads)[m.dom_node], 1e-12))
            self._dom_global_node = np.concatenate(
                [offset[i] + m.dom_node for i, m in enumerate(models)])
        return self._static

    def node_offset(self, host):
        """First cluster-wide NUMA-node index of a host."""
        return int(self._host_arrays()['host_node_offset'][host])

    def cpu_assignment(self, host):
        """{uuid: host CPUs of its vCPUs} on one host, in instance order.

        Dedicated vCPUs take the first free CPUs of their nodes in Nova's
        pinning order (L3 domain by domain, a core's threads together);
        shared vCPUs are listed round-robin over their nodes' CPUs, one a
        vCPU (where they float). Both the solver's L3-domain fractions and
        the reports' ``vcpu_cpus`` come from here.
        """
        model = self.hosts[host].model
        topo = model.topology
        cursor = {}
        taken = set()
        order = {}
        for k in range(model.n_nodes):
            order[k] = [c for d in range(model.n_domains)
                        if model.dom_node[d] == k
                        for c in model.dom_cpus[d]]
        out = {}
        for inst in self.on_host(host):
            counts = np.floor(inst.vcpu_frac * inst.vcpus + 1e-9).astype(int)
            rest = inst.vcpus - counts.sum()
            # Ties go to the lowest node, as the reports' vote does.
            for k in np.argsort(-(inst.vcpu_frac * inst.vcpus - counts),
                                kind='stable')[:rest]:
                counts[k] += 1
            cpus = []
            dedicated = inst.profile.cpu_policy == 'dedicated'
            for k, count in enumerate(counts):
                node = topo.node(model.node_ids[k])
                if dedicated:
                    free = [c for c in order[k] if c not in taken]
                    # Over-committed: wrap round the node's CPUs.
                    free = (free + order[k] * count)[:count]
                    taken.update(free)
                    cpus.extend(free)
                    continue
                for _ in range(count):
                    pos = cursor.get(node.id, 0)
                    cpus.append(node.cpus[pos % len(node.cpus)])
                    cursor[node.id] = pos + 1
            out[inst.uuid] = tuple(cpus)
        return out

    def _dom_frac(self, insts):
        """(I, D) vCPU fractions over L3 domains (see cpu_assignment)."""
        arrays = self._host_arrays()
        wd = self.dom_width
        w = self.width
        out = np.zeros((len(insts), wd))
        if not insts:
            return out
        hosts = np.array([i.host for i in insts], dtype=int)
        frac = _rows(insts, 'vcpu_frac', w)
        out = np.einsum('in,ind->id', frac, self._split[hosts])
        dedicated = [j for j, i in enumerate(insts)
                     if i.profile.cpu_policy == 'dedicated']
        if dedicated:
            assigned = {}
            for h in {insts[j].host for j in dedicated}:
                assigned.update(self.cpu_assignment(h))
            for j in dedicated:
                inst = insts[j]
                model = self.hosts[inst.host].model
                dom_of = {c: d for d in range(model.n_domains)
                          for c in model.dom_cpus[d]}
                row = np.zeros(wd)
                cpus = assigned.get(inst.uuid, ())
                for c in cpus:
                    row[dom_of[c]] += 1.0 / len(cpus)
                out[j] = row
        del arrays
        return out

    def per_domain(self, node_values):
        """Per-node extra CPU (cluster-wide nodes) spread over domains."""
        self._host_arrays()
        return (np.asarray(node_values)[self._dom_global_node]
                * self._node_dom_share)

    def performance(self, p):
        """(solution, normalised performance) of ``p``, a :meth:`problem`.

        Every VM solved alone on its own host sets how much a request
        stretches (a latency VM's CPU utilisation); performance 1 is the
        VM alone on the :attr:`yardstick` host's class, or on its own
        host's when the cluster has one class
        (:func:`contention.sim.solver.normalised_performance`).
        """
        ref = solver.solve(solver.alone(p))
        p.cpi_ref = ref.cpi
        sol = solver.solve(p)
        yard = (None if self.yardstick is None
                else solver.solve(solver.alone(p, host=self.yardstick)))
        return sol, solver.normalised_performance(p, sol, ref, yard)

    def problem(self, t, instances=None, slowdown=None, extra_cpu=None,
                extra_traffic=None):
        """The solver :class:`~contention.sim.solver.Problem` at time t."""
        insts = self.instances if instances is None else instances
        w = self.width
        n = len(insts)
        prof = [i.profile for i in insts]

        def arr(fn):
            return np.array([fn(x) for x in prof], dtype=float)
        if extra_cpu is not None:
            extra_cpu = self.per_domain(extra_cpu)
        arrays = self._host_arrays()
        return solver.Problem(
            inst_host=np.array([i.host for i in insts], dtype=int),
            vcpus=arr(lambda x: x.vcpus),
            vcpu_frac=self._dom_frac(insts),
            mem_frac=_rows(insts, 'mem_frac', w),
            base_cpi=arr(lambda x: x.base_cpi),
            apki=arr(lambda x: x.llc_apki),
            mr_min=arr(lambda x: x.mr_min), mr_max=arr(lambda x: x.mr_max),
            ws_bytes=arr(lambda x: x.working_set_mib * 1024.0 * 1024.0),
            shared=arr(lambda x: x.shared_fraction),
            mlp=arr(lambda x: x.mlp), wb=arr(lambda x: x.writeback_ratio),
            footprint=arr(lambda x: x.footprint_bytes),
            demand=np.array([i.demand_at(t) for i in insts], dtype=float),
            quota=np.array([i.quota for i in insts], dtype=float),
            latency_metric=np.array([x.metric == 'latency' for x in prof],
                                    dtype=bool),
            response_cpu_share=arr(lambda x: x.response_cpu_share),
            slowdown=(np.zeros(n) if slowdown is None
                      else np.asarray(slowdown, dtype=float)),
            node_extra_cpu=extra_cpu, node_extra_traffic=extra_traffic,
            **arrays)

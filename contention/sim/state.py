"""The mutable state of a simulated cluster: hosts and where each VM is.

Where a VM is, for the solver, is two vectors over its host's NUMA nodes:
``vcpu_frac`` (the fraction of its vCPUs on each node) and ``mem_frac``
(the fraction of its memory on each). Placing on a *socket* spreads both
evenly over the socket's usable nodes. :meth:`ClusterState.problem` turns
the state at time ``t`` into the arrays of :class:`contention.sim.solver.
Problem`.
"""

import dataclasses
from typing import Optional

import numpy as np

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


class ClusterState(object):
    """Hosts, instances and the placement; builds solver problems."""

    def __init__(self, hosts):
        self.hosts = list(hosts)
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

    def spread(self, host, socket):
        """A node-fraction vector spreading evenly over a socket."""
        model = self.hosts[host].model
        frac = np.zeros(model.n_nodes)
        idx = list(model.node_indices_of_socket(socket))
        if not idx:
            raise ValueError('host %s has no usable node on socket %s'
                             % (self.hosts[host].name, socket))
        frac[idx] = 1.0 / len(idx)
        return frac

    def place(self, inst, host, socket, mem_socket=None):
        self.set_host(inst, host)
        inst.vcpu_frac = self.spread(host, socket)
        inst.mem_frac = self.spread(
            host, socket if mem_socket is None else mem_socket)

    def socket_of(self, inst, frac=None):
        """The socket holding most of ``frac`` (default: the vCPUs)."""
        frac = inst.vcpu_frac if frac is None else frac
        model = self.hosts[inst.host].model
        per_socket = {}
        for i, share in enumerate(frac):
            s = int(model.sockets[i])
            per_socket[s] = per_socket.get(s, 0.0) + share
        return max(sorted(per_socket), key=lambda s: per_socket[s])

    def node_of(self, inst, frac=None):
        frac = inst.vcpu_frac if frac is None else frac
        model = self.hosts[inst.host].model
        return model.node_ids[int(np.argmax(frac))]

    def on_host(self, host):
        """Instances on a host, in the order they were added."""
        members = self._members.get(host, {})
        return sorted(members.values(),
                      key=lambda i: self._position[i.uuid])

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

    def _host_arrays(self):
        if self._static is None:
            w = self.width
            models = [h.model for h in self.hosts]
            offset = np.cumsum([0] + [m.n_nodes for m in models])[:-1]
            lf = np.ones((len(models), w, w))
            for i, m in enumerate(models):
                lf[i, :m.n_nodes, :m.n_nodes] = m.latency_factor

            def per_node(fn):
                return np.concatenate([fn(m) for m in models])
            self._static = dict(
                node_cores=per_node(lambda m: m.cores),
                node_threads=per_node(lambda m: m.threads),
                node_l3=per_node(lambda m: m.l3_bytes),
                node_mc_bw=per_node(lambda m: np.full(
                    m.n_nodes, m.perf.mc_bandwidth_gbs * 1e9)),
                node_smt_gain=per_node(lambda m: np.full(
                    m.n_nodes, m.perf.smt_gain)),
                node_mc_q=per_node(lambda m: np.full(
                    m.n_nodes, m.perf.mc_queue_ns * 1e-9)),
                host_offset=offset,
                host_freq=np.array([m.perf.freq_ghz * 1e9 for m in models]),
                host_lat=np.array([m.perf.local_latency_ns * 1e-9
                                   for m in models]),
                host_link_bw=np.array([m.perf.link_bandwidth_gbs * 1e9
                                       for m in models]),
                host_link_q=np.array([m.perf.link_queue_ns * 1e-9
                                      for m in models]),
                host_latency_factor=lf)
        return self._static

    def node_offset(self, host):
        return int(self._host_arrays()['host_offset'][host])

    def problem(self, t, instances=None, slowdown=None, extra_cpu=None,
                extra_traffic=None):
        """The solver :class:`~contention.sim.solver.Problem` at time t."""
        insts = self.instances if instances is None else instances
        w = self.width
        n = len(insts)

        def pad(vec):
            out = np.zeros(w)
            out[:len(vec)] = vec
            return out

        prof = [i.profile for i in insts]

        def arr(fn):
            return np.array([fn(x) for x in prof], dtype=float)
        return solver.Problem(
            inst_host=np.array([i.host for i in insts], dtype=int),
            vcpus=arr(lambda x: x.vcpus),
            vcpu_frac=(np.array([pad(i.vcpu_frac) for i in insts])
                       if n else np.zeros((0, w))),
            mem_frac=(np.array([pad(i.mem_frac) for i in insts])
                      if n else np.zeros((0, w))),
            base_cpi=arr(lambda x: x.base_cpi),
            apki=arr(lambda x: x.llc_apki),
            mr_min=arr(lambda x: x.mr_min), mr_max=arr(lambda x: x.mr_max),
            ws_bytes=arr(lambda x: x.working_set_mib * 1024.0 * 1024.0),
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
            **self._host_arrays())

"""The contention solver: a placement in, every VM's speed out.

Everything is a numpy array over the whole cluster at once, so one call
solves thousands of hosts. Indices: ``i`` an instance, ``n`` an **L3
domain** of its host where its vCPUs run (a domain is the CPUs sharing one
last-level cache inside one NUMA node: the node itself on most Intel
parts, a CCX on AMD Zen), ``k`` a NUMA node of its host holding its
memory (``n`` and ``k`` are host-local, padded to the largest host),
``g(i, n)`` the cluster-wide index of that domain and ``node(n)`` the NUMA
node it belongs to. Cores, threads and caches are per domain; memory
controllers per node; links per ordered pair of nodes. The model, per
fixed-point iteration (equations also in ``doc/simulator.md``):

1. **CPU time.** Instance ``i`` wants ``w_i = v_i * min(d_i, q_i)`` cores
   (vCPUs x demand, capped by its quota); a latency-metric VM wants
   ``v_i * min(d_i * S_i, q_i)`` because each request takes ``S_i = CPI_i /
   CPI_i^alone`` times longer. Node demand ``D_g = sum w_i f_in + X_g``
   (``f_in`` its vCPU fraction on n, ``X_g`` migration work). Capacity
   with ``c`` cores of ``t`` threads: ``E(D) = min(D, c) + s *
   min(max(D - c, 0), c (t - 1))`` (``s`` = SMT gain), and every vCPU gets
   the share ``E(D) / D`` of what it wants: ``u_in = w_i f_in E/D``.
2. **LLC occupancy** in proportion to insertion (miss) rate, the usual
   model of a shared LRU cache at steady state: ``o_in = C_g r_in /
   sum_j r_jn``, capped at the VM's footprint, with what capped VMs leave
   shared again among the others in proportion to their rates.
3. **Miss ratio** from the VM's miss-ratio curve at the cache it holds,
   scaled to the share of its working set the domain's vCPUs touch:
   ``m_in = MRC_i(o_in / s_in)`` with ``s_in = h_i + (1 - h_i) f_in``,
   where ``h_i`` is the fraction of the working set all its threads share
   (a copy of it lives in every domain the VM runs in; the rest is split
   among its vCPUs). The footprint cap of step 2 scales the same way.
   Misses per second ``r_in = IPS_i * (u_in / u_i) * a_i / 1000 * m_in``
   (``a_i`` = LLC accesses per kilo-instruction).
4. **DRAM traffic** ``B_ink = 64 (1 + wb_i) r_in M_ik`` bytes/s from
   domain n to the memory on node k (``M_ik`` its memory fraction there),
   plus migration copy traffic. Memory-controller utilisation ``U_k = sum
   B / BW_k``; the utilisation of the link from node(n) to k (node(n) !=
   k) likewise, with that link's own bandwidth.
5. **Latency** of a miss from n to k: ``L_nk = L_0 * dist(node(n), k) /
   10 + Q_mc U_k / (1 - U_k) + [node(n) != k] Q_link U_nk / (1 - U_nk)``
   (M/M/1-like
   queueing; utilisations are clipped at 0.99 inside an iteration, and the
   fixed point settles where demand fits because throughput falls as
   latency rises).
6. **CPI** ``= base_cpi + sum_n (u_in / u_i) a_i / 1000 m_in (sum_k M_ik
   L_nk) f_clock / MLP_i``; **throughput** ``IPS_i = f_clock u_i / CPI_i
   (1 - slow_i)`` (``slow_i``: live-migration slowdown).

Steps 1-6 repeat with geometric damping of IPS and linear damping of
occupancy until IPS changes by less than ``tol`` (relative) or
``max_iter``. Normalised performance divides by the same VM solved alone
(:func:`alone`): its own node, an otherwise idle host of the same class,
local memory, no quota (of one class for the whole cluster where classes
mix: :func:`normalised_performance`'s ``yardstick``). Throughput VMs:
``IPS / IPS_alone``. Latency VMs: response time ``R = S / (1 - rho)``
with ``rho = d S / a`` (``a`` = CPU share available per vCPU, rho
clipped at 0.95), and performance
``R_alone / R``, of which only the profile's ``response_cpu_share``
stretches (the rest of a request's time, e.g. its network transfer, does
not).
"""

import dataclasses

import numpy as np

from contention.topology import LINE_BYTES
_RHO_MAX = 0.99
_LAT_RHO_MAX = 0.95


@dataclasses.dataclass
class Problem:
    """The arrays of one cluster state (see module docstring for symbols).

    ``node_cores``, ``node_threads``, ``node_l3``, ``node_smt_gain`` and
    ``node_extra_cpu`` are per L3 domain (length G, all domains of all
    hosts; a domain is the node itself where a node has one L3);
    ``node_mc_bw``, ``node_mc_q`` and ``node_extra_traffic`` per NUMA
    node (length GN). Host arrays have length H; instance arrays I, with
    ``vcpu_frac`` (I, D) over domains and ``mem_frac`` (I, N) over nodes.
    ``dom_node`` / ``host_node_offset`` / ``host_dom_node`` map domains
    to nodes; left None, domains and nodes are the same (one L3 a node).
    """

    node_cores: np.ndarray
    node_threads: np.ndarray
    node_l3: np.ndarray
    node_mc_bw: np.ndarray
    node_smt_gain: np.ndarray
    node_mc_q: np.ndarray
    host_offset: np.ndarray
    host_freq: np.ndarray
    host_lat: np.ndarray
    host_link_bw: np.ndarray
    host_link_q: np.ndarray
    #: (H, D, N) unloaded latency multiplier from each domain's node
    #: (hardware.remote_latency_factor), 1 where padded.
    host_latency_factor: np.ndarray
    inst_host: np.ndarray
    vcpus: np.ndarray
    vcpu_frac: np.ndarray
    mem_frac: np.ndarray
    base_cpi: np.ndarray
    apki: np.ndarray
    mr_min: np.ndarray
    mr_max: np.ndarray
    ws_bytes: np.ndarray
    mlp: np.ndarray
    wb: np.ndarray
    footprint: np.ndarray
    demand: np.ndarray
    quota: np.ndarray
    latency_metric: np.ndarray
    slowdown: np.ndarray
    #: Latency VMs: share of the response time alone that is CPU service
    #: (the rest does not stretch); None = all of it.
    response_cpu_share: np.ndarray = None
    #: Fraction of each instance's working set shared by all its threads
    #: (``h_i`` of step 3); None = none of it.
    shared: np.ndarray = None
    node_extra_cpu: np.ndarray = None
    node_extra_traffic: np.ndarray = None
    #: CPI of each instance alone (for latency VMs); None = use own CPI.
    cpi_ref: np.ndarray = None
    #: (H,) first global node index of each host; (H, D) host-local node
    #: index of each domain column. None: the same as the domains.
    host_node_offset: np.ndarray = None
    host_dom_node: np.ndarray = None

    @property
    def n_nodes(self):
        return len(self.node_cores)

    @property
    def width(self):
        return self.vcpu_frac.shape[1]

    @property
    def mem_width(self):
        return self.mem_frac.shape[1]

    @property
    def n_mem_nodes(self):
        return len(self.node_mc_bw)


@dataclasses.dataclass
class Solution:
    """Per-instance and per-resource results of :func:`solve`."""

    ips: np.ndarray
    cpi: np.ndarray
    #: Cores of CPU time used, and wanted (demand x quota x vCPUs).
    cpu_used: np.ndarray
    cpu_wanted: np.ndarray
    #: Per-vCPU CPU share available (quota x node share).
    cpu_avail: np.ndarray
    miss_ratio: np.ndarray
    refs_per_s: np.ndarray
    misses_per_s: np.ndarray
    occupancy: np.ndarray
    bytes_local_per_s: np.ndarray
    bytes_total_per_s: np.ndarray
    mean_latency_ns: np.ndarray
    node_mc_util: np.ndarray
    node_cpu_demand: np.ndarray
    link_util: np.ndarray
    iterations: int
    converged: bool


def _gid(p):
    n = p.width
    gid = p.host_offset[p.inst_host][:, None] + np.arange(n)[None, :]
    return np.minimum(gid, p.n_nodes - 1)


def _mem_gid(p):
    offset = (p.host_offset if p.host_node_offset is None
              else p.host_node_offset)
    gid = offset[p.inst_host][:, None] + np.arange(p.mem_width)[None, :]
    return np.minimum(gid, p.n_mem_nodes - 1)


def _dom_node(p):
    """(H, D) host-local node of each domain column."""
    if p.host_dom_node is not None:
        return p.host_dom_node
    return np.broadcast_to(np.arange(p.width)[None, :],
                           (len(p.host_freq), p.width))


def _link_bw(p):
    """(H * N * N) link bandwidths, from per-host or per-pair values."""
    bw = np.asarray(p.host_link_bw, dtype=float)
    wn = p.mem_width
    if bw.ndim == 1:
        return bw.repeat(wn * wn)
    return bw.reshape(-1)


def _span(p):
    """(I, D) share of each instance's working set a domain's vCPUs touch.

    Step 3 of the module docstring: the shared part in full, the private
    part in proportion to the domain's vCPUs.
    """
    if p.shared is None:
        return p.vcpu_frac
    h = p.shared[:, None]
    return np.where(p.vcpu_frac > 0, h + (1.0 - h) * p.vcpu_frac, 0.0)


def _cpu(p, gid, want):
    """Per-slice CPU share: step 1 of the module docstring."""
    g = p.n_nodes
    demand = np.bincount(gid.ravel(), (want[:, None] * p.vcpu_frac).ravel(),
                         minlength=g)
    if p.node_extra_cpu is not None:
        demand = demand + p.node_extra_cpu
    cores = p.node_cores
    extra = np.clip(demand - cores, 0.0, cores * (p.node_threads - 1.0))
    capacity = np.minimum(demand, cores) + p.node_smt_gain * extra
    share = np.where(demand > 1e-12, capacity / np.maximum(demand, 1e-12),
                     1.0)
    return np.minimum(share, 1.0), demand


def solve(p, tol=1e-5, max_iter=500, damping=0.5):
    """Solve a :class:`Problem` to its fixed point; return a Solution."""
    n_inst = len(p.vcpus)
    g = p.n_nodes
    gn = p.n_mem_nodes
    wn = p.mem_width
    gid = _gid(p)
    mgid = _mem_gid(p)
    flat = gid.ravel()
    f = p.vcpu_frac
    on = f > 0
    freq = p.host_freq[p.inst_host]
    lat0 = p.host_lat[p.inst_host]
    lf = p.host_latency_factor[p.inst_host]              # (I, D, N)
    src = _dom_node(p)[p.inst_host]                      # (I, D)
    pair = (p.inst_host[:, None, None] * wn * wn
            + src[:, :, None] * wn + np.arange(wn)[None, None, :])
    n_pairs = len(p.host_freq) * wn * wn
    offdiag = src[:, :, None] != np.arange(wn)[None, None, :]
    link_bw = _link_bw(p)
    link_q = p.host_link_q.repeat(wn * wn)
    span = _span(p)
    cap = p.footprint[:, None] * span
    capacity = p.node_l3
    ws = np.maximum(p.ws_bytes, 1.0)[:, None]
    lat_inst = p.latency_metric.astype(bool)

    want_base = p.vcpus * np.minimum(p.demand, p.quota)
    want = want_base.copy()
    share, node_dem = _cpu(p, gid, want)
    cpu_slice = want[:, None] * f * share[gid]
    cpu_used = cpu_slice.sum(axis=1)
    cpi = p.base_cpi.copy()
    ips = np.maximum(freq * cpu_used / cpi, 1.0)
    # Start from an even split of each cache among its sharers.
    sharers = np.bincount(flat, on.ravel().astype(float), minlength=g)
    occ = np.minimum(cap, np.where(on, capacity[gid]
                                   / np.maximum(sharers[gid], 1.0), 0.0))
    converged = False
    it = 0
    rho_mc = np.zeros(gn)
    rho_link = np.zeros(n_pairs)
    lat_slice = np.zeros_like(f)
    m_slice = np.zeros_like(f)
    alpha_mc = np.full(gn, 0.5)
    alpha_link = np.full(n_pairs, 0.5)
    last_mc = np.zeros(gn)
    last_link = np.zeros(n_pairs)
    for it in range(1, max_iter + 1):
        if lat_inst.any():
            ref = p.cpi_ref if p.cpi_ref is not None else cpi
            stretch = cpi / np.maximum(ref, 1e-12)
            want = np.where(lat_inst, p.vcpus * np.minimum(
                p.demand * stretch, p.quota), want_base)
            share, node_dem = _cpu(p, gid, want)
            cpu_slice = want[:, None] * f * share[gid]
            cpu_used = cpu_slice.sum(axis=1)
        weight = np.where(cpu_used[:, None] > 0, cpu_slice
                          / np.maximum(cpu_used[:, None], 1e-300), 0.0)
        # 5. latency of a miss from n to k, at the current utilisations
        q_mc = p.node_mc_q * rho_mc / (1.0 - rho_mc)
        q_link = link_q * rho_link / (1.0 - rho_link)
        lat = (lat0[:, None, None] * lf + q_mc[mgid][:, None, :]
               + q_link[pair] * offdiag)
        lat_slice = (p.mem_frac[:, None, :] * lat).sum(axis=2)
        # 3. miss ratio at the current occupancy
        held = np.where(on, occ / np.where(on, span, 1.0), 0.0)
        m_slice = np.where(on, p.mr_min[:, None]
                           + (p.mr_max - p.mr_min)[:, None]
                           * np.exp(-held / ws), 0.0)
        # 6. CPI and throughput
        stall = (weight * p.apki[:, None] / 1000.0 * m_slice
                 * lat_slice).sum(axis=1) * freq / p.mlp
        cpi = p.base_cpi + stall
        ips_new = np.maximum(freq * cpu_used / cpi * (1.0 - p.slowdown),
                             1.0)
        change = np.max(np.abs(ips_new / ips - 1.0)) if n_inst else 0.0
        ips = ips_new
        miss = ips[:, None] * weight * p.apki[:, None] / 1000.0 * m_slice
        # 2. occupancy in proportion to insertion rate, footprint-capped
        total = np.bincount(flat, miss.ravel(), minlength=g)
        prop = np.where(on, capacity[gid] * miss
                        / np.maximum(total[gid], 1e-300), 0.0)
        capped = prop >= cap
        o_new = np.minimum(prop, cap)
        left = capacity - np.bincount(flat, o_new.ravel(), minlength=g)
        free_w = np.where(capped | ~on, 0.0, miss)
        free_tot = np.bincount(flat, free_w.ravel(), minlength=g)
        o_new = np.minimum(cap, o_new + np.where(
            free_tot[gid] > 0, np.maximum(left[gid], 0.0) * free_w
            / np.maximum(free_tot[gid], 1e-300), 0.0))
        occ_change = (np.max(np.abs(o_new - occ) / np.maximum(
            capacity[gid], 1.0)) if n_inst else 0.0)
        occ = damping * occ + (1.0 - damping) * o_new
        # 4. DRAM traffic: from vCPU node n to memory node k, and the
        # utilisations it implies; each resource's utilisation moves
        # towards that target with its own step, halved whenever the
        # target crosses it (a bracketing search, robust near saturation)
        bytes_slice = miss * LINE_BYTES * (1.0 + p.wb[:, None])
        traffic = bytes_slice[:, :, None] * p.mem_frac[:, None, :]
        mc_load = np.bincount(mgid.ravel(), traffic.sum(axis=1).ravel(),
                              minlength=gn)
        if p.node_extra_traffic is not None:
            mc_load = mc_load + p.node_extra_traffic
        link_load = np.bincount(pair.ravel(), (traffic * offdiag).ravel(),
                                minlength=n_pairs)
        diff_mc = np.minimum(mc_load / p.node_mc_bw, _RHO_MAX) - rho_mc
        diff_link = np.minimum(link_load / link_bw, _RHO_MAX) - rho_link
        alpha_mc = np.where(diff_mc * last_mc < 0, alpha_mc * 0.5, alpha_mc)
        alpha_link = np.where(diff_link * last_link < 0, alpha_link * 0.5,
                              alpha_link)
        last_mc, last_link = diff_mc, diff_link
        rho_mc = np.clip(rho_mc + alpha_mc * diff_mc, 0.0, _RHO_MAX)
        rho_link = np.clip(rho_link + alpha_link * diff_link, 0.0, _RHO_MAX)
        resid = max(np.max(np.abs(diff_mc), initial=0.0),
                    np.max(np.abs(diff_link), initial=0.0))
        if change < tol and resid < tol * 10 and occ_change < tol * 10:
            converged = True
            break
    weight = np.where(cpu_used[:, None] > 0, cpu_slice
                      / np.maximum(cpu_used[:, None], 1e-300), 0.0)
    miss_ratio = (weight * m_slice).sum(axis=1)
    refs = ips * p.apki / 1000.0
    misses = ips[:, None] * weight * p.apki[:, None] / 1000.0 * m_slice
    bytes_slice = misses * LINE_BYTES * (1.0 + p.wb[:, None])
    local = (bytes_slice * np.take_along_axis(p.mem_frac, src, axis=1)
             ).sum(axis=1)
    per_vcpu_avail = np.minimum(p.quota, 1.0) * (
        (f * share[gid]).sum(axis=1))
    return Solution(
        ips=ips, cpi=cpi,
        cpu_used=cpu_used, cpu_wanted=want, cpu_avail=per_vcpu_avail,
        miss_ratio=miss_ratio, refs_per_s=refs,
        misses_per_s=misses.sum(axis=1), occupancy=occ.sum(axis=1),
        bytes_local_per_s=local, bytes_total_per_s=bytes_slice.sum(axis=1),
        mean_latency_ns=1e9 * (weight * lat_slice).sum(axis=1),
        node_mc_util=rho_mc, node_cpu_demand=node_dem,
        link_util=rho_link.reshape(len(p.host_freq), wn, wn),
        iterations=it, converged=converged)


def alone(p, host=None):
    """The :class:`Problem` of every instance alone on an idle host.

    Each instance gets one L3 domain of its own host's class (the cache
    of its host's first domain and the memory controller of that domain's
    node, enough cores for its vCPUs), local memory, no quota and no
    migration slowdown. With ``host`` (an index of ``p``'s hosts), every
    instance is alone on that host's class instead: the yardstick of a
    cluster mixing host classes (:func:`normalised_performance`).
    """
    n_inst = len(p.vcpus)
    hosts = (p.inst_host if host is None
             else np.full(n_inst, int(host), dtype=int))
    first = p.host_offset[hosts]
    if p.host_node_offset is None:
        first_node = first
    else:
        first_node = p.host_node_offset[hosts] + _dom_node(p)[hosts, 0]
    ones = np.ones(n_inst)
    link = np.asarray(p.host_link_bw, dtype=float)
    if link.ndim == 1:
        link = link[hosts]
    else:
        link = (np.max(link[hosts].reshape(n_inst, -1), axis=1)
                if n_inst else np.zeros(0))
    return Problem(
        node_cores=np.maximum(p.node_cores[first], p.vcpus.astype(float)),
        node_threads=ones.copy(),
        node_l3=p.node_l3[first], node_mc_bw=p.node_mc_bw[first_node],
        node_smt_gain=p.node_smt_gain[first],
        node_mc_q=p.node_mc_q[first_node],
        host_offset=np.arange(n_inst),
        host_freq=p.host_freq[hosts], host_lat=p.host_lat[hosts],
        host_link_bw=link,
        host_link_q=p.host_link_q[hosts],
        host_latency_factor=np.ones((n_inst, 1, 1)),
        inst_host=np.arange(n_inst), vcpus=p.vcpus,
        vcpu_frac=np.ones((n_inst, 1)), mem_frac=np.ones((n_inst, 1)),
        base_cpi=p.base_cpi, apki=p.apki, mr_min=p.mr_min, mr_max=p.mr_max,
        ws_bytes=p.ws_bytes, mlp=p.mlp, wb=p.wb, footprint=p.footprint,
        demand=p.demand, quota=ones.copy(),
        latency_metric=np.zeros(n_inst, dtype=bool),
        slowdown=np.zeros(n_inst))


def normalised_performance(p, sol, ref, yardstick=None):
    """Performance of each instance relative to alone (see module doc).

    ``ref`` is the :class:`Solution` of :func:`alone` for ``p``: how much
    longer a request takes on its own host, which sets a latency VM's CPU
    utilisation. ``yardstick`` (default ``ref``) is what performance 1
    means: alone on one host class for the whole cluster
    (:func:`alone` with ``host``), so moving a VM to faster or slower
    hardware shows as the gain or the loss it is.
    """
    yard = ref if yardstick is None else yardstick
    throughput = sol.ips / np.maximum(yard.ips, 1.0)
    stretch = sol.cpi / np.maximum(ref.cpi, 1e-12)
    rho_alone = np.minimum(p.demand, _LAT_RHO_MAX)
    rho = np.minimum(p.demand * stretch / np.maximum(sol.cpu_avail, 1e-9),
                     _LAT_RHO_MAX)
    # Service time against the yardstick's (R = S / (1 - rho), and alone
    # on the yardstick rho is the demand).
    service = sol.cpi / np.maximum(yard.cpi, 1e-12)
    response = service * (1.0 - rho_alone) / (1.0 - rho)
    if p.response_cpu_share is not None:
        c = p.response_cpu_share
        response = (1.0 - c) + c * response
    latency = (1.0 / np.maximum(response, 1e-12)) * (1.0 - p.slowdown)
    perf = np.where(p.latency_metric.astype(bool), latency, throughput)
    return np.where(p.demand > 0, perf, 1.0)

"""The simulator driver: a cluster state that policies observe and change.

:class:`Simulator` holds one scenario's cluster. Time advances in epochs
of ``scenario.epoch_s`` seconds; each :meth:`Simulator.step` solves the
epoch (at its midpoint's CPU demands, with the costs of the migrations
that overlap it) and accumulates every instance's normalised performance,
CPU use and counters. Policies see only :meth:`Simulator.view`, built from
the synthetic counters of the last epoch (of its hosts' last report where
a copy ended within it: :meth:`Simulator._last_report`) through the same
core functions as a real host's report
(:func:`contention.aggregate.derive_metrics`,
:func:`contention.classify.merlin_class`), and change the cluster only
through :meth:`Simulator.apply`. :func:`run` is the whole loop.
"""

import dataclasses
import time
import uuid as uuidlib

import numpy as np

from contention import aggregate
from contention import classify
from contention import cluster
from contention import report
from contention.sim import counters as counters_mod
from contention.sim import hardware
from contention.sim import migration
from contention.sim import placement
from contention.sim import scenario as scenario_mod
from contention.sim import state as state_mod

_NAMESPACE = uuidlib.UUID('0b3f6a52-5f0e-4a57-9d51-3c1f7f2a9e11')
POLICY_NAMESPACE = 'contention.sim.policies'


#: Why the simulator refuses an action (what Nova or libvirt would refuse).
REJECT_REASONS = {
    'unknown_instance': 'the instance is not in the cluster',
    'not_movable': 'the scenario pins the instance',
    'unknown_host': 'the host is not in the cluster',
    'bad_socket': 'the socket is not usable on that host',
    'stale_source': 'the instance is no longer on the action\'s source host',
    'same_host': 'a live migration to the instance\'s own host',
    'cpu_vendor': 'a live migration between hosts of different CPU '
                  'vendors (cluster.live_migratable)',
    'no_room': 'the destination lacks vCPU or RAM room within its '
               'allocation ratios while the instance lands',
    'node_memory': 'a NUMA node would hold more memory than it has',
    'pinned_cpus': 'a node would pin more dedicated vCPUs than it has CPUs',
    'first_leg': 'a swap\'s first migration has no room on its destination '
                 'while the other instance is still there (Nova needs a '
                 'staging host)',
    'bad_quota': 'a CPU quota outside (0, 1]',
    'unknown_action': 'an action type the simulator does not know',
    'no_host_for_arrival': 'no host had room for an arriving instance',
}


@dataclasses.dataclass(frozen=True)
class Rejected:
    """An action the simulator refused, why, and the reason's short kind."""

    action: object
    reason: str
    kind: str = ''


@dataclasses.dataclass(frozen=True)
class ApplyResult:
    applied: tuple = ()
    rejected: tuple = ()
    #: {uuid: seconds until the copies of its moves end} (a live
    #: migration's or a memory move's, still running after the plan).
    copy_s: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class VmResult:
    """One instance over a run (all figures simulated)."""

    uuid: str
    name: str
    profile: str
    host: str
    perf_mean: float
    perf_min: float
    degradation: float


@dataclasses.dataclass(frozen=True)
class RunResult:
    """What :func:`run` measured; every figure is simulated."""

    scenario: str
    policy: str
    seed: int
    epochs: int
    placement: str
    vms: tuple
    #: Mean over VMs of their time-averaged normalised performance.
    perf_mean: float
    perf_min: float
    #: Degradation = 1 - performance; its spread across VMs, max - min,
    #: and the h-spread (inter-quartile range) Merlin reports.
    degradation_spread: float
    degradation_hspread: float
    migrations: int
    vcpu_moves: float
    memory_moves: int
    memory_moved_gib: float
    quota_changes: int
    rejected_actions: int
    #: Merlin section 5.2: sum over applications of their normalised
    #: performance / (CPU used / CPU available), CPU used including the
    #: migration work.
    platform_efficiency: float
    cpu_utilisation: float
    decision_wall_s: float
    solver_wall_s: float
    #: Arrivals the policy's filter stage (:meth:`Policy.filter_hosts`)
    #: left without a host: Nova's NoValidHost, so they were never created
    #: and the performance figures above do not include them. Arrivals
    #: no host had room for count in ``rejected_actions``.
    no_valid_host: int = 0
    #: Arrivals placed after the filter stage removed at least one of the
    #: hosts that fit them (the filter steered them elsewhere).
    filtered_arrivals: int = 0
    simulated: bool = True
    notes: tuple = ()
    #: ``rejected_actions`` by kind, ((kind, count), ...) sorted by kind
    #: (kinds: :data:`REJECT_REASONS`).
    rejected_reasons: tuple = ()
    #: Times the policy's performance model said it was unsure and the
    #: policy decided without it (a neutral host score, a model check
    #: that said nothing): the policy's ``model_abstentions``, 0 for
    #: policies without a model.
    model_abstentions: int = 0
    #: The platform's LLC misses per 1,000 instructions and cycles per
    #: instruction over the run, from every instance's counters (Merlin's
    #: Table 1 metrics; 0 before any instruction).
    l3_mpki: float = 0.0
    cpi: float = 0.0

    def to_dict(self):
        return dataclasses.asdict(self)


def largest_fall(perf, baseline):
    """(key, relative change) of the largest relative fall of one VM.

    ``perf`` and ``baseline`` map VMs (names or uuids) to their
    performance in two runs of one scenario, seed and epochs; a VM absent
    from either, or without a baseline performance, is not compared.
    Issue 19's "no VM falls by more than the harm bound" is read on this
    change; it is the smallest one, positive where every VM gained, and
    ``(None, 0.0)`` where no VM is compared.
    """
    changes = [(perf[k] / baseline[k] - 1.0, k) for k in baseline
               if k in perf and baseline[k] > 0]
    if not changes:
        return None, 0.0
    change, key = min(changes, key=lambda c: (c[0], str(c[1])))
    return key, change


def load_policy(name, **params):
    """A policy object from the ``contention.sim.policies`` namespace."""
    import stevedore
    try:
        mgr = stevedore.DriverManager(POLICY_NAMESPACE, name,
                                      invoke_on_load=True,
                                      invoke_kwds=params)
    except stevedore.exception.NoMatches:
        known = sorted(stevedore.ExtensionManager(POLICY_NAMESPACE).names())
        raise ValueError('unknown policy %r (known: %s)'
                         % (name, ', '.join(known)))
    return mgr.driver


class Simulator(object):
    """One scenario's emulated cluster (see the module docstring).

    :param scenario: a :class:`~contention.sim.scenario.Scenario`, or a
        shipped scenario name or file path.
    :param seed: overrides the scenario's seed.
    :param placement: overrides the scenario's initial placement policy.
    """

    def __init__(self, scenario, seed=None, placement_policy=None):
        if isinstance(scenario, str):
            scenario = scenario_mod.load(scenario)
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else int(seed)
        self.placement = placement_policy or scenario.placement
        if self.placement not in placement.PLACEMENTS:
            raise ValueError('unknown placement %r (known: %s)'
                             % (self.placement,
                                ', '.join(placement.PLACEMENTS)))
        self._rng = np.random.default_rng([self.seed, 0])
        self._noise_rng = np.random.default_rng([self.seed, 1])
        hosts = [state_mod.SimHost(name, None, scenario.hardware[cls])
                 for name, cls in scenario.hosts]
        for host in hosts:
            host.model = hardware.host_model(host.name, host.hw)
        self.state = state_mod.ClusterState(hosts)
        self.epoch = 0
        self.costs = migration.Costs()
        self.running = []
        self.rejected = 0
        #: Rejected actions by kind (:data:`REJECT_REASONS`).
        self.rejected_reasons = {}
        self.no_valid_host = 0
        self.filtered_arrivals = 0
        self._arrived = 0
        self._perf_sum = {}
        self._perf_min = {}
        self._time = {}
        self._cpu_used_s = 0.0
        self._capacity_s = 0.0
        self._cumulative = {}
        self.solver_wall_s = 0.0
        insts = [self._new_instance(spec.name, spec.profile, spec.quota,
                                    spec.movable)
                 for spec in scenario.instances]
        for inst in insts:
            self.state.add(inst)
        placement.initial(self.state, insts, scenario.instances,
                          self.placement, self._rng)
        self._last = None
        self._measure(0.0, self.scenario.epoch_s)

    # -- construction -----------------------------------------------------

    @property
    def now(self):
        return self.epoch * self.scenario.epoch_s

    def _new_instance(self, name, profile_name, quota=1.0, movable=True):
        prof = self.scenario.profiles[profile_name]
        uuid = str(uuidlib.uuid5(_NAMESPACE, '%s/%s' % (self.scenario.name,
                                                        name)))
        offset = (float(self._rng.uniform(0, prof.demand_period))
                  if prof.desync_phases and prof.demand_period else 0.0)
        return state_mod.SimInstance(uuid=uuid, name=name, profile=prof,
                                     quota=quota, phase_offset=offset,
                                     movable=movable)

    # -- solving ----------------------------------------------------------

    def _overheads(self, dt, start=0.0):
        """Per-instance slowdown and per-node extra CPU/traffic of copies.

        Averaged over ``[start, dt]`` of the coming epoch (its whole, by
        default).
        """
        n = len(self.state.instances)
        g = int(self.state._host_arrays()['node_mc_bw'].shape[0])
        slowdown = np.zeros(n)
        extra_cpu = np.zeros(g)
        extra_traffic = np.zeros(g)
        index = {inst.uuid: i for i, inst in enumerate(self.state.instances)}
        for run in self.running:
            share = max(0.0, min(run.remaining_s, dt) - start) / (dt - start)
            if share <= 0:
                continue
            i = index.get(run.uuid)
            if i is not None:
                slowdown[i] = min(0.95, slowdown[i] + run.slowdown * share)
            for node in run.nodes:
                extra_cpu[node] += run.cpu_cores * share
                extra_traffic[node] += run.bytes_per_s * share
        return slowdown, extra_cpu, extra_traffic

    def _solve(self, t, dt, overheads=None):
        """Solve at time ``t``; :attr:`_last` becomes ``dt`` s of counters."""
        start = time.perf_counter()
        if overheads is None:
            p = self.state.problem(t)
        else:
            slowdown, cpu, traffic = overheads
            p = self.state.problem(t, slowdown=slowdown, extra_cpu=cpu,
                                   extra_traffic=traffic)
        sol, perf = self.state.performance(p)
        self.solver_wall_s += time.perf_counter() - start
        counts = counters_mod.deltas(p, sol, dt, self.scenario.noise,
                                     self._noise_rng)
        self._last = dict(problem=p, solution=sol, perf=perf, dt=dt,
                          counters=counts, t=t,
                          uuids=[i.uuid for i in self.state.instances])
        return p, sol, perf, counts

    def _measure(self, t, dt, overheads=None):
        p, sol, perf, counts = self._solve(t, dt, overheads)
        for i, inst in enumerate(self.state.instances):
            cum = self._cumulative.setdefault(inst.uuid, dict.fromkeys(
                counters_mod.NAMES, 0))
            for name in counters_mod.NAMES:
                if name == 'llc_occupancy_bytes':
                    cum[name] = int(counts[name][i])
                else:
                    cum[name] += int(counts[name][i])
        return p, sol, perf

    def step(self):
        """Run one epoch; return {uuid: normalised performance}."""
        dt = self.scenario.epoch_s
        t = self.now + dt / 2.0
        overheads = self._overheads(dt)
        p, sol, perf = self._measure(t, dt, overheads)
        for i, inst in enumerate(self.state.instances):
            self._perf_sum[inst.uuid] = (self._perf_sum.get(inst.uuid, 0.0)
                                         + perf[i] * dt)
            self._time[inst.uuid] = self._time.get(inst.uuid, 0.0) + dt
            self._perf_min[inst.uuid] = min(
                self._perf_min.get(inst.uuid, np.inf), perf[i])
        self._cpu_used_s += (float(sol.cpu_used.sum())
                             + float(overheads[1].sum())) * dt
        self._capacity_s += self._usable_cores() * dt
        self._last_report(t, dt)
        for run in self.running:
            self.costs.migration_seconds += min(run.remaining_s, dt)
            run.remaining_s -= dt
        self.running = [r for r in self.running if r.remaining_s > 1e-9]
        self.epoch += 1
        return {inst.uuid: float(perf[i])
                for i, inst in enumerate(self.state.instances)}

    def _last_report(self, t, dt):
        """What the agents' last reports of the epoch measured, if not all of it.

        Policies see the last report of each host (Watcher's view reads
        the store's latest, ``[agent] interval`` seconds of counters,
        :data:`contention.report.DEFAULT_INTERVAL_S` by default), not an
        epoch's average. They differ
        only where a copy ended within the epoch: the epoch's counters
        average the copy's slowdown in, the last report's show the
        placement the move made, and start after the copy
        (``HostView.measured_since``), so the measured roll-back can judge
        it at the next audit, as it would on a cloud. The epoch's demand
        (at its midpoint) stays; performance accounting keeps the average.
        """
        span = min(dt, report.DEFAULT_INTERVAL_S)
        if span >= dt or not any(r.remaining_s < dt for r in self.running):
            return
        self._solve(t, span, self._overheads(dt, start=dt - span))

    def _usable_cores(self):
        total = 0.0
        for host in self.state.hosts:
            m = host.model
            total += sum(m.cores[i] for i, n in enumerate(m.node_ids)
                         if n not in m.reserved)
        return total

    def measure(self, t, dt):
        """Solve at time ``t`` and add ``dt`` seconds of counters.

        For the agent's sim source, which advances in its own intervals
        rather than in epochs; performance accounting is not touched.
        """
        self._measure(t, dt, self._overheads(dt))

    def cumulative_counters(self, uuid):
        """Counter name -> cumulative int (occupancy: the last gauge)."""
        return dict(self._cumulative.get(uuid, {}))

    def placement_of(self, uuid):
        """vcpu_cpus and memory_mib_per_node of an instance."""
        inst = self.state.by_uuid[uuid]
        host = self.state.hosts[inst.host]
        cpus = self.state.cpu_assignment(inst.host)[uuid]
        return dict(vcpu_cpus=cpus, memory_mib_per_node={
            host.model.node_ids[k]: float(inst.memory_mib * f)
            for k, f in enumerate(inst.mem_frac) if f > 0})

    # -- what policies see -------------------------------------------------

    def performance(self):
        """{uuid: normalised performance} of the last solved interval."""
        last = self._last
        return {u: float(last['perf'][i])
                for i, u in enumerate(last['uuids'])}

    def _records(self, h):
        """InstanceRecords (counters of the last interval) of host h."""
        last = self._last
        host = self.state.hosts[h]
        assigned = self.state.cpu_assignment(h)
        records = []
        for i, uuid in enumerate(last['uuids']):
            inst = self.state.by_uuid[uuid]
            if inst.host != h:
                continue
            counts = report.Counters(**{
                name: int(round(last['counters'][name][i]))
                for name in counters_mod.NAMES})
            records.append(report.InstanceRecord(
                uuid=uuid, name=inst.name, vcpus=inst.vcpus,
                memory_mib=inst.memory_mib, flavor=inst.profile.name,
                image_id=inst.profile.name,
                vcpu_cpus=assigned[uuid],
                memory_mib_per_node={
                    host.model.node_ids[k]: float(inst.memory_mib * frac)
                    for k, frac in enumerate(inst.mem_frac) if frac > 0},
                cpu_quota=inst.quota, counters=counts))
        return records

    def host_reports(self, interval_s=None):
        """One :class:`~contention.report.HostReport` per host (last epoch).

        Built by :func:`contention.aggregate.build_report`, the function
        the agent uses, from the synthetic counters.
        """
        interval = interval_s or self._last['dt']
        stamp = 1.0e9 + self.now
        status = (report.SourceStatus('sim', True, 'simulated'),)
        return [aggregate.build_report(host.name, stamp, interval,
                                       host.model.topology,
                                       self._records(h), sources=status,
                                       nova_cpus=host.model.nova_cpus())
                for h, host in enumerate(self.state.hosts)]

    def view(self):
        """The :class:`~contention.cluster.ClusterView` policies decide on."""
        last = self._last
        hosts = []
        for h, host in enumerate(self.state.hosts):
            m = host.model
            sockets = []
            for s in m.usable_sockets():
                idx = list(m.node_indices_of_socket(s))
                sockets.append(cluster.SocketView(
                    id=s, nodes=tuple(m.node_ids[i] for i in idx),
                    cpus=int((m.cores[idx] * m.threads[idx]).sum()),
                    memory_mib=int(m.memory_mib[idx].sum()),
                    cores=int(m.cores[idx].sum()),
                    llc_kib=int(round(m.l3_bytes[idx].sum() / 1024)),
                    memory_bandwidth_bps=float(m.mc_bw[idx].sum())))
            cpu, mem = placement.host_capacity(self.state, h)
            hosts.append(cluster.HostView(
                name=host.name, sockets=tuple(sockets),
                vcpus_total=int(round(cpu / host.hw.cpu_allocation_ratio)),
                memory_mib_total=int(mem / host.hw.ram_allocation_ratio),
                cpu_allocation_ratio=host.hw.cpu_allocation_ratio,
                ram_allocation_ratio=host.hw.ram_allocation_ratio,
                telemetry_age_s=0.0,
                measured_since=1.0e9 + self.now - last['dt'],
                cpu_vendor=host.hw.cpu_vendor,
                cpu_model=host.hw.cpu_model))
        position = {u: i for i, u in enumerate(last['uuids'])}
        instances = []
        assigned = {}
        for inst in self.state.instances:
            if inst.host not in assigned:
                assigned[inst.host] = self.state.cpu_assignment(inst.host)
            instances.append(self._instance_view(inst, position.get(
                inst.uuid), assigned[inst.host][inst.uuid]))
        return cluster.ClusterView(hosts=tuple(hosts),
                                   instances=tuple(instances),
                                   now=1.0e9 + self.now)

    def _instance_view(self, inst, i, cpus):
        host = self.state.hosts[inst.host]
        topo = host.model.topology
        metrics = report.Metrics()
        occupancy = None
        if i is not None:
            last = self._last
            counts = report.Counters(**{
                name: int(round(last['counters'][name][i]))
                for name in counters_mod.NAMES})
            metrics = aggregate.derive_metrics(
                counts, last['dt'], inst.vcpus,
                cpus,
                {host.model.node_ids[k]: inst.memory_mib * f
                 for k, f in enumerate(inst.mem_frac) if f > 0}, topo)
            occupancy = float(counts.llc_occupancy_bytes)
        return cluster.InstanceView(
            uuid=inst.uuid, host=host.name, vcpus=inst.vcpus,
            memory_mib=inst.memory_mib,
            socket=self.state.socket_of(inst),
            node=self.state.node_of(inst),
            llc_misses_per_s=metrics.llc_misses_per_s, mpki=metrics.mpki,
            mf=metrics.mf, ipc=metrics.ipc, cpu_util=metrics.cpu_util,
            llc_occupancy_bytes=occupancy,
            merlin_class=classify.merlin_class(metrics.mpki, metrics.mf),
            image_id=inst.profile.name, flavor=inst.profile.name,
            movable=inst.movable,
            skip_reason=None if inst.movable else 'not movable (scenario)',
            last_moved_at=inst.last_moved_at, cpu_quota=inst.quota,
            memory_node=self.state.memory_node_of(inst),
            remote_memory_ratio=metrics.remote_memory_ratio,
            latency=inst.profile.metric == 'latency')

    # -- arrivals -----------------------------------------------------------

    def arrive(self, policy, rng):
        """Place this epoch's arrivals: the policy's filter, then its place.

        ``policy.place`` sees only the hosts ``policy.filter_hosts`` passed.
        Returns the decision wall time. ``None`` from the policy, or a host
        that does not fit or did not pass, falls back to Nova's default
        (spread) among the hosts that passed. No host passing is Nova's
        NoValidHost: the instance is not created (:attr:`no_valid_host`).
        """
        spent = 0.0
        for arrival in self.scenario.arrivals:
            if arrival.epoch != self.epoch:
                continue
            for _ in range(arrival.count):
                self._arrived += 1
                inst = self._new_instance('%s-arrival-%d' % (
                    arrival.profile, self._arrived), arrival.profile,
                    arrival.quota)
                names = [self.state.hosts[h].name
                         for h in range(len(self.state.hosts))
                         if placement.fits(self.state, h, inst)]
                if not names:
                    self._count_rejected('no_host_for_arrival')
                    continue
                pending = cluster.InstanceView(
                    uuid=inst.uuid, host='', vcpus=inst.vcpus,
                    memory_mib=inst.memory_mib, image_id=inst.profile.name,
                    flavor=inst.profile.name, cpu_quota=inst.quota)
                view = self.view()
                start = time.perf_counter()
                allowed = set(policy.filter_hosts(pending, view,
                                                  tuple(names)))
                passed = tuple(n for n in names if n in allowed)
                chosen = (policy.place(pending, view, passed, rng)
                          if passed else None)
                spent += time.perf_counter() - start
                if not passed:
                    self.no_valid_host += 1
                    continue
                if len(passed) < len(names):
                    self.filtered_arrivals += 1
                if chosen in passed:
                    h = self.state.host_index[chosen]
                else:
                    h = placement.nova_host(
                        self.state, inst,
                        [self.state.host_index[n] for n in passed])
                placement.place_default(self.state, inst, h)
                self.state.add(inst)
        return spent

    # -- actions --------------------------------------------------------------

    def audit(self, policy, rng):
        """One audit period: ``policy``'s plan for the view, carried out.

        The policy is then told what ran and what was refused
        (:meth:`contention.policy.Policy.applied`), as Watcher's actions
        record their outcome. Returns (plan, :class:`ApplyResult`, the
        seconds the policy spent deciding).
        """
        view = self.view()
        start = time.perf_counter()
        plan = policy.rebalance(view, rng)
        spent = time.perf_counter() - start
        outcome = self.apply(plan)
        policy.applied(plan, outcome, view.now)
        return plan, outcome, spent

    def apply(self, plan):
        """Carry out a :class:`~contention.cluster.Plan`, in order.

        Each action is checked (instance known and movable, source host
        right, destination capacity within Nova's allocation ratios, node
        memory); a failed check rejects that action only (a Swap as a
        whole) and is counted. Costs go to :attr:`costs`.
        """
        applied, rejected = [], []
        for action in plan.actions:
            refused = self.attempt(action)
            if refused is None:
                applied.append(action)
            else:
                rejected.append(refused)
        copy_s = {}
        for run in self.running:
            copy_s[run.uuid] = max(run.remaining_s, copy_s.get(run.uuid, 0.0))
        return ApplyResult(tuple(applied), tuple(rejected), copy_s)

    def attempt(self, action):
        """Carry out one action as :meth:`apply` does; its refusal or None.

        For a planner trying a long plan action by action on
        :meth:`scratch`: :meth:`apply`'s copy times cover every copy still
        running, so a plan tried one action at a time through it costs the
        square of its length.
        """
        try:
            self._apply(action)
        except _Refused as exc:
            self._count_rejected(exc.kind)
            return Rejected(action, str(exc), exc.kind)
        return None

    def dry_run(self, plan):
        """What :meth:`apply` would accept and refuse, changing nothing.

        The plan runs, action by action, on :meth:`scratch`, so a policy
        that plans with ground truth (the oracle) can emit only what the
        simulator accepts.
        """
        return self.scratch().apply(plan)

    def scratch(self):
        """A copy of the cluster's placement that actions can be tried on.

        Placements and capacity only (no costs that matter, no counters,
        no performance); :meth:`apply` on it checks exactly as here.
        """
        scratch = object.__new__(Simulator)
        scratch.scenario = self.scenario
        scratch.epoch = self.epoch
        scratch.costs = migration.Costs()
        scratch.running = []
        scratch.rejected = 0
        scratch.rejected_reasons = {}
        scratch.state = state_mod.ClusterState(self.state.hosts)
        for inst in self.state.instances:
            scratch.state.add(dataclasses.replace(inst))
        return scratch

    def _count_rejected(self, kind):
        self.rejected += 1
        self.rejected_reasons[kind] = self.rejected_reasons.get(kind, 0) + 1

    def _inst(self, uuid):
        inst = self.state.by_uuid.get(uuid)
        if inst is None:
            raise _Refused('unknown_instance',
                           'instance %s is not in the cluster' % uuid)
        if not inst.movable:
            raise _Refused('not_movable', 'instance %s is not movable' % uuid)
        return inst

    def _host(self, name):
        if name not in self.state.host_index:
            raise _Refused('unknown_host', 'host %s is not in the cluster' % name)
        return self.state.host_index[name]

    def _socket(self, h, socket, inst):
        usable = self.state.hosts[h].model.usable_sockets()
        if socket is None:
            return placement.choose_socket(self.state, h, inst)
        if socket not in usable:
            raise _Refused('bad_socket',
                           'socket %s of %s is not usable (usable: %s)'
                           % (socket, self.state.hosts[h].name,
                              list(usable)))
        return socket

    def _check(self, h):
        cpu, mem = placement.host_free(self.state, h)
        name = self.state.hosts[h].name
        if cpu < -1e-9 or mem < -1e-9:
            raise _Refused('no_room', '%s would be over capacity (%.0f vCPUs, '
                           '%.0f MiB '
                           'free)' % (name, cpu, mem))
        model = self.state.hosts[h].model
        used = self.state.memory_on_nodes(h)
        limit = model.memory_mib * self.state.hosts[h].hw.ram_allocation_ratio
        over = np.nonzero(used > limit + 1e-6)[0]
        pinned = self.state.pinned_on_nodes(h)
        cpus = model.cores * model.threads
        short = np.nonzero(pinned > cpus + 1e-6)[0]
        if len(short):
            raise _Refused('pinned_cpus', 'node %d of %s would pin %.0f '
                           'dedicated vCPUs on %.0f CPUs'
                           % (model.node_ids[short[0]], name,
                              pinned[short[0]], cpus[short[0]]))
        if len(over):
            raise _Refused('node_memory',
                           'node %d of %s would hold %.0f MiB of %.0f'
                           % (model.node_ids[over[0]], name,
                              used[over[0]], limit[over[0]]))

    def _snapshot(self, insts):
        return [(i, i.host, i.vcpu_frac, i.mem_frac, i.last_moved_at)
                for i in insts]

    def _restore(self, snap):
        for i, host, vf, mf, moved in snap:
            self.state.set_host(i, host)
            i.vcpu_frac, i.mem_frac = vf, mf
            i.last_moved_at = moved

    def _apply(self, action):
        if isinstance(action, cluster.Swap):
            # Nova runs a swap as two live migrations, one after the
            # other: the first lands while the second instance is still on
            # its destination, so it needs room there; the second leaves
            # only once the first has landed, and undoing the first when
            # the second fails restores the cluster.
            a = self._inst(action.first.instance)
            b = self._inst(action.second.instance)
            snap = self._snapshot([a, b])
            running = list(self.running)
            costs = dataclasses.replace(self.costs)
            try:
                self._migrate(action.first, check=True)
            except _Refused as exc:
                if exc.kind in ('no_room', 'node_memory', 'pinned_cpus'):
                    raise _Refused('first_leg', 'first leg: %s' % exc)
                raise
            try:
                self._migrate(action.second, check=True)
            except _Refused as exc:
                self._restore(snap)
                self.running = running
                self.costs = costs
                raise _Refused(exc.kind, 'second leg: %s' % exc)
        elif isinstance(action, cluster.Migrate):
            self._migrate(action, check=True)
        elif isinstance(action, cluster.Repin):
            self._repin(action)
        elif isinstance(action, cluster.CpuQuota):
            inst = self._inst(action.instance)
            if not 0 < action.quota <= 1:
                raise _Refused('bad_quota',
                               'quota %r is not in (0, 1]' % action.quota)
            if inst.quota != action.quota:
                inst.quota = float(action.quota)
                self.costs.quota_changes += 1
        else:
            raise _Refused('unknown_action', 'unknown action %r' % (action,))

    def _migrate(self, action, check):
        inst = self._inst(action.instance)
        src = self._host(action.source_host)
        if inst.host != src:
            raise _Refused('stale_source', '%s is on %s, not %s' % (
                inst.uuid, self.state.hosts[inst.host].name,
                action.source_host))
        dst = self._host(action.dest_host)
        if dst == src:
            raise _Refused('same_host',
                           'migration of %s to its own host' % inst.uuid)
        vendors = (self.state.hosts[src].hw.cpu_vendor,
                   self.state.hosts[dst].hw.cpu_vendor)
        if not cluster.live_migratable(*vendors):
            raise _Refused('cpu_vendor', 'migration of %s from an %s host '
                           'to an %s one' % ((inst.uuid,) + vendors))
        snap = self._snapshot([inst])
        src_nodes = self._gids(src, inst.mem_frac)
        spread = (placement.floating_spread(self.state, dst, inst)
                  if action.dest_socket is None else None)
        if spread is None:
            self.state.place(inst, dst,
                             self._socket(dst, action.dest_socket, inst))
        else:
            self.state.set_host(inst, dst)
            inst.vcpu_frac, inst.mem_frac = spread, spread.copy()
        if check:
            try:
                self._check(dst)
            except _Refused:
                self._restore(snap)
                raise
        inst.last_moved_at = 1.0e9 + self.now
        transfer = migration.live_migration(
            inst.memory_mib, inst.profile.dirty_mib_s,
            self.scenario.migration)
        self._start(inst, 'live', src_nodes + self._gids(dst, inst.mem_frac),
                    transfer, self.scenario.migration.slowdown)
        self.costs.migrations += 1
        self.costs.unconverged_migrations += not transfer.converged

    def _repin(self, action):
        inst = self._inst(action.instance)
        h = self._host(action.host)
        if inst.host != h:
            raise _Refused('stale_source',
                           '%s is not on %s' % (inst.uuid, action.host))
        socket = self._socket(h, action.dest_socket, inst)
        snap = self._snapshot([inst])
        before_v, before_m = inst.vcpu_frac, inst.mem_frac
        new_v = self.state.spread(h, socket, inst)
        inst.vcpu_frac = new_v
        if action.move_memory:
            inst.mem_frac = new_v.copy()
        try:
            self._check(h)
        except _Refused:
            self._restore(snap)
            raise
        moved_v = 0.5 * np.abs(new_v - before_v).sum() * inst.vcpus
        self.costs.vcpu_moves += float(moved_v)
        self.costs.vcpu_move_cpu_s += (float(moved_v) * 1e-6
                                       * self.scenario.migration.vcpu_move_us)
        moved_m = 0.5 * np.abs(inst.mem_frac - before_m).sum()
        if moved_m > 1e-9:
            mib = inst.memory_mib * moved_m
            transfer = migration.memory_move(mib, self.scenario.migration)
            self._start(inst, 'memory', self._gids(h, before_m)
                        + self._gids(h, inst.mem_frac), transfer,
                        self.scenario.migration.memory_move_slowdown)
            self.costs.memory_moves += 1
        # A re-pin does not set last_moved_at here: the simulator's view
        # shows the last live migration, and the policy's move log (like
        # Watcher's store, where contention_repin records every re-pin)
        # holds the re-pin for the cool-down (contention.swap.audit).

    def _gids(self, h, frac):
        off = self.state.node_offset(h)
        return tuple(off + k for k, f in enumerate(frac) if f > 0)

    def _start(self, inst, kind, nodes, transfer, slowdown):
        # Both sides (reader and writer) pay the copy's rate and CPU,
        # split evenly over the nodes involved.
        duration = max(transfer.duration_s, 1e-3)
        nodes = tuple(dict.fromkeys(nodes))
        sides = 2.0 / max(len(nodes), 1)
        self.running.append(migration.Running(
            uuid=inst.uuid, kind=kind, nodes=nodes, remaining_s=duration,
            bytes_per_s=transfer.transferred_mib * 1048576.0 / duration
            * sides,
            slowdown=slowdown,
            cpu_cores=self.scenario.migration.cpu_cores * sides))
        self.costs.memory_moved_gib += transfer.transferred_mib / 1024.0

    # -- results -----------------------------------------------------------

    def result(self, policy_name, decision_wall_s, notes=(),
               model_abstentions=0):
        """The :class:`RunResult` of the epochs run so far."""
        vms = []
        for inst in self.state.instances:
            t = self._time.get(inst.uuid, 0.0)
            if t <= 0:
                continue
            mean = self._perf_sum[inst.uuid] / t
            vms.append(VmResult(
                uuid=inst.uuid, name=inst.name, profile=inst.profile.name,
                host=self.state.hosts[inst.host].name,
                perf_mean=float(mean),
                perf_min=float(self._perf_min[inst.uuid]),
                degradation=float(1.0 - mean)))
        perfs = np.array([v.perf_mean for v in vms]) if vms else np.ones(1)
        deg = 1.0 - perfs
        by_app = {}
        for v in vms:
            by_app.setdefault(v.profile, []).append(v.perf_mean)
        util = ((self._cpu_used_s + self.costs.vcpu_move_cpu_s)
                / self._capacity_s
                if self._capacity_s else 0.0)
        pe = (sum(float(np.mean(p)) for p in by_app.values()) / util
              if util > 0 else 0.0)
        q75, q25 = np.percentile(deg, [75, 25])
        counted = self._cumulative.values()
        instructions = sum(c['instructions'] for c in counted)
        per_instruction = 1.0 / instructions if instructions else 0.0
        return RunResult(
            scenario=self.scenario.name, policy=policy_name, seed=self.seed,
            epochs=self.epoch, placement=self.placement, vms=tuple(vms),
            perf_mean=float(perfs.mean()),
            perf_min=float(min(v.perf_min for v in vms) if vms else 1.0),
            degradation_spread=float(deg.max() - deg.min()),
            degradation_hspread=float(q75 - q25),
            migrations=self.costs.migrations,
            vcpu_moves=float(self.costs.vcpu_moves),
            memory_moves=self.costs.memory_moves,
            memory_moved_gib=float(self.costs.memory_moved_gib),
            quota_changes=self.costs.quota_changes,
            rejected_actions=self.rejected,
            platform_efficiency=float(pe), cpu_utilisation=float(util),
            decision_wall_s=float(decision_wall_s),
            solver_wall_s=float(self.solver_wall_s),
            no_valid_host=self.no_valid_host,
            filtered_arrivals=self.filtered_arrivals, notes=tuple(notes),
            rejected_reasons=tuple(sorted(self.rejected_reasons.items())),
            model_abstentions=int(model_abstentions),
            l3_mpki=1000.0 * per_instruction * sum(c['cache_misses']
                                                   for c in counted),
            cpi=per_instruction * sum(c['cycles'] for c in counted))


class _Refused(Exception):
    """An action the emulated cluster cannot run; the message says why.

    ``kind`` is the short reason counted in ``RunResult.rejected_reasons``
    (:data:`REJECT_REASONS`).
    """

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def run(scenario, policy, epochs=None, seed=None, placement_policy=None):
    """Run ``scenario`` under ``policy``; return a :class:`RunResult`.

    ``scenario``: a Scenario, shipped name or path; ``policy``: a Policy
    or an entry-point name in ``contention.sim.policies``.
    """
    if isinstance(scenario, str):
        scenario = scenario_mod.load(scenario)
    name = policy if isinstance(policy, str) else (
        policy.name or type(policy).__name__)
    if isinstance(policy, str):
        policy = load_policy(policy)
    sim = Simulator(scenario, seed=seed, placement_policy=placement_policy)
    policy.bind(sim)
    rng = np.random.default_rng([sim.seed, 2])
    epochs = scenario.epochs if epochs is None else int(epochs)
    spent = 0.0
    notes = []
    for _ in range(epochs):
        spent += sim.arrive(policy, rng)
        if sim.epoch % scenario.audit_every == 0:
            plan, outcome, decided = sim.audit(policy, rng)
            spent += decided
            for rej in outcome.rejected:
                notes.append('epoch %d: rejected %s: %s'
                             % (sim.epoch, type(rej.action).__name__,
                                rej.reason))
            if plan.reason and not plan.actions and sim.epoch == 0:
                notes.append(plan.reason)
        sim.step()
    notes.extend(getattr(policy, 'notes', ()))
    return sim.result(name, spent, tuple(dict.fromkeys(notes)),
                      getattr(policy, 'model_abstentions', 0))

"""The agent's ``sim`` counter source: an emulated host, real reports.

With ``[agent] sources = sim`` the agent runs its ordinary collection loop
(:mod:`compute_agent.loop`) on one host of a simulator scenario: this
source reports that host's topology (generated from the scenario's
hardware class), its instances with their vCPU and memory placement, and
cumulative counters that grow by what the contention solver computes for
each interval (:mod:`contention.sim.counters`). The loop turns them into
deltas and a :class:`~contention.report.HostReport` exactly as for a real
host, so the collector, the store, the weigher and the strategies can run
end to end without hardware. Its status reason says ``simulated``.

Options are in the ``[sim]`` group (:mod:`contention.sim.opts`).
"""

import dataclasses
import threading

from compute_agent.sources import base
from contention import cluster
from contention.sim import opts
from contention.sim import scenario as scenario_mod
from contention.sim import simulator


class EmulatedClock(object):
    """Runs a simulator along the agent's clock.

    Each collection measures the interval since the one before, at its
    midpoint, so the counters an emulated source reports cover exactly
    the interval the collection loop divides them by.
    """

    def __init__(self):
        self.start = None
        self.last = None

    def step(self, sim, now):
        if self.start is None:
            self.start = now
        t = now - self.start
        dt = now - self.last if self.last is not None else 0.0
        self.last = now
        if dt > 0:
            sim.measure(t - dt / 2.0, dt)


def act_on(sim, sim_uuid, action):
    """Apply a local ``action`` to instance ``sim_uuid`` of ``sim``.

    Through :meth:`contention.sim.simulator.Simulator.apply`, the one way
    the simulator carries out an action (its capacity checks and the cost
    of moving memory included). Returns what now holds, as
    :meth:`base.Source.act` says; raises ValueError if refused.
    """
    inst = sim.state.by_uuid[sim_uuid]
    before = (inst.vcpu_frac.copy(), inst.mem_frac.copy(), inst.quota)
    outcome = sim.apply(cluster.Plan(actions=(dataclasses.replace(
        action, instance=sim_uuid, host=sim.state.hosts[inst.host].name),)))
    if outcome.rejected:
        raise ValueError('the emulated host refused: %s'
                         % outcome.rejected[0].reason)
    node_ids = sim.state.hosts[inst.host].model.node_ids

    def nodes(frac):
        return [node_ids[k] for k, f in enumerate(frac) if f > 0]
    changed = (any(before[0] != inst.vcpu_frac)
               or any(before[1] != inst.mem_frac)
               or before[2] != inst.quota)
    return {'changed': bool(changed), 'vcpu_nodes': nodes(inst.vcpu_frac),
            'memory_nodes': nodes(inst.mem_frac), 'quota': inst.quota}


class SimSource(base.Source):
    name = 'sim'
    emulates_host = True

    def __init__(self):
        self.sim = None
        self._host = None
        self._clock = EmulatedClock()
        self._error = None
        #: collect() steps the simulator, act() changes its placement.
        self._lock = threading.Lock()

    def open(self, conf):
        opts.register_opts(conf)
        sim_conf = conf.sim
        try:
            scen = scenario_mod.load(sim_conf.scenario)
            if sim_conf.noise is not None:
                scen = dataclasses.replace(scen, noise=sim_conf.noise)
            self.sim = simulator.Simulator(
                scen, seed=sim_conf.seed,
                placement_policy=sim_conf.placement)
        except (ValueError, OSError) as exc:
            self._error = '[sim] scenario: %s' % exc
            return
        names = [h.name for h in self.sim.state.hosts]
        wanted = sim_conf.host
        if wanted is None:
            agent_host = getattr(getattr(conf, 'agent', None), 'host', None)
            wanted = agent_host if agent_host in names else names[0]
        if wanted not in names:
            self._error = ('[sim] host: %s is not a host of scenario %s '
                           '(hosts: %s)' % (wanted, scen.name,
                                            ', '.join(names)))
            return
        self._host = self.sim.state.host_index[wanted]

    def act(self, action):
        if self._error or self.sim is None:
            raise ValueError(self._error or 'the sim source is not open')
        with self._lock:
            inst = self.sim.state.by_uuid.get(action.instance)
            if inst is None or inst.host != self._host:
                raise ValueError('instance %s is not on host %s'
                                 % (action.instance, action.host))
            return act_on(self.sim, inst.uuid, action)

    def collect(self, now):
        if self._error or self.sim is None:
            return self.unavailable(self._error or 'not opened')
        with self._lock:
            return self._collect(now)

    def _collect(self, now):
        self._clock.step(self.sim, now)
        host = self.sim.state.hosts[self._host]
        samples = []
        for inst in self.sim.state.on_host(self._host):
            placed = self.sim.placement_of(inst.uuid)
            samples.append(base.InstanceSample(
                uuid=inst.uuid, name=inst.name, vcpus=inst.vcpus,
                memory_mib=inst.memory_mib, flavor=inst.profile.name,
                image_id=inst.profile.name, cpu_policy='shared',
                vcpu_cpus=placed['vcpu_cpus'],
                memory_mib_per_node=placed['memory_mib_per_node'],
                cpu_quota=inst.quota,
                counters=self.sim.cumulative_counters(inst.uuid),
                incarnation='sim-%d' % self.sim.seed))
        sample = self.available(topology=host.model.topology,
                                instances=tuple(samples), read_at=now)
        return dataclasses.replace(sample, status=dataclasses.replace(
            sample.status, reason='simulated'))

"""The simulator as a source of training data for the placement models.

``contention.placement.datasets.simulator_source`` calls
:func:`training_source` (the hook it names in ``SIMULATOR_HOOK``), which
returns, for a scenario:

* the :class:`~contention.topology.HostTopology` of the scenario's main
  hardware class (the class most of its hosts have; the first on a tie),
  built by :func:`contention.sim.hardware.build_topology` as the simulator
  builds every host;
* one :class:`~contention.placement.datasets.Workload` per profile the
  scenario knows (its own and its profile library's). A workload's
  profile (L3 MPKI, Memory Factor, IPC) is what the simulator's synthetic
  counters (:func:`contention.sim.counters.deltas`) say when it runs
  alone as the solver's reference run (:func:`contention.sim.solver.
  alone`), through the same arithmetic a real host's report uses;
* a :data:`~contention.placement.datasets.PerformanceSource`: a pure,
  deterministic function of a ``Trial``, answered by the simulator's own
  solver (:func:`contention.sim.solver.solve`) on a one-host cluster
  state (:class:`contention.sim.state.ClusterState`), never by a copy of
  the model.

How a trial becomes a solver problem (decisions the contract leaves
open; also in ``doc/nova.md``):

* the workload's vCPUs and memory are spread evenly over ``trial.nodes``
  (memory local to the vCPUs); each co-runner likewise over its nodes;
* ``trial.cores`` below the vCPU count (SMT siblings shared) confines the
  node's physical cores available on each of the workload's nodes to
  ``cores / len(nodes)`` plus what its co-runners there ask for (the
  solver pools a node's CPUs, so this is the closest it can express);
* a profile whose CPU demand has phases uses its time-weighted mean
  demand, so the answer does not depend on a clock;
* performance is the solver's normalised performance
  (:func:`contention.sim.solver.normalised_performance`, relative to the
  workload alone on its own node) divided by the best the workload
  reaches alone, on its own node or spread over the first 1..N nodes of
  the host, and capped at 1: "relative to running alone in its best
  placement";
* a co-runner's ratio is its normalised performance with the workload
  divided by without it.

contention.sim imports from contention.placement only the ``datasets``
dataclasses it must return (lazily), so the dependency stays one-way.
"""

import collections
import functools

import numpy as np

from contention.sim import counters as counters_mod
from contention.sim import hardware
from contention.sim import scenario as scenario_mod
from contention.sim import solver
from contention.sim import state


def main_hardware(scen):
    """(hardware class name, HardwareClass) most of the hosts have."""
    counts = collections.Counter(cls for _, cls in scen.hosts)
    best = max(counts.values())
    name = next(cls for _, cls in scen.hosts if counts[cls] == best)
    return name, scen.hardware[name]


def mean_demand(profile):
    """The profile's CPU demand averaged over its phase cycle."""
    period = profile.demand_period
    if period <= 0:
        return profile.demand_at(0.0)
    return sum(d * v for d, v in profile.cpu_demand.phases) / period


class _Host(object):
    """One host of a hardware class, and solver runs on it."""

    def __init__(self, hw):
        self.hw = hw
        self.model = hardware.host_model('training-host', hw)
        self.topology = self.model.topology
        self.index = {n: i for i, n in enumerate(self.model.node_ids)}

    def frac(self, nodes):
        vec = np.zeros(self.model.n_nodes)
        for node in nodes:
            vec[self.index[node]] = 1.0 / len(nodes)
        return vec

    def problem(self, placed, cores_cap=None):
        """Solver arrays for [(profile, nodes)] on an otherwise idle host.

        ``cores_cap``: {node index: physical cores available} overriding
        the node's own count where it is smaller.
        """
        cs = state.ClusterState([state.SimHost('training-host',
                                               self.model, self.hw)])
        for k, (prof, nodes) in enumerate(placed):
            inst = state.SimInstance('t%d' % k, 't%d' % k, prof, host=0)
            cs.add(inst)
            inst.vcpu_frac = self.frac(nodes)
            inst.mem_frac = inst.vcpu_frac.copy()
        p = cs.problem(0.0)
        p.demand = np.array([mean_demand(prof) for prof, _ in placed],
                            dtype=float)
        if cores_cap:
            p.node_cores = p.node_cores.copy()
            for idx, cap in cores_cap.items():
                p.node_cores[idx] = max(min(p.node_cores[idx], cap), 1e-3)
        return p

    def solve(self, placed, cores_cap=None):
        """(normalised performance array, problem, solution, alone ref)."""
        p = self.problem(placed, cores_cap)
        ref = solver.solve(solver.alone(p))
        p.cpi_ref = ref.cpi
        sol = solver.solve(p)
        return solver.normalised_performance(p, sol, ref), p, sol, ref


def measured_profile(host, prof):
    """(mpki, mf, ipc) from synthetic counters of ``prof`` running alone."""
    p = solver.alone(host.problem([(prof, host.model.node_ids[:1])]))
    p.demand = np.array([mean_demand(prof)])
    sol = solver.solve(p)
    c = counters_mod.deltas(p, sol, dt=1.0)
    instructions = float(c['instructions'][0])
    refs = float(c['cache_references'][0])
    misses = float(c['cache_misses'][0])
    cycles = float(c['cycles'][0])
    mpki = 1000.0 * misses / instructions if instructions > 0 else 0.0
    mf = misses / refs if refs > 0 else 0.0
    ipc = instructions / cycles if cycles > 0 else 0.0
    return mpki, mf, ipc


class SimulatorPerformance(object):
    """A deterministic PerformanceSource backed by the solver (see module).

    Answers are memoised per trial (trials are frozen dataclasses), so
    asking twice costs one solve.
    """

    def __init__(self, hw, profiles):
        self.host = _Host(hw)
        self.profiles = dict(profiles)
        self._best = {}
        self.solves = 0

    def _profile(self, workload):
        try:
            return self.profiles[workload.name]
        except KeyError:
            raise ValueError('workload %r is not a profile of this '
                             'simulator source (known: %s)'
                             % (workload.name,
                                ', '.join(sorted(self.profiles))))

    def best_alone(self, name):
        """The best normalised performance of a profile alone on the host.

        Over its own node (the solver's reference, 1.0) and an even spread
        over the first k usable nodes, k = 1..N.
        """
        if name not in self._best:
            prof = self.profiles[name]
            nodes = self.host.model.node_ids
            best = 1.0
            for k in range(1, len(nodes) + 1):
                perf = self.host.solve([(prof, nodes[:k])])[0]
                self.solves += 1
                best = max(best, float(perf[0]))
            self._best[name] = best
        return self._best[name]

    def _cap(self, trial, prof):
        if trial.cores >= prof.vcpus:
            return None
        cap = {}
        per_node = float(trial.cores) / len(trial.nodes)
        for node in trial.nodes:
            co = sum(c.vcpus / len(c.nodes) for c in trial.corunners
                     if node in c.nodes)
            cap[self.host.index[node]] = per_node + co
        return cap

    def __call__(self, trial):
        return self._answer(trial)

    @functools.lru_cache(maxsize=4096)
    def _answer(self, trial):
        from contention.placement import datasets
        prof = self._profile(trial.workload)
        if not trial.nodes:
            raise ValueError('trial for %r names no NUMA node'
                             % trial.workload.name)
        others = [(self._profile(c.workload), tuple(sorted(c.nodes)))
                  for c in trial.corunners]
        cap = self._cap(trial, prof)
        perf = self.host.solve([(prof, tuple(sorted(trial.nodes)))]
                               + others, cap)[0]
        self.solves += 1
        own = min(1.0, float(perf[0]) / self.best_alone(prof.name))
        ratios = ()
        if others:
            without = self.host.solve(others, cap)[0]
            self.solves += 1
            ratios = tuple(float(w) / max(float(wo), 1e-12)
                           for w, wo in zip(perf[1:], without))
        return datasets.Outcome(performance=own,
                                corunner_performance=ratios)


def training_source(scenario):
    """(HostTopology, [Workload], PerformanceSource) for a scenario.

    ``scenario``: a :class:`~contention.sim.scenario.Scenario`, a shipped
    scenario name or a YAML path. See the module docstring.
    """
    from contention.placement import datasets
    from contention.placement import features
    scen = (scenario if isinstance(scenario, scenario_mod.Scenario)
            else scenario_mod.load(scenario))
    _, hw = main_hardware(scen)
    source = SimulatorPerformance(hw, scen.profiles)
    workloads = []
    for name in sorted(scen.profiles):
        prof = scen.profiles[name]
        if prof.vcpus > source.host.model.cores.max() * max(
                1, hw.threads_per_core):
            continue        # cannot land on one node: not a trial subject
        mpki, mf, ipc = measured_profile(source.host, prof)
        workloads.append(datasets.Workload(name, features.InstanceProfile(
            mpki=mpki, mf=mf, ipc=ipc, vcpus=int(prof.vcpus),
            memory_mib=int(prof.memory_mib), source='sim')))
    return source.host.topology, workloads, source

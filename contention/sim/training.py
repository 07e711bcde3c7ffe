"""The simulator as a source of training data for the placement models.

Training from the simulator is a simulator feature: the simulator sits
above the performance model and calls it (:func:`sim_dataset`,
:func:`train_from_sim`, through
:func:`contention.perfmodel.train.train_bundle`); the model never names
the simulator. :func:`training_source` returns, for a scenario:

* the :class:`~contention.topology.HostTopology` of the scenario's main
  hardware class (the class most of its hosts have; the first on a tie),
  built by :func:`contention.sim.hardware.build_topology` as the simulator
  builds every host;
* one :class:`~contention.perfmodel.datasets.Workload` per profile the
  scenario knows (its own and its profile library's). A workload's
  profile (L3 MPKI, Memory Factor, IPC) is what the simulator's synthetic
  counters (:func:`contention.sim.counters.deltas`) say when it runs
  alone as the solver's reference run (:func:`contention.sim.solver.
  alone`), through the same arithmetic a real host's report uses;
* a :data:`~contention.perfmodel.datasets.PerformanceSource`: a pure,
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
  reaches alone, on its own node or spread over the first k nodes of
  the host for every k that divides its vCPUs (the spreads Nova can
  give it), and capped at 1: "relative to running alone in its best
  placement";
* a co-runner's ratio is its normalised performance with the workload
  divided by without it;
* the co-runners' memory bandwidth is their DRAM traffic on the
  workload's nodes without it (each co-runner's share by its vCPUs
  there), what the host's report (resctrl MBM) shows before the
  workload lands, so a model trained here reads a report's
  bandwidth on the scale it was trained on;
* a workload's ``cpu_util`` is what its synthetic counters show alone
  (CPU time over vCPUs x wall time), and ``latency`` is its profile's
  ``metric: latency`` (what an operator would declare);
* its ``mf_small_llc`` is the Memory Factor its synthetic counters show
  alone with :data:`~contention.perfmodel.features.SMALL_LLC_FRACTION`
  of its node's LLC (what offline profiling under a resctrl CAT
  allocation would measure; :func:`small_llc_mf`).

Synthetic training profiles (:func:`synthetic_profiles`) are seeded
random draws over the ranges of the simulator's profile parameters, a
simulated counterpart of a microbenchmark suite: they add trial subjects
that fill the profile space between the few named workloads. They are
never held out or scored, and never chosen as co-runners.

contention.sim imports contention.perfmodel, never the other way round
(``tests/unit/contention/sim/test_training.py`` checks it).
"""

import collections
import functools
import os

import numpy as np

from contention.perfmodel import datasets
from contention.perfmodel import features
from contention.perfmodel import train
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


def measured_profile(host, prof, with_util=False):
    """(mpki, mf, ipc) from synthetic counters of ``prof`` running alone.

    ``with_util``: also its ``cpu_util`` (CPU time / (vCPUs x wall time)).
    """
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
    if with_util:
        util = float(c['cpu_time_ns'][0]) / 1e9 / float(prof.vcpus)
        return mpki, mf, ipc, min(1.0, max(0.0, util))
    return mpki, mf, ipc


def small_llc_mf(host, prof, fraction):
    """The Memory Factor of ``prof`` alone with ``fraction`` of the LLC.

    The run of :func:`measured_profile` with the node's LLC capacity
    scaled by ``fraction``, as a CAT allocation confines a VM to a share
    of the cache ways; nothing else of the host changes.
    """
    p = solver.alone(host.problem([(prof, host.model.node_ids[:1])]))
    p.demand = np.array([mean_demand(prof)])
    p.node_l3 = p.node_l3 * float(fraction)
    c = counters_mod.deltas(p, solver.solve(p), dt=1.0)
    refs = float(c['cache_references'][0])
    return float(c['cache_misses'][0]) / refs if refs > 0 else 0.0


class SimulatorPerformance(object):
    """A deterministic PerformanceSource backed by the solver (see module).

    Answers are memoised per trial (trials are frozen dataclasses), so
    asking twice costs one solve; and solver runs are memoised per set of
    placed profiles (names and nodes) and core cap, so trials that share
    a sub-problem (the co-runners alone, a profile alone) solve it once.
    The solver is deterministic: memoising changes no answer.
    """

    def __init__(self, hw, profiles):
        self.host = _Host(hw)
        self.profiles = dict(profiles)
        #: The scenario's own profiles (see :func:`training_source`).
        self.own = frozenset(self.profiles)
        #: Synthetic training profiles (subjects only).
        self.synthetic = frozenset()
        self._best = {}
        self._solved = {}
        self.solves = 0

    def _profile(self, workload):
        try:
            return self.profiles[workload.name]
        except KeyError:
            raise ValueError('workload %r is not a profile of this '
                             'simulator source (known: %s)'
                             % (workload.name,
                                ', '.join(sorted(self.profiles))))

    def _solve(self, placed, cap=None):
        """Normalised performance of ``placed`` [(profile, nodes)]."""
        return self._solution(placed, cap)[0]

    def _solution(self, placed, cap=None):
        """(normalised performance, DRAM bytes/s) arrays of ``placed``."""
        key = (tuple((prof.name, tuple(nodes)) for prof, nodes in placed),
               None if cap is None else tuple(sorted(cap.items())))
        solved = self._solved.get(key)
        if solved is None:
            perf, _, sol, _ = self.host.solve(placed, cap)
            traffic = np.array(sol.bytes_total_per_s, dtype=float)
            perf.setflags(write=False)
            traffic.setflags(write=False)
            solved = self._solved[key] = (perf, traffic)
            self.solves += 1
        return solved

    def best_alone(self, name):
        """The best normalised performance of a profile alone on the host.

        Over its own node (the solver's reference, 1.0) and an even spread
        over the first k usable nodes, for every k of 1..N that divides
        its vCPUs: the balanced placements of the placement-model paper's
        Algorithm 1 (:func:`contention.perfmodel.concerns.possible_scores`),
        and the only spreads Nova gives a flavor (``hw:numa_nodes`` must
        divide the vCPUs, ``ImageNUMATopologyAsymmetric``). A 1-vCPU
        service "spread" over two nodes would otherwise set its
        reference: the solver lends its one vCPU both nodes' caches.
        """
        if name not in self._best:
            prof = self.profiles[name]
            nodes = self.host.model.node_ids
            best = 1.0
            for k in range(1, len(nodes) + 1):
                if prof.vcpus % k:
                    continue
                perf = self._solve([(prof, tuple(nodes[:k]))])
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
        prof = self._profile(trial.workload)
        if not trial.nodes:
            raise ValueError('trial for %r names no NUMA node'
                             % trial.workload.name)
        others = [(self._profile(c.workload), tuple(sorted(c.nodes)))
                  for c in trial.corunners]
        cap = self._cap(trial, prof)
        perf = self._solve([(prof, tuple(sorted(trial.nodes)))] + others,
                           cap)
        own = min(1.0, float(perf[0]) / self.best_alone(prof.name))
        ratios = ()
        traffic = 0.0
        if others:
            without, bytes_per_s = self._solution(others, cap)
            ratios = tuple(float(w) / max(float(wo), 1e-12)
                           for w, wo in zip(perf[1:], without))
            traffic = sum(
                float(b) * len(trial.nodes & c.nodes) / len(c.nodes)
                for b, c in zip(bytes_per_s, trial.corunners))
        return datasets.Outcome(performance=own,
                                corunner_performance=ratios,
                                corunner_mem_bw_bps=traffic)


def shipped_libraries():
    """Names of the profile libraries shipped under ``scenarios/profiles``."""
    return sorted(os.path.splitext(f)[0]
                  for f in os.listdir(scenario_mod.PROFILE_DIR)
                  if f.endswith('.yaml'))


def library_profiles(libraries):
    """{name: WorkloadProfile} of the named shipped profile libraries.

    ``libraries``: names under ``scenarios/profiles``, or ``'all'``. The
    profiles are read exactly as a scenario's ``profile_library`` reads
    them (nothing is changed); an unknown name is a ValueError.
    """
    names = []
    for lib in libraries:
        names.extend(shipped_libraries() if lib == 'all' else [lib])
    result = {}
    for lib in names:
        raw = scenario_mod._library(lib, 'training libraries')
        for name, spec in raw.items():
            result.setdefault(name, scenario_mod._profile(name, spec))
    return result


#: Ranges of the synthetic training profiles (see
#: :func:`synthetic_profiles`): wide enough to hold every profile the
#: simulator ships, not fitted to any of them.
SYNTHETIC_RANGES = {
    'base_cpi': (0.5, 1.3), 'llc_apki': (0.5, 40.0),        # log-uniform
    'mr_min': (0.0, 0.9), 'working_set_mib': (0.25, 32.0),  # log-uniform
    'mlp': (1.0, 6.0), 'cpu_demand': (0.2, 1.0),
}
SYNTHETIC_VCPUS = (1, 2, 4)
SYNTHETIC_LATENCY_SHARE = 0.25


def synthetic_profiles(count, seed=0, ranges=None,
                       latency_share=SYNTHETIC_LATENCY_SHARE,
                       prefix='synthetic'):
    """{name: WorkloadProfile}: ``count`` seeded random profiles.

    Each parameter is drawn independently from ``ranges`` (default
    :data:`SYNTHETIC_RANGES`; uniform, log-uniform for LLC accesses and
    working set), vCPUs from :data:`SYNTHETIC_VCPUS`, a constant CPU
    demand, and a latency metric with probability ``latency_share``.
    Names are ``<prefix>-NNN``. Other ranges draw held-out regions of
    profile space (``bench/placement.py``'s out-of-range error).
    """
    from contention.sim import profiles as profiles_mod
    rng = np.random.default_rng([seed, 7])
    r = dict(SYNTHETIC_RANGES, **(ranges or {}))

    def log_uniform(key):
        lo, hi = r[key]
        return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
    result = {}
    for i in range(count):
        name = '%s-%03d' % (prefix, i)
        result[name] = profiles_mod.WorkloadProfile(
            name=name, base_cpi=float(rng.uniform(*r['base_cpi'])),
            llc_apki=log_uniform('llc_apki'),
            mr_min=float(rng.uniform(*r['mr_min'])),
            working_set_mib=log_uniform('working_set_mib'),
            mlp=float(rng.uniform(*r['mlp'])),
            vcpus=int(rng.choice(SYNTHETIC_VCPUS)), memory_mib=2048,
            cpu_demand=float(rng.uniform(*r['cpu_demand'])),
            metric=('latency' if rng.random() < latency_share
                    else 'throughput'),
            kind='synthetic')
    return result


def training_source(scenario, libraries=(), synthetic=0, synthetic_seed=0,
                    synthetic_ranges=None):
    """(HostTopology, [Workload], PerformanceSource) for a scenario.

    ``scenario``: a :class:`~contention.sim.scenario.Scenario`, a shipped
    scenario name or a YAML path. See the module docstring.

    ``libraries``: shipped profile libraries (names, or ``'all'``) whose
    profiles are added as extra training workloads, run on the scenario's
    hardware; the scenario's own profiles win a name clash. The source's
    ``own`` attribute names the scenario's own profiles: the workloads a
    cross-validation reports on.

    ``synthetic``: how many :func:`synthetic_profiles` (seeded by
    ``synthetic_seed``, drawn from ``synthetic_ranges`` over the default
    :data:`SYNTHETIC_RANGES`) to add as training subjects; the source's
    ``synthetic`` attribute names them.
    """
    scen = (scenario if isinstance(scenario, scenario_mod.Scenario)
            else scenario_mod.load(scenario))
    _, hw = main_hardware(scen)
    profiles = library_profiles(libraries) if libraries else {}
    profiles.update(scen.profiles)
    extra = (synthetic_profiles(synthetic, synthetic_seed, synthetic_ranges)
             if synthetic else {})
    source = SimulatorPerformance(hw, dict(profiles, **extra))
    source.own = frozenset(scen.profiles)
    source.synthetic = frozenset(extra)
    workloads = _workloads(source, hw, sorted(profiles) + sorted(extra))
    return source.host.topology, workloads, source


def _workloads(source, hw, names):
    """[Workload] of ``names``: each profile as its counters show alone.

    A profile too wide to land on one node is no trial subject.
    """
    workloads = []
    for name in names:
        prof = source.profiles[name]
        if prof.vcpus > source.host.model.cores.max() * max(
                1, hw.threads_per_core):
            continue
        mpki, mf, ipc, util = measured_profile(source.host, prof,
                                               with_util=True)
        small = small_llc_mf(source.host, prof, features.SMALL_LLC_FRACTION)
        workloads.append(datasets.Workload(name, features.InstanceProfile(
            mpki=mpki, mf=mf, ipc=ipc, vcpus=int(prof.vcpus),
            memory_mib=int(prof.memory_mib), source='sim', cpu_util=util,
            latency=prof.metric == 'latency',
            mf_small_llc=min(1.0, max(0.0, small)))))
    return workloads


def held_out_dataset(scenario, profiles, samples=5, seed=0):
    """Rows of ``profiles`` landing beside a scenario's workloads.

    ``profiles`` ({name: WorkloadProfile}) are subjects only, ``samples``
    landings each on one node of the scenario's hardware beside 0-3 of
    its own workloads (as the training rows land), for scoring a model on
    profiles it never saw (``bench/placement.py``). Figures are
    simulated.
    """
    scen = (scenario if isinstance(scenario, scenario_mod.Scenario)
            else scenario_mod.load(scenario))
    _, hw = main_hardware(scen)
    source = SimulatorPerformance(hw, dict(scen.profiles, **profiles))
    named = _workloads(source, hw, sorted(scen.profiles))
    subjects = _workloads(source, hw, sorted(profiles))
    return datasets.interference_dataset(
        source, source.host.topology, named, samples_per_workload=0,
        seed=seed, label='sim:%s held out' % scen.name, extra=subjects,
        extra_samples=samples)


def sim_dataset(scenario, samples_per_workload=train.DEFAULT_SAMPLES, seed=0,
                libraries=(), synthetic=train.DEFAULT_SYNTHETIC,
                synthetic_samples=train.DEFAULT_SYNTHETIC_SAMPLES,
                copies_samples=0, synthetic_ranges=None):
    """(Dataset, (topology, workloads, source)) from a simulator scenario.

    ``scenario``: a shipped name, a YAML path or a loaded Scenario.
    ``libraries``: the simulator's shipped profile libraries (names or
    ``'all'``) whose profiles train beside the scenario's own, on the
    scenario's hardware (as subjects and as co-runners); the
    cross-validated error stays about the scenario's own workloads
    (``Dataset.evaluate``).
    ``synthetic``: seeded synthetic simulator profiles added as training
    subjects (``synthetic_samples`` landings each, beside the named
    workloads as co-runners); never held out, and the named workloads'
    rows are the same with or without them. The returned parts hold the
    named workloads only.
    ``copies_samples``: landings of each named workload beside copies of
    one workload (:func:`contention.perfmodel.datasets.interference_dataset`), for a model
    that values whole socket mixes (:mod:`contention.perfmodel.mixes`).
    """
    kwargs = {}
    if libraries:
        kwargs['libraries'] = libraries
    if synthetic:
        kwargs.update(synthetic=synthetic, synthetic_seed=seed,
                      synthetic_ranges=synthetic_ranges)
    topology, workloads, source = training_source(scenario, **kwargs)
    extra_names = getattr(source, 'synthetic', frozenset())
    named = [w for w in workloads if w.name not in extra_names]
    extra = [w for w in workloads if w.name in extra_names]
    name = getattr(scenario, 'name', scenario)
    label = 'sim:%s' % name
    if libraries:
        label += '+%s' % ','.join(libraries)
    data = datasets.interference_dataset(
        source, topology, named,
        samples_per_workload=samples_per_workload, seed=seed,
        label=label, extra=extra, extra_samples=synthetic_samples,
        copies_samples=copies_samples)
    data.synthetic = sorted(w.name for w in extra)
    own = getattr(source, 'own', None)
    if (libraries or extra) and own is not None:
        data.evaluate = sorted(set(own) & set(data.groups))
    return data, (topology, named, source)


def train_from_sim(scenario, estimators=train.DEFAULT_ESTIMATORS,
                   samples_per_workload=train.DEFAULT_SAMPLES,
                   pv_estimators=train.DEFAULT_PV_ESTIMATORS, seed=0,
                   cross_validate=True, libraries=(),
                   synthetic=train.DEFAULT_SYNTHETIC,
                   synthetic_samples=train.DEFAULT_SYNTHETIC_SAMPLES,
                   copies_samples=0, synthetic_ranges=None):
    """(ModelBundle, report) trained from a simulator scenario.

    The quickest way to a model for a scenario (the demo, the
    ``contention_weigher`` policy): ``train_from_sim(name, **train.QUICK,
    cross_validate=False)`` takes a few seconds. Figures in ``report`` are
    simulated; ``report['workloads']`` maps each workload (profile name)
    to the MPKI, MF, IPC, CPU utilisation, vCPUs and small-LLC MF its
    synthetic counters show alone, and whether it is a latency service.
    """
    data, parts = sim_dataset(scenario, samples_per_workload, seed,
                              libraries=libraries, synthetic=synthetic,
                              synthetic_samples=synthetic_samples,
                              copies_samples=copies_samples,
                              synthetic_ranges=synthetic_ranges)
    bundle, report = train.train_bundle(data, parts, estimators=estimators,
                                        pv_estimators=pv_estimators,
                                        cross_validate=cross_validate)
    report['workloads'] = {
        w.name: {'mpki': w.profile.mpki, 'mf': w.profile.mf,
                 'ipc': w.profile.ipc, 'vcpus': w.profile.vcpus,
                 'cpu_util': w.profile.cpu_util,
                 'latency': w.profile.latency,
                 'mf_small_llc': w.profile.mf_small_llc}
        for w in parts[1]}
    return bundle, report

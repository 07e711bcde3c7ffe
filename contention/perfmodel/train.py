"""Train a placement-model bundle: the one place that does it.

``contention-train``, the ``contention_weigher`` simulator policy, the
benchmarks and the demo all train through :func:`train_bundle`, and, for
a simulator scenario, :func:`train_from_sim`::

    from contention.perfmodel import train
    bundle, report = train.train_from_sim('ahn-wl1')      # ~seconds
    train.save(bundle, '/tmp/ahn.model')                  # or use it:
    bundle.interference.predict(...)

Defaults (documented in ``doc/nova.md``): the interference forest has
:data:`DEFAULT_ESTIMATORS` trees and each workload :data:`DEFAULT_SAMPLES`
random landings; :data:`QUICK` is a smaller setting for tests and for the
policy's on-the-fly model. Cross-validation (per-workload leave-one-out,
one forest per workload) is the slow part and can be skipped.
"""

import collections
import time

from contention.perfmodel import datasets
from contention.perfmodel import important
from contention.perfmodel import models
from contention.perfmodel import persist

#: Trees in each of the interference model's two forests (one per output).
DEFAULT_ESTIMATORS = 40
DEFAULT_PV_ESTIMATORS = 40
DEFAULT_SAMPLES = 40
#: Seeded synthetic simulator profiles added as training subjects, and
#: landings of each (see contention.sim.training.synthetic_profiles).
#: Many subjects with few landings each: the error depends on the draw of
#: profiles. merlin-mix1 (own profiles, SIMULATED) over synthetic draws
#: 0-2 with the throughput-equivalent target: 600 x 2 gave 0.053 / 0.049
#: / 0.050, 600 x 4 0.049 / 0.044 / 0.037, 1200 x 2 0.043 / 0.035 /
#: 0.044; the co-runner output gains most from the extra rows.
DEFAULT_SYNTHETIC = 1200
DEFAULT_SYNTHETIC_SAMPLES = 2
#: Small and fast: for tests and for a policy that trains on the fly.
QUICK = {'estimators': 15, 'pv_estimators': 10, 'samples_per_workload': 25,
         'synthetic': 60, 'synthetic_samples': 5}

save = persist.save


def _placement_vector(parts, estimators):
    """A PlacementVectorModel on the most common vCPU count, or None."""
    topology, workloads, source = parts
    if not workloads:
        return None, None
    vcpus = collections.Counter(
        w.profile.vcpus for w in workloads).most_common(1)[0][0]
    placements = important.important_placements(topology, vcpus)
    sized = [w for w in workloads if w.profile.vcpus == vcpus]
    if len(placements) < 2 or len(sized) < 2:
        return None, None
    vectors, groups = datasets.placement_vector_dataset(
        source, topology, sized, placements)
    pv = models.PlacementVectorModel(n_estimators=estimators).fit(
        vectors, groups, datasets.placement_labels(placements))
    return pv, vcpus


def train_bundle(data, sim_parts=None, estimators=DEFAULT_ESTIMATORS,
                 pv_estimators=DEFAULT_PV_ESTIMATORS, cross_validate=True):
    """(ModelBundle, report) from an interference :class:`Dataset`.

    ``sim_parts``: the (topology, workloads, source) of a performance
    source; when given, a placement-vector model is trained too.
    ``report`` holds the summary and the cross-validated errors (None when
    ``cross_validate`` is false).
    """
    if len(data.workloads) < 2:
        raise ValueError('%s holds %d workload(s) with usable samples; '
                         'at least 2 are needed to train and cross-validate'
                         % (data.source, len(data.workloads)))
    model = models.InterferenceModel(n_estimators=estimators)
    cv = (model.cross_validate(data.X, data.Y, data.groups,
                               evaluate=data.evaluate)
          if cross_validate else None)
    model.fit(data.X, data.Y, data.groups)
    summary = dict(data.summary(), trained_at=time.time(),
                   estimators=estimators)
    pv = None
    if sim_parts is not None:
        pv, vcpus = _placement_vector(sim_parts, pv_estimators)
        if pv is not None:
            summary['placement_vector_vcpus'] = vcpus
    bundle = persist.ModelBundle(interference=model, placement_vector=pv,
                                 summary=summary)
    report = {'summary': summary,
              'cv_mae': cv.mae if cv else None,
              'cv_per_output': cv.per_output if cv else None,
              'cv_per_workload': cv.per_workload if cv else None,
              'placement_vector_cv_mae': pv.cv_.mae if pv else None}
    return bundle, report


def sim_dataset(scenario, samples_per_workload=DEFAULT_SAMPLES, seed=0,
                libraries=(), synthetic=DEFAULT_SYNTHETIC,
                synthetic_samples=DEFAULT_SYNTHETIC_SAMPLES,
                copies_samples=0):
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
    one workload (:func:`datasets.interference_dataset`), for a model
    that values whole socket mixes (:mod:`contention.perfmodel.mixes`).
    """
    kwargs = {}
    if libraries:
        kwargs['libraries'] = libraries
    if synthetic:
        kwargs.update(synthetic=synthetic, synthetic_seed=seed)
    topology, workloads, source = datasets.simulator_source(scenario,
                                                            **kwargs)
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


def train_from_sim(scenario, estimators=DEFAULT_ESTIMATORS,
                   samples_per_workload=DEFAULT_SAMPLES,
                   pv_estimators=DEFAULT_PV_ESTIMATORS, seed=0,
                   cross_validate=True, libraries=(),
                   synthetic=DEFAULT_SYNTHETIC,
                   synthetic_samples=DEFAULT_SYNTHETIC_SAMPLES,
                   copies_samples=0):
    """(ModelBundle, report) trained from a simulator scenario.

    The quickest way to a model for a scenario (the demo, the
    ``contention_weigher`` policy): ``train_from_sim(name, **QUICK,
    cross_validate=False)`` takes a few seconds. Figures in ``report`` are
    simulated; ``report['workloads']`` maps each workload (profile name)
    to the MPKI, MF, IPC, CPU utilisation, vCPUs and small-LLC MF its
    synthetic counters show alone, and whether it is a latency service.
    """
    data, parts = sim_dataset(scenario, samples_per_workload, seed,
                              libraries=libraries, synthetic=synthetic,
                              synthetic_samples=synthetic_samples,
                              copies_samples=copies_samples)
    bundle, report = train_bundle(data, parts, estimators=estimators,
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

"""Train a placement-model bundle: the one place that does it.

``contention-train``, the ``contention_weigher`` simulator policy, the
benchmarks and the demo all train through :func:`train_bundle`; for a
simulator scenario the simulator wraps it
(:func:`contention.sim.training.train_from_sim`: the simulator sits above
the model, so the model never names it)::

    from contention.sim import training
    bundle, report = training.train_from_sim('ahn-wl1')   # ~seconds
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

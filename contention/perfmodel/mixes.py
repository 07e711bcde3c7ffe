"""Predicted performance of a whole socket mix, from the placement model.

The placement-model paper (``shared/papers/003_*``, sections 5-7) predicts
a workload's performance in a placement from its profile and what shares
the machine with it, and its packing use case (section 7) compares
candidate placements by those predictions. Here a *mix* is the multiset
of instance classes on one socket (one shared LLC, memory controller and
set of cores): its value is the sum, over its members, of the
interference model's predicted normalised performance of that member
landing beside the others (:func:`features.feature_row` with the others
as the cell's co-runners, summed as ``contention.perfmodel.datasets``
sums them in training). The swap strategies' model check
(:func:`contention.swap.feasibility.mix_gain`) compares the mixes a move leaves with
those it makes.

A mix is a tuple of ``(class key, count)`` sorted by key; values are
memoised per (mix, socket CPUs), and the mixes not yet known are answered
in one batched prediction (:meth:`MixValues.prefetch`). A mix a member of
which the model is unsure of (:mod:`contention.perfmodel.confidence`) is
reported by :meth:`MixValues.unsure`, and the model check abstains.
"""

import numpy as np

from contention.perfmodel import confidence
from contention.perfmodel import features


def mix_of(keys):
    """The mix (sorted ``(key, count)`` tuple) of an iterable of keys."""
    counts = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return tuple(sorted(counts.items()))


def cell_beside(cpus, corunners):
    """The CellState of a node of ``cpus`` CPUs running ``corunners``.

    ``corunners``: (InstanceProfile, count) pairs, each on this node
    alone, as :func:`contention.perfmodel.datasets._cell_of` builds the
    training rows' cells.
    """
    mpki = vcpus = intensity = demand = 0.0
    for prof, count in corunners:
        mpki += prof.mpki * count
        vcpus += prof.vcpus * count
        intensity += prof.miss_intensity * count
        demand += prof.util * prof.vcpus * count
    return features.CellState(cpus=int(cpus), co_mpki_sum=mpki,
                              co_vcpus=vcpus, co_miss_intensity=intensity,
                              co_cpu_demand=demand)


class MixValues(object):
    """Memoised predicted values of socket mixes.

    :param model: a trained :class:`~contention.perfmodel.models.
        InterferenceModel` (anything with ``predict(X)`` returning the
        performance in column 0).
    :param profiles: {class key: InstanceProfile}; a mix holding a key
        that is not there cannot be valued (:meth:`value` raises
        KeyError), so the caller decides which classes are known.
    """

    def __init__(self, model, profiles, limits=confidence.Limits()):
        self.model = model
        self.profiles = dict(profiles)
        self.limits = limits
        self._memo = {}
        #: {(mix, cpus): why the model is unsure of it}; absent = sure.
        self._unsure = {}
        #: Batched model calls made, for tests and the bench.
        self.calls = 0
        #: Times the model was unsure and a check abstained: the model
        #: check (:meth:`unsure`) or the harm check
        #: (:class:`contention.swap.harm.Predictor`).
        self.abstentions = 0

    def knows(self, key):
        return key in self.profiles

    def prefetch(self, mixes):
        """Value every (mix, CPUs) of ``mixes`` not yet known, in one call."""
        rows, owners = [], []
        todo = [item for item in dict.fromkeys(mixes)
                if item[0] and item not in self._memo]
        for mix, cpus in todo:
            for key, count in mix:
                others = [(self.profiles[k], c - (k == key))
                          for k, c in mix if c - (k == key) > 0]
                rows.append(features.feature_row(
                    self.profiles[key], cell_beside(cpus, others)))
                owners.append(((mix, cpus), count))
        totals = dict.fromkeys(todo, 0.0)
        if rows:
            self.calls += 1
            predicted, reasons = judged(self.model, rows, self.limits)
            for (item, count), perf, why in zip(owners, predicted, reasons):
                totals[item] += count * float(perf)
                if why and item not in self._unsure:
                    self._unsure[item] = why
        self._memo.update(totals)

    def unsure(self, mixes):
        """Why the model cannot value one of ``mixes`` [(mix, cpus)], or None.

        The abstention decision of the swap strategies' model check: a
        member of a mix lies outside the model's training domain or its
        trees disagree (:func:`confidence.judge`), so comparing the mixes'
        values would compare guesses. The caller then lets the check say
        nothing, as for a class without a profile. Each abstention is
        counted in :attr:`abstentions`.
        """
        self.prefetch(mixes)
        for item in mixes:
            why = self._unsure.get(item)
            if why:
                self.abstentions += 1
                return why
        return None

    def value(self, mix, cpus):
        """Sum of the members' predicted normalised performance (0 if empty).

        KeyError when a member's class has no profile.
        """
        if not mix:
            return 0.0
        if (mix, cpus) not in self._memo:
            self.prefetch([(mix, cpus)])
        return self._memo[(mix, cpus)]


def judged(model, rows, limits):
    """(predicted performance per row, [None or why the model is unsure]).

    The one way the swap checks ask the interference model: with its
    confidence measures (:func:`confidence.judge` under ``limits``); a
    model without them is taken as sure.
    """
    X = np.asarray(rows, float)
    if hasattr(model, 'predict_confident'):
        prediction = model.predict_confident(X)
        return prediction.values[:, 0], confidence.judge(prediction, limits)
    return np.asarray(model.predict(X))[:, 0], [None] * len(X)


def class_profiles(instances, key):
    """{class key: InstanceProfile} from the instances' measured counters.

    A class's profile is the mean of its instances' MPKI, Memory Factor,
    IPC and CPU utilisation in this view (what the store's per-image
    profile holds, measured in the mixes the images run in); a class none
    of whose instances has all three counters is left out, so mixes
    holding it are not valued. Counters cannot tell a latency service:
    a class is one when its instances' flavor declares it
    (:attr:`contention.cluster.InstanceView.latency`).
    """
    sums = {}
    for inst in instances:
        if None in (inst.mpki, inst.mf, inst.ipc):
            continue
        entry = sums.setdefault(key(inst), [0, 0.0, 0.0, 0.0, 0.0, 0, inst])
        entry[0] += 1
        entry[1] += inst.mpki
        entry[2] += inst.mf
        entry[3] += inst.ipc
        if inst.cpu_util is not None:
            entry[4] += inst.cpu_util
            entry[5] += 1
    profiles = {}
    for k, (n, mpki, mf, ipc, util, n_util, inst) in sums.items():
        profiles[k] = features.InstanceProfile(
            mpki=mpki / n, mf=min(1.0, mf / n), ipc=ipc / n,
            vcpus=int(inst.vcpus), memory_mib=int(inst.memory_mib),
            source='measured',
            cpu_util=min(1.0, util / n_util) if n_util else None,
            latency=bool(inst.latency))
    return profiles

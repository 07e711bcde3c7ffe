"""The interference model and the placement-vector model.

Both are random forests, as in the placement-model paper
(``shared/papers/003_*``, section 5: "a multi-output Random Forest
regressor ... known for its ability to learn non-linear functions with
very little or no tuning"), with scikit-learn's conventions: parameters
in ``__init__``, learning in ``fit``, nothing hidden.

* :class:`InterferenceModel`: features of (instance profile, landing cell
  state) -> (instance's normalised performance, co-runners' mean
  slowdown), one forest per output. This is what the Nova weigher asks
  per candidate host.
* :class:`PlacementVectorModel`: a workload's performance in two important
  placements -> its performance in every important placement (section 5;
  the two inputs chosen automatically for accuracy).

Errors are measured by per-workload leave-one-out cross-validation
(section 6: "when training the model that will be used for predicting a
Spark workload neither the data from spark-cc nor spark-pr-lj is
included"), reported as mean absolute error.
"""

import dataclasses
import itertools

import numpy as np
from sklearn import ensemble

from contention.placement import features


@dataclasses.dataclass(frozen=True)
class CrossValidation:
    """Per-workload leave-one-out error."""

    #: Mean absolute error over all held-out predictions and outputs.
    mae: float
    #: MAE per output name.
    per_output: dict
    #: MAE per held-out workload.
    per_workload: dict
    folds: int


def _forest(n_estimators, random_state, min_samples_leaf=1):
    return ensemble.RandomForestRegressor(
        n_estimators=n_estimators, random_state=random_state,
        min_samples_leaf=min_samples_leaf, n_jobs=1)


def leave_one_group_out(make, X, Y, groups, output_names, evaluate=None):
    """Fit ``make()`` once per workload with it held out; see CrossValidation.

    :param make: returns a fresh estimator with fit/predict.
    :param evaluate: the workloads to hold out in turn (default: all);
        the others only ever train. The error is over their samples.
    """
    X, Y = np.asarray(X, float), np.asarray(Y, float)
    groups = np.asarray(groups)
    names = sorted(set(groups.tolist()))
    if len(names) < 2:
        raise ValueError('leave-one-workload-out needs at least 2 workloads,'
                         ' got %d' % len(names))
    if evaluate is not None:
        unknown = sorted(set(evaluate) - set(names))
        if unknown:
            raise ValueError('workloads to evaluate have no samples: %s'
                             % ', '.join(unknown))
        names = sorted(set(evaluate))
    errors = np.zeros_like(Y)
    held = np.zeros(len(Y), dtype=bool)
    per_workload = {}
    for name in names:
        test = groups == name
        model = make()
        model.fit(X[~test], Y[~test])
        pred = np.asarray(model.predict(X[test])).reshape(Y[test].shape)
        errors[test] = np.abs(pred - Y[test])
        held |= test
        per_workload[str(name)] = float(errors[test].mean())
    errors = errors[held]
    return CrossValidation(
        mae=float(errors.mean()),
        per_output={n: float(errors[:, i].mean())
                    for i, n in enumerate(output_names)},
        per_workload=per_workload, folds=len(names))


class _PerOutputForests:
    """One single-output forest per target column, fit and predicted together.

    A multi-output forest chooses each split on the summed squared error of
    both targets, so the co-runner slowdown (mostly near 0) and the
    performance (spread over 0-1, collapsing for latency services) compete
    for the same splits; one forest each lets every target have its own
    splits and its own settings (``params[i]`` for column ``i``).
    """

    def __init__(self, n_estimators, random_state, params):
        self.forests = [ensemble.RandomForestRegressor(
            n_estimators=n_estimators, random_state=random_state, n_jobs=1,
            **p) for p in params]

    def fit(self, X, Y):
        for i, forest in enumerate(self.forests):
            forest.fit(X, Y[:, i])
        return self

    def predict(self, X):
        return np.column_stack([f.predict(X) for f in self.forests])


class InterferenceModel:
    """(profile, cell) features -> (performance, co-runner slowdown).

    One random forest per output (see :class:`_PerOutputForests`), each of
    ``n_estimators`` trees. The performance forest splits on every feature
    with ``min_samples_leaf`` samples a leaf; the co-runner forest's
    settings are :data:`CORUNNER_PARAMS`, chosen by group 3-fold
    cross-validation over the synthetic training subjects only (rows every
    leave-one-workload-out fold trains on; no held-out workload involved).
    """

    kind = 'interference'
    #: Settings of the co-runner slowdown forest (see the class doc).
    CORUNNER_PARAMS = {'min_samples_leaf': 1, 'max_features': 0.6}

    def __init__(self, n_estimators=40, min_samples_leaf=2, random_state=0):
        self.n_estimators = n_estimators
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state
        #: One fitted forest per output, in TARGET_NAMES order.
        self.forests_ = None
        self.cv_ = None
        self.summary_ = {}

    def _make(self):
        return _PerOutputForests(
            self.n_estimators, self.random_state,
            [{'min_samples_leaf': self.min_samples_leaf},
             self.CORUNNER_PARAMS])

    def fit(self, X, Y, groups=None):
        X, Y = np.asarray(X, float), np.asarray(Y, float)
        if X.ndim != 2 or X.shape[1] != len(features.FEATURE_NAMES):
            raise ValueError('expected %d features per row, got shape %s'
                             % (len(features.FEATURE_NAMES), X.shape))
        if Y.shape != (X.shape[0], len(features.TARGET_NAMES)):
            raise ValueError('expected targets of shape (%d, %d), got %s'
                             % (X.shape[0], len(features.TARGET_NAMES),
                                Y.shape))
        self.forests_ = self._make().fit(X, Y).forests
        self.summary_ = {'samples': int(X.shape[0])}
        if groups is not None:
            self.summary_['workloads'] = len(set(np.asarray(groups).tolist()))
        return self

    def cross_validate(self, X, Y, groups, evaluate=None):
        self.cv_ = leave_one_group_out(self._make, X, Y, groups,
                                       features.TARGET_NAMES,
                                       evaluate=evaluate)
        return self.cv_

    def predict(self, X):
        """Array (n, 2): performance and co-runner slowdown, clipped 0-1."""
        if self.forests_ is None:
            raise ValueError('the interference model is not trained')
        X = np.asarray(X, float)
        if X.ndim == 1:
            X = X.reshape(1, -1)
        return np.clip(np.column_stack([f.predict(X) for f in self.forests_]),
                       0.0, 1.0)


class PlacementVectorModel:
    """Performance in two important placements -> in all of them.

    ``placements`` are labels of the important placements (the columns of
    the performance vectors); ``inputs_`` are the indices of the two
    placements whose measured performance is the model's input, chosen by
    :meth:`fit` as the pair with the lowest cross-validated error.
    """

    kind = 'placement_vector'

    def __init__(self, n_estimators=40, random_state=0, inputs=None):
        self.n_estimators = n_estimators
        self.random_state = random_state
        self.inputs = inputs
        self.inputs_ = None
        self.forest_ = None
        self.cv_ = None
        self.placements_ = ()
        self.pair_errors_ = {}

    def _make(self):
        return _forest(self.n_estimators, self.random_state)

    def fit(self, vectors, groups, placements):
        """Choose the input pair (unless given) and fit on all workloads.

        :param vectors: array (n runs, n placements) of performance.
        :param groups: workload name of each run (for leave-one-out).
        :param placements: label of each column.
        """
        Y = np.asarray(vectors, float)
        if Y.ndim != 2 or Y.shape[1] != len(placements):
            raise ValueError('performance vectors must have one column per '
                             'placement (%d), got shape %s'
                             % (len(placements), Y.shape))
        if Y.shape[1] < 2:
            raise ValueError('need at least 2 important placements, got %d'
                             % Y.shape[1])
        self.placements_ = tuple(str(p) for p in placements)
        pairs = ([tuple(self.inputs)] if self.inputs is not None
                 else list(itertools.combinations(range(Y.shape[1]), 2)))
        best = None
        for pair in pairs:
            cv = leave_one_group_out(self._make, Y[:, list(pair)], Y, groups,
                                     self.placements_)
            self.pair_errors_[pair] = cv.mae
            if best is None or cv.mae < best[1].mae:
                best = (pair, cv)
        self.inputs_, self.cv_ = best
        self.forest_ = self._make().fit(Y[:, list(self.inputs_)], Y)
        return self

    def predict(self, observed):
        """Performance vectors from (n, 2) observations in ``inputs_``."""
        if self.forest_ is None:
            raise ValueError('the placement-vector model is not trained')
        X = np.asarray(observed, float).reshape(-1, 2)
        return self.forest_.predict(X).reshape(len(X), -1)

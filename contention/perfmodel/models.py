"""The interference model and the placement-vector model.

Both are random forests, as in the placement-model paper
(``shared/papers/003_*``, section 5: "a multi-output Random Forest
regressor ... known for its ability to learn non-linear functions with
very little or no tuning"), with scikit-learn's conventions: parameters
in ``__init__``, learning in ``fit``, nothing hidden.

* :class:`InterferenceModel`: features of (instance profile, landing cell
  state) -> (instance's normalised performance, co-runners' mean
  slowdown), one forest per output; the performance forest learns the
  throughput-equivalent performance (:func:`throughput_equivalent`), so
  latency services share one target with throughput workloads; profiles
  without the small-LLC Memory Factor are answered by fallback forests
  (:class:`_RoutedForests`). This is what the Nova weigher asks per
  candidate host.
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
import warnings

import numpy as np
from sklearn import ensemble

from contention.perfmodel import features


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


def leave_one_group_out(make, X, Y, groups, output_names, evaluate=None,
                        X_scored=None):
    """Fit ``make()`` once per workload with it held out; see CrossValidation.

    :param make: returns a fresh estimator with fit/predict.
    :param evaluate: the workloads to hold out in turn (default: all);
        the others only ever train. The error is over their samples.
    :param X_scored: the features a held-out workload's rows are predicted
        from (default ``X``, row for row): scores workloads whose profiles
        are known differently in service than in training, such as an
        ``mf_small_llc`` learnt from the store's history.
    """
    X, Y = np.asarray(X, float), np.asarray(Y, float)
    X_scored = X if X_scored is None else np.asarray(X_scored, float)
    if X_scored.shape != X.shape:
        raise ValueError('scored features have shape %s, training features '
                         '%s' % (X_scored.shape, X.shape))
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
        pred = np.asarray(model.predict(X_scored[test])).reshape(
            Y[test].shape)
        errors[test] = np.abs(pred - Y[test])
        held |= test
        per_workload[str(name)] = float(errors[test].mean())
    errors = errors[held]
    return CrossValidation(
        mae=float(errors.mean()),
        per_output={n: float(errors[:, i].mean())
                    for i, n in enumerate(output_names)},
        per_workload=per_workload, folds=len(names))


#: Utilisation at which a latency service's queue is taken as saturated
#: (its response time stops growing with load: requests time out or are
#: shed). Any cap close to 1 does: merlin-mix1 leave-one-out 0.041 /
#: 0.043 / 0.044 (SIMULATED) with 0.90 / 0.95 / 0.99.
LATENCY_RHO_MAX = 0.95
_UTIL = features.FEATURE_NAMES.index('cpu_util')
_LATENCY = features.FEATURE_NAMES.index('latency')


def latency_performance(stretch, util):
    """A latency service's performance at CPU-time ``stretch`` (>= 1).

    Its requests are served by a queue (M/M/1): the response time is
    ``R = S / (1 - rho)`` with ``S`` the service time, stretched by
    contention as a throughput workload's CPU time per unit of work is
    (CPI with co-runners / alone), and ``rho = util x S`` (``util``: its
    CPU utilisation alone), capped at :data:`LATENCY_RHO_MAX`.
    Performance is ``R_alone / R``; it collapses as ``util x S`` nears
    saturation, a steep function a forest learns badly from few samples.
    """
    stretch = np.maximum(np.asarray(stretch, float), 1e-9)
    alone = np.minimum(np.asarray(util, float), LATENCY_RHO_MAX)
    return ((1.0 - np.minimum(util * stretch, LATENCY_RHO_MAX))
            / (stretch * (1.0 - alone)))


def throughput_equivalent(X, performance):
    """The performance forest's target: ``1 / stretch`` for every row.

    A throughput workload's performance is already that; a latency
    service's (rows with the ``latency`` feature set) is inverted through
    :func:`latency_performance` with its ``cpu_util`` feature. Latency
    and throughput subjects then share one smooth target (how much
    contention stretches their CPU time), and the collapse is the closed
    form, applied back by :func:`performance_from`. Chosen by group
    3-fold cross-validation over the synthetic subjects only (rows every
    leave-one-workload-out fold trains on), where it beats the raw
    performance on merlin-mix1 (SIMULATED, 0.056 vs 0.059 performance
    MAE), unlike the log and slowdown targets tried before.
    """
    X = np.asarray(X, float)
    perf = np.maximum(np.asarray(performance, float), 1e-6)
    util = X[:, _UTIL]
    alone = np.minimum(util, LATENCY_RHO_MAX)
    # below the cap: (1 - u S) = P S (1 - u)  =>  S = 1 / (u + P (1 - u))
    stretch = 1.0 / (util + perf * (1.0 - alone))
    capped = (1.0 - LATENCY_RHO_MAX) / (perf * (1.0 - alone))
    stretch = np.where(util * stretch < LATENCY_RHO_MAX, stretch, capped)
    stretch = np.where(util >= LATENCY_RHO_MAX, 1.0 / perf, stretch)
    return np.where(X[:, _LATENCY] > 0.5, 1.0 / stretch, perf)


def performance_from(X, equivalent):
    """Inverse of :func:`throughput_equivalent`: performance per row."""
    X = np.asarray(X, float)
    equivalent = np.clip(np.asarray(equivalent, float), 1e-6, 1.0)
    latency = latency_performance(1.0 / equivalent, X[:, _UTIL])
    return np.where(X[:, _LATENCY] > 0.5, latency, equivalent)


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
        Y = np.array(Y, float)
        Y[:, 0] = throughput_equivalent(X, Y[:, 0])
        for i, forest in enumerate(self.forests):
            forest.fit(X, Y[:, i])
        return self


_SMALL = features.FEATURE_NAMES.index('mf_small_llc')
_COUNTERS = len(features.COUNTER_FEATURES)


def _known(X):
    """Rows whose profile has ``mf_small_llc``."""
    return ~np.isnan(X[:, _SMALL])


class _RoutedForests:
    """Forests on every feature, and fallback forests for other profiles.

    Rows whose profile has ``mf_small_llc`` (see
    :attr:`features.InstanceProfile.mf_small_llc`) are answered by
    ``forests`` (trained on such rows); the others by ``fallback``,
    trained on every row without the two ``mf_small_llc`` columns
    (:data:`features.COUNTER_FEATURES`). Filling the columns of unknown
    profiles with some value instead would either teach the forests a
    wrong curve or, trained with masked rows, blur the known ones
    (SIMULATED: masking a quarter of the synthetic subjects took
    merlin-mix1 from 0.0375 to 0.0409, and its unknown-profile error
    stayed above the fallback's).
    """

    def __init__(self, make, fallback=True):
        self.make = make
        self.fallback_wanted = fallback
        self.forests = None
        self.fallback = None

    def fit(self, X, Y):
        X, Y = np.asarray(X, float), np.asarray(Y, float)
        known = _known(X)
        if known.any():
            self.forests = self.make().fit(X[known], Y[known]).forests
        if self.fallback_wanted or not known.any():
            self.fallback = self.make().fit(X[:, :_COUNTERS], Y).forests
        return self

    def predict(self, X):
        return _predict(self.forests, self.fallback, X)


def _per_tree(forest, X):
    """Array (trees, rows): each tree's prediction (the forest's mean)."""
    X = np.ascontiguousarray(X, dtype=np.float32)
    return np.stack([t.predict(X, check_input=False).reshape(len(X))
                     for t in forest.estimators_])


def _predict(forests, fallback, X, spread=False):
    """Performance (through :func:`performance_from`) and the rest.

    Rows with ``mf_small_llc`` go to ``forests``, the others (and every
    row when ``forests`` is None) to ``fallback``. Each tree's
    throughput-equivalent answer is mapped to performance before the
    trees are averaged (:func:`_tree_performance`). With ``spread``, also
    the per-row spread of the trees (:func:`_spread`), as (Y, spread).
    """
    X = np.asarray(X, float)
    known = _known(X) if forests else np.zeros(len(X), dtype=bool)
    Y = np.zeros((len(X), len(features.TARGET_NAMES)))
    S = np.zeros(len(X))
    for rows, trees, cols in ((known, forests, X.shape[1]),
                              (~known, fallback, _COUNTERS)):
        if rows.any():
            if not trees:
                raise ValueError('the interference model has no forests for '
                                 'profiles %s mf_small_llc' % (
                                     'with' if cols == X.shape[1]
                                     else 'without'))
            sub = X[rows][:, :cols]
            each = [_per_tree(f, sub) for f in trees]
            each[0] = _tree_performance(X[rows], each[0])
            Y[rows] = np.column_stack([e.mean(axis=0) for e in each])
            S[rows] = _spread(each)
    return (Y, S) if spread else Y


def _tree_performance(X, equivalents):
    """Array (trees, rows): each tree's answer as performance, 0-1.

    Averaging the trees after :func:`performance_from` rather than
    before gives the forest's expected performance. For a latency service
    the closed form is piecewise linear in the throughput equivalent,
    shallow past saturation and steep below it; where the trees straddle
    the kink, the performance of their mean equivalent understates the
    mean of their performances. On ``bench/placement.py``'s fresh
    in-range draw (ahn-wl1 hardware, forest seeds 0 and 1, SIMULATED) the
    performance MAE falls from 0.0258 / 0.0252 to 0.0246 / 0.0242; the
    out-of-range families do not move.
    """
    return np.stack([np.clip(performance_from(X, t), 0.0, 1.0)
                     for t in equivalents])


def _spread(each):
    """The larger of the two outputs' tree spreads (standard deviations).

    The performance trees' answers are performance already
    (:func:`_tree_performance`), so a latency service near saturation,
    whose performance is steep in the stretch, shows the spread it has
    where the weigher reads it.
    """
    return np.maximum(each[0].std(axis=0), each[1].std(axis=0))


@dataclasses.dataclass(frozen=True)
class Domain:
    """The range of every feature over the training rows.

    ``low`` and ``high`` follow FEATURE_NAMES (NaN where no training row
    had the feature). A forest answers a row beyond this range with the
    leaf at the edge, as sure of itself as inside it, so its spread alone
    cannot tell that it is out of its depth (tree ensembles do not
    extrapolate); :meth:`excess` measures how far out a row is.
    """

    low: tuple
    high: tuple

    @classmethod
    def of(cls, X):
        X = np.asarray(X, float)
        with warnings.catch_warnings():
            # a column no row has (all NaN) gives NaN, and says so
            warnings.simplefilter('ignore', RuntimeWarning)
            low, high = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
        return cls(tuple(float(v) for v in low),
                   tuple(float(v) for v in high))

    def excess(self, X):
        """(excess, feature index) per row.

        ``excess``: how far the row lies outside the training range, in
        units of that range's width, for its worst feature (0 inside).
        Features that were constant in training are skipped (no split can
        read them, so the prediction does not depend on them), as are a
        row's NaN features (a profile without ``mf_small_llc``).
        """
        X = np.asarray(X, float)
        low, high = np.asarray(self.low), np.asarray(self.high)
        span = high - low
        used = np.isfinite(span) & (span > 0)
        if not used.any() or not len(X):
            return np.zeros(len(X)), np.full(len(X), -1)
        with np.errstate(invalid='ignore'):
            out = np.maximum(low[used] - X[:, used], X[:, used] - high[used])
            out = np.where(np.isnan(out), 0.0, np.maximum(out, 0.0))
        ratio = out / span[used]
        worst = ratio.argmax(axis=1)
        return (ratio[np.arange(len(X)), worst],
                np.flatnonzero(used)[worst])


@dataclasses.dataclass(frozen=True)
class Prediction:
    """Predictions with what the model knows about their reliability.

    ``values``: (n, 2) performance and co-runner slowdown, as
    :meth:`InterferenceModel.predict`; ``spread``: per row, the larger
    standard deviation of the two outputs over the forests' trees;
    ``excess`` and ``feature``: per row, how far outside the training
    range it lies and on which feature (:meth:`Domain.excess`; 0 and -1
    when the model has no domain). :mod:`contention.perfmodel.confidence`
    turns them into "sure" or a reason.
    """

    values: np.ndarray
    spread: np.ndarray
    excess: np.ndarray
    feature: np.ndarray


def settled(values):
    """``values`` as a float64 array rounded to single precision.

    The simulator's figures, and so the training rows and the features a
    model is asked about, differ in their last bits between CPUs: numpy
    picks AVX-512 or AVX2 kernels for its elementwise maths and
    reductions at run time, and they round differently (up to 3e-14
    relative on the training rows of ``ahn-wl1``). A forest fitted to such
    targets can break a tie between two splits one way on one machine
    and the other way on the next, and a weigher's choice between two
    close hosts then flips: the arrival row of ``ahn-wl1`` in
    ``doc/evaluation.md`` ended with a minimum VM of 0.824 with numpy's
    AVX-512 kernels and 0.879 with them disabled
    (``NPY_DISABLE_CPU_FEATURES``; simulated). Rounded to single
    precision (about seven significant digits, far finer than any
    counter measures) the rows are the same on both, and so is the
    model. Fitting and predicting both read their inputs through this.
    """
    return np.asarray(values, float).astype(np.float32).astype(float)


class InterferenceModel:
    """(profile, cell) features -> (performance, co-runner slowdown).

    One random forest per output (see :class:`_PerOutputForests`), each of
    ``n_estimators`` trees. The performance forest learns the
    throughput-equivalent performance (:data:`PERFORMANCE_TARGET`, see
    :func:`throughput_equivalent`) and splits on every feature
    with ``min_samples_leaf`` samples a leaf; the co-runner forest's
    settings are :data:`CORUNNER_PARAMS`, chosen by group 3-fold
    cross-validation over the synthetic training subjects only (rows every
    leave-one-workload-out fold trains on; no held-out workload involved).
    Two such pairs (see :class:`_RoutedForests`): ``forests_`` for
    profiles with ``mf_small_llc`` (None when no training row had it),
    ``fallback_forests_`` for profiles without it.
    """

    kind = 'interference'
    #: What the performance forest predicts; a model file saying
    #: otherwise (or nothing: the raw performance) is refused.
    PERFORMANCE_TARGET = 'throughput-equivalent'
    #: Settings of the co-runner slowdown forest (see the class doc).
    CORUNNER_PARAMS = {'min_samples_leaf': 1, 'max_features': 0.6}

    def __init__(self, n_estimators=40, min_samples_leaf=2, random_state=0):
        self.n_estimators = n_estimators
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state
        #: One fitted forest per output, in TARGET_NAMES order, for
        #: profiles with ``mf_small_llc``; None if none trained.
        self.forests_ = None
        #: The same for profiles without it (COUNTER_FEATURES only).
        self.fallback_forests_ = None
        self.cv_ = None
        self.summary_ = {}
        #: The training rows' :class:`Domain` (None: unknown).
        self.domain_ = None

    def _pair(self):
        return _PerOutputForests(
            self.n_estimators, self.random_state,
            [{'min_samples_leaf': self.min_samples_leaf},
             self.CORUNNER_PARAMS])

    def _make(self, fallback=True):
        return _RoutedForests(self._pair, fallback=fallback)

    def fit(self, X, Y, groups=None):
        X, Y = settled(X), settled(Y)
        if X.ndim != 2 or X.shape[1] != len(features.FEATURE_NAMES):
            raise ValueError('expected %d features per row, got shape %s'
                             % (len(features.FEATURE_NAMES), X.shape))
        if Y.shape != (X.shape[0], len(features.TARGET_NAMES)):
            raise ValueError('expected targets of shape (%d, %d), got %s'
                             % (X.shape[0], len(features.TARGET_NAMES),
                                Y.shape))
        routed = self._make().fit(X, Y)
        self.forests_, self.fallback_forests_ = routed.forests, \
            routed.fallback
        self.domain_ = Domain.of(X)
        self.summary_ = {'samples': int(X.shape[0]),
                         'samples_with_mf_small_llc': int(_known(X).sum())}
        if groups is not None:
            self.summary_['workloads'] = len(set(np.asarray(groups).tolist()))
        return self

    def cross_validate(self, X, Y, groups, evaluate=None, X_scored=None):
        """Per-workload leave-one-out (see :func:`leave_one_group_out`).

        A fold fits fallback forests only when some row lacks
        ``mf_small_llc`` (when every row has it they would answer none).
        """
        X, Y = settled(X), settled(Y)
        if X_scored is not None:
            X_scored = settled(X_scored)
        fallback = bool((~_known(X)).any()) or (
            X_scored is not None
            and bool((~_known(X_scored)).any()))
        self.cv_ = leave_one_group_out(lambda: self._make(fallback), X, Y,
                                       groups, features.TARGET_NAMES,
                                       evaluate=evaluate, X_scored=X_scored)
        return self.cv_

    def predict(self, X):
        """Array (n, 2): performance and co-runner slowdown, clipped 0-1."""
        if self.forests_ is None and self.fallback_forests_ is None:
            raise ValueError('the interference model is not trained')
        X = settled(X)
        if X.ndim == 1:
            X = X.reshape(1, -1)
        return np.clip(_predict(self.forests_, self.fallback_forests_, X),
                       0.0, 1.0)

    def predict_confident(self, X):
        """A :class:`Prediction`: :meth:`predict` with spread and domain.

        The same values as :meth:`predict` (the trees' mean), from the same
        tree walks, so knowing the spread costs little more.
        """
        if self.forests_ is None and self.fallback_forests_ is None:
            raise ValueError('the interference model is not trained')
        X = settled(X)
        if X.ndim == 1:
            X = X.reshape(1, -1)
        Y, spread = _predict(self.forests_, self.fallback_forests_, X,
                             spread=True)
        if self.domain_ is None:
            excess, feature = np.zeros(len(X)), np.full(len(X), -1)
        else:
            excess, feature = self.domain_.excess(X)
        return Prediction(np.clip(Y, 0.0, 1.0), spread, excess, feature)


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
        Y = settled(vectors)
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
        X = settled(observed).reshape(-1, 2)
        return self.forest_.predict(X).reshape(len(X), -1)

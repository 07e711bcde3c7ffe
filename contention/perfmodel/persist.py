"""Model files: data, never code.

A model file is a skops archive (``skops.io``), loaded with an explicit
list of trusted types (:data:`TRUSTED_TYPES`), so loading it cannot run
arbitrary code the way a pickle can. It holds a plain dictionary:

* ``format``: :data:`FORMAT` (anything else is "not a contention model");
* ``kind``: :data:`KIND`;
* ``schema_version``: the feature schema it was trained on
  (:data:`contention.perfmodel.features.SCHEMA_VERSION`);
* ``feature_names`` and ``target_names``: checked against this code's;
* ``summary``: what it was trained on (source, samples, workloads, date);
* ``cv_mae``: the measured per-workload leave-one-out error;
* the interference model's training ``domain`` (per-feature low and
  high, :class:`contention.perfmodel.models.Domain`; absent from files
  written before it, which then judge confidence by spread alone);
* the forests (the interference model's: one per output, in
  ``target_names`` order, for profiles with ``mf_small_llc`` (possibly
  none) and ``fallback_forests`` for profiles without it; a file with the
  older single multi-output forest is refused with "retrain"), and
  ``performance_target``, what
  the performance forest predicts (a file without it predicts the raw
  performance and is refused with "retrain"); for the placement-vector model
  its placement labels and chosen input pair.

:func:`load` raises :class:`ModelFileError` (and nothing else) saying what
is wrong and where for a missing file, a file that is not a skops
archive, an archive with other types in it, another kind, another schema
version, a malformed dictionary, or a forest whose trees are not
structurally sound (:mod:`contention.perfmodel.forest_check`: a crafted
tree could otherwise make scikit-learn read out of bounds and crash the
process that predicts with it).
"""

import dataclasses
import math
import os

import skops.io as sio

from contention.perfmodel import features
from contention.perfmodel import forest_check
from contention.perfmodel import models

FORMAT = 'contention-aware-placement model'
KIND = 'placement_model'
#: Types beyond skops' defaults that a model file may hold. Anything else
#: in a file makes loading fail instead of constructing it.
TRUSTED_TYPES = ('sklearn.tree._tree.Tree',)


class ModelFileError(ValueError):
    """A model file cannot be used; the message says why and which file."""


@dataclasses.dataclass
class ModelBundle:
    """What ``contention-train`` writes and the weigher loads."""

    interference: models.InterferenceModel
    placement_vector: models.PlacementVectorModel = None
    summary: dict = dataclasses.field(default_factory=dict)
    schema_version: int = features.SCHEMA_VERSION

    @property
    def cv_mae(self):
        cv = self.interference.cv_
        return None if cv is None else cv.mae


def _cv_dict(cv):
    return None if cv is None else dataclasses.asdict(cv)


def _cv_from(data):
    return None if data is None else models.CrossValidation(**data)


def save(bundle, path):
    """Write ``bundle`` to ``path`` atomically (temp file + rename)."""
    im = bundle.interference
    data = {
        'format': FORMAT, 'kind': KIND,
        'schema_version': int(bundle.schema_version),
        'feature_names': list(features.FEATURE_NAMES),
        'target_names': list(features.TARGET_NAMES),
        'summary': dict(bundle.summary),
        'cv_mae': bundle.cv_mae,
        'interference': {
            'params': {'n_estimators': im.n_estimators,
                       'min_samples_leaf': im.min_samples_leaf,
                       'random_state': im.random_state},
            'forests': list(im.forests_ or ()),
            'fallback_forests': list(im.fallback_forests_ or ()),
            'cv': _cv_dict(im.cv_),
            'performance_target': im.PERFORMANCE_TARGET,
            'summary': dict(im.summary_),
            'domain': None if im.domain_ is None else {
                'low': [float(v) for v in im.domain_.low],
                'high': [float(v) for v in im.domain_.high]}},
        'placement_vector': None,
    }
    pv = bundle.placement_vector
    if pv is not None:
        data['placement_vector'] = {
            'params': {'n_estimators': pv.n_estimators,
                       'random_state': pv.random_state},
            'forest': pv.forest_, 'cv': _cv_dict(pv.cv_),
            'placements': list(pv.placements_),
            'inputs': list(pv.inputs_),
            'pair_errors': [[a, b, e] for (a, b), e in
                            pv.pair_errors_.items()]}
    tmp = '%s.tmp%d' % (path, os.getpid())
    with open(tmp, 'wb') as f:
        f.write(sio.dumps(data))
    os.replace(tmp, path)


def load(path):
    """The :class:`ModelBundle` in ``path``; ModelFileError if unusable."""
    try:
        with open(path, 'rb') as f:
            raw = f.read()
    except OSError as exc:
        raise ModelFileError('model file %s: cannot read it: %s'
                             % (path, exc.strerror or exc)) from None
    try:
        untrusted = sio.get_untrusted_types(data=raw)
    except Exception as exc:   # zip, JSON or skops schema errors alike
        raise ModelFileError('model file %s is not a contention model '
                             '(not a skops archive: %s)' % (path, exc)) \
            from None
    unexpected = sorted(set(untrusted) - set(TRUSTED_TYPES))
    if unexpected:
        raise ModelFileError('model file %s holds types that are not '
                             'trusted: %s' % (path, ', '.join(unexpected)))
    try:
        data = sio.loads(raw, trusted=list(TRUSTED_TYPES))
    except Exception as exc:
        raise ModelFileError('model file %s cannot be loaded: %s'
                             % (path, exc)) from None
    try:
        return _bundle_from(data, path)
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError,
            IndexError) as exc:
        raise ModelFileError('model file %s is malformed: %s: %s'
                             % (path, type(exc).__name__, exc)) from None


def _checked(forest, path, what, n_features, n_outputs=1):
    try:
        forest_check.check_forest(forest, n_features, n_outputs)
    except ValueError as exc:
        raise ModelFileError('model file %s: its %s is unsound: %s'
                             % (path, what, exc)) from None
    return forest


def _domain_from(part, path):
    """The training domain of a file (None in files from before it)."""
    if part is None:
        return None
    width = len(features.FEATURE_NAMES)
    low, high = list(part['low']), list(part['high'])
    if len(low) != width or len(high) != width or not all(
            isinstance(v, float) and v != math.inf and v != -math.inf
            for v in low + high):
        raise ModelFileError('model file %s: its training domain is not %d '
                             'finite (or NaN) lows and highs'
                             % (path, width))
    return models.Domain(tuple(low), tuple(high))


def _bundle_from(data, path):
    if not isinstance(data, dict) or data.get('format') != FORMAT:
        raise ModelFileError('model file %s is not a contention model'
                             % path)
    if data.get('kind') != KIND:
        raise ModelFileError('model file %s is a %r, not a %r'
                             % (path, data.get('kind'), KIND))
    version = data.get('schema_version')
    if version != features.SCHEMA_VERSION:
        raise ModelFileError(
            'model file %s was trained on feature schema version %r; this '
            'code uses version %d: retrain it with contention-train'
            % (path, version, features.SCHEMA_VERSION))
    if tuple(data.get('feature_names') or ()) != features.FEATURE_NAMES:
        raise ModelFileError('model file %s has other features than schema '
                             'version %d defines' % (path, version))
    part = data['interference']
    if 'forests' not in part:
        raise ModelFileError(
            'model file %s holds one multi-output interference forest (an '
            'older layout); this code uses one forest per output: retrain '
            'it with contention-train' % path)
    target = part.get('performance_target', 'performance')
    if target != models.InterferenceModel.PERFORMANCE_TARGET:
        raise ModelFileError(
            'model file %s: its performance forest predicts the %s; this '
            'code expects the %s: retrain it with contention-train'
            % (path, target, models.InterferenceModel.PERFORMANCE_TARGET))
    im = models.InterferenceModel(**part['params'])
    im.cv_ = _cv_from(part['cv'])
    im.summary_ = dict(part['summary'])
    for key, width, may_be_empty in (
            ('forests', len(features.FEATURE_NAMES), True),
            ('fallback_forests', len(features.COUNTER_FEATURES), False)):
        forests = list(part.get(key) or ())
        if not forests and may_be_empty:
            continue
        if len(forests) != len(features.TARGET_NAMES):
            raise ModelFileError('model file %s: %d interference %s, not '
                                 'one per output (%d)'
                                 % (path, len(forests), key.replace('_', ' '),
                                    len(features.TARGET_NAMES)))
        for i, forest in enumerate(forests):
            _checked(forest, path, 'interference %s %d (%s)' % (
                key.replace('_', ' '), i, features.TARGET_NAMES[i]), width)
        setattr(im, key + '_', forests)
    im.domain_ = _domain_from(part.get('domain'), path)
    pv = None
    part = data.get('placement_vector')
    if part is not None:
        pv = models.PlacementVectorModel(**part['params'])
        pv.placements_ = tuple(str(p) for p in part['placements'])
        pv.forest_ = _checked(part['forest'], path,
                              'placement-vector forest', 2,
                              len(pv.placements_))
        pv.cv_ = _cv_from(part['cv'])
        pv.inputs_ = tuple(int(i) for i in part['inputs'])
        if len(pv.inputs_) != 2 or not all(
                0 <= i < len(pv.placements_) for i in pv.inputs_):
            raise ModelFileError('model file %s: placement-vector inputs %s '
                                 'are not two of its %d placements'
                                 % (path, list(pv.inputs_),
                                    len(pv.placements_)))
        pv.pair_errors_ = {(int(a), int(b)): float(e)
                           for a, b, e in part['pair_errors']}
    return ModelBundle(interference=im, placement_vector=pv,
                       summary=dict(data.get('summary') or {}),
                       schema_version=version)

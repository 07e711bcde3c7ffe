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
* the forests (the interference model's: one per output, in
  ``target_names`` order, for profiles with ``mf_small_llc`` (possibly
  none) and ``fallback_forests`` for profiles without it; a file with the
  older single multi-output forest is refused with "retrain"), and
  ``performance_target``, what
  the performance forest predicts (a file without it predicts the raw
  performance and is refused with "retrain"); for the placement-vector model
  its placement labels and chosen input pair.

:func:`load` raises :class:`ModelFileError` saying what is wrong and where
for a missing file, a file that is not a skops archive, an archive with
other types in it, another kind, or another schema version.
"""

import dataclasses
import os
import zipfile

import skops.io as sio

from contention.perfmodel import features
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
            'summary': dict(im.summary_)},
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
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
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
    return _bundle_from(data, path)


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
        for forest in forests:
            if getattr(forest, 'n_features_in_', None) != width:
                raise ModelFileError('model file %s: its interference %s '
                                     'do not take %d features'
                                     % (path, key.replace('_', ' '), width))
        setattr(im, key + '_', forests)
    pv = None
    part = data.get('placement_vector')
    if part is not None:
        pv = models.PlacementVectorModel(**part['params'])
        pv.forest_ = part['forest']
        pv.cv_ = _cv_from(part['cv'])
        pv.placements_ = tuple(part['placements'])
        pv.inputs_ = tuple(int(i) for i in part['inputs'])
        pv.pair_errors_ = {(int(a), int(b)): float(e)
                           for a, b, e in part['pair_errors']}
    return ModelBundle(interference=im, placement_vector=pv,
                       summary=dict(data.get('summary') or {}),
                       schema_version=version)

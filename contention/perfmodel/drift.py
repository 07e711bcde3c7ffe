"""Retraining on live telemetry, and the drift of the model's error.

A model trained from the store describes the cloud as its history was:
new images, new flavors, new hosts and new co-runners arrive after it.
``contention-train retrain`` (run by the operator's scheduler: the
``contention-train.timer`` systemd unit, or cron) replaces the model with
one trained on the history as it is now, and first measures how wrong the
model in service was on the telemetry that arrived since it was trained:
its *live error*, the figure that drifts. A live error well above the
cross-validated error the model reported at training says the cloud has
moved away from what it learnt, and how fast; a model that cannot be
retrained (too few workloads left in the history) is kept, and the
history says why. So is one that a challenger does not beat: a model
trained on the history before its newest fifth, scored with the model in
service on that fifth, which neither has seen (:func:`challenge`); a
stretch of bad telemetry then cannot replace a good model unattended.

The history is a JSON-lines file beside the model (:func:`history_path`),
one :class:`Retraining` per run, read back by ``contention-train
history``. A damaged line is reported with its line number and skipped;
it never stops the next run from appending.
"""

import dataclasses
import json
import os
import time

import numpy as np

from contention.perfmodel import confidence
from contention.perfmodel import features
from contention.perfmodel import models

HISTORY_SUFFIX = '.history.jsonl'


def history_path(model_path):
    """The history file of the model at ``model_path``."""
    return model_path + HISTORY_SUFFIX


def score(model, data, limits=confidence.Limits()):
    """The error of an interference ``model`` on a :class:`Dataset`.

    {'samples', 'mae', 'mae_per_output', 'abstained', 'mae_where_sure'}:
    the mean absolute error over every sample and per output, how many
    samples the model is unsure of (:mod:`.confidence`) and its error on
    the others. An empty data set scores None everywhere.
    """
    if not len(data.X):
        return {'samples': 0, 'mae': None,
                'mae_per_output': {n: None for n in features.TARGET_NAMES},
                'abstained': 0, 'mae_where_sure': None}
    prediction = model.predict_confident(data.X)
    errors = np.abs(prediction.values - data.Y)
    sure = np.array([r is None for r in confidence.judge(prediction,
                                                         limits)])
    return {'samples': int(len(data.X)), 'mae': float(errors.mean()),
            'mae_per_output': {n: float(errors[:, i].mean()) for i, n in
                               enumerate(features.TARGET_NAMES)},
            'abstained': int((~sure).sum()),
            'mae_where_sure': (float(errors[sure].mean()) if sure.any()
                               else None)}


#: Share of the newest history on which the model in service and a new
#: one are compared before the new one replaces it.
HOLDOUT_SHARE = 0.2
#: How much worse than the model in service (relative MAE on that window)
#: a new model may be and still replace it: the forests' own noise.
TOLERANCE = 0.1


def holdout_start(timestamps, trained_at, share=HOLDOUT_SHARE):
    """Where the window judging a new model against the old one starts.

    The newest ``share`` of the reports (by time), or None when there is
    no fair window: the model in service must have been trained before it
    starts (both models then meet it unseen), and reports must remain
    before it to train the challenger on.
    """
    times = sorted(timestamps)
    if trained_at is None or len(times) < 2:
        return None
    start = times[min(len(times) - 1,
                      int(round(len(times) * (1.0 - share))))]
    if start <= times[0] or start < trained_at:
        return None
    return start


def challenge(in_service, train, held, estimators):
    """(MAE of the model in service, MAE of a challenger) on ``held``.

    The challenger is trained as a retraining would train (same forest)
    on ``train``, the history before the window ``held`` covers: if it
    does worse there than the model in service, training on more of the
    same history is no improvement, and the model in service stays.
    """
    challenger = models.InterferenceModel(n_estimators=estimators)
    challenger.fit(train.X, train.Y, train.groups)
    return (score(in_service, held)['mae'], score(challenger, held)['mae'])


def worse(old_mae, new_mae, tolerance=TOLERANCE):
    """Whether ``new_mae`` is worse than ``old_mae`` beyond ``tolerance``."""
    return (old_mae is not None and new_mae is not None
            and new_mae > old_mae * (1.0 + tolerance))


@dataclasses.dataclass(frozen=True)
class Retraining:
    """One run of ``contention-train retrain``."""

    #: When it ran (epoch seconds).
    at: float
    source: str
    #: The history it trained on.
    samples: int
    workloads: int
    #: The new model's leave-one-workload-out error (None: not replaced).
    cv_mae: float = None
    #: Whether the model file now holds the new model.
    replaced: bool = False
    #: Why the model in service was kept (replaced is false).
    reason: str = None
    #: The model in service before the run: when it was trained, the
    #: error it reported then, and its live error on the samples of the
    #: telemetry stored since (what drifts).
    previous_trained_at: float = None
    previous_cv_mae: float = None
    live_samples: int = 0
    live_mae: float = None
    live_abstained: int = 0
    #: The comparison on the newest history (holdout_start): its samples
    #: and the MAE there of the model in service and of a challenger
    #: trained on the history before it (None: no fair window).
    holdout_samples: int = 0
    holdout_mae_in_service: float = None
    holdout_mae_challenger: float = None

    @property
    def drift(self):
        """Live error over the error the model reported, or None."""
        if not self.live_mae or not self.previous_cv_mae:
            return None
        return self.live_mae / self.previous_cv_mae


def append(path, record):
    """Add ``record`` to the history at ``path`` (created if missing)."""
    line = json.dumps(dataclasses.asdict(record), sort_keys=True)
    with open(path, 'a') as f:
        f.write(line + '\n')
        f.flush()
        os.fsync(f.fileno())


def read(path):
    """(records, problems) of the history at ``path``.

    A line that is not a record is left out and named in ``problems``
    ('FILE:LINE: why'); a missing file is an empty history.
    """
    records, problems = [], []
    if not os.path.exists(path):
        return records, problems
    fields = {f.name for f in dataclasses.fields(Retraining)}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError('not an object')
                unknown = sorted(set(data) - fields)
                if unknown:
                    raise ValueError('unknown fields %s' % unknown)
                records.append(Retraining(**data))
            except (ValueError, TypeError) as exc:
                problems.append('%s:%d: %s' % (path, number, exc))
    return records, problems


def _fmt(value, pattern='%.4f'):
    return '-' if value is None else pattern % value


def table(records):
    """The history as the lines ``contention-train history`` prints."""
    lines = ['| run (UTC) | samples | workloads | live samples | live MAE '
             '(model in service) | its MAE at training | drift | '
             'abstained | newest: in service / challenger | new model MAE '
             '| replaced |',
             '|---|---|---|---|---|---|---|---|---|---|---|']
    for r in records:
        newest = ('%s / %s' % (_fmt(r.holdout_mae_in_service),
                               _fmt(r.holdout_mae_challenger))
                  if r.holdout_samples else '-')
        lines.append('| %s | %d | %d | %d | %s | %s | %s | %d | %s | %s | %s '
                     '|' % (
                         time.strftime('%Y-%m-%d %H:%M:%S',
                                       time.gmtime(r.at)), r.samples,
                         r.workloads, r.live_samples, _fmt(r.live_mae),
                         _fmt(r.previous_cv_mae), _fmt(r.drift, '%.1fx'),
                         r.live_abstained, newest, _fmt(r.cv_mae),
                         'yes' if r.replaced else 'no: %s' % r.reason))
    return lines


__all__ = ['HISTORY_SUFFIX', 'Retraining', 'append', 'history_path', 'read',
           'score', 'table']

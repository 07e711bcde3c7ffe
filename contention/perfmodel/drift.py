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
history says why.

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
             'abstained | new model MAE | replaced |',
             '|---|---|---|---|---|---|---|---|---|---|']
    for r in records:
        lines.append('| %s | %d | %d | %d | %s | %s | %s | %d | %s | %s |' % (
            time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(r.at)), r.samples,
            r.workloads, r.live_samples, _fmt(r.live_mae),
            _fmt(r.previous_cv_mae), _fmt(r.drift, '%.1fx'),
            r.live_abstained, _fmt(r.cv_mae),
            'yes' if r.replaced else 'no: %s' % r.reason))
    return lines


__all__ = ['HISTORY_SUFFIX', 'Retraining', 'append', 'history_path', 'read',
           'score', 'table']

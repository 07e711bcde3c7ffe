"""When the interference model does not know, and says so.

A random forest answers every row, however far it lies from what it was
trained on: beyond the training range each tree returns its edge leaf,
so the answer looks as sure as any (trees do not extrapolate). Two
measures, both computed with every prediction
(:meth:`contention.perfmodel.models.InterferenceModel.predict_confident`):

* **domain excess**: how far the row lies outside the training rows'
  per-feature range, in units of that range's width
  (:class:`~contention.perfmodel.models.Domain`); the measure that
  catches a profile or a host unlike anything trained on;
* **spread**: the standard deviation of the trees' predictions; inside
  the range it grows where the training rows disagree (a latency
  service near saturation, a region few rows cover).

:func:`judge` turns them into "sure" (None) or the reason it is not. The
callers abstain on a reason: the Nova weigher and the simulator's
``contention_weigher`` give that host the neutral score
(:func:`contention.perfmodel.scoring.score_hosts`), the swap strategies'
model check says nothing (:meth:`contention.perfmodel.mixes.MixValues.
unsure`), and ``contention-train evaluate`` counts them.
"""

import dataclasses

import numpy as np

from contention.perfmodel import features

#: Rows further than this outside the training range (in units of its
#: width, on their worst feature) are out of the model's domain. Half the
#: range: a quarter of the span beyond the edge is still answered (the
#: edge leaves describe it), twice the training maximum of a feature
#: starting at 0 is not.
DEFAULT_MAX_EXCESS = 0.5
#: Trees disagreeing by more than this standard deviation (performance or
#: co-runner slowdown, 0-1) make the answer unsure.
DEFAULT_MAX_SPREAD = 0.2


@dataclasses.dataclass(frozen=True)
class Limits:
    """The thresholds of :func:`judge` (an operator's, or the defaults)."""

    max_excess: float = DEFAULT_MAX_EXCESS
    max_spread: float = DEFAULT_MAX_SPREAD


def judge(prediction, limits=Limits()):
    """[None or reason] per row of a ``models.Prediction``.

    None: the model may be used for the row. A reason names the measure,
    its value and the threshold, and for the domain the feature.
    """
    result = []
    for excess, feature, spread in zip(prediction.excess.tolist(),
                                       prediction.feature.tolist(),
                                       prediction.spread.tolist()):
        if excess > limits.max_excess:
            result.append(
                'outside the training data (%s %.2f of its training range '
                'beyond it, limit %.2f)' % (features.FEATURE_NAMES[feature],
                                            excess, limits.max_excess))
        elif spread > limits.max_spread:
            result.append('trees disagree (spread %.3f, limit %.3f)'
                          % (spread, limits.max_spread))
        else:
            result.append(None)
    return result


def abstained(reasons):
    """How many of ``reasons`` (from :func:`judge`) are abstentions."""
    return int(np.sum([r is not None for r in reasons]))

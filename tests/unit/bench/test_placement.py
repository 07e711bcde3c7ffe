"""The placement bench's in-service error scores what the store learnt."""

import numpy as np
import testtools

from bench import placement
from contention.perfmodel import datasets
from contention.perfmodel import features
from contention.perfmodel import models


class TestHistoryError(testtools.TestCase):

    def test_held_out_rows_get_the_learnt_value_or_none(self):
        n = len(features.FEATURE_NAMES)
        small = features.FEATURE_NAMES.index('mf_small_llc')
        mf = features.FEATURE_NAMES.index('mf')
        X = np.full((4, n), 0.5)
        X[:, mf] = 0.25
        data = datasets.Dataset(X, np.zeros((4, 2)), ['a', 'a', 'b', 'c'],
                                'test', evaluate=['a', 'b'])
        seen = {}

        def cross_validate(model, X, Y, groups, evaluate=None,
                           X_scored=None):
            seen.update(X=X, scored=X_scored, evaluate=evaluate)
            return 'cv'
        self.patch(models.InterferenceModel, 'cross_validate',
                   cross_validate)
        self.assertEqual('cv', placement.history_error(
            data, {'a': 0.75}, models, features, estimators=2))
        scored = seen['scored']
        np.testing.assert_allclose([0.75, 0.75], scored[:2, small])
        np.testing.assert_allclose([0.5, 0.5], scored[:2, small + 1])
        self.assertTrue(np.isnan(scored[2:, small:small + 2]).all())
        # training keeps the profiled value; counters are untouched
        np.testing.assert_array_equal(X, seen['X'])
        np.testing.assert_array_equal(X[:, :small], scored[:, :small])
        self.assertEqual(['a', 'b'], seen['evaluate'])

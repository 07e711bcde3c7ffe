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


class TestOutOfRangeFamilies(testtools.TestCase):

    def test_every_family_is_outside_the_training_ranges(self):
        # Widening the shipped ranges over a family would make its row an
        # in-range error still labelled out of range.
        from contention.sim import training
        for name, ranges, _ in placement.OUT_OF_RANGE_FAMILIES:
            self.assertTrue(placement.outside(
                ranges, training.SYNTHETIC_RANGES), name)

    def test_outside_and_covering(self):
        training = {'a': (1.0, 2.0), 'b': (0.0, 1.0)}
        self.assertEqual(['a'], placement.outside(
            {'a': (3.0, 4.0), 'b': (0.5, 2.0)}, training))
        self.assertEqual([], placement.outside({'a': (1.5, 4.0)}, training))
        wide = placement.covering(training, [('x', {'a': (3.0, 4.0)}, 0.0),
                                             ('y', {'b': (-1.0, 0.5)}, 0.0)])
        self.assertEqual({'a': (1.0, 4.0), 'b': (-1.0, 1.0)}, wide)

"""Model files are checked structurally before any tree walks them."""

import os

import fixtures
import numpy as np
import skops.io as sio
import testtools

from contention.perfmodel import features
from contention.perfmodel import forest_check
from contention.perfmodel import models
from contention.perfmodel import persist


def small_model(seed=0, trees=3):
    rng = np.random.default_rng(seed)
    X = rng.random((40, len(features.FEATURE_NAMES)))
    return models.InterferenceModel(n_estimators=trees).fit(
        X, rng.random((40, 2)))


def tamper(forest, field, node, value, tree=0):
    """Set ``field`` of ``node`` in a forest's tree, as a crafted file would.

    Goes through the tree's pickled state (what skops stores), so the
    result is exactly what loading such a file constructs.
    """
    tree_ = forest.estimators_[tree].tree_
    state = tree_.__getstate__()
    nodes = state['nodes'].copy()
    nodes[field][node] = value
    state['nodes'] = nodes
    tree_.__setstate__(state)


class TestCraftedFiles(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'model.skops')

    def refused(self, model, *words):
        persist.save(persist.ModelBundle(interference=model), self.path)
        exc = self.assertRaises(persist.ModelFileError, persist.load,
                                self.path)
        for word in words:
            self.assertIn(word, str(exc))
        self.assertIn(self.path, str(exc))
        return exc

    def test_sound_file_loads_and_predicts_the_same(self):
        model = small_model()
        persist.save(persist.ModelBundle(interference=model), self.path)
        loaded = persist.load(self.path).interference
        X = np.random.default_rng(1).random((5, len(features.FEATURE_NAMES)))
        np.testing.assert_allclose(model.predict(X), loaded.predict(X))
        self.assertEqual(model.domain_, loaded.domain_)

    def test_child_index_past_the_node_array_is_refused(self):
        # scikit-learn follows this index unchecked: predicting with the
        # tree reads far outside its node array (a segmentation fault
        # before the structural check).
        model = small_model()
        tamper(model.fallback_forests_[0], 'left_child', 0, 10 ** 9)
        self.refused(model, 'tree 0', 'node 0 has left child 1000000000',
                     'fallback forests 0')

    def test_child_pointing_back_is_refused(self):
        # a cycle: the walk would never end
        model = small_model()
        tamper(model.forests_[1], 'right_child', 0, 0, tree=2)
        self.refused(model, 'tree 2', 'right child 0')

    def test_split_on_a_missing_feature_is_refused(self):
        model = small_model()
        tamper(model.forests_[0], 'feature', 0, 500)
        self.refused(model, 'splits on feature 500')

    def test_non_finite_threshold_or_leaf_is_refused(self):
        model = small_model()
        tamper(model.forests_[0], 'threshold', 0, np.nan)
        self.refused(model, 'non-finite threshold')
        model = small_model()
        tree_ = model.forests_[0].estimators_[0].tree_
        state = tree_.__getstate__()
        state['values'] = state['values'].copy()
        state['values'][-1] = np.inf
        tree_.__setstate__(state)
        self.refused(model, 'leaf value is not finite')

    def test_another_estimator_in_place_of_a_forest_is_refused(self):
        from sklearn import linear_model
        model = small_model()
        model.forests_[0] = linear_model.LinearRegression().fit(
            np.ones((3, len(features.FEATURE_NAMES))), [1, 2, 3])
        self.refused(model, 'not a random forest')

    def test_malformed_dictionary_is_one_error_type(self):
        model = small_model()
        persist.save(persist.ModelBundle(interference=model), self.path)
        with open(self.path, 'rb') as f:
            data = sio.loads(f.read(), trusted=list(persist.TRUSTED_TYPES))
        for damage in (lambda d: d['interference'].pop('params'),
                       lambda d: d['interference']['params'].update(
                           bogus=1),
                       lambda d: d['interference'].update(domain={
                           'low': [0.0], 'high': [1.0]}),
                       lambda d: d['interference'].update(forests=5)):
            copy = sio.loads(sio.dumps(data),
                             trusted=list(persist.TRUSTED_TYPES))
            damage(copy)
            with open(self.path, 'wb') as f:
                f.write(sio.dumps(copy))
            self.assertRaises(persist.ModelFileError, persist.load,
                              self.path)

    def test_truncated_archive_is_refused(self):
        persist.save(persist.ModelBundle(interference=small_model()),
                     self.path)
        with open(self.path, 'rb') as f:
            raw = f.read()
        with open(self.path, 'wb') as f:
            f.write(raw[:len(raw) // 2])
        self.assertRaises(persist.ModelFileError, persist.load, self.path)

    def test_genuine_forests_pass_the_check(self):
        model = small_model(trees=10)
        for forest in model.forests_ + model.fallback_forests_:
            forest_check.check_forest(forest, forest.n_features_in_)

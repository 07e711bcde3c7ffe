"""Structural checks of a loaded random forest, before it predicts.

A model file is data (:mod:`contention.perfmodel.persist` loads it without
running code), but scikit-learn's tree walk trusts the arrays it is given:
a child index past the end of the node array, or a split on a feature the
row does not have, reads memory out of bounds and can crash the scheduler
process (a segmentation fault no ``except`` catches). So every tree of a
loaded forest is checked here, once at load time:

* the forest is a ``RandomForestRegressor`` of ``DecisionTreeRegressor``
  trees taking ``n_features`` inputs and giving ``n_outputs`` outputs;
* each tree's node arrays have one entry per node and integer / float
  dtypes; a leaf has no children; a split node's children come after it
  in the array (scikit-learn builds trees depth first, so this holds for
  every genuine tree and makes every walk end inside the array);
* a split reads a feature in ``0 .. n_features - 1`` at a finite
  threshold; leaf values are finite and shaped (nodes, outputs, 1).

:func:`check_forest` raises ValueError saying which tree and what; the
loader turns it into its one error type.
"""

import numpy as np
from sklearn import ensemble
from sklearn import tree as sk_tree


def _check_tree(tree, n_features, n_outputs):
    n = tree.node_count
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError('node count %r is not a positive integer' % (n,))
    if tree.n_features != n_features or tree.n_outputs != n_outputs:
        raise ValueError('takes %s features to %s outputs, not %d to %d'
                         % (tree.n_features, tree.n_outputs, n_features,
                            n_outputs))
    left = np.asarray(tree.children_left)
    right = np.asarray(tree.children_right)
    feature = np.asarray(tree.feature)
    threshold = np.asarray(tree.threshold)
    value = np.asarray(tree.value)
    for name, arr, kind in (('children_left', left, 'i'),
                            ('children_right', right, 'i'),
                            ('feature', feature, 'i'),
                            ('threshold', threshold, 'f')):
        if arr.shape != (n,) or arr.dtype.kind != kind:
            raise ValueError('%s has shape %s and dtype %s, not (%d,) %s'
                             % (name, arr.shape, arr.dtype, n,
                                'integers' if kind == 'i' else 'floats'))
    if value.shape != (n, n_outputs, 1) or value.dtype.kind != 'f':
        raise ValueError('leaf values have shape %s and dtype %s, not '
                         '(%d, %d, 1) floats' % (value.shape, value.dtype,
                                                 n, n_outputs))
    leaf = left == -1
    if np.any(right[leaf] != -1):
        raise ValueError('a leaf has a right child')
    split = ~leaf
    index = np.arange(n)
    for name, child in (('left', left), ('right', right)):
        bad = split & ((child <= index) | (child >= n))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError('node %d has %s child %d, outside %d..%d'
                             % (i, name, int(child[i]), i + 1, n - 1))
    bad = split & ((feature < 0) | (feature >= n_features))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError('node %d splits on feature %d of %d'
                         % (i, int(feature[i]), n_features))
    if not np.all(np.isfinite(threshold[split])):
        raise ValueError('a split has a non-finite threshold')
    if not np.all(np.isfinite(value)):
        raise ValueError('a leaf value is not finite')


def check_forest(forest, n_features, n_outputs=1):
    """Raise ValueError unless ``forest`` is safe to predict with.

    See the module doc for what is checked.
    """
    if not isinstance(forest, ensemble.RandomForestRegressor):
        raise ValueError('a %s, not a random forest regressor'
                         % type(forest).__name__)
    if getattr(forest, 'n_features_in_', None) != n_features:
        raise ValueError('takes %r features, not %d'
                         % (getattr(forest, 'n_features_in_', None),
                            n_features))
    trees = getattr(forest, 'estimators_', None)
    if not isinstance(trees, list) or not trees:
        raise ValueError('has no trees')
    for k, estimator in enumerate(trees):
        if not isinstance(estimator, sk_tree.DecisionTreeRegressor):
            raise ValueError('tree %d is a %s' % (k,
                                                  type(estimator).__name__))
        tree = getattr(estimator, 'tree_', None)
        if not isinstance(tree, sk_tree._tree.Tree):
            raise ValueError('tree %d has no fitted tree' % k)
        try:
            _check_tree(tree, n_features, n_outputs)
        except ValueError as exc:
            raise ValueError('tree %d: %s' % (k, exc)) from None

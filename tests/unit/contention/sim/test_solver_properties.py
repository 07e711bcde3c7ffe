"""Properties of the contention solver that must hold for any placement."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
from oslotest import base

from tests.unit.contention.sim import helpers

PROFILES = helpers.ahn_profiles()
NAMES = sorted(PROFILES)


class TestSolverProperties(base.BaseTestCase):

    @hypothesis.settings(max_examples=40, deadline=None)
    @hypothesis.given(st.lists(st.sampled_from(NAMES), min_size=1,
                               max_size=7),
                      st.sampled_from(NAMES))
    def test_a_new_neighbour_never_helps(self, names, newcomer):
        items = [(PROFILES[n], 0, 0) for n in names]
        before, sol = helpers.solve(items)
        after, sol2 = helpers.solve(items + [(PROFILES[newcomer], 0, 0)])
        self.assertTrue(sol.converged and sol2.converged)
        self.assertTrue(np.all(before <= 1.0 + 1e-6))
        self.assertTrue(np.all(after[:-1] <= before + 1e-3))
        # Occupancies fill at most the cache.
        self.assertLessEqual(sol2.occupancy.sum(), 12 * 2 ** 20 * 1.0001)

    @hypothesis.settings(max_examples=25, deadline=None)
    @hypothesis.given(st.sampled_from(NAMES))
    def test_remote_memory_never_helps_alone(self, name):
        local, _ = helpers.solve([(PROFILES[name], 0, 0)])
        remote, _ = helpers.solve([(PROFILES[name], 0, 1)])
        self.assertLessEqual(remote[0], local[0] + 1e-6)
        self.assertAlmostEqual(1.0, local[0], 4)

"""Merlin's metrics, levels, 9 states, transitions and triggers."""

from hypothesis import given
from hypothesis import strategies as st
from oslotest import base

from contention import classify

TH = classify.Thresholds()
levels = st.sampled_from(classify.LEVELS)


class TestThresholds(base.BaseTestCase):

    def test_paper_defaults(self):
        self.assertEqual((2, 15, 0.25, 0.6, 0.8, 100),
                         (TH.mpki_low, TH.mpki_high, TH.mf_low, TH.mf_high,
                          TH.cpu_needs_more, TH.node_mpki_trigger))

    def test_overridable(self):
        th = classify.Thresholds(mpki_low=1, mpki_high=10)
        self.assertEqual('high/low', classify.merlin_class(11, 0.1, th))

    def test_low_above_high_rejected(self):
        error = self.assertRaises(ValueError, classify.Thresholds,
                                  mf_low=0.7, mf_high=0.6)
        self.assertIn('mf_low', str(error))

    def test_bad_values_rejected(self):
        for bad in (-1, float('nan'), float('inf'), None, '2', True):
            self.assertRaises(ValueError, classify.Thresholds, mpki_low=bad)


class TestMetrics(base.BaseTestCase):

    def test_mpki(self):
        self.assertEqual(7.5, classify.mpki(90, 12000))

    def test_mpki_zero_instructions_is_unmeasured(self):
        self.assertIsNone(classify.mpki(5, 0))
        self.assertIsNone(classify.mpki(0, 0))

    def test_mpki_none(self):
        self.assertIsNone(classify.mpki(None, 100))
        self.assertIsNone(classify.mpki(5, None))

    def test_zero_misses_is_a_measured_zero(self):
        self.assertEqual(0.0, classify.mpki(0, 1000))
        self.assertEqual(0.0, classify.memory_factor(0, 1000))

    def test_memory_factor(self):
        self.assertEqual(0.3, classify.memory_factor(30, 100))
        self.assertIsNone(classify.memory_factor(3, 0))
        self.assertIsNone(classify.memory_factor(None, 10))

    def test_memory_factor_not_clamped(self):
        self.assertEqual(1.1, classify.memory_factor(11, 10))


class TestLevels(base.BaseTestCase):

    def test_level_boundaries_are_medium(self):
        self.assertEqual('low', classify.level(1.999, 2, 15))
        self.assertEqual('medium', classify.level(2, 2, 15))
        self.assertEqual('medium', classify.level(15, 2, 15))
        self.assertEqual('high', classify.level(15.001, 2, 15))
        self.assertIsNone(classify.level(None, 2, 15))

    def test_merlin_class_at_the_paper_boundaries(self):
        cases = [((1.99, 0.2499), 'low/low'),
                 ((2.0, 0.25), 'medium/medium'),
                 ((15.0, 0.6), 'medium/medium'),
                 ((15.01, 0.61), 'high/high'),
                 ((0.0, 1.0), 'low/high'),
                 ((40.0, 0.0), 'high/low')]
        for (m, f), expected in cases:
            self.assertEqual(expected, classify.merlin_class(m, f, TH),
                             (m, f))

    def test_merlin_class_unmeasured(self):
        self.assertIsNone(classify.merlin_class(None, 0.3))
        self.assertIsNone(classify.merlin_class(3.0, None))

    @given(st.floats(0, 1e4), st.floats(0, 2))
    def test_every_class_parses_back(self, m, f):
        klass = classify.merlin_class(m, f)
        self.assertIn(klass, classify.CLASSES)
        self.assertEqual(klass, '/'.join(classify.parse_class(klass)))

    def test_nine_classes(self):
        self.assertEqual(9, len(set(classify.CLASSES)))

    def test_parse_class_rejects_garbage(self):
        for bad in ('high', 'high/low/x', 'HIGH/low', 'high/', '', None, 3):
            error = self.assertRaises(ValueError, classify.parse_class, bad)
            self.assertIn('not a Merlin class', str(error))


class TestTransition(base.BaseTestCase):

    def test_right_is_mpki_rising(self):
        t = classify.transition('low/low', 'medium/low')
        self.assertEqual(classify.Transition(right=True, down=False,
                                             worse=True), t)
        self.assertTrue(t.changed)

    def test_down_is_mf_rising(self):
        t = classify.transition('medium/low', 'medium/high')
        self.assertEqual(classify.Transition(right=False, down=True,
                                             worse=True), t)

    def test_left_and_up_are_demand_met(self):
        t = classify.transition('high/high', 'medium/low')
        self.assertEqual(classify.Transition(right=False, down=False,
                                             worse=False, left=True,
                                             up=True), t)

    def test_right_but_up_is_still_worse(self):
        t = classify.transition('low/high', 'high/low')
        self.assertTrue(t.right)
        self.assertTrue(t.up)
        self.assertTrue(t.worse)

    def test_no_change(self):
        t = classify.transition('medium/medium', 'medium/medium')
        self.assertFalse(t.changed)
        self.assertFalse(t.worse)

    def test_unknown_side(self):
        self.assertIsNone(classify.transition(None, 'low/low'))
        self.assertIsNone(classify.transition('low/low', None))

    def test_malformed_class(self):
        self.assertRaises(ValueError, classify.transition, 'low', 'low/low')

    @given(levels, levels, levels, levels)
    def test_worse_iff_a_level_rose(self, m0, f0, m1, f1):
        t = classify.transition(m0 + '/' + f0, m1 + '/' + f1)
        rose = (classify.LEVELS.index(m1) > classify.LEVELS.index(m0)
                or classify.LEVELS.index(f1) > classify.LEVELS.index(f0))
        self.assertEqual(rose, t.worse)
        back = classify.transition(m1 + '/' + f1, m0 + '/' + f0)
        self.assertEqual((t.right, t.down), (back.left, back.up))


class TestSensitivity(base.BaseTestCase):

    def test_cpu_needs_more_above_threshold(self):
        self.assertTrue(classify.cpu_sensitivity(0.81, TH))
        self.assertFalse(classify.cpu_sensitivity(0.8, TH))
        self.assertFalse(classify.cpu_sensitivity(0.5, TH))
        self.assertIsNone(classify.cpu_sensitivity(None, TH))
        self.assertTrue(classify.cpu_sensitivity(
            0.6, classify.Thresholds(cpu_needs_more=0.5)))

    def test_resource_sensitivities(self):
        cases = {'low/low': set(), 'low/high': set(),
                 'high/low': {'cache'}, 'medium/low': {'cache'},
                 'high/high': {'mc_ic'}, 'medium/high': {'mc_ic'},
                 'high/medium': {'cache', 'mc_ic'}}
        for klass, expected in cases.items():
            self.assertEqual(frozenset(expected),
                             classify.resource_sensitivities(klass), klass)
        self.assertIsNone(classify.resource_sensitivities(None))

    def test_node_trigger(self):
        self.assertFalse(classify.node_needs_mc_ic_relief(100.0, TH))
        self.assertTrue(classify.node_needs_mc_ic_relief(100.01, TH))
        self.assertIsNone(classify.node_needs_mc_ic_relief(None, TH))
        self.assertTrue(classify.node_needs_mc_ic_relief(
            60, classify.Thresholds(node_mpki_trigger=50)))


class TestKeywordApi(base.BaseTestCase):

    def test_merlin_class_by_keyword(self):
        self.assertEqual('high/low', classify.merlin_class(
            mpki=20.0, mf=0.1, th=classify.Thresholds()))

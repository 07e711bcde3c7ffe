"""The model knows when it does not know: domain, spread, abstention."""

import numpy as np
import testtools

from contention.perfmodel import confidence
from contention.perfmodel import features
from contention.perfmodel import mixes
from contention.perfmodel import models
from contention.perfmodel import scoring
from tests.unit.contention.perfmodel import test_models


class ModelFixture(object):
    bundle = None

    @classmethod
    def model(cls):
        if cls.bundle is None:
            cls.bundle = test_models.trained_bundle(samples=10)
        return cls.bundle.interference


IN = features.parse_profile('mpki=12,mf=0.6,ipc=0.8', vcpus=4,
                            memory_mib=4096)
FAR = features.parse_profile('mpki=400,mf=0.9,ipc=0.4', vcpus=4,
                             memory_mib=4096)
CELL = features.CellState(cpus=8, co_mpki_sum=10.0, co_vcpus=2.0)


class TestDomain(testtools.TestCase):

    def test_excess_in_units_of_the_training_range(self):
        X = np.zeros((3, len(features.FEATURE_NAMES)))
        X[:, 0] = [0.0, 5.0, 10.0]
        X[:, 1] = 7.0                      # constant: never read
        X[:, -2:] = np.nan                 # no row has it
        domain = models.Domain.of(X)
        rows = np.zeros((4, len(features.FEATURE_NAMES)))
        rows[:, 0] = [5.0, 15.0, -20.0, 10.0]
        rows[:, 1] = 1000.0
        rows[:, -2:] = 3.0
        excess, feature = domain.excess(rows)
        np.testing.assert_allclose([0.0, 0.5, 2.0, 0.0], excess)
        self.assertEqual([0, 0], feature[1:3].tolist())

    def test_nan_features_of_a_row_are_not_outside(self):
        X = np.random.default_rng(0).random((10, len(features.FEATURE_NAMES)))
        domain = models.Domain.of(X)
        row = X[:1].copy()
        row[0, -2:] = np.nan
        self.assertEqual(0.0, domain.excess(row)[0][0])


class TestPredictConfident(testtools.TestCase):

    def test_same_values_as_predict_with_spread_and_domain(self):
        model = ModelFixture.model()
        X = np.asarray([features.feature_row(p, CELL) for p in (IN, FAR)])
        pred = model.predict_confident(X)
        np.testing.assert_allclose(model.predict(X), pred.values, atol=1e-6)
        self.assertEqual((2,), pred.spread.shape)
        self.assertTrue(np.all(pred.spread >= 0))
        self.assertEqual(0.0, pred.excess[0])
        self.assertGreater(pred.excess[1], 5.0)
        self.assertEqual('mpki', features.FEATURE_NAMES[pred.feature[1]])

    def test_judge_names_measure_and_limit(self):
        pred = models.Prediction(values=np.zeros((3, 2)),
                                 spread=np.array([0.01, 0.3, 0.01]),
                                 excess=np.array([0.0, 0.0, 2.0]),
                                 feature=np.array([-1, -1, 5]))
        reasons = confidence.judge(pred)
        self.assertIsNone(reasons[0])
        self.assertIn('trees disagree (spread 0.300', reasons[1])
        self.assertIn('outside the training data (co_mpki_sum 2.00',
                      reasons[2])
        self.assertEqual(2, confidence.abstained(reasons))
        loose = confidence.Limits(max_excess=3.0, max_spread=0.5)
        self.assertEqual([None] * 3, confidence.judge(pred, loose))


class TestScoreHosts(testtools.TestCase):

    def test_far_profile_is_neutral_with_reason(self):
        model = ModelFixture.model()
        cells = {'a': CELL, 'b': features.CellState(cpus=8)}
        far = scoring.score_hosts(model, FAR, cells, neutral=0.4)
        self.assertEqual({0.4}, {s.score for s in far.values()})
        self.assertTrue(far['a'].abstained)
        self.assertIn('model unsure: outside the training data',
                      far['a'].neutral_reason)
        near = scoring.score_hosts(model, IN, cells, neutral=0.4)
        self.assertFalse(any(s.neutral for s in near.values()))
        expected = scoring.combine(near['a'].performance, near['a'].slowdown)
        self.assertAlmostEqual(float(expected), near['a'].score)

    def test_unusable_values_make_that_host_neutral_only(self):
        model = ModelFixture.model()
        cells = {
            'inf': features.CellState(cpus=8, co_mpki_sum=float('inf')),
            'nan': features.CellState(cpus=8, co_mpki_sum=float('nan')),
            'f32': features.CellState(cpus=8, co_mpki_sum=5.0,
                                      mem_bw_bps=1e300),
            'huge': features.CellState(cpus=8, co_mpki_sum=1e300),
            'none': features.CellState(cpus=8, co_mpki_sum=None),
            'ok': CELL}
        scores = scoring.score_hosts(model, IN, cells)
        for host in ('inf', 'nan', 'f32', 'huge', 'none'):
            self.assertEqual(scoring.DEFAULT_NEUTRAL, scores[host].score)
            self.assertIn('unusable telemetry', scores[host].neutral_reason)
            self.assertFalse(scores[host].abstained)
        self.assertFalse(scores['ok'].neutral)

    def test_row_problem(self):
        row = features.feature_row(IN, CELL)
        self.assertIsNone(features.row_problem(row))
        bad = list(row)
        bad[features.FEATURE_NAMES.index('mem_bw_gbps')] = 1e39
        self.assertIn('mem_bw_gbps', features.row_problem(bad))


class TestMixAbstention(testtools.TestCase):

    def test_unsure_mix_makes_the_check_abstain(self):
        model = ModelFixture.model()
        values = mixes.MixValues(model, {'in': IN, 'far': FAR})
        sure = ((('in', 2),), 8)
        unsure = ((('far', 1), ('in', 1)), 8)
        self.assertIsNone(values.unsure([sure]))
        self.assertEqual(0, values.abstentions)
        why = values.unsure([sure, unsure])
        self.assertIn('outside the training data', why)
        self.assertEqual(1, values.abstentions)
        # the values stay available to whoever wants them
        self.assertGreater(values.value(*unsure), 0.0)

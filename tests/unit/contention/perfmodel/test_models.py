"""Interference and placement-vector models, datasets and model files."""

import dataclasses
import os

import fixtures
import numpy as np
import testtools

from contention.perfmodel import datasets
from contention.perfmodel import features
from contention.perfmodel import important
from contention.perfmodel import machine
from contention.perfmodel import models
from contention.perfmodel import persist
from tests.unit.contention import topologies
from tests.unit.contention.perfmodel import synthetic
from tests.unit.contention.store import reports as store_reports


def trained_bundle(samples=15, per_family=2):
    topology = machine.regular_topology(nodes=2, cores_per_node=8)
    workloads = synthetic.workloads(per_family=per_family)
    data = datasets.interference_dataset(
        synthetic.performance, topology, workloads,
        samples_per_workload=samples, label='synthetic')
    model = models.InterferenceModel(n_estimators=20)
    model.cross_validate(data.X, data.Y, data.groups)
    model.fit(data.X, data.Y, data.groups)
    return persist.ModelBundle(interference=model, summary=data.summary())


class TestFeatures(testtools.TestCase):

    def test_parse_profile(self):
        p = features.parse_profile(' mpki=12, mf=0.7,ipc=0.8', vcpus=4)
        self.assertEqual((12.0, 0.7, 0.8, 4), (p.mpki, p.mf, p.ipc, p.vcpus))
        self.assertEqual('mpki=12,mf=0.7,ipc=0.8', features.format_profile(p))
        self.assertIsNone(p.cpu_util)
        self.assertFalse(p.latency)
        # unknown utilisation reads as fully busy vCPUs
        self.assertEqual(12 * 0.8 * 1.0 * 4, p.miss_intensity)
        q = features.parse_profile('mpki=2,mf=0.3,ipc=1,cpu_util=0.5,'
                                   'latency=yes', vcpus=2)
        self.assertEqual((0.5, True), (q.cpu_util, q.latency))
        self.assertEqual(2 * 1 * 0.5 * 2, q.miss_intensity)
        self.assertEqual(q, features.parse_profile(
            features.format_profile(q), vcpus=2))

    def test_small_llc_mf(self):
        p = features.parse_profile('mpki=3,mf=0.25,ipc=0.6,mf_small_llc=0.55')
        self.assertEqual(0.55, p.mf_small_llc)
        self.assertEqual(p, features.parse_profile(features.format_profile(p)))
        row = dict(zip(features.FEATURE_NAMES, features.feature_row(
            p, features.CellState(cpus=8))))
        self.assertAlmostEqual(0.55, row['mf_small_llc'])
        self.assertAlmostEqual(0.30, row['mf_small_llc_rise'])
        # not measured: NaN, so the model answers from its fallback forests
        row = features.feature_row(features.NEUTRAL_PROFILE,
                                   features.CellState(cpus=8))
        self.assertTrue(np.isnan(row[-2:]).all())
        self.assertFalse(np.isnan(row[:-2]).any())
        self.assertEqual(len(features.COUNTER_FEATURES) + 2,
                         len(features.FEATURE_NAMES))
        exc = self.assertRaises(ValueError, features.parse_profile,
                                'mpki=1,mf=0.5,ipc=1,mf_small_llc=2')
        self.assertIn('mf_small_llc', str(exc))

        class Image:
            mpki, mf, ipc, mf_small_llc = 3.0, 0.25, 0.6, 0.5
        profile, problems = features.choose_profile(image_profile=Image())
        self.assertEqual((0.5, []), (profile.mf_small_llc, problems))

    def test_parse_profile_errors(self):
        for text, needle in (('', 'empty'), ('mpki=1,mf=2', 'missing ipc'),
                             ('mpki=x,mf=1,ipc=1', 'not a number'),
                             ('foo=1', 'not one of'),
                             ('mpki=1,mpki=2,mf=1,ipc=1', 'twice'),
                             ('mpki=-1,mf=1,ipc=1', '>= 0'),
                             ('mpki=nan,mf=1,ipc=1', 'finite'),
                             ('mpki=1,mf=1,ipc=1,cpu_util=1.5', '0-1'),
                             ('mpki=1,mf=1,ipc=1,cpu_util=x', 'not a number'),
                             ('mpki=1,mf=1,ipc=1,latency=maybe', 'latency')):
            exc = self.assertRaises(ValueError, features.parse_profile, text)
            self.assertIn(needle, str(exc))

    def test_row_and_merge(self):
        a = features.CellState(cpus=8, co_mpki_sum=10, co_vcpus=4,
                               mc_level=1)
        b = features.CellState(cpus=8, co_mpki_sum=5, co_vcpus=2,
                               mc_level=2)
        merged = features.merge_cells([a, b])
        self.assertEqual((16, 15, 6, 2), (merged.cpus, merged.co_mpki_sum,
                                          merged.co_vcpus, merged.mc_level))
        row = features.feature_row(features.NEUTRAL_PROFILE, a)
        self.assertEqual(len(features.FEATURE_NAMES), len(row))
        named = dict(zip(features.FEATURE_NAMES, row))
        self.assertEqual(0.5, named['occupancy'])
        # co-runner intensity and demand unknown: estimated from MPKI and
        # vCPUs; the neutral profile is one busy vCPU
        self.assertEqual(10.0, named['co_miss_intensity'])
        self.assertEqual(4.0, named['co_cpu_demand'])
        self.assertEqual((4.0 + 1.0) / 8, named['cpu_demand_ratio'])
        self.assertEqual(1.0, named['cpu_util'])
        self.assertEqual(0.0, named['latency'])
        c = features.CellState(cpus=8, co_mpki_sum=10, co_vcpus=4,
                               co_miss_intensity=3.0, co_cpu_demand=2.0)
        self.assertIsNone(features.merge_cells([a, c]).co_miss_intensity)
        both = features.merge_cells([c, c])
        self.assertEqual((6.0, 4.0), (both.co_miss_intensity,
                                      both.co_cpu_demand))
        named = dict(zip(features.FEATURE_NAMES, features.feature_row(
            features.InstanceProfile(mpki=2, mf=0.2, ipc=1.5, vcpus=2,
                                     cpu_util=0.5, latency=True), c)))
        self.assertEqual((3.0, 2.0 * 1.5 * 0.5 * 2, 3.0 + 3.0, 1.0),
                         (named['co_miss_intensity'], named['miss_intensity'],
                          named['total_miss_intensity'], named['latency']))
        self.assertEqual((2.0 + 1.0) / 8, named['cpu_demand_ratio'])

    def test_cells_from_report(self):
        report = store_reports.host_report(
            'h1', 100, [store_reports.instance('u1', mpki=12.0)])
        cells = features.cells_from_report(report)
        self.assertEqual(12.0, cells[0].co_mpki_sum)
        # from the instance record: 2 vCPUs at cpu_util 0.5, IPC 1.5
        self.assertEqual(12.0 * 1.5 * 0.5 * 2, cells[0].co_miss_intensity)
        self.assertEqual(1.0, cells[0].co_cpu_demand)
        self.assertEqual((0.0, 0.0), (cells[1].co_miss_intensity,
                                      cells[1].co_cpu_demand))
        self.assertEqual(1, cells[0].llc_level)
        self.assertIsNone(cells[1].llc_level)

    def test_node_level_view_leaves_loads_unknown_not_zero(self):
        # The weigher reads reports without instance records: a node that
        # holds instances must not look idle to the model.
        full = store_reports.host_report(
            'h1', 100, [store_reports.instance('u1', mpki=12.0)])
        light = dataclasses.replace(full, instances=())
        cells = features.cells_from_report(light)
        self.assertEqual((None, None), (cells[0].co_miss_intensity,
                                        cells[0].co_cpu_demand))
        self.assertEqual(12.0, cells[0].co_mpki_sum)
        # a node the aggregates call empty is idle all the same
        self.assertEqual(0, light.nodes[1].instances)
        self.assertEqual((0.0, 0.0), (cells[1].co_miss_intensity,
                                      cells[1].co_cpu_demand))
        row = dict(zip(features.FEATURE_NAMES, features.feature_row(
            features.InstanceProfile(mpki=25, mf=0.9, ipc=0.4, vcpus=4,
                                     memory_mib=4096), cells[0])))
        self.assertEqual(12.0, row['co_miss_intensity'])

    def test_node_level_view_of_a_1_3_report_has_its_loads(self):
        # Since schema 1.3 the aggregates carry the loads, so the
        # weigher's view reads what the model was trained on.
        full = store_reports.host_report(
            'h1', 100, [store_reports.instance('u1', mpki=12.0)])
        light = dataclasses.replace(full, instances=(), nodes=(
            dataclasses.replace(full.nodes[0], miss_intensity=18.0,
                                cpu_demand=1.0),) + full.nodes[1:])
        cells = features.cells_from_report(light)
        self.assertEqual((18.0, 1.0), (cells[0].co_miss_intensity,
                                       cells[0].co_cpu_demand))


class TestInterferenceModel(testtools.TestCase):

    def test_learns_and_cross_validates(self):
        bundle = trained_bundle()
        cv = bundle.interference.cv_
        self.assertEqual(10, cv.folds)
        self.assertLess(cv.mae, 0.1)
        calm = features.CellState(cpus=8)
        busy = features.CellState(cpus=8, co_mpki_sum=60, co_vcpus=6)
        heavy = features.InstanceProfile(mpki=25, mf=0.9, ipc=0.4, vcpus=4,
                                         memory_mib=4096)
        pred = bundle.interference.predict(
            [features.feature_row(heavy, calm),
             features.feature_row(heavy, busy)])
        self.assertGreater(pred[0, 0], pred[1, 0])

    def test_one_forest_per_output(self):
        # each output has its own forest: the co-runner target does not
        # move the performance forest's splits
        rng = np.random.default_rng(0)
        X = rng.random((120, len(features.FEATURE_NAMES)))
        Y = np.column_stack([X[:, 0], rng.random(120)])
        Y2 = np.column_stack([X[:, 0], X[:, 1]])
        a = models.InterferenceModel(n_estimators=10).fit(X, Y)
        b = models.InterferenceModel(n_estimators=10).fit(X, Y2)
        self.assertEqual(2, len(a.forests_))
        np.testing.assert_allclose(a.predict(X)[:, 0], b.predict(X)[:, 0])
        self.assertFalse(np.allclose(a.predict(X)[:, 1], b.predict(X)[:, 1]))
        self.assertEqual(
            models.InterferenceModel.CORUNNER_PARAMS['max_features'],
            a.forests_[1].max_features)

    def test_profiles_without_small_llc_mf_use_the_fallback(self):
        # the target depends on the mf_small_llc column only; rows that
        # lack it are answered by forests that never read it
        n = 300
        X, Y, small = _small_llc_rows(n, seed=2)
        unknown = np.arange(n) % 3 == 0
        X[unknown, small:] = np.nan
        model = models.InterferenceModel(n_estimators=10).fit(X, Y)
        self.assertEqual(len(features.COUNTER_FEATURES),
                         model.fallback_forests_[0].n_features_in_)
        self.assertEqual(len(features.FEATURE_NAMES),
                         model.forests_[0].n_features_in_)
        self.assertEqual(int((~unknown).sum()),
                         model.summary_['samples_with_mf_small_llc'])
        pred = model.predict(X)[:, 0]
        np.testing.assert_allclose(Y[~unknown, 0], pred[~unknown],
                                   atol=0.1)
        # the fallback cannot see the column the target depends on
        known_err = np.abs(pred[~unknown] - Y[~unknown, 0]).mean()
        self.assertLess(known_err, np.abs(
            pred[unknown] - Y[unknown, 0]).mean())
        # trained without the column anywhere (the store): every row goes
        # to the fallback, known or not
        only = models.InterferenceModel(n_estimators=10).fit(
            X[unknown], Y[unknown])
        self.assertIsNone(only.forests_)
        self.assertEqual((n, 2), only.predict(X).shape)

    def _rows(self, util, latency):
        profile = features.InstanceProfile(
            mpki=5, mf=0.4, ipc=1.0, cpu_util=util, latency=latency)
        row = features.feature_row(profile, features.CellState(cpus=8))
        return np.asarray([row] * 4)

    def test_latency_performance_collapses_near_saturation(self):
        stretch = np.array([1.0, 1.5, 2.0, 2.5, 3.0])
        perf = models.latency_performance(stretch, 0.3)
        self.assertAlmostEqual(1.0, perf[0])
        self.assertTrue(np.all(np.diff(perf) < 0))
        # past rho = 0.3 x S = 0.95 the queue is saturated, far below 1/S
        self.assertLess(perf[-1], 0.1)
        self.assertGreater(1 / 3.0, 3 * perf[-1])
        # a service busy alone beyond the cap behaves like throughput
        np.testing.assert_allclose(1 / stretch,
                                   models.latency_performance(stretch, 1.0))

    def test_throughput_equivalent_round_trip(self):
        perf = np.array([1.0, 0.6, 0.2, 0.03])
        for util in (0.3, 0.7, 1.0):
            X = self._rows(util, True)
            equivalent = models.throughput_equivalent(X, perf)
            self.assertTrue(np.all(equivalent >= perf - 1e-12))
            np.testing.assert_allclose(
                perf, models.performance_from(X, equivalent))
        X = self._rows(0.3, False)
        np.testing.assert_allclose(perf, models.throughput_equivalent(X, perf))
        np.testing.assert_allclose(perf, models.performance_from(X, perf))

    def test_performance_forest_learns_the_stretch(self):
        # latency rows whose performance is the closed form of a stretch
        # the features carry: the forest fits the stretch, and predictions
        # come back as latency performance
        rng = np.random.default_rng(1)
        X = rng.random((200, len(features.FEATURE_NAMES)))
        X[:, models._LATENCY] = 1.0
        X[:, models._UTIL] = 0.4
        stretch = 1.0 + 1.5 * X[:, 0]
        Y = np.column_stack([models.latency_performance(stretch, 0.4),
                             np.zeros(200)])
        model = models.InterferenceModel(n_estimators=10).fit(X, Y)
        np.testing.assert_allclose(
            1 / stretch, model.forests_[0].predict(X), atol=0.05)
        np.testing.assert_allclose(Y[:, 0], model.predict(X)[:, 0],
                                   atol=0.05)

    def test_last_bits_of_the_rows_do_not_change_the_model(self):
        # The simulator's figures differ by about 1e-14 between CPUs
        # (numpy's AVX-512 and AVX2 kernels); a model trained on either
        # machine's rows must answer the same.
        rng = np.random.default_rng(5)
        X = rng.random((300, len(features.FEATURE_NAMES)))
        Y = np.column_stack([0.5 + 0.4 * X[:, 0] * X[:, 3],
                             0.1 * X[:, 5]])
        # coarse targets, as the simulator's discrete landings give,
        # so some candidate splits tie
        Y = np.round(Y, 2)
        jitter = 1.0 + 1e-14 * rng.standard_normal(X.shape)
        first = models.InterferenceModel(n_estimators=10).fit(X, Y)
        second = models.InterferenceModel(n_estimators=10).fit(
            X * jitter, Y * jitter[:, :2])
        np.testing.assert_array_equal(first.predict(X),
                                      second.predict(X * jitter))

    def test_trees_are_averaged_as_performance(self):
        # a latency service near saturation, on which the trees disagree:
        # the forest's performance is the mean of each tree's performance
        # (the closed form applied per tree); the closed form is convex in
        # the throughput equivalent (flat past saturation, steep below), so
        # that mean lies above the performance of the trees' mean
        rng = np.random.default_rng(3)
        X = rng.random((200, len(features.FEATURE_NAMES)))
        X[:, models._LATENCY] = 1.0
        X[:, models._UTIL] = 0.8
        stretch = 1.0 + 0.3 * X[:, 0] + 0.1 * rng.random(200)
        Y = np.column_stack([models.latency_performance(stretch, 0.8),
                             np.zeros(200)])
        model = models.InterferenceModel(n_estimators=10).fit(X, Y)
        each = np.stack([t.predict(X.astype(np.float32))
                         for t in model.forests_[0].estimators_])
        # the model reads its inputs settled (models.settled)
        seen = models.settled(X)
        per_tree = np.mean([models.performance_from(seen, e) for e in each],
                           axis=0)
        of_mean = models.performance_from(seen, each.mean(axis=0))
        pred = model.predict(X)[:, 0]
        np.testing.assert_allclose(per_tree, pred)
        self.assertGreater(np.abs(of_mean - pred).max(), 0.01)
        self.assertTrue(np.all(pred >= of_mean - 1e-12))
        # the spread is that of the same per-tree performances
        spread = model.predict_confident(X).spread
        self.assertTrue(np.all(spread >= np.std(
            [models.performance_from(seen, e) for e in each], axis=0) - 1e-9))

    def test_bad_shapes(self):
        model = models.InterferenceModel()
        self.assertRaises(ValueError, model.fit, np.zeros((3, 2)),
                          np.zeros((3, 2)))
        self.assertRaises(ValueError, model.predict,
                          np.zeros((1, len(features.FEATURE_NAMES))))

    def test_one_workload_cannot_cross_validate(self):
        exc = self.assertRaises(
            ValueError, models.leave_one_group_out, None, np.zeros((2, 1)),
            np.zeros((2, 1)), ['a', 'a'], ['y'])
        self.assertIn('at least 2 workloads', str(exc))

    def test_evaluate_holds_out_only_the_named_workloads(self):
        # y = x: a forest trained on the other groups predicts a held-out
        # group well only inside their range; "c" (x = 10) only trains.
        X = np.array([[0.0], [0.1], [1.0], [1.1], [10.0], [10.1]])
        Y = X.copy()
        groups = ['a', 'a', 'b', 'b', 'c', 'c']

        cv = models.leave_one_group_out(_Nearest, X, Y, groups, ['y'],
                                        evaluate=['a', 'b'])
        self.assertEqual(['a', 'b'], sorted(cv.per_workload))
        self.assertEqual(2, cv.folds)
        # a predicted from b (and c): |0-1|, |0.1-1|; b from a: 1, 1
        self.assertAlmostEqual(0.95, cv.per_workload['a'])
        self.assertAlmostEqual(0.95, cv.per_workload['b'])
        self.assertAlmostEqual(0.95, cv.mae)
        everything = models.leave_one_group_out(_Nearest, X, Y, groups,
                                                ['y'])
        self.assertEqual(3, everything.folds)
        self.assertGreater(everything.mae, cv.mae)
        exc = self.assertRaises(
            ValueError, models.leave_one_group_out, _Nearest, X, Y, groups,
            ['y'], evaluate=['a', 'z'])
        self.assertIn('z', str(exc))

    def test_held_out_rows_are_scored_from_their_own_features(self):
        X = np.array([[0.0], [0.1], [1.0], [1.1], [10.0], [10.1]])
        Y = X.copy()
        groups = ['a', 'a', 'b', 'b', 'c', 'c']

        scored = X.copy()
        scored[:2] += 10.0          # a's rows look like c's when scored
        cv = models.leave_one_group_out(_Nearest, X, Y, groups, ['y'],
                                        evaluate=['a', 'b'], X_scored=scored)
        self.assertAlmostEqual(10.0, cv.per_workload['a'])
        # b's fold trains on a's real features, not the scored ones
        self.assertAlmostEqual(0.95, cv.per_workload['b'])
        exc = self.assertRaises(
            ValueError, models.leave_one_group_out, _Nearest, X, Y, groups,
            ['y'], X_scored=scored[:3])
        self.assertIn('shape', str(exc))

    def test_scored_rows_without_small_llc_mf_reach_the_fallback(self):
        n = 120
        X, Y, small = _small_llc_rows(n, seed=3)
        groups = ['w%d' % (i % 4) for i in range(n)]
        scored = X.copy()
        scored[:, small:] = np.nan
        model = models.InterferenceModel(n_estimators=5)
        known = model.cross_validate(X, Y, groups)
        unknown = model.cross_validate(X, Y, groups, X_scored=scored)
        self.assertLess(known.mae, unknown.mae)


def _small_llc_rows(n, seed):
    """(X, Y, column): rows whose performance is mf_small_llc's alone."""
    X = np.random.default_rng(seed).random((n, len(features.FEATURE_NAMES)))
    X[:, models._LATENCY] = 0.0
    small = features.FEATURE_NAMES.index('mf_small_llc')
    return X, np.column_stack([0.2 + 0.8 * X[:, small], np.zeros(n)]), small


class _Nearest(object):
    """1-nearest-neighbour on the first column: a transparent estimator."""

    def fit(self, X, Y):
        self.X, self.Y = X, Y
        return self

    def predict(self, X):
        i = np.abs(self.X[:, 0][None, :] - X[:, :1]).argmin(axis=1)
        return self.Y[i]


class TestPlacementVectorModel(testtools.TestCase):

    def test_chooses_inputs_and_predicts(self):
        topology = machine.regular_topology(nodes=4, cores_per_node=4,
                                            threads_per_core=2)
        placements = important.important_placements(topology, 8)
        workloads = synthetic.workloads(per_family=3, vcpus=8)
        vectors, groups = datasets.placement_vector_dataset(
            synthetic.performance, topology, workloads, placements)
        model = models.PlacementVectorModel(n_estimators=10).fit(
            vectors, groups, datasets.placement_labels(placements))
        self.assertEqual(2, len(model.inputs_))
        self.assertEqual(min(model.pair_errors_.values()), model.cv_.mae)
        pred = model.predict(vectors[:1, list(model.inputs_)])
        self.assertEqual((1, len(placements)), pred.shape)
        self.assertLess(model.cv_.mae, 0.1)


class TestStoreDataset(testtools.TestCase):

    def test_from_reports(self):
        reports = [
            store_reports.host_report('h1', 100, [
                store_reports.instance('u1', image_id='a', ipc=2.0),
                store_reports.instance('u2', image_id='b', ipc=1.0)]),
            store_reports.host_report('h1', 110, [
                store_reports.instance('u1', image_id='a', ipc=1.0)]),
        ]
        data = datasets.from_reports(reports)
        self.assertEqual(['a', 'b', 'a'], data.groups)
        self.assertEqual([1.0, 1.0, 0.5], data.Y[:, 0].tolist())
        # u1 beside u2 at 1.0 of its best: no slowdown observed
        self.assertEqual(0.0, data.Y[0, 1])
        co = features.FEATURE_NAMES.index('co_mpki_sum')
        self.assertEqual(1.0, data.X[0, co])     # u2's MPKI, not u1's own
        # the node's memory traffic without u1's own (it runs its two
        # vCPUs there): what the simulator's rows and the weigher's read
        # describe, the node before the subject lands
        u1 = dataclasses.replace(reports[0].instances[0], metrics=(
            dataclasses.replace(reports[0].instances[0].metrics,
                                mem_bw_total_bps=4e8)))
        own = datasets.from_reports([dataclasses.replace(
            reports[0], instances=(u1,) + reports[0].instances[1:])])
        bw = features.FEATURE_NAMES.index('mem_bw_gbps')
        self.assertAlmostEqual(0.6, own.X[0, bw])
        self.assertAlmostEqual(1.0, own.X[1, bw])    # u2's own unknown
        # the small-LLC MF comes only from intervals near a quarter of
        # the LLC (none here: no occupancy)
        small = features.FEATURE_NAMES.index('mf_small_llc')
        self.assertTrue(np.isnan(data.X[:, small]).all())

    def test_the_subject_is_described_by_its_best_interval(self):
        # An interval's IPC over the workload's best is the label; the
        # profile is the best interval's counters, so the label cannot be
        # read off the features (and the profile means what the
        # simulator's and an operator's alone profile mean).
        reports = [
            store_reports.host_report('h1', 100, [
                store_reports.instance('u1', image_id='a', ipc=2.0,
                                       mpki=1.0, mf=0.2)]),
            store_reports.host_report('h1', 110, [
                store_reports.instance('u1', image_id='a', ipc=0.5,
                                       mpki=9.0, mf=0.8)]),
        ]
        data = datasets.from_reports(reports)
        cols = [features.FEATURE_NAMES.index(n) for n in ('mpki', 'mf',
                                                          'ipc')]
        np.testing.assert_allclose([[1.0, 0.2, 2.0]] * 2, data.X[:, cols])
        self.assertEqual([1.0, 0.25], data.Y[:, 0].tolist())
        # The window after 105 is labelled against the whole history.
        late = datasets.from_reports(reports, after=105)
        self.assertEqual([0.25], late.Y[:, 0].tolist())
        np.testing.assert_allclose([[1.0, 0.2, 2.0]], late.X[:, cols])

    def test_co_runner_slowdown_is_shared_by_miss_intensity(self):
        # 'heavy' (MPKI 30) and 'light' (MPKI 1), same IPC and use, share
        # a node where 'victim' runs at half its best: the shortfall is
        # attributed 30 : 1 : own, as the simulator's label is what the
        # subject alone adds.
        def at(t, victim_ipc):
            return store_reports.host_report('h1', t, [
                store_reports.instance('h', image_id='heavy', mpki=30.0,
                                       ipc=1.0),
                store_reports.instance('l', image_id='light', mpki=1.0,
                                       ipc=1.0),
                store_reports.instance('v', image_id='victim', mpki=1.0,
                                       ipc=victim_ipc)])
        data = datasets.from_reports([at(100, 2.0), at(110, 1.0)])
        late = {g: y for g, y in zip(data.groups[3:], data.Y[3:, 1])}
        # heavy: others at 1.0 (light) and 0.5 (victim): shortfall 0.25;
        # its share of the node's intensity 30 / (30 + 1 + 1).
        self.assertAlmostEqual(0.25 * 30 / 32, late['heavy'])
        self.assertAlmostEqual(0.25 * 1 / 32, late['light'])
        self.assertGreater(late['heavy'], 20 * late['light'])

    def test_from_reports_learns_mf_small_llc_per_workload(self):
        topo = dataclasses.replace(topologies.host(), hostname='h1')

        def held(t, occupancy_mib, mf):
            rec = store_reports.instance('u1', image_id='a', mf=mf)
            rec = dataclasses.replace(rec, counters=dataclasses.replace(
                rec.counters, llc_occupancy_bytes=occupancy_mib << 20))
            return dataclasses.replace(
                store_reports.host_report('h1', t, [rec]), topology=topo)
        # 16 MiB L3s: 4 MiB is a quarter, 12 MiB is not
        data = datasets.from_reports([held(100, 4, 0.5), held(110, 12, 0.2),
                                      held(120, 4, 0.7)])
        small = features.FEATURE_NAMES.index('mf_small_llc')
        np.testing.assert_allclose([0.6] * 3, data.X[:, small])


class TestPersistence(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'model.skops')

    def test_round_trip(self):
        bundle = trained_bundle(samples=5)
        persist.save(bundle, self.path)
        loaded = persist.load(self.path)
        self.assertEqual(bundle.cv_mae, loaded.cv_mae)
        self.assertEqual('synthetic', loaded.summary['source'])
        row = [features.feature_row(features.NEUTRAL_PROFILE,
                                    features.CellState(cpus=8))]
        np.testing.assert_allclose(bundle.interference.predict(row),
                                   loaded.interference.predict(row))

    def test_missing_file(self):
        exc = self.assertRaises(persist.ModelFileError, persist.load,
                                self.path)
        self.assertIn('cannot read', str(exc))

    def test_not_a_model(self):
        with open(self.path, 'wb') as f:
            f.write(b'\x80\x04K\x01.')          # a pickle
        exc = self.assertRaises(persist.ModelFileError, persist.load,
                                self.path)
        self.assertIn('not a contention model', str(exc))

    def _save_dict(self, data):
        import skops.io as sio
        with open(self.path, 'wb') as f:
            f.write(sio.dumps(data))

    def test_wrong_kind(self):
        self._save_dict({'format': persist.FORMAT, 'kind': 'watcher_thing'})
        exc = self.assertRaises(persist.ModelFileError, persist.load,
                                self.path)
        self.assertIn("'watcher_thing'", str(exc))

    def test_wrong_version(self):
        self._save_dict({'format': persist.FORMAT, 'kind': persist.KIND,
                         'schema_version': 99})
        exc = self.assertRaises(persist.ModelFileError, persist.load,
                                self.path)
        self.assertIn('schema version 99', str(exc))
        self.assertIn('retrain', str(exc))

    def test_older_single_forest_layout_refused(self):
        bundle = trained_bundle(samples=5)
        self._save_dict({
            'format': persist.FORMAT, 'kind': persist.KIND,
            'schema_version': features.SCHEMA_VERSION,
            'feature_names': list(features.FEATURE_NAMES),
            'interference': {'params': {'n_estimators': 20},
                             'forest':
                             bundle.interference.fallback_forests_[0],
                             'cv': None, 'summary': {}}})
        exc = self.assertRaises(persist.ModelFileError, persist.load,
                                self.path)
        self.assertIn('older layout', str(exc))
        self.assertIn('retrain', str(exc))

    def test_raw_performance_forest_refused(self):
        bundle = trained_bundle(samples=5)
        im = bundle.interference
        self._save_dict({
            'format': persist.FORMAT, 'kind': persist.KIND,
            'schema_version': features.SCHEMA_VERSION,
            'feature_names': list(features.FEATURE_NAMES),
            'interference': {'params': {'n_estimators': 20},
                             'forests': list(im.fallback_forests_),
                             'cv': None, 'summary': {}}})
        exc = self.assertRaises(persist.ModelFileError, persist.load,
                                self.path)
        self.assertIn('throughput-equivalent', str(exc))
        self.assertIn('retrain', str(exc))
        persist.save(bundle, self.path)
        self.assertEqual('throughput-equivalent', persist.load(
            self.path).interference.PERFORMANCE_TARGET)

    def test_round_trip_with_both_forest_sets(self):
        rng = np.random.default_rng(3)
        X = rng.random((60, len(features.FEATURE_NAMES)))
        X[::2, -2:] = np.nan
        Y = rng.random((60, 2))
        model = models.InterferenceModel(n_estimators=5).fit(X, Y)
        persist.save(persist.ModelBundle(interference=model), self.path)
        loaded = persist.load(self.path).interference
        np.testing.assert_allclose(model.predict(X), loaded.predict(X))

    def test_fallback_forests_of_another_width_refused(self):
        bundle = trained_bundle(samples=5)
        im = bundle.interference
        im.fallback_forests_, im.forests_ = None, im.fallback_forests_
        rng = np.random.default_rng(4)
        wide = models.InterferenceModel(n_estimators=5).fit(
            rng.random((30, len(features.FEATURE_NAMES))),
            rng.random((30, 2)))
        im.fallback_forests_ = wide.forests_
        im.forests_ = None
        persist.save(bundle, self.path)
        exc = self.assertRaises(persist.ModelFileError, persist.load,
                                self.path)
        self.assertIn('fallback forests', str(exc))

    def test_untrusted_type_refused(self):
        import skops.io as sio
        with open(self.path, 'wb') as f:
            f.write(sio.dumps({'format': persist.FORMAT,
                               'x': fixtures.TempDir()}))
        exc = self.assertRaises(persist.ModelFileError, persist.load,
                                self.path)
        self.assertIn('not trusted', str(exc))

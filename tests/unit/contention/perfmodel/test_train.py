"""Training from the simulator: train_from_sim, contention-train, policy."""

import io
import json
import os

import fixtures
import numpy as np
import testtools

from contention import sim
from contention.perfmodel import cmd
from contention.perfmodel import datasets
from contention.perfmodel import features
from contention.perfmodel import machine
from contention.perfmodel import persist
from contention.sim.policies import weigher
from contention.perfmodel import train
from contention.sim import cmd as sim_cmd
from contention.sim import training
from tests.unit.contention.perfmodel import synthetic

SMALL = ('--estimators', '8', '--pv-estimators', '5',
         '--samples-per-workload', '12', '--synthetic', '60')


class TestTrainFromSim(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.model = os.path.join(self.dir, 'ahn.model')

    def test_train_save_load(self):
        bundle, report = training.train_from_sim('ahn-wl1', **train.QUICK)
        self.assertEqual('sim:ahn-wl1', report['summary']['source'])
        self.assertEqual(14, report['summary']['workloads'])
        self.assertEqual(14, len(report['cv_per_workload']))
        # the simulator's interference is learnable across workloads
        self.assertLess(report['cv_mae'], 0.08)
        self.assertGreater(report['workloads']['lbm']['mpki'],
                           report['workloads']['povray']['mpki'])
        train.save(bundle, self.model)
        loaded = persist.load(self.model)
        self.assertEqual(bundle.cv_mae, loaded.cv_mae)
        self.assertEqual(60, report['summary']['synthetic_workloads'])
        X = np.tile(np.linspace(0.1, 2.0, len(features.FEATURE_NAMES)),
                    (3, 1))
        np.testing.assert_allclose(bundle.interference.predict(X),
                                   loaded.interference.predict(X))

    def test_without_cross_validation(self):
        bundle, report = training.train_from_sim(
            'merlin-mix1', estimators=5, samples_per_workload=8,
            pv_estimators=5, synthetic=60, cross_validate=False)
        self.assertIsNone(report['cv_mae'])
        self.assertIsNone(bundle.cv_mae)
        # four nodes and 4-vCPU workloads: important placements exist
        self.assertIsNotNone(bundle.placement_vector)
        self.assertEqual(4, bundle.summary['placement_vector_vcpus'])

    def test_libraries_train_but_only_own_workloads_are_scored(self):
        bundle, report = training.train_from_sim(
            'merlin-mix1', estimators=5, samples_per_workload=6,
            pv_estimators=5, libraries=('ahn-spec2006',), synthetic=0)
        merlin = sorted(sim.load_scenario('merlin-mix1').profiles)
        summary = report['summary']
        self.assertEqual('sim:merlin-mix1+ahn-spec2006', summary['source'])
        self.assertEqual(7 + 14, summary['workloads'])
        self.assertEqual(7, summary['evaluated_workloads'])
        self.assertEqual((7 + 14) * 6, summary['samples'])
        self.assertEqual(merlin, sorted(report['cv_per_workload']))

    def test_synthetic_subjects_train_but_leave_named_rows_alone(self):
        plain, _ = training.sim_dataset('merlin-mix1', samples_per_workload=4,
                                        synthetic=0)
        data, parts = training.sim_dataset('merlin-mix1',
                                           samples_per_workload=4,
                                           synthetic=12, synthetic_samples=3)
        named = len(plain.X)
        # the named workloads' rows (the ones scored) are unchanged
        np.testing.assert_array_equal(plain.X, data.X[:named])
        np.testing.assert_array_equal(plain.Y, data.Y[:named])
        self.assertEqual(named + 12 * 3, len(data.X))
        self.assertEqual(12, len(data.synthetic))
        self.assertEqual(set(data.synthetic), set(data.groups[named:]))
        merlin = sorted(sim.load_scenario('merlin-mix1').profiles)
        self.assertEqual(merlin, data.evaluate)
        self.assertEqual(merlin, sorted(w.name for w in parts[1]))
        self.assertEqual(7, data.summary()['workloads'])
        self.assertEqual(12, data.summary()['synthetic_workloads'])
        _, report = train.train_bundle(data, None, estimators=5)
        self.assertEqual(merlin, sorted(report['cv_per_workload']))

    def test_same_seed_same_data(self):
        def draw(seed):
            return training.sim_dataset('ahn-wl2', samples_per_workload=5,
                                        seed=seed, synthetic=60)[0]
        a, b, c = draw(3), draw(3), draw(4)
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.Y, b.Y)
        self.assertFalse(np.array_equal(a.X, c.X))


class _Recording(object):
    """The synthetic performance source, keeping every trial asked."""

    def __init__(self):
        self.trials = []

    def __call__(self, trial):
        self.trials.append(trial)
        return synthetic.performance(trial)


class TestCopiesSamples(testtools.TestCase):
    """Landings beside copies of one workload (``copies_samples``)."""

    def setUp(self):
        super().setUp()
        # 16 CPUs a node: a 4-vCPU workload and three 4-vCPU copies fit.
        self.topology = machine.regular_topology(nodes=2, cores_per_node=16)
        self.workloads = synthetic.workloads(per_family=2)
        self.extra = synthetic.workloads(per_family=1, seed=7)
        self.extra = [datasets.Workload('x-' + w.name, w.profile)
                      for w in self.extra]

    def _data(self, **kwargs):
        source = _Recording()
        data = datasets.interference_dataset(
            source, self.topology, self.workloads, samples_per_workload=6,
            seed=2, **kwargs)
        return data, source.trials

    def test_off_by_default_and_at_zero(self):
        plain, trials = self._data()
        zero, zero_trials = self._data(copies_samples=0)
        np.testing.assert_array_equal(plain.X, zero.X)
        np.testing.assert_array_equal(plain.Y, zero.Y)
        self.assertEqual(plain.groups, zero.groups)
        self.assertEqual(trials, zero_trials)
        self.assertEqual(6 * len(self.workloads), len(plain.X))

    def test_rows_beside_copies_are_added_after_the_others(self):
        plain, _ = self._data()
        data, trials = self._data(copies_samples=3)
        n, k = len(self.workloads), 3
        self.assertEqual(n * (6 + k), len(data.X))
        # The random landings are the same rows, first.
        np.testing.assert_array_equal(plain.X, data.X[:len(plain.X)])
        np.testing.assert_array_equal(plain.Y, data.Y[:len(plain.Y)])
        self.assertEqual(plain.groups, data.groups[:len(plain.groups)])
        added = trials[len(plain.X):]
        # k landings of each workload, in the workloads' order.
        self.assertEqual([w.name for w in self.workloads for _ in range(k)],
                         [t.workload.name for t in added])
        self.assertEqual([t.workload.name for t in added],
                         data.groups[len(plain.X):])
        col = features.FEATURE_NAMES.index('co_mpki_sum')
        pool = {w.name: w for w in self.workloads}
        for trial, row in zip(added, data.X[len(plain.X):]):
            names = {co.workload.name for co in trial.corunners}
            # One to three copies of one workload of the pool, all on the
            # landing node, as many vCPUs each as the workload has.
            self.assertEqual(1, len(names), trial)
            self.assertIn(names.pop(), pool)
            self.assertTrue(1 <= len(trial.corunners) <= 3)
            for co in trial.corunners:
                self.assertEqual(trial.nodes, co.nodes)
                self.assertEqual(co.workload.profile.vcpus, co.vcpus)
            copied = trial.corunners[0].workload.profile
            self.assertAlmostEqual(len(trial.corunners) * copied.mpki,
                                   row[col])
        # Across them, more than one count of copies and some landings
        # beside copies of the workload itself.
        self.assertGreater(len({len(t.corunners) for t in added}), 1)
        self.assertTrue(any(t.corunners[0].workload.name
                            == t.workload.name for t in added))

    def test_copies_that_do_not_fit_are_left_out(self):
        # 8 CPUs a node: beside a 4-vCPU workload one 4-vCPU copy fits.
        self.topology = machine.regular_topology(nodes=2, cores_per_node=8)
        plain, _ = self._data()
        _, trials = self._data(copies_samples=4)
        added = trials[len(plain.X):]
        self.assertEqual(4 * len(self.workloads), len(added))
        self.assertEqual({1}, {len(t.corunners) for t in added})

    def test_extra_subjects_rows_do_not_change(self):
        plain, _ = self._data(extra=self.extra, extra_samples=2)
        data, _ = self._data(extra=self.extra, extra_samples=2,
                             copies_samples=3)
        n_extra = 2 * len(self.extra)
        np.testing.assert_array_equal(plain.X[-n_extra:], data.X[-n_extra:])
        self.assertEqual(plain.groups[-n_extra:], data.groups[-n_extra:])
        self.assertEqual(len(plain.X) + 3 * len(self.workloads),
                         len(data.X))
        # Only the named workloads get landings beside copies.
        self.assertFalse({w.name for w in self.extra}
                         & set(data.groups[6 * len(self.workloads):
                                           -n_extra]))

    def test_copies_rows_are_seeded(self):
        a, _ = self._data(copies_samples=2)
        b, _ = self._data(copies_samples=2)
        np.testing.assert_array_equal(a.X, b.X)

    def test_sim_dataset_and_train_from_sim(self):
        plain, _ = training.sim_dataset('merlin-mix1', samples_per_workload=3,
                                        synthetic=0)
        data, parts = training.sim_dataset('merlin-mix1',
                                           samples_per_workload=3,
                                           synthetic=0, copies_samples=2)
        named = len(parts[1])
        self.assertEqual(len(plain.X) + 2 * named, len(data.X))
        np.testing.assert_array_equal(plain.X, data.X[:len(plain.X)])
        bundle, report = training.train_from_sim(
            'merlin-mix1', estimators=3, pv_estimators=3,
            samples_per_workload=3, synthetic=0, copies_samples=2,
            cross_validate=False)
        self.assertEqual(named * (3 + 2), bundle.summary['samples'])
        self.assertEqual(named * (3 + 2), report['summary']['samples'])


class TestTrainCommandFromSim(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.model = os.path.join(self.dir, 'ahn.model')

    def run_cmd(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        rc = cmd.main(list(argv), out=out, err=err)
        return rc, out.getvalue(), err.getvalue()

    def test_train_then_evaluate(self):
        rc, out, err = self.run_cmd('--from-sim', 'ahn-wl1', '--out',
                                    self.model, *SMALL)
        self.assertEqual(0, rc, err)
        self.assertIn('[simulated]', out)
        self.assertIn('leave-one-workload-out MAE', out)
        self.assertEqual('sim:ahn-wl1',
                         persist.load(self.model).summary['source'])
        rc, out, err = self.run_cmd('evaluate', '--model', self.model,
                                    '--from-sim', 'ahn-wl1', '--seed', '9',
                                    '--samples-per-workload', '5', '--json')
        self.assertEqual(0, rc, err)
        result = json.loads(out)
        self.assertTrue(result['simulated'])
        self.assertEqual(70, result['samples'])
        self.assertLess(result['mae'], 0.1)

    def test_train_with_a_library(self):
        rc, out, err = self.run_cmd('--from-sim', 'merlin-mix1', '--out',
                                    self.model, '--library', 'all',
                                    '--json', *SMALL)
        self.assertEqual(0, rc, err)
        result = json.loads(out)
        self.assertEqual(7, result['summary']['evaluated_workloads'])
        self.assertEqual(21, result['summary']['workloads'])
        self.assertEqual(60, result['summary']['synthetic_workloads'])
        default = cmd.build_parser().parse_args(
            ['train', '--from-sim', 'merlin-mix1', '--out', self.model])
        self.assertEqual(train.DEFAULT_SYNTHETIC, default.synthetic)
        rc, out, err = self.run_cmd('--from-sim', 'merlin-mix1', '--out',
                                    self.model, '--library', 'nope', *SMALL)
        self.assertNotEqual(0, rc)
        self.assertIn('nope', err)

    def test_unknown_scenario(self):
        rc, out, err = self.run_cmd('--from-sim', 'no-such-scenario',
                                    '--out', self.model)
        self.assertEqual(1, rc)
        self.assertIn('no-such-scenario', err)
        self.assertFalse(os.path.exists(self.model))


def small_model_file(test):
    """A quickly trained ahn-wl1 model (4 trees) saved in a temp dir."""
    path = os.path.join(test.useFixture(fixtures.TempDir()).path, 'm.model')
    bundle, _ = training.train_from_sim('ahn-wl1', estimators=4,
                                        samples_per_workload=5,
                                        synthetic=60, cross_validate=False)
    train.save(bundle, path)
    return path


class TestPolicyModel(testtools.TestCase):

    def test_trains_from_the_scenario_when_no_model(self):
        p = weigher.ContentionWeigherPolicy()
        p.bind(sim.Simulator('ahn-wl1'))
        self.assertIsNotNone(p._interference())
        self.assertIn('lbm', p.profiles)
        self.assertIn('trained from scenario ahn-wl1', p.notes[0])

    def test_model_path_is_used_and_no_training(self):
        path = small_model_file(self)
        p = weigher.ContentionWeigherPolicy(model_path=path)
        p.bind(sim.Simulator('ahn-wl1'))
        self.assertEqual([], p.notes)
        self.assertEqual(4, p._interference().n_estimators)

    def test_profile_from_running_instances_of_the_image(self):
        p = weigher.ContentionWeigherPolicy(train_on_bind='false')
        s = sim.Simulator('ahn-wl1')
        s.step()
        view = s.view()
        inst = next(i for i in view.instances if i.image_id == 'milc')
        arrival = inst.__class__(uuid='new', host='', vcpus=1,
                                 memory_mib=1024, image_id='milc')
        profile = p.profile_of(arrival, view)
        self.assertEqual('image', profile.source)
        self.assertGreater(profile.mpki, 15)
        stranger = inst.__class__(uuid='new', host='', vcpus=1,
                                  memory_mib=1024, image_id='unknown')
        self.assertEqual('prior', p.profile_of(stranger, view).source)

    def test_bad_landing(self):
        self.assertRaises(ValueError, weigher.ContentionWeigherPolicy,
                          landing='everywhere')


class TestSimPolicyArgs(testtools.TestCase):

    def test_parse(self):
        self.assertEqual({'model_path': '/m', 'corunner_weight': '0.5'},
                         sim_cmd.policy_args(['model_path=/m',
                                              'corunner_weight=0.5']))
        self.assertRaises(ValueError, sim_cmd.policy_args, ['oops'])
        self.assertRaises(ValueError, sim_cmd.policy_args, ['1x=2'])

    def test_unknown_argument_is_a_usage_error(self):
        err = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', err))
        rc = sim_cmd.main(['evaluate', '--scenario', 'ahn-wl1', '--policy',
                           'contention_weigher', '--policy-arg', 'bogus=1'])
        self.assertEqual(2, rc)
        self.assertIn('bogus', err.getvalue())

    def test_evaluate_with_a_model_file(self):
        path = small_model_file(self)
        out = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out))
        rc = sim_cmd.main(['evaluate', '--scenario', 'ahn-wl1', '--policy',
                           'contention_weigher', '--epochs', '2', '--json',
                           '--policy-arg', 'model_path=%s' % path])
        self.assertEqual(0, rc)
        result = json.loads(out.getvalue())
        self.assertEqual('contention_weigher', result['policy'])
        self.assertTrue(result['simulated'])
        self.assertFalse(any('trained from scenario' in n
                             for n in result['notes']))

"""Socket mixes valued by the placement model (contention.perfmodel.mixes)."""

import dataclasses

import numpy as np
import testtools

from contention.perfmodel import datasets
from contention.perfmodel import features
from contention.perfmodel import machine
from contention.perfmodel import mixes
from tests.unit.contention.swap import views as v

COL = {name: i for i, name in enumerate(features.FEATURE_NAMES)}

HEAVY = features.InstanceProfile(mpki=20.0, mf=0.8, ipc=0.5, vcpus=2,
                                 memory_mib=2048, cpu_util=0.9)
LIGHT = features.InstanceProfile(mpki=1.0, mf=0.1, ipc=2.0, vcpus=1,
                                 memory_mib=1024, cpu_util=0.5)
UNKNOWN_UTIL = features.InstanceProfile(mpki=5.0, mf=0.4, ipc=1.0, vcpus=4)


class FakeModel(object):
    """Performance falls with own MPKI x co-runners' MPKI; counts calls."""

    def __init__(self):
        self.batches = []

    @staticmethod
    def perf(row):
        row = np.asarray(row, float)
        return 1.0 / (1.0 + row[..., COL['mpki']]
                      * row[..., COL['co_mpki_sum']] / 100.0)

    def predict(self, X):
        X = np.asarray(X, float)
        self.batches.append(X.shape)
        return np.column_stack([self.perf(X), np.zeros(len(X))])


def _values():
    model = FakeModel()
    return mixes.MixValues(model, {'heavy': HEAVY, 'light': LIGHT}), model


class TestMixOf(testtools.TestCase):

    def test_counts_sorted_by_key(self):
        self.assertEqual((('a', 1), ('b', 2)),
                         mixes.mix_of(['b', 'a', 'b']))
        self.assertEqual((), mixes.mix_of([]))
        self.assertEqual(mixes.mix_of('abcab'), mixes.mix_of('bacba'))


class TestCellBeside(testtools.TestCase):

    def test_matches_the_training_rows_cells(self):
        topology = machine.regular_topology(nodes=2, cores_per_node=8)
        heavy = datasets.Workload('heavy', HEAVY)
        light = datasets.Workload('light', LIGHT)
        other = datasets.Workload('other', UNKNOWN_UTIL)
        corunners = [datasets.CoRunner(w, frozenset([1]), w.profile.vcpus)
                     for w in (heavy, heavy, light, other)]
        # One on the other node: not a co-runner of node 1.
        corunners.append(datasets.CoRunner(heavy, frozenset([0]), 2))
        cpus = len(topology.node(1).cpus)
        trained = datasets._cell_of(topology, frozenset([1]), corunners)
        cell = mixes.cell_beside(cpus, [(HEAVY, 2), (LIGHT, 1),
                                        (UNKNOWN_UTIL, 1)])
        self.assertEqual(trained.cpus, cell.cpus)
        for name in ('co_mpki_sum', 'co_vcpus', 'co_miss_intensity',
                     'co_cpu_demand'):
            self.assertAlmostEqual(getattr(trained, name),
                                   getattr(cell, name), msg=name)
        self.assertAlmostEqual(2 * 20.0 + 1.0 + 5.0, cell.co_mpki_sum)
        self.assertAlmostEqual(2 * 2 + 1 + 4, cell.co_vcpus)
        self.assertAlmostEqual(2 * 20 * 0.5 * 0.9 * 2 + 1 * 2.0 * 0.5
                               + 5.0 * 1.0 * 1.0 * 4, cell.co_miss_intensity)
        self.assertAlmostEqual(2 * 0.9 * 2 + 0.5 + 1.0 * 4,
                               cell.co_cpu_demand)
        np.testing.assert_allclose(features.feature_row(LIGHT, trained),
                                   features.feature_row(LIGHT, cell))

    def test_nobody_beside(self):
        cell = mixes.cell_beside(8.0, [])
        self.assertEqual(features.CellState(
            cpus=8, co_mpki_sum=0.0, co_vcpus=0.0, co_miss_intensity=0.0,
            co_cpu_demand=0.0), cell)
        self.assertIsInstance(cell.cpus, int)


class TestMixValues(testtools.TestCase):

    def _expected(self, mix, cpus, profiles):
        total = 0.0
        for key, count in mix:
            others = [(profiles[k], c - (k == key)) for k, c in mix
                      if c - (k == key) > 0]
            row = features.feature_row(profiles[key],
                                       mixes.cell_beside(cpus, others))
            total += count * float(FakeModel.perf(row))
        return total

    def test_value_is_the_sum_of_the_members_predictions(self):
        values, model = _values()
        mix = mixes.mix_of(['heavy', 'heavy', 'light'])
        got = values.value(mix, 8)
        # heavy beside heavy + light (MPKI 21), twice; light beside two
        # heavy (MPKI 40), by hand.
        by_hand = 2 / (1 + 20 * 21 / 100.0) + 1 / (1 + 1 * 40 / 100.0)
        self.assertAlmostEqual(by_hand, got)
        self.assertAlmostEqual(self._expected(
            mix, 8, {'heavy': HEAVY, 'light': LIGHT}), got)
        # One row per class of the mix, in one call.
        self.assertEqual([(2, len(features.FEATURE_NAMES))], model.batches)
        self.assertEqual(1, values.calls)

    def test_alone_and_empty(self):
        values, _ = _values()
        # Alone on the socket: no co-runner MPKI.
        self.assertAlmostEqual(1.0, values.value((('light', 1),), 8))
        # Three copies: each beside the other two.
        self.assertAlmostEqual(3 / (1 + 1 * 2 / 100.0),
                               values.value((('light', 3),), 8))
        calls = values.calls
        self.assertEqual(0.0, values.value((), 8))
        self.assertEqual(calls, values.calls)

    def test_memoised_per_mix_and_cpus(self):
        values, model = _values()
        mix = mixes.mix_of(['heavy', 'light'])
        first = values.value(mix, 8)
        self.assertEqual(first, values.value(mix, 8))
        self.assertEqual(1, values.calls)
        values.prefetch([(mix, 8), (mix, 8)])
        self.assertEqual(1, values.calls)
        self.assertEqual(1, len(model.batches))
        # The socket's size is part of the key: another call.
        values.value(mix, 16)
        self.assertEqual(2, values.calls)

    def test_prefetch_is_one_call_for_many_mixes(self):
        values, model = _values()
        many = [mixes.mix_of(['heavy'] * h + ['light'] * (4 - h))
                for h in range(5)]
        values.prefetch([(m, 8) for m in many + many[:2]])
        self.assertEqual(1, values.calls)
        # Rows: one per distinct class in each distinct mix.
        self.assertEqual([(1 + 2 + 2 + 2 + 1, len(features.FEATURE_NAMES))],
                         model.batches)
        for mix in many:
            self.assertAlmostEqual(self._expected(
                mix, 8, values.profiles), values.value(mix, 8))
        self.assertEqual(1, values.calls)
        # Only the new one is asked for.
        values.prefetch([(m, 8) for m in many + [(('heavy', 5),)]])
        self.assertEqual(2, values.calls)
        self.assertEqual((1, len(features.FEATURE_NAMES)), model.batches[-1])
        # Sockets of two sizes in one call; empty mixes are worth 0.
        values.prefetch([(many[1], 16), (many[2], 4), ((), 8)])
        self.assertEqual(3, values.calls)
        self.assertEqual((4, len(features.FEATURE_NAMES)), model.batches[-1])
        values.prefetch([])
        self.assertEqual(3, values.calls)

    def test_unknown_class(self):
        values, model = _values()
        self.assertTrue(values.knows('heavy'))
        self.assertFalse(values.knows('stranger'))
        self.assertRaises(KeyError, values.value,
                          (('heavy', 1), ('stranger', 1)), 8)
        self.assertEqual([], model.batches)

    def test_profiles_are_copied(self):
        profiles = {'heavy': HEAVY}
        values = mixes.MixValues(FakeModel(), profiles)
        profiles['light'] = LIGHT
        self.assertFalse(values.knows('light'))


def _image(inst):
    return inst.image_id


class TestClassProfiles(testtools.TestCase):

    def test_means_per_class(self):
        instances = [
            v.vm('a0', 'h', 1, image_id='a', mpki=10.0, mf=0.5, ipc=1.0,
                 cpu_util=0.4, vcpus=2, memory_mib=4096),
            v.vm('a1', 'h', 1, image_id='a', mpki=20.0, mf=0.7, ipc=2.0,
                 cpu_util=None, vcpus=2, memory_mib=4096),
            v.vm('b0', 'h', 1, image_id='b', mpki=1.0, mf=0.1, ipc=2.5,
                 vcpus=1, memory_mib=1024),
        ]
        profiles = mixes.class_profiles(instances, _image)
        self.assertEqual({'a', 'b'}, set(profiles))
        a = profiles['a']
        self.assertAlmostEqual(15.0, a.mpki)
        self.assertAlmostEqual(0.6, a.mf)
        self.assertAlmostEqual(1.5, a.ipc)
        # The mean of the instances that report it.
        self.assertAlmostEqual(0.4, a.cpu_util)
        self.assertEqual((2, 4096), (a.vcpus, a.memory_mib))
        self.assertEqual('measured', a.source)
        self.assertFalse(a.latency)
        b = profiles['b']
        self.assertIsNone(b.cpu_util)
        self.assertEqual(1.0, b.util)
        self.assertEqual((1, 1024), (b.vcpus, b.memory_mib))

    def test_classes_without_counters_are_left_out(self):
        instances = [
            # views.vm fills in a Memory Factor: taken out again.
            dataclasses.replace(v.vm('a0', 'h', 1, image_id='a', mpki=10.0,
                                     ipc=1.0), mf=None),
            v.vm('a1', 'h', 1, image_id='a', mpki=None, mf=0.5, ipc=1.0),
            v.vm('b0', 'h', 1, image_id='b', mpki=3.0, mf=0.5, ipc=None),
            # One complete instance is enough; the others do not count.
            v.vm('c0', 'h', 1, image_id='c', mpki=None, mf=0.9, ipc=9.0),
            v.vm('c1', 'h', 1, image_id='c', mpki=4.0, mf=0.3, ipc=1.0),
        ]
        profiles = mixes.class_profiles(instances, _image)
        self.assertEqual(['c'], list(profiles))
        self.assertEqual((4.0, 0.3, 1.0), (profiles['c'].mpki,
                                           profiles['c'].mf,
                                           profiles['c'].ipc))
        self.assertEqual({}, mixes.class_profiles([], _image))

    def test_declared_latency_services_and_capped_values(self):
        instances = [
            v.vm('s0', 'h', 1, image_id='svc', mpki=2.0, mf=1.4, ipc=1.0,
                 cpu_util=1.3, latency=True),
            v.vm('s1', 'h', 1, image_id='svc', mpki=2.0, mf=1.0, ipc=1.0,
                 cpu_util=1.1, latency=True),
            v.vm('b0', 'h', 1, image_id='batch', mpki=2.0, mf=0.2, ipc=1.0,
                 latency=False),
            # Undeclared: the model is told a throughput code.
            v.vm('u0', 'h', 1, image_id='quiet', mpki=2.0, mf=0.2, ipc=1.0,
                 cpu_util=0.3),
        ]
        profiles = mixes.class_profiles(instances, _image)
        self.assertTrue(profiles['svc'].latency)
        self.assertFalse(profiles['batch'].latency)
        self.assertFalse(profiles['quiet'].latency)
        # A Memory Factor or utilisation measured above 1 is capped: the
        # profile would be refused otherwise.
        self.assertEqual(1.0, profiles['svc'].mf)
        self.assertEqual(1.0, profiles['svc'].cpu_util)

    def test_key_groups_the_instances(self):
        instances = [
            v.vm('a0', 'h', 1, image_id='a', flavor='small', mpki=10.0,
                 mf=0.5, ipc=1.0),
            v.vm('a1', 'h', 1, image_id='a', flavor='large', mpki=20.0,
                 mf=0.5, ipc=1.0),
        ]
        profiles = mixes.class_profiles(
            instances, lambda i: (i.image_id, i.flavor))
        self.assertEqual({('a', 'small'): 10.0, ('a', 'large'): 20.0},
                         {k: p.mpki for k, p in profiles.items()})
        self.assertEqual({'a': 15.0}, {
            k: p.mpki for k, p in mixes.class_profiles(
                instances, _image).items()})

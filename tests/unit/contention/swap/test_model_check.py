"""The model check: a move is taken only if the model predicts a gain."""

import dataclasses

import numpy as np
import testtools

from contention import cluster
from contention.perfmodel import features
from contention.perfmodel import mixes
from contention import swap
from contention.swap import measure
from tests.unit.contention.swap import views as v

M = 1e6
#: One swap at most, no repair or quota phase, no margin: only the check
#: can refuse the swap the balance of misses asks for.
PARAMS = swap.SwapParameters(max_swaps=1, threshold=1 * M,
                             migration_cost_per_gib=0, numa_repair=False,
                             cpu_quota=False, min_predicted_gain=0.0,
                             contention_swaps=False)


class MixOfTwo(object):
    """A MixValues stand-in: a socket is worth ``mixed`` per image pair.

    A socket holding two images (a mixed socket) is worth ``mixed``,
    any other 1.0; records what it was asked.
    """

    def __init__(self, mixed, unknown=()):
        self.mixed = mixed
        self.unknown = set(unknown)
        self.prefetched = []

    def knows(self, key):
        return key[0] not in self.unknown

    def prefetch(self, items):
        items = list(items)
        for mix, _cpus in items:
            assert all(self.knows(k) for k, _ in mix), mix
        self.prefetched.append(items)

    def unsure(self, items):
        self.prefetch(items)
        return None

    def value(self, mix, cpus):
        assert cpus == 4, cpus
        return self.mixed if len(mix) == 2 else 1.0 if mix else 0.0


def _view():
    """One host, socket 0 with two heavy 'h' VMs, socket 1 two light 'l'.

    The balance of misses swaps a heavy VM with a light one, leaving each
    socket with one of each image (a mixed socket).
    """
    return v.view([v.host('a', cpus=4)],
                  [v.vm('h0', 'a', 30 * M, socket=0, mf=0.9, image_id='h',
                        flavor='f'),
                   v.vm('h1', 'a', 30 * M, socket=0, mf=0.9, image_id='h',
                        flavor='f'),
                   v.vm('l0', 'a', 1 * M, socket=1, mf=0.1, image_id='l',
                        flavor='f'),
                   v.vm('l1', 'a', 1 * M, socket=1, mf=0.1, image_id='l',
                        flavor='f')])


def _moved(plan):
    return {a.instance for a in plan.actions}


class TestModelCheck(testtools.TestCase):

    def test_without_a_model_the_balance_swaps(self):
        plan = swap.numa_aware(_view(), PARAMS)
        self.assertEqual(2, len(_moved(plan)))

    def test_a_predicted_loss_refuses_the_swap(self):
        plan = swap.numa_aware(_view(), PARAMS, mix_values=MixOfTwo(0.9))
        self.assertEqual((), plan.actions)
        reasons = [s.reason for s in plan.skipped]
        self.assertTrue(any(r.startswith('no_predicted_gain')
                            for r in reasons), reasons)

    def test_a_predicted_gain_lets_it_through(self):
        values = MixOfTwo(1.2)
        plan = swap.numa_aware(_view(), PARAMS, mix_values=values)
        self.assertEqual(2, len(_moved(plan)))
        # Both sockets, before and after, in one batch per move.
        self.assertTrue(values.prefetched)
        self.assertEqual(4, len(values.prefetched[0]))

    def test_a_class_the_model_cannot_value_is_not_checked(self):
        plan = swap.numa_aware(_view(), PARAMS,
                               mix_values=MixOfTwo(0.9, unknown={'l'}))
        self.assertEqual(2, len(_moved(plan)))

    def test_cache_aware_host_swaps_are_checked_too(self):
        # Four heavy 'h' VMs fill host a, four light 'l' ones host b: a
        # swap between the hosts lowers the predicted contention and
        # mixes the images, which the model check overrules.
        view = v.view(
            [v.host('a', cpus=4, cpu_allocation_ratio=2.0),
             v.host('b', cpus=4, cpu_allocation_ratio=2.0)],
            [v.vm(name, host, misses, socket=socket, image_id=names[0],
                  flavor='f')
             for host, misses, names in (('a', 30 * M, 'hijk'),
                                         ('b', 1 * M, 'lmno'))
             for socket, pair in enumerate((names[:2], names[2:]))
             for name in pair])
        params = dataclasses.replace(PARAMS, local_phase=False)
        self.assertTrue(swap.cache_aware(view, params).actions)
        self.assertEqual((), swap.cache_aware(
            view, params, mix_values=MixOfTwo(0.9)).actions)

    def test_with_the_real_mix_values(self):
        # A model that predicts each instance's performance falls with its
        # co-runners' summed MPKI: mixing the heavy 'h' VMs with the light
        # ones costs the light ones more than it saves the heavy ones.
        mpki = features.FEATURE_NAMES.index('co_mpki_sum')

        class Model(object):
            calls = 0

            def predict(self, X):
                Model.calls += 1
                perf = 1.0 - 0.01 * X[:, mpki]
                return np.column_stack([perf, np.zeros(len(X))])
        view = _view()
        view = dataclasses.replace(view, instances=tuple(
            dataclasses.replace(i, mpki=(30.0 if i.image_id == 'h' else 0.1),
                                ipc=1.0, cpu_util=1.0)
            for i in view.instances))
        values = mixes.MixValues(Model(), mixes.class_profiles(
            view.instances, swap.mix_class))
        # h,h: 2 x (1 - 0.30) = 1.40; l,l: 2 x 0.999 = 1.998 (3.398 in
        # all); h,l twice: 2 x (0.999 + 0.70) = 3.398: no gain, no swap.
        # (The light VMs barely touch the LLC, MPKI / MF = 1: the
        # contention estimate leaves the decision to the model.)
        self.assertEqual((), swap.numa_aware(view, PARAMS,
                                             mix_values=values).actions)
        self.assertEqual(1, values.calls)


class TestMixClass(testtools.TestCase):

    def test_alike_instances_share_a_class(self):
        a = v.vm('a', 'h', M, image_id='img', flavor='m1', vcpus=2)
        self.assertEqual(swap.mix_class(a), swap.mix_class(
            dataclasses.replace(a, uuid='b', host='other', socket=1,
                                llc_misses_per_s=9 * M)))
        for change in ({'image_id': 'other'}, {'flavor': 'm2'},
                       {'vcpus': 4}, {'memory_mib': 4096}):
            self.assertNotEqual(swap.mix_class(a), swap.mix_class(
                dataclasses.replace(a, **change)), change)

    def test_no_image_is_a_class_of_its_own(self):
        a = v.vm('a', 'h', M, flavor='m1')
        b = dataclasses.replace(a, uuid='b')
        self.assertEqual(('instance', 'a'), swap.mix_class(a))
        self.assertNotEqual(swap.mix_class(a), swap.mix_class(b))

    def test_no_flavor_is_a_class_of_its_own(self):
        # Many workloads share one image (a base OS image): the image and
        # the size alone do not make two instances interchangeable.
        a = v.vm('a', 'h', M, image_id='img')
        b = dataclasses.replace(a, uuid='b')
        self.assertEqual(('instance', 'a'), swap.mix_class(a))
        self.assertNotEqual(swap.mix_class(a), swap.mix_class(b))
        self.assertFalse(measure.alike(a, b))
        known = dataclasses.replace(b, flavor='m1')
        self.assertFalse(measure.alike(a, known))
        self.assertFalse(measure.alike(known, a))
        self.assertTrue(measure.alike(
            known, dataclasses.replace(known, uuid='c')))


class TestSocketsStillPlanned(testtools.TestCase):

    def test_a_plan_with_the_check_is_one_without_minus_refusals(self):
        # A check that approves everything changes nothing.
        view = _view()
        plain = swap.numa_aware(view, PARAMS)
        checked = swap.numa_aware(view, PARAMS, mix_values=MixOfTwo(2.0))
        self.assertEqual(plain.actions, checked.actions)
        self.assertTrue(all(isinstance(a, cluster.Repin)
                            for a in checked.actions))

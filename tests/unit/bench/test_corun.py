"""The co-run bench's arithmetic and the simulator's side of it."""

import os
import random

import fixtures
import testtools

from bench import corun

INFO = dict(cpus=[0, 1], cores=2, threads=1, l3_mib=32.0, l3_shared='0-1',
            model='test')
ALONE = {'chase-4': 15.0, 'chase-16': 80.0, 'chase-24': 140.0,
         'chase-64': 160.0, 'triad': 24.0, 'cpu': 470.0, 'service': 900.0}


class TestStatistics(testtools.TestCase):

    def test_spearman(self):
        self.assertAlmostEqual(1.0, corun.spearman([1, 2, 3], [10, 20, 30]))
        self.assertAlmostEqual(-1.0, corun.spearman([1, 2, 3], [3, 2, 1]))
        # ties get average ranks
        self.assertAlmostEqual(corun.spearman([1, 1, 2], [1, 2, 3]),
                               0.8660254, places=6)

    def test_slowdowns_are_time_ratios_for_every_kind(self):
        works = [corun.Workload('chase-4', 'chase', 4, False),
                 corun.Workload('triad', 'triad', 32, True)]
        samples = {('alone', 'chase-4'): [10.0, 12.0, 11.0],
                   ('alone', 'triad'): [20.0],
                   ('chase-4', 'triad'): [22.0, 33.0, 44.0],
                   ('triad', 'chase-4'): [10.0, 5.0]}
        alone, out = corun.slowdowns(samples, works)
        self.assertEqual(11.0, alone['chase-4'])
        self.assertEqual((3.0, 2.0, 4.0), out[('chase-4', 'triad')])
        med, lo, hi = out[('triad', 'chase-4')]
        self.assertEqual((3.0, 2.0, 4.0), (med, lo, hi))

    def test_the_service_slows_by_its_queue(self):
        # Arrivals at half its capacity alone: a service time 1.2x longer
        # is a response 1.2 x 0.5 / 0.4 = 1.5x longer; at 2x the queue
        # is held at the simulator's 0.95.
        self.assertAlmostEqual(1.0, corun.response_stretch(1.0))
        self.assertAlmostEqual(1.5, corun.response_stretch(1.2))
        self.assertAlmostEqual(20.0, corun.response_stretch(2.0))
        self.assertAlmostEqual(40.0, corun.response_stretch(4.0))
        works = [corun.Workload('service', 'service', 8, False),
                 corun.Workload('cpu', 'cpu', 0, True)]
        samples = {('alone', 'service'): [500.0, 520.0, 480.0],
                   ('alone', 'cpu'): [100.0],
                   ('service', 'cpu'): [600.0],
                   ('cpu', 'service'): [100.0]}
        _, out = corun.slowdowns(samples, works)
        self.assertAlmostEqual(1.5, out[('service', 'cpu')][0])
        self.assertAlmostEqual(1.0, out[('cpu', 'service')][0])

    def test_compare(self):
        measured = {('a', 'b'): (2.0, 1.5, 2.5), ('b', 'a'): (1.0, 1, 1),
                    ('a', 'a'): (1.5, 1, 2)}
        predicted = {('a', 'b'): 2.5, ('b', 'a'): 1.0, ('a', 'a'): 1.2}
        keys, rho, mre = corun.compare(measured, predicted)
        self.assertEqual(3, len(keys))
        self.assertAlmostEqual(1.0, rho)
        self.assertAlmostEqual(0.2, mre)


class TestPrediction(testtools.TestCase):

    def test_the_machine_becomes_a_host_class(self):
        hw, hit = corun.host_from_machine(INFO, ALONE)
        self.assertEqual(15.0, hit)
        self.assertEqual(145.0, hw['perf']['local_latency_ns'])
        self.assertAlmostEqual(32.0, hw['perf']['mc_bandwidth_gbs'])
        self.assertEqual(2, hw['cores_per_node'])
        self.assertEqual(32.0, hw['l3_mib_per_node'])

    def test_a_run_whose_llc_kept_nothing_says_so(self):
        self.assertEqual((True, 'chase-4', 'chase-64'),
                         corun.cache_held(ALONE))
        # Other tenants' lines filled the LLC: a 4 MiB chase at DRAM
        # latency.
        full = dict(ALONE, **{'chase-4': 180.0, 'chase-16': 195.0})
        self.assertEqual((False, 'chase-4', 'chase-64'),
                         corun.cache_held(full))

    def test_a_run_whose_cpus_share_no_llc_capacity_says_so(self):
        # The chase that fits alone is chase-4 (chase-16's 80 ns is not
        # under half of chase-64's 160).
        pair = ('chase-4', 'chase-64')
        shared = {pair: (3.4, 3.2, 3.6)}
        self.assertEqual((True, 'chase-4', 'chase-64', 3.4),
                         corun.capacity_shared(ALONE, shared))
        apart = {pair: (1.02, 1.0, 1.04)}
        self.assertEqual((False, 'chase-4', 'chase-64', 1.02),
                         corun.capacity_shared(ALONE, apart))
        full = dict(ALONE, **{'chase-4': 180.0, 'chase-16': 195.0})
        self.assertIsNone(corun.capacity_shared(full, apart))
        self.assertIsNone(corun.capacity_shared(ALONE, {}))

    def test_the_llc_is_where_a_chase_alone_steps_to_dram(self):
        # This project's 2-vCPU Intel guests (2026-11-30): LLC hits to 8
        # MiB, DRAM from 16, page walks beyond. The threshold is
        # sqrt(33 x 277) = 95.6 ns, crossed 0.73 of the way from 8 to 16
        # MiB on a log scale; without the page walks of the 1 GiB point,
        # about halfway.
        curve = {4: 33.0, 8: 36.0, 16: 118.0, 32: 138.0, 64: 143.0,
                 128: 149.0, 256: 163.0, 512: 186.0, 1024: 277.0}
        share = (((33.0 * 277.0) ** 0.5) - 36.0) / (118.0 - 36.0)
        self.assertAlmostEqual(8.0 * 2.0 ** share,
                               corun.effective_llc_mib(curve))
        self.assertTrue(12 < corun.effective_llc_mib(curve) < 14)
        curve[1024] = 190.0
        self.assertTrue(11 < corun.effective_llc_mib(curve) < 12)
        # Nothing held (every size pays DRAM latency), or every size fit.
        self.assertIsNone(corun.effective_llc_mib(
            {2: 150.0, 4: 160.0, 8: 170.0}))
        self.assertIsNone(corun.effective_llc_mib(
            {2: 10.0, 4: 10.0, 8: 12.0, 16: 12.0}))

    def test_streaming_hurts_the_cache_sensitive_chase_not_the_cpu_loop(self):
        works = corun.workloads(32.0)
        hw, hit = corun.host_from_machine(INFO, ALONE)
        profs = corun.profiles_for(works, hit)
        pred = corun.predict(hw, profs, [('chase-16', 'triad'),
                                         ('chase-16', 'cpu'),
                                         ('cpu', 'triad')])
        self.assertGreater(pred[('chase-16', 'triad')], 1.1)
        self.assertAlmostEqual(1.0, pred[('chase-16', 'cpu')], places=3)
        self.assertAlmostEqual(1.0, pred[('cpu', 'triad')], places=3)


class TestRuns(testtools.TestCase):

    def _samples(self, shuffle):
        works = corun.workloads(32)
        rng = random.Random(1)
        samples = {('alone', w.name): [10.0, 10.0, 10.0] for w in works}
        for i, a in enumerate(works):
            for j, b in enumerate(works):
                base = 10.0 * (1.0 + 0.1 * i + 0.01 * j)
                samples[(a.name, b.name)] = [
                    base * (rng.uniform(0.5, 2.0) if shuffle else 1.0)
                    for _ in range(3)]
        return works, samples

    def test_a_machine_that_repeats_itself_agrees_with_itself(self):
        works, samples = self._samples(shuffle=False)
        self.assertAlmostEqual(1.0, corun.self_agreement(samples, works))

    def test_noise_between_repeats_lowers_the_agreement(self):
        # The same pairs without the noise agree perfectly (above).
        works, samples = self._samples(shuffle=True)
        self.assertLess(corun.self_agreement(samples, works), 0.7)

    def test_a_saved_run_reads_back_the_same(self):
        works, samples = self._samples(shuffle=True)
        run = dict(info=dict(l3_mib=32.0, cpus=[0, 1]), samples=samples,
                   overlap={k: [0.9] for k in samples if k[0] != 'alone'},
                   service=corun.SERVICE_FIGURE, wall=100.0,
                   load=(0.1, 0.2), date='2026-11-26 21:00 UTC')
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'run.json')
        corun.save_run(run, path)
        back = corun.load_run(path)
        self.assertEqual(run['samples'], back['samples'])
        self.assertEqual(run['overlap'], back['overlap'])
        self.assertEqual(run['load'], back['load'])

    def test_a_run_of_replayed_queues_is_refused_by_name(self):
        # An older bench's service figures were response times.
        works, samples = self._samples(shuffle=False)
        run = dict(info=dict(l3_mib=32.0, cpus=[0, 1]), samples=samples,
                   overlap={}, gap_us=500.0, wall=100.0, load=(0.1, 0.2))
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'old.json')
        corun.save_run(run, path)
        err = self.assertRaises(ValueError, corun.load_run, path)
        self.assertIn('old.json', str(err))
        self.assertIn('measure again', str(err))

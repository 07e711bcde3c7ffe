"""Counter deltas: ordinary, first sample, unavailable, reset, wrap, rate."""

from hypothesis import assume
from hypothesis import given
from hypothesis import strategies as st
from oslotest import base

from contention import counters

MAX64 = 2 ** 64 - 1
values64 = st.integers(min_value=0, max_value=MAX64)


class TestDelta(base.BaseTestCase):

    def test_ordinary_delta(self):
        self.assertEqual(counters.Delta(250, None),
                         counters.delta(1000, 1250, 10.0))

    def test_no_change_is_a_measured_zero(self):
        self.assertEqual(counters.Delta(0, None),
                         counters.delta(7, 7, 10.0))

    def test_first_sample(self):
        self.assertEqual(counters.Delta(None, 'first_sample'),
                         counters.delta(None, 5, 10.0))

    def test_unavailable_current(self):
        self.assertEqual(counters.Delta(None, 'unavailable'),
                         counters.delta(5, None, 10.0))
        self.assertEqual(counters.Delta(None, 'unavailable'),
                         counters.delta(None, None, 10.0))

    def test_reset_counts_since_restart(self):
        # The domain restarted: 10**12 before, 5000 counted since.
        self.assertEqual(counters.Delta(5000, 'counter_reset'),
                         counters.delta(10 ** 12, 5000, 10.0))

    def test_wrap_at_64_bits(self):
        self.assertEqual(counters.Delta(15, 'wrapped'),
                         counters.delta(MAX64 - 9, 5, 10.0))

    def test_wrap_at_configured_width(self):
        self.assertEqual(counters.Delta(4100, 'wrapped'),
                         counters.delta(2 ** 32 - 4000, 100, 1.0, bits=32))
        # The same drop at 64 bits is a restart.
        self.assertEqual(counters.Delta(100, 'counter_reset'),
                         counters.delta(2 ** 32 - 4000, 100, 1.0))
        self.assertEqual(counters.Delta(None, 'invalid_value'),
                         counters.delta(0, 2 ** 32, 1.0, bits=32))
        self.assertEqual(counters.Delta(2 ** 32 - 1, None),
                         counters.delta(0, 2 ** 32 - 1, 1.0, bits=32))

    def test_drop_of_exactly_half_the_range_is_a_reset(self):
        self.assertEqual('counter_reset',
                         counters.delta(2 ** 63, 0, 1.0).note)
        self.assertEqual('wrapped', counters.delta(2 ** 63 + 1, 0, 1.0).note)

    def test_wrap_implausible_under_max_rate_is_a_reset(self):
        # Wrapped delta 2**63 - 1 + 101 is impossible in 10 s at 1e9/s;
        # counted since a restart, 100 is fine.
        result = counters.delta(2 ** 63 + 1, 100, 10.0, max_rate=1e9)
        self.assertEqual(counters.Delta(100, 'counter_reset'), result)

    def test_impossible_rate_refused(self):
        self.assertEqual(counters.Delta(None, 'impossible_rate'),
                         counters.delta(0, 10 ** 11, 10.0, max_rate=1e9))

    def test_rate_at_the_limit_is_accepted(self):
        self.assertEqual(counters.Delta(10 ** 10, None),
                         counters.delta(0, 10 ** 10, 10.0, max_rate=1e9))

    def test_impossible_rate_after_reset(self):
        self.assertEqual(counters.Delta(None, 'impossible_rate'),
                         counters.delta(10 ** 15, 10 ** 12, 1.0,
                                        max_rate=1e9))

    def test_invalid_values(self):
        for previous, current in ((-1, 5), (5, -1), (0, 2 ** 64),
                                  (0, 1.5), (0, True), (0, 'x'),
                                  (float('nan'), 3)):
            self.assertEqual(counters.Delta(None, 'invalid_value'),
                             counters.delta(previous, current, 1.0),
                             (previous, current))

    def test_invalid_interval(self):
        for elapsed in (0, -1.0, float('nan'), float('inf'), None):
            self.assertEqual(counters.Delta(None, 'invalid_interval'),
                             counters.delta(1, 2, elapsed), elapsed)

    @given(values64, values64, st.floats(0.001, 1e6))
    def test_never_negative(self, previous, current, elapsed):
        result = counters.delta(previous, current, elapsed)
        self.assertIsNotNone(result.value)
        self.assertGreaterEqual(result.value, 0)
        self.assertIn(result.note, counters.MEASURED_NOTES)

    @given(values64, values64, st.floats(0.001, 1e6),
           st.floats(0, 1e12))
    def test_never_above_max_rate(self, previous, current, elapsed, rate):
        result = counters.delta(previous, current, elapsed, max_rate=rate)
        if result.value is not None:
            self.assertLessEqual(result.value, rate * elapsed)
        else:
            self.assertEqual('impossible_rate', result.note)

    @given(values64, st.integers(0, 2 ** 63 - 1))
    def test_wrap_round_trip(self, previous, count):
        current = (previous + count) % 2 ** 64
        result = counters.delta(previous, current, 1.0)
        self.assertEqual(count, result.value)
        self.assertEqual('wrapped' if current < previous else None,
                         result.note)

    @given(values64, values64)
    def test_reset_round_trip(self, previous, since_restart):
        assume(since_restart < previous)
        assume(previous - since_restart <= 2 ** 63)
        result = counters.delta(previous, since_restart, 1.0)
        self.assertEqual(counters.Delta(since_restart, 'counter_reset'),
                         result)

    @given(st.lists(st.integers(0, 10 ** 12), min_size=1, max_size=30),
           values64)
    def test_sum_over_monotone_sequence(self, steps, start):
        # A monotone counter, seen modulo 2**64 (it may wrap on the way).
        tracker = counters.CounterTracker()
        key = ('uuid', 'instructions')
        first = tracker.update(key, start, 0.0)
        self.assertEqual('first_sample', first.note)
        total, value = 0, start
        for i, step in enumerate(steps, 1):
            value = (value + step) % 2 ** 64
            total += tracker.update(key, value, float(i)).value
        self.assertEqual(sum(steps), total)


class TestPlausibleMaxRates(base.BaseTestCase):

    def test_scales_with_vcpus(self):
        one = counters.plausible_max_rates(1)
        four = counters.plausible_max_rates(4)
        self.assertEqual(4 * one['cycles'], four['cycles'])
        self.assertGreater(four['instructions'], four['cycles'])
        self.assertIsNone(four['mbm_total_bytes'])

    def test_a_fully_busy_vcpu_is_plausible(self):
        rate = counters.plausible_max_rates(2)['cpu_time_ns']
        self.assertEqual(
            counters.Delta(20 * 10 ** 9, None),
            counters.delta(0, 20 * 10 ** 9, 10.0, max_rate=rate))
        self.assertEqual(
            'impossible_rate', counters.delta(0, 40 * 10 ** 9, 10.0,
                                              max_rate=rate).note)

    def test_rejects_no_vcpus(self):
        self.assertRaises(ValueError, counters.plausible_max_rates, 0)


class TestCounterTracker(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.tracker = counters.CounterTracker()

    def test_deltas_per_key(self):
        t = self.tracker
        self.assertEqual('first_sample', t.update(('a', 'x'), 10, 0).note)
        self.assertEqual('first_sample', t.update(('b', 'x'), 99, 0).note)
        self.assertEqual(counters.Delta(5, None), t.update(('a', 'x'), 15, 10))
        self.assertEqual(counters.Delta(1, None), t.update(('b', 'x'), 100, 10))

    def test_elapsed_comes_from_timestamps(self):
        t = self.tracker
        t.update(('a', 'x'), 0, 100.0)
        # 30 in 10 s is over 2/s, but the sample is 20 s later.
        self.assertEqual(counters.Delta(30, None),
                         t.update(('a', 'x'), 30, 120.0, max_rate=2))
        self.assertEqual('impossible_rate',
                         t.update(('a', 'x'), 60, 130.0, max_rate=2).note)
        # The refused value is the new baseline.
        self.assertEqual(counters.Delta(10, None),
                         t.update(('a', 'x'), 70, 140.0, max_rate=2))

    def test_unavailable_drops_the_state(self):
        t = self.tracker
        t.update(('a', 'x'), 10, 0)
        self.assertEqual('unavailable', t.update(('a', 'x'), None, 10).note)
        self.assertEqual(frozenset(), t.keys())
        # A delta over two intervals would be wrong: start again.
        self.assertEqual('first_sample', t.update(('a', 'x'), 50, 20).note)

    def test_invalid_value_drops_the_state(self):
        t = self.tracker
        t.update(('a', 'x'), 10, 0)
        self.assertEqual('invalid_value', t.update(('a', 'x'), -3, 10).note)
        self.assertEqual('first_sample', t.update(('a', 'x'), 50, 20).note)

    def test_clock_going_back_is_an_invalid_interval(self):
        t = self.tracker
        t.update(('a', 'x'), 10, 100.0)
        self.assertEqual('invalid_interval',
                         t.update(('a', 'x'), 20, 90.0).note)
        self.assertEqual(counters.Delta(5, None),
                         t.update(('a', 'x'), 25, 95.0))

    def test_reset_after_restart(self):
        t = self.tracker
        t.update(('a', 'x'), 10 ** 9, 0)
        self.assertEqual(counters.Delta(400, 'counter_reset'),
                         t.update(('a', 'x'), 400, 10))
        self.assertEqual(counters.Delta(100, None),
                         t.update(('a', 'x'), 500, 20))

    def test_configured_width(self):
        t = counters.CounterTracker(bits=32)
        t.update(('a', 'x'), 2 ** 32 - 10, 0)
        self.assertEqual(counters.Delta(15, 'wrapped'),
                         t.update(('a', 'x'), 5, 10))

    def test_forget_vanished_instances(self):
        t = self.tracker
        for uuid in ('a', 'b'):
            t.update_all(uuid, {'x': 1, 'y': 2}, 0)
        seen = {('a', 'x'), ('a', 'y')}
        t.forget(t.keys() - seen)
        self.assertEqual(frozenset(seen), t.keys())
        self.assertEqual('first_sample', t.update(('b', 'x'), 5, 10).note)
        self.assertEqual(counters.Delta(4, None), t.update(('a', 'x'), 5, 10))

    def test_forget_unknown_key_is_harmless(self):
        self.tracker.forget([('nobody', 'x')])
        self.assertEqual(frozenset(), self.tracker.keys())

    def test_update_all_with_max_rates(self):
        t = self.tracker
        t.update_all('a', {'cycles': 0, 'instructions': 0}, 0)
        deltas = t.update_all('a', {'cycles': 10 ** 12, 'instructions': 50},
                              10, max_rates={'cycles': 1e9})
        self.assertEqual({'cycles': counters.Delta(None, 'impossible_rate'),
                          'instructions': counters.Delta(50, None)}, deltas)


class TestInstanceNotes(base.BaseTestCase):

    def test_first_sample_once(self):
        deltas = {'x': counters.Delta(None, 'first_sample'),
                  'y': counters.Delta(None, 'first_sample')}
        self.assertEqual(('first_sample',), counters.instance_notes(deltas))

    def test_named_notes_sorted(self):
        deltas = {'instructions': counters.Delta(4, 'counter_reset'),
                  'cycles': counters.Delta(None, 'impossible_rate'),
                  'cache_misses': counters.Delta(3, None),
                  'mbm_total_bytes': counters.Delta(None, 'unavailable'),
                  'cpu_time_ns': counters.Delta(9, 'wrapped')}
        self.assertEqual(('counter_reset:instructions',
                          'impossible_rate:cycles',
                          'wrapped:cpu_time_ns'),
                         counters.instance_notes(deltas))

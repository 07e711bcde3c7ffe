"""The evaluation bench's scenario variants and target arithmetic."""

import types

import testtools

from bench import evaluation
from contention import sim


class TestVariants(testtools.TestCase):

    def test_arrival_variant_moves_every_instance_to_arrivals(self):
        shipped = sim.load_scenario('ahn-wl1')
        variant = evaluation.arrival_variant('ahn-wl1', per_epoch=4)
        self.assertEqual((), variant.instances)
        self.assertEqual(len(shipped.instances),
                         sum(a.count for a in variant.arrivals))
        self.assertEqual(shipped.hosts, variant.hosts)
        self.assertEqual(shipped.epochs, variant.epochs)
        first = [a.profile for a in variant.arrivals if a.epoch == 0]
        # interleaved: the first epoch brings one of each application
        self.assertEqual(4, len(set(first)))

    def test_overcommit_variant_changes_only_the_ratio(self):
        shipped = sim.load_scenario('ahn-wl1')
        variant = evaluation.overcommit_variant('ahn-wl1', ratio=2.0)
        for name, hw in variant.hardware.items():
            self.assertEqual(2.0, hw.cpu_allocation_ratio)
            self.assertEqual(shipped.hardware[name].perf, hw.perf)
        self.assertEqual(shipped.profiles, variant.profiles)
        self.assertEqual(shipped.instances, variant.instances)

    def test_what_if_turns_over_commit_off(self):
        # The shipped Ahn hardware has Nova's default over-commit; the
        # what-if is the one without it.
        shipped = sim.load_scenario('ahn-wl1')
        variant = evaluation.overcommit_variant('ahn-wl1')
        for name, hw in variant.hardware.items():
            self.assertEqual(4.0, shipped.hardware[name].cpu_allocation_ratio)
            self.assertEqual(1.0, hw.cpu_allocation_ratio)


def _result(perf, migrations=0, notes=()):
    return types.SimpleNamespace(perf_mean=perf, migrations=migrations,
                                 notes=notes)


class TestTargets(testtools.TestCase):

    def _results(self, ours, oracle_perf, oracle_notes):
        rows = {e.label: (_result(0.5), 0.0) for e in evaluation.ENTRIES}
        for e in evaluation.ENTRIES:
            if e.group == 'ours':
                rows[e.label] = (_result(ours), 0.0)
        rows['oracle'] = (_result(oracle_perf, 4, oracle_notes), 0.0)
        worst = _result(0.5)
        return {'s': (None, rows, worst, evaluation.derived(rows, worst))}

    def test_fraction_of_the_exact_oracle(self):
        exact = ('oracle: exact optimum over NUMA-local placements',)
        checks = evaluation.check_targets(self._results(0.69, 0.7, exact))
        self.assertTrue(checks['s']['oracle_ok'])
        self.assertAlmostEqual(0.95, checks['s']['frac'])
        checks = evaluation.check_targets(self._results(0.6, 0.7, exact))
        self.assertFalse(checks['s']['oracle_ok'])
        self.assertTrue(checks['s']['perf_ok'])

    def test_inexact_oracle_is_not_applicable(self):
        notes = ('oracle: exact search not possible (too many states)',)
        checks = evaluation.check_targets(self._results(0.6, 0.7, notes))
        self.assertIsNone(checks['s']['oracle_ok'])
        self.assertFalse(checks['s']['exact'])

    def test_oracle_without_gain_needs_ours_to_lose_nothing(self):
        notes = ('oracle: current placement within 2.0 % of the optimum',)
        checks = evaluation.check_targets(self._results(0.5, 0.5, notes))
        self.assertTrue(checks['s']['oracle_ok'])
        checks = evaluation.check_targets(self._results(0.45, 0.5, notes))
        self.assertFalse(checks['s']['oracle_ok'])

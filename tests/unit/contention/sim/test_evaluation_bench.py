"""The evaluation bench's scenario variants and target arithmetic."""

import types

import testtools

from bench import evaluation
from contention.sim.policies import weigher as weigher_policy
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


def _result(perf, migrations=0, notes=(), vcpu_moves=0):
    return types.SimpleNamespace(perf_mean=perf, migrations=migrations,
                                 notes=notes, vcpu_moves=vcpu_moves,
                                 memory_moves=0, quota_changes=0)


class TestTargets(testtools.TestCase):

    def _results(self, ours, oracle_perf, oracle_notes, lagged=None,
                 scen=None, name='s'):
        rows = {e.label: (_result(0.5), 0.0) for e in evaluation.ENTRIES}
        for e in evaluation.ENTRIES:
            if e.group == 'ours':
                rows[e.label] = (_result(ours), 0.0)
        rows['oracle'] = (_result(oracle_perf, 4, oracle_notes), 0.0)
        rows[evaluation.LAGGED] = (_result(
            oracle_perf if lagged is None else lagged, 4, oracle_notes,
            vcpu_moves=0 if lagged is None else 8), 0.0)
        worst = _result(0.5)
        return {name: (scen, rows, worst, evaluation.derived(rows, worst))}

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

    def test_oracle_with_quotas_fixed_is_not_exact(self):
        # Too many quota options: the oracle keeps quotas fixed, and a
        # policy that raises them may pass it, so it bounds nothing.
        fixed = (' (exact search not possible over quota raises, too many '
                 'options: quotas kept fixed)')
        for note in ('oracle: best over NUMA-local placements' + fixed,
                     'oracle: current placement within 2.0 % of the '
                     'optimum' + fixed):
            checks = evaluation.check_targets(
                self._results(0.6, 0.7, (note,)))
            self.assertFalse(checks['s']['exact'])
            self.assertIsNone(checks['s']['oracle_ok'])

    def test_last_interval_oracle_is_a_reference_not_the_verdict(self):
        exact = ('oracle: exact optimum over NUMA-local placements',)
        # none 0.5, oracle 0.7, last-interval oracle 0.6, ours 0.69
        check = evaluation.check_targets(
            self._results(0.69, 0.7, exact, lagged=0.6))['s']
        self.assertTrue(check['oracle_ok'])
        self.assertAlmostEqual(0.95, check['frac'])
        self.assertAlmostEqual(1.9, check['lagged_frac'])
        self.assertEqual('190.0 %', evaluation.lagged_share(check))
        # Below none it has no gain to share, and the verdict is the same.
        check = evaluation.check_targets(
            self._results(0.69, 0.7, exact, lagged=0.45))['s']
        self.assertTrue(check['oracle_ok'])
        self.assertIsNone(check['lagged_frac'])
        self.assertEqual('n/a (it gains -0.0500 over none)',
                         evaluation.lagged_share(check))
        self.assertNotIn(evaluation.LAGGED, [
            e.label for e in evaluation.ENTRIES
            if e.group in ('ours', 'peer')])

    def test_oracle_without_gain_needs_ours_to_lose_nothing(self):
        notes = ('oracle: current placement within 2.0 % of the optimum',)
        checks = evaluation.check_targets(self._results(0.5, 0.5, notes))
        self.assertTrue(checks['s']['oracle_ok'])
        checks = evaluation.check_targets(self._results(0.45, 0.5, notes))
        self.assertFalse(checks['s']['oracle_ok'])


class TestDocText(testtools.TestCase):

    def test_share_never_reads_as_the_target_when_it_is_not_met(self):
        for frac in (0.946, 0.9496, 0.94999):
            self.assertFalse(evaluation.share_met(frac))
            self.assertLess(float(evaluation.share(frac).split()[0]), 95.0)
        self.assertEqual('94.6 %', evaluation.share(0.946))
        self.assertEqual('94.9 %', evaluation.share(0.9496))

    def test_float_noise_at_the_target_is_met_and_reads_so(self):
        frac = (0.69 - 0.5) / (0.7 - 0.5)
        self.assertTrue(evaluation.share_met(frac))
        self.assertEqual('95.0 %', evaluation.share(frac))
        self.assertEqual('100.0 %', evaluation.share(1.0))
        self.assertEqual('n/a', evaluation.share(None))

    def test_table_and_verdict_agree(self):
        exact = ('oracle: exact optimum over NUMA-local placements',)
        # none 0.5, oracle 0.7: ours 0.6892 has 94.6 % of the gain
        results = TestTargets._results(self, 0.6892, 0.7, exact)
        checks = evaluation.check_targets(results)
        self.assertFalse(checks['s']['oracle_ok'])
        row = [line for line in evaluation.targets_section(results, checks)
               if line.startswith('| s |')][0]
        self.assertIn('| 94.6 % | NOT met |', row)

    def test_foresight_paragraph_says_where_the_oracles_differ(self):
        exact = ('oracle: exact optimum over NUMA-local placements',)
        mix3 = sim.load_scenario('merlin-mix3')
        self.assertEqual({'darwin': 60.0}, evaluation.demand_phases(mix3))
        wl1 = sim.load_scenario('ahn-wl1')
        self.assertEqual({}, evaluation.demand_phases(wl1))
        results = TestTargets._results(self, 0.55, 0.6, exact, scen=wl1,
                                       name='ahn-wl1')
        # mix3: the last-interval oracle below none, ours above it
        results.update(TestTargets._results(
            self, 0.5, 0.6, exact, lagged=0.45, scen=mix3,
            name='merlin-mix3'))
        # mix1: the last-interval oracle gets 0.08 of the 0.1 gain
        results.update(TestTargets._results(
            self, 0.55, 0.6, exact, lagged=0.58,
            scen=sim.load_scenario('merlin-mix1'), name='merlin-mix1'))
        checks = evaluation.check_targets(results)
        text = ' '.join(evaluation.foresight_analysis(results, checks))
        self.assertIn('gets 80.0 % of the clairvoyant gain, so 20.0 % of it '
                      'needs foresight', text)
        self.assertIn('identical runs (mean performance and every move) on '
                      'ahn-wl1, and differ on merlin-mix3, merlin-mix1.', text)
        self.assertIn('darwin, shortest phase 60 s = 1 epoch(s)', text)
        self.assertIn('On merlin-mix3 the last-interval oracle ends BELOW',
                      text)
        self.assertIn('NOT an upper bound', text)
        self.assertIn('ahn-wl1 50.0 %', text)
        self.assertIn('-50.0 % (it loses against none)', text)
        self.assertNotIn('NOT expected', text)

    def test_cooldown_sentence_follows_the_run_length(self):
        scen = sim.load_scenario('ahn-wl1')
        cooldown = evaluation.sim.load_policy(
            'cache_aware_swap').params.cooldown_s
        run = scen.epochs * scen.epoch_s
        self.assertGreaterEqual(cooldown, run)
        text = evaluation.cooldown_sentence({'ahn-wl1': (scen,)},
                                            ['ahn-wl1'])
        self.assertIn('(%.0f s), at least as long as these %.0f s runs'
                      % (cooldown, run), text)
        longer = types.SimpleNamespace(epochs=scen.epochs * 10,
                                       epoch_s=scen.epoch_s)
        text = evaluation.cooldown_sentence({'x': (longer,)}, ['x'])
        self.assertIn('shorter than these %.0f s runs' % (run * 10), text)

    def test_swaps_versus_local_names_where_swaps_lost(self):
        ours = [e.label for e in evaluation.ENTRIES if e.group == 'ours']

        def rows(perf):
            return {lb: _result(perf) for lb in ours}

        results = {n: (None, {lb: (r, 0.0) for lb, r in rows(p).items()})
                   for n, p in (('ahn-a', 0.80), ('ahn-b', 0.90))}
        overcommit = {'ahn-a': rows(0.82), 'ahn-b': rows(0.85)}
        best = {n: ours[0] for n in overcommit}
        text = evaluation.swaps_versus_local(results, overcommit, best)
        self.assertIn('a -0.020, b +0.050', text)
        self.assertIn('added more than 0.001 on ahn-b and lost more than '
                      'that on ahn-a.', text)
        self.assertIn('Where they lose', text)
        overcommit['ahn-a'] = rows(0.80)
        text = evaluation.swaps_versus_local(results, overcommit, best)
        self.assertIn('lost more than that on no scenario.', text)
        self.assertNotIn('Where they lose', text)


class TestPriceWhatIf(testtools.TestCase):

    def _results(self, shipped):
        """{scenario: (None, rows)} with the price row's shipped perf."""
        out = {}
        for name, perf, moves in shipped:
            rows = {'none': (_result(0.5), 0.0),
                    'oracle': (_result(0.6), 0.0),
                    evaluation.PRICE_ROW: (_result(perf, vcpu_moves=moves),
                                           0.0)}
            out[name] = (None, rows)
        return out

    def test_entry_is_the_shipped_row_at_another_price(self):
        entry = evaluation.price_entry(1e5)
        base = evaluation.ENTRIES_BY_LABEL[evaluation.PRICE_ROW]
        self.assertEqual(base.policy, entry.policy)
        self.assertEqual(1e5, dict(entry.params)['migration_cost_per_gib'])
        self.assertEqual(dict(base.params)['victim_selection'],
                         dict(entry.params)['victim_selection'])
        self.assertNotEqual(base.label, entry.label)
        self.assertNotIn(evaluation.SHIPPED_PRICE,
                         evaluation.WHAT_IF_PRICES)

    def test_effects_sort_gains_losses_and_moves_for_nothing(self):
        results = self._results([('a', 0.55, 6), ('b', 0.58, 6),
                                 ('c', 0.58, 6), ('d', 0.58, 6)])
        price = evaluation.WHAT_IF_PRICES[0]
        prices = {'a': {price: _result(0.57, migrations=4, vcpu_moves=6)},
                  'b': {price: _result(0.57, vcpu_moves=6)},
                  'c': {price: _result(0.58, vcpu_moves=30)},
                  'd': {price: _result(0.58, vcpu_moves=6)}}
        gains, losses, churn = evaluation.price_effects(results, prices,
                                                        price)
        self.assertEqual(['a'], [g[0] for g in gains])
        self.assertAlmostEqual(0.02, gains[0][1])
        self.assertEqual(4, gains[0][2])
        self.assertEqual(['b'], [x[0] for x in losses])
        self.assertEqual([('c', 0.0, 0, 24)], churn)

    def test_verdict_follows_the_run(self):
        results = self._results([('a', 0.55, 6), ('c', 0.599, 6)])
        lifted = {p: _result(0.5990) for p in evaluation.WHAT_IF_PRICES}
        churned = {p: _result(0.599, vcpu_moves=30)
                   for p in evaluation.WHAT_IF_PRICES}
        text = ' '.join(evaluation.price_analysis(
            results, {'a': lifted, 'c': churned}))
        self.assertIn('below 95 % of the oracle\'s gain at the shipped '
                      'price (a)', text)
        self.assertIn('lifts it there on a at', text)
        self.assertIn('The shipped price stays', text)
        self.assertIn('moves for nothing on c', text)
        # a lower price that costs nothing anywhere is called out
        text = ' '.join(evaluation.price_analysis(results, {'a': lifted}))
        self.assertIn('deserves review', text)
        self.assertNotIn('The shipped price stays', text)


def _arrival(perf, perf_min, filtered=0, no_host=0, notes=()):
    return types.SimpleNamespace(perf_mean=perf, perf_min=perf_min,
                                 migrations=0, filtered_arrivals=filtered,
                                 no_valid_host=no_host, notes=notes)


def _filter_note(sensitive, rejected, peak):
    p = weigher_policy.ContentionWeigherPolicy(
        with_filter='true', sensitive_images='mcf', train_on_bind=False)
    p.filter_stats = weigher_policy.FilterStats(sensitive, rejected, peak)
    return tuple(p.notes)


class TestWeigherWithFilter(testtools.TestCase):

    def test_the_two_weigher_rows_differ_only_by_the_filter(self):
        entries, why = evaluation.weigher_entries()
        self.assertIsNone(why)
        self.assertEqual([evaluation.WEIGHER, evaluation.FILTERED],
                         [e.label for e in entries])
        alone, filtered = (sim.load_policy(e.policy, **dict(e.params))
                           for e in entries)
        self.assertFalse(alone.with_filter)
        self.assertTrue(filtered.with_filter)
        for name in ('filter_mpki_threshold', 'filter_overhead_threshold',
                     'sensitive_images', 'landing', 'corunner_weight'):
            self.assertEqual(getattr(alone, name), getattr(filtered, name))

    def test_filter_account_reads_the_policys_note(self):
        self.assertEqual((16, 3, 77.4), evaluation.filter_account(
            _arrival(0.9, 0.5, notes=_filter_note(16, 3, 77.4))))
        self.assertEqual((0, 0, None), evaluation.filter_account(
            _arrival(0.9, 0.5, notes=_filter_note(0, 0, None))))
        self.assertIsNone(evaluation.filter_account(_arrival(0.9, 0.5)))

    def test_no_valid_host_shows_next_to_the_performance(self):
        self.assertEqual('0.900 (0 mig.)',
                         evaluation.arrival_cell(_arrival(0.9, 0.5)))
        self.assertEqual('0.900 (0 mig., 2 NoValidHost)',
                         evaluation.arrival_cell(
                             _arrival(0.9, 0.5, no_host=2)))

    def test_analysis_when_the_filter_never_fires(self):
        arrivals = {'ahn-wl1': {
            evaluation.WEIGHER: _arrival(0.914, 0.821),
            evaluation.FILTERED: _arrival(0.914, 0.821,
                                          notes=_filter_note(16, 0, 44.5))}}
        text = ' '.join(evaluation.filter_analysis(arrivals))
        self.assertIn('ahn-wl1 0.914 / 0.821 -> 0.914 / 0.821, 0 kept off '
                      'a saturated host, 0 NoValidHost', text)
        self.assertIn('Sensitive arrivals per variant: ahn-wl1 16.', text)
        self.assertIn('rejected no host on any variant with the default '
                      'thresholds, so these runs are the weigher\'s own: '
                      'the busiest landing node a sensitive arrival was '
                      'judged against (its co-runners\' summed L3 MPKI, '
                      'per variant: ahn-wl1 44.5) stayed under Merlin\'s '
                      'trigger of 100', text)

    def test_analysis_when_the_filter_fires(self):
        arrivals = {'ahn-wl2': {
            evaluation.WEIGHER: _arrival(0.843, 0.477),
            evaluation.FILTERED: _arrival(
                0.850, 0.500, filtered=3, no_host=1,
                notes=_filter_note(16, 5, 120.0))}}
        text = ' '.join(evaluation.filter_analysis(arrivals))
        self.assertIn('ahn-wl2 0.843 / 0.477 -> 0.850 / 0.500, 3 kept off '
                      'a saturated host, 1 NoValidHost', text)
        self.assertIn('It rejected hosts on ahn-wl2 (busiest landing node '
                      'judged, summed L3 MPKI: ahn-wl2 120.0)', text)
        self.assertIn('running fewer VMs', text)
        self.assertNotIn('rejected no host', text)

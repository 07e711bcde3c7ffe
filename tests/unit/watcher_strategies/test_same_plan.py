"""One audit: the Watcher strategy and the simulator policy plan alike.

The same host reports and the same inventory go through the Watcher
strategy (Watcher's own compute model classes, a telemetry store holding
the reports and a move) and through the simulator's policy (the view
built by the core from the same reports, the same move in its in-memory
log); both must return the same plan, skips and indicators included.
"""

import watcher.tests.unit  # noqa: F401  (must precede other watcher imports)

import random
from unittest import mock

from watcher.common import utils
from watcher.tests.unit.decision_engine.strategy.strategies import \
    test_base

from contention import reportview
from contention import swap
from contention.sim.policies import swap as swap_policies
from contention import store as store_api
from tests.unit.watcher_strategies import fixtures as f
from watcher_strategies import strategies
from watcher_strategies import view as view_mod

NOW = 100000.0
M = f.M
FRESHNESS = 120.0
PLACEMENTS = [('h0', 'hot', 2, 2048), ('h1', 'hot', 2, 2048),
              ('h2', 'hot', 2, 2048), ('h3', 'hot', 1, 1024),
              ('c0', 'cold', 2, 2048), ('c1', 'cold', 2, 2048),
              ('w0', 'warm', 2, 2048), ('l0', 'warm', 2, 2048)]


def _reports():
    return [
        f.host_report('hot', NOW - 10, [
            f.record('h0', 9 * M, socket=0, mf=0.6, mpki=20.0),
            f.record('h1', 6 * M, socket=0, mf=0.5),
            f.record('h2', 5 * M, socket=1, mf=0.2),
            f.record('h3', 4 * M, socket=0, vcpus=1, memory_mib=1024,
                     cpu_quota=0.5, cpu_util=0.48)]),
        f.host_report('cold', NOW - 10, [
            f.record('c0', 1 * M, socket=0, mf=0.1),
            f.record('c1', 2 * M, socket=1, mf=0.1)]),
        f.host_report('warm', NOW - 20, [
            f.record('w0', 3 * M, socket=0, mf=0.3),
            # Locked but measured: a move may land beside it.
            f.record('l0', 1 * M, socket=0, mf=0.1)]),
        # "stale" reports nothing fresh: its instances are not movable.
        f.host_report('stale', NOW - 1000, []),
    ]


def _inventory():
    hosts = tuple(reportview.HostInventory(
        h, 8, 16384, disk_gb_total=200) for h in ('cold', 'hot', 'warm'))
    instances = tuple(reportview.InstanceInventory(
        f.uid(n), h, vcpus, mem, disk_gb=1, unmovable=(
            'locked: the instance is locked in Nova' if n == 'l0' else None))
        for n, h, vcpus, mem in PLACEMENTS)
    return reportview.Inventory(hosts, instances)


class TestSamePlan(test_base.TestBaseStrategy):

    def _move(self):
        return store_api.MoveRecord(f.uid('c1'), 'hot', 'cold', NOW - 300,
                                    'watcher:contention_migrate')

    def _watcher(self, cls, params):
        model = f.model(['cold', 'hot', 'warm'], PLACEMENTS, locked=('l0',))
        # The inventory Watcher's model gives is the one the simulator
        # side is fed.
        self.assertEqual(set(_inventory().instances),
                         set(view_mod.inventory(model).instances))
        self.assertEqual(set(_inventory().hosts),
                         set(view_mod.inventory(model).hosts))
        self.m_c_model.return_value = model
        store = f.store(*_reports(), moves=[self._move()])
        strategy = cls(config=mock.Mock(
            connection='sqlite://', repercussion_interval=3600,
            mix_model=None))
        strategy.telemetry_store = store
        strategy.clock = lambda: NOW
        strategy.input_parameters = utils.Struct(params)
        strategy.execute()
        return strategy.plan

    def _simulator(self, cls, params):
        reports = {r.host: r for r in _reports()}
        built = reportview.view_from_reports(reports, _inventory(), NOW,
                                             FRESHNESS)
        policy = cls(**params)
        m = self._move()
        policy.move_log.record([swap.Move(m.uuid, m.source_host,
                                          m.dest_host, m.moved_at,
                                          m.origin)])
        return policy.rebalance(built.view, random.Random(0))

    def test_same_plan(self):
        cases = (
            (strategies.CacheAwareSwap, swap_policies.CacheAwareSwapPolicy),
            (strategies.NumaAwareSwap, swap_policies.NumaAwareSwapPolicy))
        for watcher_cls, policy_cls in cases:
            for params in ({'threshold': 1 * M, 'min_predicted_gain': 0.0},
                           {'threshold': 1 * M,
                            'victim_selection': 'extreme',
                            'max_missing_ratio': 1.0}):
                ours = self._watcher(watcher_cls, dict(params))
                theirs = self._simulator(policy_cls, dict(params))
                self.assertTrue(ours.actions)
                self.assertEqual(ours.actions, theirs.actions,
                                 watcher_cls.__name__)
                self.assertEqual(ours.skipped, theirs.skipped)
                self.assertEqual(ours.indicators, theirs.indicators)
                self.assertEqual(ours.reason, theirs.reason)
                # The recorded move holds c1 back on both sides.
                self.assertIn(
                    (f.uid('c1'), 'cooldown'),
                    {(s.subject, s.reason.split(':')[0])
                     for s in ours.skipped})

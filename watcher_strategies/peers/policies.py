"""Watcher's built-in strategies as simulator policies.

``contention-sim evaluate --policy watcher_workload_stabilization`` (and
``watcher_workload_balance``, ``watcher_noisy_neighbor``) runs Watcher's
own strategy code on the simulated cluster each audit period, through
:mod:`watcher_strategies.peers.datasource`, so the evaluation compares our
strategies with what operators can run today, not with a re-implementation.
"""

import logging
import random

from watcher.decision_engine.strategy.strategies import noisy_neighbor
from watcher.decision_engine.strategy.strategies import workload_balance
from watcher.decision_engine.strategy.strategies import \
    workload_stabilization

from contention import cluster
from contention import policy
from watcher_strategies.peers import datasource as simulated

LOG = logging.getLogger(__name__)


class WatcherStrategyPolicy(policy.Policy):
    """Run one Watcher strategy class with fixed parameters."""

    strategy_cls = None
    default_parameters = {}

    def __init__(self, **parameters):
        self.parameters = dict(self.default_parameters, **parameters)

    def rebalance(self, view, rng):
        # Watcher's strategies draw from Python's global random
        # (workload_stabilization's default host_choice 'retry' samples
        # hosts): seeded from the run's generator, a run is the same in
        # every process, and the caller's random state is left alone.
        saved = random.getstate()
        random.seed(None if rng is None else int(rng.integers(2 ** 32)))
        try:
            solution = simulated.run_strategy(self.strategy_cls, view,
                                              self.parameters)
        except Exception as exc:
            # Upstream strategies can fail on valid clusters (noisy_neighbor
            # does); the evaluation records that instead of crashing.
            LOG.warning('Watcher strategy %s failed: %s', self.name, exc)
            return cluster.Plan(reason='%s failed: %s: %s'
                                % (self.name, type(exc).__name__, exc))
        finally:
            random.setstate(saved)
        return simulated.plan_from_solution(solution, view)


class WorkloadStabilizationPolicy(WatcherStrategyPolicy):
    name = 'watcher_workload_stabilization'
    strategy_cls = workload_stabilization.WorkloadStabilization


class WorkloadBalancePolicy(WatcherStrategyPolicy):
    name = 'watcher_workload_balance'
    strategy_cls = workload_balance.WorkloadBalance
    default_parameters = {'metrics': 'instance_cpu_usage'}


class NoisyNeighborPolicy(WatcherStrategyPolicy):
    name = 'watcher_noisy_neighbor'
    strategy_cls = noisy_neighbor.NoisyNeighbor

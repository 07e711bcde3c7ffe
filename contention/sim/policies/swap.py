"""The swap schedulers as simulator policies.

``contention-sim evaluate --policy cache_aware_swap`` (or
``numa_aware_swap``) runs :mod:`contention.swap` every audit period on the
simulated cluster, the same code the Watcher strategies run. The policy
remembers its previous plan's moves and the Merlin classes just before
them, so the repercussion check (Merlin section 3.5) works across periods
as it does across Watcher audits (where the store remembers them).

``mix_model`` adds the model check (:func:`contention.swap._mix_gain`):
a contention-train model file, or ``scenario`` for a model trained when
the policy is bound, from the bound simulator's scenario (in-sample: its
own workloads on its own hardware, as the ``contention_weigher`` policy
trains one, with ``copies_samples`` landings of each beside copies of one
workload). Each class of instances is described to the model by the mean
of its instances' counters in the view
(:func:`contention.perfmodel.mixes.class_profiles`); latency services are
those the scenario's profiles declare, as a flavor's
``contention:profile`` would.
"""

from contention import arbitration
from contention import cluster
from contention.perfmodel import mixes
from contention.perfmodel import persist
from contention import policy
from contention.sim import training
from contention import swap

#: Landings of each workload beside copies of one workload in the model
#: ``mix_model=scenario`` trains (half the default random landings).
COPIES_SAMPLES = 20


def _bool(value):
    """A flag given as a bool or as ``--policy-arg`` text."""
    if isinstance(value, str):
        if value.lower() not in ('true', 'false', '1', '0', 'yes', 'no'):
            raise ValueError('expected true or false, not %r' % value)
        return value.lower() in ('true', '1', 'yes')
    return bool(value)


class _SwapPolicy(policy.Policy):
    """Shared parameters and the repercussion memory."""

    algorithm = None
    #: Default of ``contention_swaps`` (see the subclasses).
    contention_swaps = True

    def __init__(self, threshold=5e6, max_swaps=5,
                 victim_selection=arbitration.SENSITIVITY_COST,
                 cooldown=3600.0, tolerance=0.1,
                 migration_cost_per_gib=2.5e5, local_phase=True,
                 local_memory_mf=swap.SwapParameters.local_memory_mf,
                 numa_repair=True, cpu_quota=True,
                 min_predicted_gain=swap.SwapParameters.min_predicted_gain,
                 contention_swaps=None, mix_model=None,
                 copies_samples=COPIES_SAMPLES):
        self.params = swap.SwapParameters(
            threshold=float(threshold), max_swaps=int(max_swaps),
            victim_selection=victim_selection, cooldown_s=float(cooldown),
            tolerance=float(tolerance),
            migration_cost_per_gib=float(migration_cost_per_gib),
            local_phase=bool(local_phase),
            local_memory_mf=float(local_memory_mf),
            numa_repair=_bool(numa_repair), cpu_quota=_bool(cpu_quota),
            min_predicted_gain=float(min_predicted_gain),
            contention_swaps=(type(self).contention_swaps
                              if contention_swaps is None
                              else _bool(contention_swaps)))
        self.mix_model = mix_model or None
        self.copies_samples = int(copies_samples)
        self._model = None
        self._latency = frozenset()
        self.notes = []
        self._moves = ()
        self._classes_before = {}

    def get_params(self):
        """The parameters, scikit-learn style."""
        p = self.params
        return dict(threshold=p.threshold, max_swaps=p.max_swaps,
                    victim_selection=p.victim_selection,
                    cooldown=p.cooldown_s, tolerance=p.tolerance,
                    migration_cost_per_gib=p.migration_cost_per_gib,
                    local_phase=p.local_phase,
                    local_memory_mf=p.local_memory_mf,
                    numa_repair=p.numa_repair, cpu_quota=p.cpu_quota,
                    min_predicted_gain=p.min_predicted_gain,
                    contention_swaps=p.contention_swaps,
                    mix_model=self.mix_model,
                    copies_samples=self.copies_samples)

    def bind(self, simulator):
        self._moves = ()
        self._classes_before = {}
        self.notes = []
        if self.mix_model is None:
            return
        if self.mix_model != 'scenario':
            self._model = persist.load(self.mix_model).interference
            return
        scen = simulator.scenario
        bundle, report = training.train_from_sim(
            scen, cross_validate=False, copies_samples=self.copies_samples)
        self._model = bundle.interference
        self._latency = frozenset(
            name for name, p in report['workloads'].items()
            if p.get('latency'))
        self.notes.append(
            '%s: model check trained from scenario %s (%d samples, %d of '
            'them beside copies; simulated)'
            % (self.name, scen.name, bundle.summary['samples'],
               self.copies_samples * len(report['workloads'])))

    def rebalance(self, view, rng):
        hurt = arbitration.hurt_corunners(view, self._moves,
                                          self._classes_before)
        values = None
        if self._model is not None:
            values = mixes.MixValues(self._model, mixes.class_profiles(
                view.instances, swap.mix_class, self._latency))
        plan = type(self).algorithm(view, self.params, hurt=hurt,
                                    mix_values=values)
        self._remember(view, plan)
        return plan

    def _remember(self, view, plan):
        moves = []
        for action in plan.actions:
            legs = ((action.first, action.second)
                    if isinstance(action, cluster.Swap) else (action,))
            for leg in legs:
                if isinstance(leg, cluster.Migrate):
                    moves.append(arbitration.Move(
                        leg.instance, leg.source_host, leg.dest_host,
                        view.now))
                elif isinstance(leg, cluster.Repin):
                    moves.append(arbitration.Move(
                        leg.instance, leg.host, leg.host, view.now))
        self._moves = tuple(moves)
        self._classes_before = {i.uuid: i.merlin_class
                                for i in view.instances
                                if i.merlin_class is not None}


class CacheAwareSwapPolicy(_SwapPolicy):
    """Ahn et al.'s Algorithm 1 (NUMA repair, local re-pins, host swaps).

    Then Merlin's quota raises (:mod:`contention.quota`).
    """

    name = 'cache_aware_swap'
    algorithm = staticmethod(swap.cache_aware)
    contention_swaps = False


class NumaAwareSwapPolicy(_SwapPolicy):
    """Ahn et al.'s Algorithm 2 (NUMA repair, socket swaps with memory).

    Then Merlin's quota raises (:mod:`contention.quota`).
    """

    name = 'numa_aware_swap'
    algorithm = staticmethod(swap.numa_aware)

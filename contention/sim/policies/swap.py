"""The swap schedulers as simulator policies: adapters of one audit.

``contention-sim evaluate --policy cache_aware_swap`` (or
``numa_aware_swap``) runs :func:`contention.swap.run_audit` every audit
period on the simulated cluster, the function the Watcher strategies
run, with the same parameters and defaults
(:mod:`contention.swap.params`). What differs is only what an adapter
supplies: the view is the simulator's, and the move log is in memory
(:class:`contention.swap.InMemoryMoveLog`): every action of every plan
is recorded once the simulator has run it (refused ones as failed
attempts at their source; one whose copy runs on with the time the copy
ends, as Watcher records a move once it has ended), with the instances
as the audit saw them just before it, so the cool-down, the repercussion
check (Merlin section 3.5) and the measured roll-back see every move, as
Watcher's store-backed log does.

``mix_model`` adds the model check (:func:`contention.swap.feasibility.mix_gain`):
a contention-train model file, or ``scenario`` for a model trained when
the policy is bound, from the bound simulator's scenario (in-sample: its
own workloads on its own hardware, as the ``contention_weigher`` policy
trains one, with ``copies_samples`` landings of each beside copies of one
workload). Each class of instances is described to the model by the mean
of its instances' counters in the view
(:func:`contention.perfmodel.mixes.class_profiles`); latency services are
those the simulator's view declares (its profiles' metric), as a flavor's
``contention:profile`` would.
"""

import dataclasses

from contention.perfmodel import mixes
from contention.perfmodel import persist
from contention import policy
from contention.sim import training
from contention import swap
from contention.swap import params as params_mod

#: Landings of each workload beside copies of one workload in the model
#: ``mix_model=scenario`` trains (half the default random landings).
COPIES_SAMPLES = 20


class _SwapPolicy(policy.Policy):
    """Shared parameters and the in-memory move log."""

    #: :data:`contention.swap.CACHE_AWARE` or ``NUMA_AWARE``.
    algorithm = None

    def __init__(self, mix_model=None, copies_samples=COPIES_SAMPLES,
                 **params):
        """A policy running ``algorithm`` with the audit's ``params``.

        ``params`` are named as :func:`contention.swap.params.from_input`
        names them, as text or values; unset ones take the algorithm's
        defaults.
        """
        self.params = params_mod.from_input(type(self).algorithm, params)
        self.mix_model = mix_model or None
        self.copies_samples = int(copies_samples)
        self._model = None
        self.notes = []
        self.move_log = swap.InMemoryMoveLog()
        self._seen = {}
        #: Times the model check or the harm check abstained over the
        #: run (the model was unsure: ``MixValues.abstentions``).
        self.model_abstentions = 0

    def get_params(self):
        """The parameters, scikit-learn style."""
        values = params_mod.as_input(self.params, type(self).algorithm)
        values.update(mix_model=self.mix_model,
                      copies_samples=self.copies_samples)
        return values

    def bind(self, simulator):
        self.move_log = swap.InMemoryMoveLog()
        self.notes = []
        self.model_abstentions = 0
        if self.mix_model is None:
            return
        if self.mix_model != 'scenario':
            self._model = persist.load(self.mix_model).interference
            return
        scen = simulator.scenario
        bundle, report = training.train_from_sim(
            scen, cross_validate=False, copies_samples=self.copies_samples)
        self._model = bundle.interference
        self.notes.append(
            '%s: model check trained from scenario %s (%d samples, %d of '
            'them beside copies; simulated)'
            % (self.name, scen.name, bundle.summary['samples'],
               self.copies_samples * len(report['workloads'])))

    def mix_values(self, view):
        if self._model is None:
            return None
        return mixes.MixValues(self._model, mixes.class_profiles(
            view.instances, swap.mix_class))

    def rebalance(self, view, rng):
        self._seen = {i.uuid: swap.Seen.of(i) for i in view.instances}
        values = self.mix_values(view)
        plan = swap.run_audit(view, self.params, self.move_log,
                              type(self).algorithm, values)
        if values is not None:
            self.model_abstentions += values.abstentions
        return plan

    def applied(self, plan, result, now):
        """Record what ran, and each refused action as a failed attempt.

        A refused action's instances stayed where they were (the
        simulator refuses a swap as a whole), so the attempt is recorded
        at its source with the ``failed`` outcome, as Watcher's
        ``contention_swap`` records a failed leg: it starts the cool-down
        but moves no co-runner.
        """
        origin = 'sim:%s' % self.name
        moves = [
            dataclasses.replace(m, settled_at=now + result.copy_s[m.uuid])
            if m.uuid in result.copy_s else m
            for m in swap.moves_of(result.applied, now, origin)]
        for move in swap.moves_of([r.action for r in result.rejected], now,
                                  origin):
            moves.append(swap.Move(move.uuid, move.source_host,
                                   move.source_host, now,
                                   '%s:%s' % (move.origin, swap.FAILED)))
        self.move_log.record(moves, seen=self._seen)


class CacheAwareSwapPolicy(_SwapPolicy):
    """Ahn et al.'s Algorithm 1 (NUMA repair, local re-pins, host swaps).

    Then Merlin's quota raises (:mod:`contention.swap.quota`).
    """

    name = 'cache_aware_swap'
    algorithm = swap.CACHE_AWARE


class NumaAwareSwapPolicy(_SwapPolicy):
    """Ahn et al.'s Algorithm 2 (NUMA repair, socket swaps with memory).

    Then Merlin's quota raises (:mod:`contention.swap.quota`).
    """

    name = 'numa_aware_swap'
    algorithm = swap.NUMA_AWARE

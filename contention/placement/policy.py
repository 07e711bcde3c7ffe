"""The ``contention_weigher`` simulator policy: the weigher's scoring core.

``contention-sim evaluate --policy contention_weigher`` places each
arrival on the candidate the Nova weigher would rank first, through the
same :func:`~contention.placement.scoring.score_hosts` (one batched
prediction per arrival, 0-1 scores, neutral hosts). Cell states come from
the :class:`~contention.cluster.ClusterView` (instances' MPKI per socket),
as the weigher's come from the hosts' reports. Ties, an unreadable model
or no candidate with telemetry return None: the simulator then places the
instance as Nova's default weighers would.
"""

from contention import policy
from contention.placement import features
from contention.placement import persist
from contention.placement import scoring


class ContentionWeigherPolicy(policy.Policy):
    """Place arrivals on the best predicted host (see the module doc).

    :param model_path: a contention-train model file.
    :param corunner_weight: as ``[contention] corunner_weight``.
    :param max_telemetry_age: hosts whose telemetry is older are neutral.
    """

    name = 'contention_weigher'

    def __init__(self, model_path=None, corunner_weight=0.3,
                 max_telemetry_age=60.0, model=None):
        self.model_path = model_path
        self.corunner_weight = corunner_weight
        self.max_telemetry_age = max_telemetry_age
        self._model = model

    def _interference(self):
        if self._model is None and self.model_path:
            self._model = persist.load(self.model_path).interference
        return self._model

    def scores(self, instance, view, candidates):
        """{host: HostScore} for an arriving instance."""
        profile = features.NEUTRAL_PROFILE
        if None not in (instance.mpki, instance.mf, instance.ipc):
            profile = features.InstanceProfile(
                mpki=instance.mpki, mf=instance.mf, ipc=instance.ipc,
                vcpus=instance.vcpus, memory_mib=instance.memory_mib,
                source='view')
        else:
            profile = features.InstanceProfile(
                mpki=profile.mpki, mf=profile.mf, ipc=profile.ipc,
                vcpus=instance.vcpus, memory_mib=instance.memory_mib)
        states = {}
        for name in candidates:
            host = view.host(name)
            age = host.telemetry_age_s
            if age is None or age > self.max_telemetry_age:
                states[name] = 'no fresh telemetry'
                continue
            cell = scoring.landing_cell(
                scoring.cells_from_view(view, name), instance.vcpus,
                numa=instance.has_numa_topology)
            states[name] = cell if cell is not None else 'does not fit'
        return scoring.score_hosts(self._interference(), profile, states,
                                   corunner_weight=self.corunner_weight)

    def place(self, instance, view, candidates, rng):
        if not candidates:
            return None
        scores = self.scores(instance, view, candidates)
        judged = [s for s in scores.values() if not s.neutral]
        if not judged:
            return None
        best = max(s.score for s in judged)
        top = sorted(s.host for s in judged if s.score >= best - 1e-9)
        return top[0] if len(top) == 1 else rng.choice(top)

"""The ``contention_weigher`` simulator policy: the weigher's scoring core.

``contention-sim evaluate --policy contention_weigher`` places each
arrival on the candidate the Nova weigher would rank first, through the
same :func:`~contention.placement.scoring.score_hosts` (one batched
prediction per arrival, 0-1 scores, neutral hosts). Cell states come from
the :class:`~contention.cluster.ClusterView` (instances' MPKI per socket),
as the weigher's come from the hosts' reports. Ties, an unreadable model
or no candidate with telemetry return None: the simulator then places the
instance as Nova's default weighers would.

Where the model comes from, in order: the ``model`` object given to the
constructor; the file ``model_path`` (``contention-sim evaluate --policy
contention_weigher --policy-arg model_path=FILE``); otherwise, when the
policy is bound to a simulator, a small model trained on the spot from
the simulator's scenario (:func:`contention.placement.train.
train_from_sim` with :data:`~contention.placement.train.QUICK` settings,
a few seconds; logged, and named in the run's notes).

The arriving instance's profile, as the weigher's: the view's own
counters if it has any; else the mean profile of running instances of
the same image (what the store's per-image profile would hold); else, for
a model trained from the scenario, the profile its workload shows alone
(what an operator would put in the flavor's ``contention:profile``); else
the neutral prior.
"""

import collections

from oslo_log import log as logging

from contention import policy
from contention.placement import features
from contention.placement import persist
from contention.placement import scoring

LOG = logging.getLogger(__name__)


class ContentionWeigherPolicy(policy.Policy):
    """Place arrivals on the best predicted host (see the module doc).

    :param model_path: a contention-train model file.
    :param corunner_weight: as ``[contention] corunner_weight``.
    :param max_telemetry_age: hosts whose telemetry is older are neutral.
    :param landing: ``socket`` (the arrival lands on the socket with the
        most free CPUs, as the simulator places it, so the cell is that
        socket) or ``pool`` (the host's cells merged, as the weigher does
        for an instance without a NUMA topology on a real host).
    :param train_on_bind: train a small model from the bound simulator's
        scenario when no model or model file is given.
    """

    name = 'contention_weigher'

    def __init__(self, model_path=None, corunner_weight=0.3,
                 max_telemetry_age=60.0, model=None, landing='socket',
                 train_on_bind=True):
        if landing not in ('socket', 'pool'):
            raise ValueError("landing must be 'socket' or 'pool', got %r"
                             % (landing,))
        self.model_path = model_path
        self.corunner_weight = float(corunner_weight)
        self.max_telemetry_age = float(max_telemetry_age)
        self.landing = landing
        self.train_on_bind = (train_on_bind if isinstance(train_on_bind, bool)
                              else str(train_on_bind).lower()
                              in ('1', 'true', 'yes'))
        self._model = model
        self.profiles = {}
        self.notes = []

    def bind(self, simulator):
        if self._model is not None or self.model_path:
            return
        if not self.train_on_bind:
            return
        from contention.placement import train
        scen = simulator.scenario
        LOG.info('contention_weigher: no model given; training a quick one '
                 'from scenario %s', scen.name)
        bundle, report = train.train_from_sim(scen, cross_validate=False,
                                              **train.QUICK)
        self._model = bundle.interference
        self.profiles = {
            name: features.InstanceProfile(
                mpki=p['mpki'], mf=p['mf'], ipc=p['ipc'], vcpus=p['vcpus'],
                cpu_util=p.get('cpu_util'),
                latency=bool(p.get('latency', False)),
                mf_small_llc=p.get('mf_small_llc'), source='flavor')
            for name, p in report['workloads'].items()}
        self.notes.append('contention_weigher: model trained from scenario '
                          '%s (%d samples, %d trees; simulated)'
                          % (scen.name, bundle.summary['samples'],
                             bundle.summary['estimators']))

    def _interference(self):
        if self._model is None and self.model_path:
            self._model = persist.load(self.model_path).interference
        return self._model

    def profile_of(self, instance, view):
        """The arriving instance's InstanceProfile (see the module doc)."""
        known = self.profiles.get(instance.image_id or '')

        def make(mpki, mf, ipc, source, cpu_util=None):
            # the latency flag is declared (the flavor), never measured;
            # the small-LLC MF comes from offline profiling (the flavor)
            return features.InstanceProfile(
                mpki=mpki, mf=mf, ipc=ipc, vcpus=instance.vcpus,
                memory_mib=instance.memory_mib, source=source,
                cpu_util=None if cpu_util is None else min(1.0, cpu_util),
                latency=bool(known and known.latency),
                mf_small_llc=known.mf_small_llc if known else None)
        if None not in (instance.mpki, instance.mf, instance.ipc):
            return make(instance.mpki, instance.mf, instance.ipc, 'view',
                        instance.cpu_util)
        image = instance.image_id
        if image:
            seen = collections.defaultdict(list)
            for other in view.instances:
                if (other.image_id == image and None not in
                        (other.mpki, other.mf, other.ipc)):
                    seen['mpki'].append(other.mpki)
                    seen['mf'].append(other.mf)
                    seen['ipc'].append(other.ipc)
                    if other.cpu_util is not None:
                        seen['cpu_util'].append(other.cpu_util)
            if seen:
                n = len(seen['mpki'])
                util = seen.get('cpu_util')
                return make(sum(seen['mpki']) / n, sum(seen['mf']) / n,
                            sum(seen['ipc']) / n, 'image',
                            sum(util) / len(util) if util else None)
            if known is not None:
                return make(known.mpki, known.mf, known.ipc, 'flavor',
                            known.cpu_util)
        prior = features.NEUTRAL_PROFILE
        return make(prior.mpki, prior.mf, prior.ipc, 'prior')

    def scores(self, instance, view, candidates):
        """{host: HostScore} for an arriving instance."""
        profile = self.profile_of(instance, view)
        numa = instance.has_numa_topology or self.landing == 'socket'
        states = {}
        for name in candidates:
            host = view.host(name)
            age = host.telemetry_age_s
            if age is None or age > self.max_telemetry_age:
                states[name] = 'no fresh telemetry'
                continue
            cell = scoring.landing_cell(
                scoring.cells_from_view(view, name), instance.vcpus,
                numa=numa)
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

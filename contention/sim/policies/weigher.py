"""The ``contention_weigher`` simulator policy: the weigher's scoring core.

``contention-sim evaluate --policy contention_weigher`` places each
arrival on the candidate the Nova weigher would rank first, through the
same :func:`~contention.perfmodel.scoring.score_hosts` (one batched
prediction per arrival, 0-1 scores, neutral hosts). Cell states come from
the :class:`~contention.cluster.ClusterView` (instances' MPKI per socket),
as the weigher's come from the hosts' reports. Ties, an unreadable model
or no candidate with telemetry return None: the simulator then places the
instance as Nova's default weighers would.

Where the model comes from, in order: the ``model`` object given to the
constructor; the file ``model_path`` (``contention-sim evaluate --policy
contention_weigher --policy-arg model_path=FILE``); otherwise, when the
policy is bound to a simulator, a small model trained on the spot from
the simulator's scenario (:func:`contention.sim.training.
train_from_sim` with :data:`~contention.perfmodel.train.QUICK` settings,
a few seconds; logged, and named in the run's notes).

The arriving instance's profile, as the weigher's: the view's own
counters if it has any; else the mean profile of running instances of
the same image (what the store's per-image profile would hold); else, for
a model trained from the scenario, the profile its workload shows alone
(what an operator would put in the flavor's ``contention:profile``); else
the neutral prior.

The filter stage (``with_filter``, off by default) is
``nova_filters.ContentionFilter``'s: a ``contention:sensitive`` arrival
skips the candidates whose landing node(s) are saturated
(:func:`~contention.perfmodel.saturation.saturated_nodes`, the same
thresholds and defaults as ``[contention] filter_mpki_threshold`` and
``filter_overhead_threshold``). Hosts without fresh telemetry pass, as
with Nova's default ``filter_fail_closed=False``; the simulator's cells
carry no Liu & Li levels, so only the summed MPKI can saturate them.

Which arrivals are sensitive: the simulator has no flavors with extra
specs, so the policy stands in for the operator who sets
``contention:sensitive=true``. ``sensitive_images`` names the images
(flavors) explicitly; without it, an image is sensitive when the profile
an operator would put in its flavor's ``contention:profile`` (the
workload alone, :attr:`profiles`) is in a Merlin class sensitive to the
LLC or the MC/IC (:func:`contention.classify.resource_sensitivities`).
That is the rule an operator who profiled the workload for
``contention:profile`` can apply without guessing: Merlin's section 3.2
names exactly those classes as suffering from LLC or MC/IC contention,
and a low-MPKI workload gains nothing from being kept off a busy node.
A model given as a file comes with no profiles, so then only the images
listed are sensitive.
"""

import collections
import dataclasses
from typing import Optional

from oslo_log import log as logging

from contention import classify
from contention import policy
from contention.perfmodel import features
from contention.perfmodel import persist
from contention.perfmodel import saturation
from contention.perfmodel import scoring

LOG = logging.getLogger(__name__)


def _flag(value):
    """A boolean parameter, given as a bool or as a ``--policy-arg``."""
    if isinstance(value, bool):
        return value
    return str(value).lower() in ('1', 'true', 'yes')


def _names(value):
    """A set of names from an iterable or a comma-separated string."""
    if isinstance(value, str):
        value = value.split(',')
    return frozenset(v.strip() for v in value if v.strip())


@dataclasses.dataclass
class FilterStats:
    """What the filter stage did over a run (the run's notes say it)."""

    sensitive_arrivals: int = 0
    #: Candidate hosts rejected as saturated, summed over arrivals.
    hosts_rejected: int = 0
    #: The highest summed L3 MPKI of a landing node a sensitive arrival
    #: was judged against (None: no host with fresh telemetry judged).
    peak_landing_mpki: Optional[float] = None


def sensitive_profiles(profiles):
    """The names of the profiles in an LLC- or MC/IC-sensitive class."""
    return frozenset(
        name for name, p in profiles.items()
        if classify.resource_sensitivities(
            classify.merlin_class(mpki=p.mpki, mf=p.mf)))


class ContentionWeigherPolicy(policy.Policy):
    """Place arrivals on the best predicted host (see the module doc).

    :param model_path: a contention-train model file.
    :param corunner_weight: as ``[contention] corunner_weight``.
    :param max_telemetry_age: hosts whose telemetry is older are neutral.
    :param landing: ``socket`` (the arrival lands on the socket with the
        most free CPUs, as the simulator places it, so the cell is that
        socket) or ``pool`` (every cell of the host, as the weigher
        scores an instance without a NUMA topology on a real host).
    :param train_on_bind: train a small model from the bound simulator's
        scenario when no model or model file is given.
    :param with_filter: run the filter stage (see the module doc).
    :param filter_mpki_threshold: as ``[contention]
        filter_mpki_threshold``.
    :param filter_overhead_threshold: as ``[contention]
        filter_overhead_threshold``.
    :param sensitive_images: image names whose flavor carries
        ``contention:sensitive=true`` (comma-separated when a string);
        None: the Merlin rule of the module doc.
    """

    name = 'contention_weigher'

    def __init__(self, model_path=None, corunner_weight=0.3,
                 max_telemetry_age=60.0, model=None, landing='socket',
                 train_on_bind=True, with_filter=False,
                 filter_mpki_threshold=saturation.MPKI_THRESHOLD,
                 filter_overhead_threshold=saturation.OVERHEAD_THRESHOLD,
                 sensitive_images=None):
        if landing not in ('socket', 'pool'):
            raise ValueError("landing must be 'socket' or 'pool', got %r"
                             % (landing,))
        self.model_path = model_path
        self.corunner_weight = float(corunner_weight)
        self.max_telemetry_age = float(max_telemetry_age)
        self.landing = landing
        self.train_on_bind = _flag(train_on_bind)
        self.with_filter = _flag(with_filter)
        self.filter_mpki_threshold = float(filter_mpki_threshold)
        self.filter_overhead_threshold = int(filter_overhead_threshold)
        self.sensitive_images = (None if sensitive_images is None
                                 else _names(sensitive_images))
        self._model = model
        self.profiles = {}
        self.filter_stats = FilterStats()
        self._notes = []
        #: Host judgements: scored, abstained (model unsure), neutral.
        self.model_counts = collections.Counter()

    @property
    def model_abstentions(self):
        """Host judgements the model abstained on (scored neutral)."""
        return self.model_counts['abstained']

    @property
    def notes(self):
        """The run's notes: the model's origin and the filter's account.

        And, when the model abstained on some host (it was unsure, see
        :mod:`contention.perfmodel.confidence`), how often.
        """
        notes = list(self._notes)
        counts = self.model_counts
        if counts['abstained']:
            notes.append(
                'contention_weigher model abstained on %d of %d host '
                'judgements (neutral score: outside its training data or '
                'its trees disagree)' % (
                    counts['abstained'],
                    counts['abstained'] + counts['scored']))
        if not self.with_filter:
            return notes
        stats = self.filter_stats
        return notes + [
            'contention_weigher filter: %d contention:sensitive arrivals '
            '(images: %s); %d candidate hosts rejected as saturated; the '
            'busiest landing node judged had a summed L3 MPKI of %s '
            '(thresholds: MPKI %g, Liu & Li level %d)' % (
                stats.sensitive_arrivals,
                ', '.join(sorted(self.sensitive())) or 'none',
                stats.hosts_rejected,
                'n/a' if stats.peak_landing_mpki is None
                else '%.1f' % stats.peak_landing_mpki,
                self.filter_mpki_threshold, self.filter_overhead_threshold)]

    def bind(self, simulator):
        self.filter_stats = FilterStats()
        self.model_counts = collections.Counter()
        if self._model is not None or self.model_path:
            return
        if not self.train_on_bind:
            return
        from contention.perfmodel import train
        from contention.sim import training
        scen = simulator.scenario
        LOG.info('contention_weigher: no model given; training a quick one '
                 'from scenario %s', scen.name)
        bundle, report = training.train_from_sim(scen, cross_validate=False,
                                                 **train.QUICK)
        self._model = bundle.interference
        self.profiles = {
            name: features.InstanceProfile(
                mpki=p['mpki'], mf=p['mf'], ipc=p['ipc'], vcpus=p['vcpus'],
                cpu_util=p.get('cpu_util'),
                latency=bool(p.get('latency', False)),
                mf_small_llc=p.get('mf_small_llc'), source='flavor')
            for name, p in report['workloads'].items()}
        self._notes.append('contention_weigher: model trained from scenario '
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

    def _fresh(self, view, name):
        age = view.host(name).telemetry_age_s
        return age is not None and age <= self.max_telemetry_age

    def _numa(self, instance):
        return instance.has_numa_topology or self.landing == 'socket'

    def sensitive(self):
        """The images whose flavor would say ``contention:sensitive``."""
        if self.sensitive_images is None:
            return sensitive_profiles(self.profiles)
        return self.sensitive_images

    def filter_hosts(self, instance, view, candidates):
        """The candidates ContentionFilter would pass (see the module doc)."""
        if not self.with_filter or instance.image_id not in self.sensitive():
            return tuple(candidates)
        self.filter_stats.sensitive_arrivals += 1
        passed = tuple(name for name in candidates
                       if not self._saturated(instance, view, name))
        self.filter_stats.hosts_rejected += len(candidates) - len(passed)
        return passed

    def _saturated(self, instance, view, name):
        if not self._fresh(view, name):
            return False
        cells = scoring.cells_from_view(view, name)
        nodes = scoring.landing_nodes(cells, instance.vcpus,
                                      numa=self._numa(instance))
        stats = self.filter_stats
        for node in nodes:
            stats.peak_landing_mpki = max(cells[node].co_mpki_sum,
                                          stats.peak_landing_mpki or 0.0)
        return bool(saturation.saturated_nodes(
            cells, nodes, self.filter_mpki_threshold,
            self.filter_overhead_threshold))

    def scores(self, instance, view, candidates):
        """{host: HostScore} for an arriving instance."""
        profile = self.profile_of(instance, view)
        states = {}
        for name in candidates:
            if not self._fresh(view, name):
                states[name] = 'no fresh telemetry'
                continue
            landing = scoring.landing_cells(
                scoring.cells_from_view(view, name), instance.vcpus,
                numa=self._numa(instance))
            states[name] = landing or 'does not fit'
        scores = scoring.score_hosts(self._interference(), profile, states,
                                     corunner_weight=self.corunner_weight)
        for score in scores.values():
            self.model_counts['abstained' if score.abstained else
                              'scored' if not score.neutral else 'neutral'] \
                += 1
        return scores

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

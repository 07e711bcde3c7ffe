"""``nova_filters.ContentionWeigher``: rank hosts by predicted contention.

Per request (``weigh_objects``, overridden so the work is done once):

1. a move or rebuild while ``[contention] apply_to_moves`` is off, or no
   usable model: every host gets the neutral score;
2. one cached store read for the candidates' fresh reports;
3. the instance's profile (hint > flavor extra spec > image > prior);
4. per host with fresh telemetry, the landing cell(s)
   (:mod:`nova_filters.landing`) and their state;
5. one batched model prediction and the 0-1 score of
   :func:`contention.perfmodel.scoring.score_hosts`; a host whose
   telemetry is unusable, or on which the model is unsure
   (``[contention] max_domain_excess`` / ``max_prediction_spread``, see
   :mod:`contention.perfmodel.confidence`), gets the neutral score and
   the reason is logged; the service counts them.

Nothing raised while scoring leaves the weigher: the request gets the
neutral score on every host and the error is logged.

``minval = 0`` and ``maxval = 1`` fix Nova's normalisation, so a score of
0.8 means the same in every request; the multiplier is
``[contention] weight_multiplier``, overridden by the aggregate key
``contention_weight_multiplier``.
"""

from nova import conf as nova_conf
from nova.scheduler import utils
from nova.scheduler import weights
from oslo_log import log as logging

from contention.perfmodel import confidence
from contention.perfmodel import features
from contention.perfmodel import scoring
from nova_filters import landing
from nova_filters import opts
from nova_filters import service

LOG = logging.getLogger(__name__)
CONF = nova_conf.CONF
opts.register_opts(CONF)

AGGREGATE_KEY = 'contention_weight_multiplier'


def landing_states(svc, host_states, spec_obj, reports):
    """{host: the CellStates of its landing nodes, or why there are none}."""
    states = {}
    request = landing.Request(spec_obj)
    for host_state in host_states:
        name = host_state.host
        report = reports.get(name)
        if report is None:
            states[name] = 'no fresh telemetry'
            continue
        cells = svc.cells(report)
        nodes = svc.landing.nodes(host_state, request, cells)
        if not nodes or any(n not in cells.states for n in nodes):
            states[name] = 'no landing cell known'
            continue
        states[name] = tuple(cells.states[n] for n in nodes)
    return states


class ContentionWeigher(weights.BaseHostWeigher):
    minval = 0.0
    maxval = 1.0

    def __init__(self):
        super().__init__()
        self.last_scores = {}

    def weight_multiplier(self, host_state):
        return utils.get_weight_multiplier(
            host_state, AGGREGATE_KEY, CONF.contention.weight_multiplier)

    def _weigh_object(self, host_state, weight_properties):
        # Only used if someone calls the per-object path directly.
        return self.weigh_objects(
            [weights.WeighedHost(host_state, 0.0)], weight_properties)[0]

    def weigh_objects(self, weighed_obj_list, spec_obj):
        host_states = [w.obj for w in weighed_obj_list]
        neutral = CONF.contention.neutral_score
        self.last_scores = {}
        try:
            return self._weigh(host_states, spec_obj, neutral)
        except Exception:
            # Scoring is advice: whatever slipped past the checks of the
            # telemetry and the model, Nova must still place the instance.
            LOG.exception('Contention weigher failed; every host gets the '
                          'neutral score for this request')
            self.last_scores = {}
            return [neutral] * len(host_states)

    def _weigh(self, host_states, spec_obj, neutral):
        group = CONF.contention
        if service.is_move(spec_obj) and not group.apply_to_moves:
            return [neutral] * len(host_states)
        svc = service.get_service(CONF)
        bundle = svc.model()
        if bundle is None:
            return [neutral] * len(host_states)
        reports = svc.fresh_reports([h.host for h in host_states])
        if not reports:
            return [neutral] * len(host_states)
        profile = svc.profile(spec_obj)
        states = landing_states(svc, host_states, spec_obj, reports)
        scores = scoring.score_hosts(
            bundle.interference, profile, states,
            corunner_weight=group.corunner_weight, neutral=neutral,
            limits=confidence.Limits(
                max_excess=group.max_domain_excess,
                max_spread=group.max_prediction_spread))
        self.last_scores = scores
        svc.count_scores(scores.values())
        _log_neutral(scores, profile)
        LOG.debug('Contention scores (profile %s from %s): %s',
                  features.format_profile(profile), profile.source,
                  {h: round(s.score, 3) for h, s in scores.items()})
        return [scores[h.host].score for h in host_states]


def _log_neutral(scores, profile):
    """Log the hosts the model abstained on or could not read.

    One line per kind and request, with one host's reason: at 1,000
    hosts a line per host would drown the scheduler's log.
    """
    unsure = [s for s in scores.values() if s.abstained]
    unusable = [s for s in scores.values()
                if s.neutral_reason
                and s.neutral_reason.startswith('unusable telemetry')]
    for kind, hosts in (('where the model is unsure', unsure),
                        ('with unusable telemetry', unusable)):
        if hosts:
            LOG.info('Contention weigher is neutral on %d host(s) %s for '
                     'profile %s, e.g. %s: %s', len(hosts), kind,
                     features.format_profile(profile), hosts[0].host,
                     hosts[0].neutral_reason)

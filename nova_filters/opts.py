"""Options of the Nova plugins, in the ``[contention]`` group of nova.conf.

``list_opts`` is the ``oslo.config.opts`` entry point ``contention.nova``
(``etc/oslo-config-generator/contention-nova.conf``).
"""

from oslo_config import cfg

from contention.perfmodel import confidence
from contention.perfmodel import saturation

GROUP = 'contention'

contention_opts = [
    cfg.StrOpt('model_path', default='/var/lib/contention/model.skops',
               help='Model file written by contention-train. Loaded once '
                    'per scheduler process and reloaded when the file '
                    'changes. Missing or invalid: every host gets the '
                    'neutral score; one warning is logged if it is '
                    'missing, one error if it cannot be read or loaded.'),
    cfg.StrOpt('store_connection',
               default='sqlite:////var/lib/contention/telemetry.sqlite',
               secret=True,
               help='SQLAlchemy URL of the telemetry store the collector '
                    'writes (the [store] connection of contention-collector).'),
    cfg.IntOpt('store_cache_ttl', default=10, min=0,
               help='Seconds the latest host reports are cached in the '
                    'scheduler between two store reads.'),
    cfg.IntOpt('max_telemetry_age', default=60, min=1,
               help='Reports older than this many seconds are stale: their '
                    'host gets the neutral score and the filter treats it '
                    'as having no telemetry.'),
    cfg.FloatOpt('weight_multiplier', default=1.0,
                 help='Multiplier of the contention weight. Overridden per '
                      'aggregate by the aggregate metadata key '
                      'contention_weight_multiplier. Negative values prefer '
                      'contended hosts (never useful outside tests).'),
    cfg.FloatOpt('corunner_weight', default=0.3, min=0.0, max=1.0,
                 help='Share of the score given to the predicted slowdown '
                      'of the instances already on the landing cell(s); '
                      'the rest is the new instance\'s own predicted '
                      'performance.'),
    cfg.FloatOpt('neutral_score', default=0.5, min=0.0, max=1.0,
                 help='Score (on the fixed 0-1 scale) of hosts the model '
                      'cannot judge: no fresh telemetry, no model, '
                      'unusable telemetry, a model unsure of the host '
                      '(max_domain_excess, max_prediction_spread), a move '
                      'while apply_to_moves is off.'),
    cfg.FloatOpt('max_domain_excess',
                 default=confidence.DEFAULT_MAX_EXCESS, min=0.0,
                 help='The weigher gives the neutral score (and logs why) '
                      'for a host whose model input lies further than this '
                      'outside the range the model was trained on, in '
                      'units of that range\'s width, on its worst '
                      'feature: a random forest answers such rows as '
                      'confidently as any, but from the edge of what it '
                      'knows.'),
    cfg.FloatOpt('max_prediction_spread',
                 default=confidence.DEFAULT_MAX_SPREAD, min=0.0, max=1.0,
                 help='The weigher gives the neutral score (and logs why) '
                      'for a host on which the model\'s trees disagree by '
                      'more than this standard deviation of predicted '
                      'performance or co-runner slowdown (0-1).'),
    cfg.BoolOpt('apply_to_moves', default=False,
                help='Also weigh and filter moves (migrations, resizes, '
                     'evacuations, unshelves with a destination cell, '
                     'rebuilds). Off: only first landings are affected.'),
    cfg.FloatOpt('filter_mpki_threshold',
                 default=saturation.MPKI_THRESHOLD, min=0.0,
                 help='ContentionFilter: a landing NUMA node whose summed L3 '
                      'MPKI is above this is saturated (Merlin\'s node '
                      'trigger, section 3.4).'),
    cfg.IntOpt('filter_overhead_threshold',
               default=saturation.OVERHEAD_THRESHOLD, min=0,
               help='ContentionFilter: a landing NUMA node whose summed '
                    'Liu & Li overhead level (0-12) is above this is '
                    'saturated.'),
    cfg.BoolOpt('filter_fail_closed', default=False,
                help='ContentionFilter: reject hosts without fresh '
                     'telemetry for sensitive instances (default: pass '
                     'them).'),
    cfg.IntOpt('landing_cache_size', default=20000, min=0,
               help='Entries of the cache of NUMA landing cells, keyed by a '
                    'host\'s NUMA usage and the request\'s shape, so that '
                    'numa_fit_instance_to_host runs once per distinct pair.'),
]


def register_opts(conf):
    conf.register_opts(contention_opts, group=GROUP)


def list_opts():
    return [(GROUP, contention_opts)]

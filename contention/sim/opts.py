"""Options of the agent's ``sim`` source, in the ``[sim]`` group.

``list_opts`` is the ``oslo.config.opts`` entry point ``contention.sim``;
the agent's config generator file lists it, so the sample
``etc/contention/agent.conf.sample`` documents them.
"""

from oslo_config import cfg

from contention.sim import placement

GROUP = 'sim'

sim_opts = [
    cfg.StrOpt('scenario', default='ahn-wl1',
               help='Scenario the sim source emulates: a shipped scenario '
                    'name (contention-sim scenarios lists them) or a YAML '
                    'file path. Every counter it reports is simulated.'),
    cfg.StrOpt('host', default=None,
               help='Which host of the scenario this agent plays. Unset: '
                    'the scenario host named like [agent] host, else the '
                    'first host of the scenario.'),
    cfg.IntOpt('seed', default=None, min=0,
               help='Seed of the initial placement and of counter noise. '
                    'Unset: the scenario\'s seed. Same seed, same numbers.'),
    cfg.FloatOpt('noise', default=None, min=0.0,
                 help='Standard deviation of the multiplicative log-normal '
                      'noise on every counter. Unset: the scenario\'s.'),
    cfg.StrOpt('placement', default=None,
               choices=[(name, placement.DESCRIPTIONS[name])
                        for name in placement.PLACEMENTS],
               help='Initial placement policy overriding the scenario\'s.'),
]


def register_opts(conf):
    conf.register_opts(sim_opts, group=GROUP)


def list_opts():
    return [(GROUP, sim_opts)]

"""Options of the Watcher plugins, for the sample config generator.

Watcher registers a plugin's options itself, in the group
``[watcher_<kind>.<name>]``, when it loads the plugin; ``list_opts`` (the
``oslo.config.opts`` entry point ``contention.watcher``) lists the same
options under the same groups so ``oslo-config-generator`` can document
them in ``etc/contention/watcher.conf.sample``, the snippet operators merge
into ``watcher.conf``.
"""

from watcher_strategies import actions
from watcher_strategies import strategies


def list_opts():
    return [
        ('watcher_strategies.cache_aware_swap', strategies.strategy_opts()),
        ('watcher_strategies.numa_aware_swap', strategies.strategy_opts()),
        ('watcher_actions.contention_swap',
         actions.store_opts() + actions.agent_opts()),
        ('watcher_actions.contention_migrate',
         actions.store_opts() + actions.agent_opts()),
        ('watcher_actions.contention_repin',
         actions.store_opts() + actions.agent_opts()),
        ('watcher_actions.contention_cpu_quota', actions.quota_opts()),
    ]

"""Every policy the simulator ships (``contention.sim.policies``).

``none`` and ``random`` (:mod:`.baseline`), Merlin's ``local`` and
``low_cost`` (:mod:`.merlin`, Tembey et al. section 2), the ``oracle``,
the Watcher strategies ``cache_aware_swap`` and ``numa_aware_swap``
(:mod:`.swap`) and the Nova weigher ``contention_weigher``
(:mod:`.weigher`). Watcher's own strategies are peers registered from
``watcher_strategies.peers``. Each is a
:class:`contention.policy.Policy` deciding from a ClusterView alone, except
the oracle, which reads the simulator's ground truth.
"""

"""Baseline policies shipped with the simulator (``contention.sim.policies``).

``none`` and ``random`` (baselines), Merlin's ``local`` and ``low_cost``
(Tembey et al. section 2) and the ``oracle``. Each is a
:class:`contention.policy.Policy` deciding from a ClusterView alone, except
the oracle, which reads the simulator's ground truth.
"""

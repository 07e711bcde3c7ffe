"""Watcher's own strategies as simulator policies, for comparison only.

``contention-sim evaluate --policy watcher_workload_stabilization`` (and the
benchmarks) run Watcher's shipped strategies on the emulated cluster:
:mod:`.datasource` emulates the datasource they read, :mod:`.policies`
wraps them as ``contention.sim.policies``. This is benchmark glue: the
goal, strategies, actions and planner that Watcher's decision engine and
applier load never import it.
"""

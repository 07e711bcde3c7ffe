"""``contention-sim demo``: the whole system on an emulated cluster.

This package wires the real parts together (the agent's collection loop,
oslo.messaging, the collector and its store, Nova's weigher handler with
``nova_filters.ContentionWeigher``, Watcher's strategy execution and our
planner) around the simulator. It lives outside ``contention/`` because
it imports Nova and Watcher, which the core never does; ``contention-sim
demo`` imports it lazily. See ``doc/demo.md``.
"""

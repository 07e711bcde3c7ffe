"""The performance model: important placements and learned performance.

(Not OpenStack Placement: this predicts how a workload performs where it
lands.)

* :mod:`.machine` builds regular host topologies and reads the shape the
  placement algorithms need from any :class:`~contention.topology.HostTopology`;
* :mod:`.concerns` holds the scheduling concerns and Algorithm 1;
* :mod:`.important` holds Algorithms 2 and 3 (packings, duplicates,
  Pareto filter on interconnect bandwidth);
* :mod:`.features` turns profiles and NUMA cell states into model inputs;
* :mod:`.models` holds the interference and placement-vector models;
* :mod:`.datasets` builds training sets from the store or any
  performance source (the simulator's is in ``contention.sim.training``,
  which also trains from a scenario: the simulator sits above this
  package, which never imports it but in ``cmd``, the composition root);
* :mod:`.train` is the one training path (``train_bundle`` for any data
  set);
* :mod:`.confidence` says when a prediction is not to be trusted, and
  :mod:`.forest_check` when a loaded forest is not safe to run;
* :mod:`.persist` saves and loads models without executing code;
* :mod:`.scoring` is the scoring core the Nova weigher and the simulator
  policy (:mod:`contention.sim.policies.weigher`, ``contention_weigher``)
  share; :mod:`.advise` is
  the paper's section 7 use case; :mod:`.cmd` is ``contention-train``.

Everything here is pure: no Nova, no Watcher.
"""

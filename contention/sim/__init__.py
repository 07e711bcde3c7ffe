"""An emulated cluster with shared caches, memory controllers and NUMA.

Every figure this package produces is **simulated**: it comes from a model
(:mod:`contention.sim.solver`, equations in ``doc/simulator.md``) with
synthetic parameters, not from hardware.

Public API (what policies, benchmarks and the demo use)::

    from contention import sim

    scen = sim.load_scenario('ahn-wl1')        # shipped name or YAML path
    sim.scenarios()                            # names of shipped scenarios
    text = sim.dump_scenario(scen)             # format-2 YAML text
    scen = sim.loads_scenario(text)            # and back (any format)

    s = sim.Simulator(scen, seed=None, placement_policy=None)
    view = s.view()            # contention.cluster.ClusterView; instances
                               # carry llc_misses_per_s, mpki, mf, ipc,
                               # cpu_util, llc_occupancy_bytes,
                               # merlin_class, socket, node, memory_mib,
                               # memory_node, remote_memory_ratio, cpu_quota
    outcome = s.apply(plan)    # contention.cluster.Plan -> ApplyResult
                               # (applied, rejected with reasons); checks
                               # capacity, counts costs in s.costs
    s.step()                   # run one epoch -> {uuid: normalised perf}
    s.performance()            # {uuid: normalised perf} of the last epoch
    s.host_reports()           # [contention.report.HostReport], one a host
    s.arrive(policy, rng)      # place this epoch's arrivals via
                               # policy.place(instance, view, candidates,
                               # rng); None -> Nova-like spread
    s.now, s.epoch, s.state    # time (s), epoch index, ground truth

    result = sim.run(scenario, policy, epochs=None, seed=None,
                     placement_policy=None)   # -> RunResult
    result.to_dict()
    sim.largest_fall(perf, baseline_perf)    # (VM, relative change) of the
                                             # VM that fell most

``policy`` is a :class:`contention.policy.Policy` or the name of an entry
point in ``contention.sim.policies`` (:func:`load_policy`). Shipped:
``none``, ``random``, ``local``, ``low_cost``, ``oracle``. :class:`RunResult`
holds per VM (:class:`VmResult`: perf_mean, perf_min, degradation) and in
total: perf_mean, perf_min, degradation_spread, degradation_hspread,
migrations, vcpu_moves, memory_moves, memory_moved_gib, quota_changes,
rejected_actions, platform_efficiency, cpu_utilisation, decision_wall_s,
solver_wall_s, no_valid_host and filtered_arrivals (what the policy's
filter stage, :meth:`contention.policy.Policy.filter_hosts`, did to
arrivals), notes, and ``simulated=True``.

The ``rng`` handed to ``Policy.rebalance`` and ``Policy.place`` is a
seeded :class:`numpy.random.Generator`; ``run`` with the same seed gives
the same numbers.

A policy that, in OpenStack, reads the telemetry store (the Nova weigher,
our Watcher strategies) keeps the simulator it gets in ``bind`` and reads
``simulator.host_reports()`` (what the agents would have published for the
last epoch) instead; that is telemetry, not ground truth. Only the oracle
reads ``simulator.state`` or solves placements itself. Instances' ``image_id``
and ``flavor`` are their profile's name, so per-image profiles work.
"""

from contention.sim.scenario import available as scenarios  # noqa: F401
from contention.sim.scenario import dump as dump_scenario  # noqa: F401
from contention.sim.scenario import loads as loads_scenario  # noqa: F401
from contention.sim.scenario import load as load_scenario  # noqa: F401
from contention.sim.scenario import Scenario  # noqa: F401
from contention.sim.scenario import ScenarioError  # noqa: F401
from contention.sim.simulator import ApplyResult  # noqa: F401
from contention.sim.simulator import largest_fall  # noqa: F401
from contention.sim.simulator import load_policy  # noqa: F401
from contention.sim.simulator import run  # noqa: F401
from contention.sim.simulator import RunResult  # noqa: F401
from contention.sim.simulator import Simulator  # noqa: F401
from contention.sim.simulator import VmResult  # noqa: F401

"""Running the plan: each row on a scenario, and the decision-time sweep.

Figures of the runs are simulated; decision times are this machine's.
"""

import dataclasses
import logging
import time
import warnings

from bench import nova_weighers
from bench import watcher as wbench
from bench.evaluation.plan import ENTRIES
from bench.evaluation.plan import SWEEP_IMAGES
from bench.evaluation.plan import WHAT_IF_PRICES
from bench.evaluation.plan import price_entry
from contention import sim


def quiet():
    """Silence the upstream strategies' logs and deprecation warnings."""
    logging.disable(logging.CRITICAL)
    warnings.simplefilter('ignore')


def run_entry(scen, entry, **kwargs):
    if entry.policy == 'nova_weighers':
        policy = nova_weighers.NovaWeighersPolicy()
    else:
        policy = sim.load_policy(entry.policy, **dict(entry.params))
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            result = sim.run(scen, policy, **kwargs)
    finally:
        if hasattr(policy, 'close'):
            policy.close()
    return result, time.perf_counter() - start


def evaluate_scenario(name):
    """Rows of one scenario: {label: (RunResult, wall)} plus references."""
    scen = sim.load_scenario(name)
    rows = {e.label: run_entry(scen, e) for e in ENTRIES}
    if scen.placement == 'worst':
        worst = rows['none'][0]
    else:
        worst, _ = run_entry(scen, ENTRIES[0], placement_policy='worst')
    return scen, rows, worst


def price_what_if(names):
    """{scenario: {price: RunResult}} of :data:`PRICE_ROW` at each price.

    Not part of the targets: the main tables run the shipped price. What
    an operator buys or loses by pricing moves lower
    (``[watcher_strategies.numa_aware_swap] migration_cost_per_gib``):
    every scenario, because the price also governs the re-pins inside a
    host that the Merlin mixes live on.
    """
    scens = {n: sim.load_scenario(n) for n in names}
    return {n: {p: run_entry(scens[n], price_entry(p))[0]
                for p in WHAT_IF_PRICES} for n in names}


def scale_sweep(sizes):
    """Decision time (CPU s) of ours and Watcher's on synthetic clusters.

    Reuses bench/watcher.py's synthetic cluster, decoded-store and timing
    helpers; the caps are the same: workload_stabilization to 100 hosts,
    workload_balance to 1,000 hosts.
    """
    import functools

    from watcher.decision_engine.strategy.strategies import \
        workload_balance
    from watcher.decision_engine.strategy.strategies import \
        workload_stabilization

    from watcher_strategies.peers import datasource as simulated
    from watcher_strategies import strategies

    mix_model = _sweep_mix_model()
    rows = []
    for n in sizes:
        view = wbench.synthetic_view(n)
        t_model, model = wbench.timed(simulated.compute_model_from_view, view)
        store = wbench.DecodedStore(wbench.synthetic_reports(view))
        row = {'hosts': n, 'instances': len(view.instances),
               'model': t_model}
        for key, cls, sel in (
                ('cache_sc', strategies.CacheAwareSwap, 'sensitivity_cost'),
                ('cache_ex', strategies.CacheAwareSwap, 'extreme'),
                ('numa_sc', strategies.NumaAwareSwap, 'sensitivity_cost')):
            runs = 1 if n >= 10000 else wbench.RUNS
            row[key], _ = wbench.best_of(runs, functools.partial(
                wbench._executor, cls, model, store, victim_selection=sel))
        runs = 1 if n >= 10000 else wbench.RUNS
        row['numa_mix'], _ = wbench.best_of(runs, functools.partial(
            _mix_decision, _with_images(view), mix_model))
        if n <= 1000:
            row['wb'], _ = wbench.timed(
                simulated.run_strategy, workload_balance.WorkloadBalance,
                view, {'metrics': 'instance_cpu_usage'}, model=model,
                datasource=simulated.SimulatedDatasource(view))
        if n <= 100:
            model = simulated.compute_model_from_view(view)
            row['ws'], _ = wbench.timed(
                simulated.run_strategy,
                workload_stabilization.WorkloadStabilization, view,
                model=model, datasource=simulated.SimulatedDatasource(view))
        rows.append(row)
        del view, model, store
    return rows


def _sweep_mix_model():
    """A small model for the check (ahn-wl1, QUICK, copies): its cost."""
    from contention.perfmodel import train
    from contention.sim import training
    bundle, _ = training.train_from_sim('ahn-wl1', cross_validate=False,
                                        copies_samples=10, **train.QUICK)
    return bundle.interference


def _with_images(view):
    """The synthetic view with each instance running one of 20 images.

    The model check values mixes of images; the sweep's instances have
    none (and no IPC), which would leave every class unvalued.
    """
    return dataclasses.replace(view, instances=tuple(
        dataclasses.replace(inst, image_id='image-%02d' % (k % SWEEP_IMAGES),
                            flavor='m1', ipc=1.0)
        for k, inst in enumerate(view.instances)))


def _mix_decision(view, model):
    """numa_aware with the model check, from profiles to plan (the core)."""
    from contention.perfmodel import mixes
    from contention import swap

    def decide():
        values = mixes.MixValues(model, mixes.class_profiles(
            view.instances, swap.mix_class))
        return swap.numa_aware(view, swap.SwapParameters(),
                               mix_values=values)
    return decide

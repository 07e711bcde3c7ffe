"""What the evaluation runs: its rows, scenario variants and what-ifs.

Each row (:class:`Entry`) is a policy of the ``contention.sim.policies``
namespace with fixed parameters; the variants are shipped scenarios changed
in one labelled respect (arrivals over time, no CPU over-commit, another
price of a move). Nothing here runs anything.
"""

import dataclasses
import os

import yaml

from contention import swap
from contention.sim import scenario as scenario_mod

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))

DOC_DIR = os.path.normpath(os.path.join(BENCH_DIR, os.pardir, os.pardir,
                                        'doc'))

IMAGE_DIR = os.path.join(DOC_DIR, 'images')


@dataclasses.dataclass(frozen=True)
class Entry:
    """One row of the comparison: a policy with fixed parameters."""

    label: str
    policy: str
    params: tuple = ()
    group: str = 'peer'       # ours / peer / baseline / oracle / reference
    moves_vms: bool = False   # live-migrates VMs between hosts


#: The oracle deciding with the CPU demand of the interval just measured
#: (``OraclePolicy(demand='last_interval')``): a reference row, neither
#: ours nor a peer; the 95 % target stays against the clairvoyant oracle.
LAGGED = 'oracle (last interval\'s demand)'


#: numa_aware_swap with the model check: each swap must also raise the
#: placement model's predicted performance of the sockets it touches.
MIX = 'numa_aware_swap (model check)'

ENTRIES = (
    Entry('none', 'none', group='baseline'),
    Entry('merlin random', 'random', group='peer'),
    Entry('merlin local', 'local', group='peer'),
    Entry('merlin low_cost', 'low_cost', group='peer'),
    Entry('merlin', 'merlin', group='peer', moves_vms=True),
    Entry('watcher workload_stabilization',
          'watcher_workload_stabilization', moves_vms=True),
    Entry('watcher workload_balance', 'watcher_workload_balance',
          moves_vms=True),
    Entry('watcher noisy_neighbor', 'watcher_noisy_neighbor',
          moves_vms=True),
    Entry('cache_aware_swap (sensitivity_cost)', 'cache_aware_swap',
          (('victim_selection', 'sensitivity_cost'),), 'ours', True),
    Entry('cache_aware_swap (extreme)', 'cache_aware_swap',
          (('victim_selection', 'extreme'),), 'ours', True),
    Entry('numa_aware_swap (sensitivity_cost)', 'numa_aware_swap',
          (('victim_selection', 'sensitivity_cost'),), 'ours', True),
    Entry('numa_aware_swap (extreme)', 'numa_aware_swap',
          (('victim_selection', 'extreme'),), 'ours', True),
    Entry(MIX, 'numa_aware_swap', (('mix_model', 'scenario'),), 'ours',
          True),
    Entry('oracle', 'oracle', group='oracle', moves_vms=True),
    Entry(LAGGED, 'oracle', (('demand', 'last_interval'),),
          group='reference', moves_vms=True),
)

ENTRIES_BY_LABEL = {e.label: e for e in ENTRIES}


#: How many rows are ours, in words, for the text.
OURS_COUNT = ('one', 'two', 'three', 'four', 'five', 'six', 'seven')[
    sum(e.group == 'ours' for e in ENTRIES) - 1]


#: What the papers reported, to set beside our simulated figures.
AHN_REPORTED = {
    'ahn-wl1': '+17 % (cache-aware scheduler, overall, migrations '
               'included; NUMA-aware "slightly" more), Ahn et al. 4.2',
    'ahn-wl6': 'no benefit (all CPU-bound), Ahn et al. 4.2 / Figure 5',
}


AHN_FIGURE5 = ('WL2-WL5: shown only as bars in Figure 5 ("similar trends"); '
               'no numbers in the text of our copy')


#: Merlin Table 1: (vCPU migrations, memory migrations, platform efficiency)
#: per mix and policy, on the paper's hardware and normalisation.
MERLIN_TABLE1 = {
    'merlin-mix1': {'local': (28, 7, 2.20), 'low_cost': (22, 0, 2.53),
                    'random': (42, 0, 2.48), 'merlin': (20, 2, 2.70)},
    'merlin-mix2': {'local': (20, 5, 3.17), 'low_cost': (0, 0, 3.28),
                    'random': (38, 0, 3.23), 'merlin': (12, 0, 3.39)},
    'merlin-mix3': {'local': (36, 12, 2.28), 'low_cost': (20, 0, 2.41),
                    'random': (22, 0, 2.38), 'merlin': (20, 5, 2.42)},
}


#: Merlin Table 1's policies -> our rows.
MERLIN_ROWS = {'local': 'merlin local', 'low_cost': 'merlin low_cost',
               'random': 'merlin random', 'merlin': 'merlin'}


def arrival_variant(name, per_epoch=4):
    """A shipped scenario whose instances arrive over the first epochs.

    The instances of the scenario, interleaved by profile, arrive
    ``per_epoch`` at a time from epoch 0, so each placement decision sees
    the counters of those already running; hardware, profiles and run
    length are the shipped ones.
    """
    with open(scenario_mod.resolve(name), encoding='utf-8') as fh:
        data = yaml.safe_load(fh)
    queues = [[inst.get('profile'), inst.get('count', 1), inst.get(
        'quota', 1.0)] for inst in data['instances']]
    order = []
    while any(q[1] for q in queues):
        for q in queues:
            if q[1]:
                order.append((q[0], q[2]))
                q[1] -= 1
    data = dict(data, name=name + '-arrivals', placement='nova_spread',
                instances=[])
    data['arrivals'] = [
        {'epoch': i // per_epoch, 'profile': p, 'count': 1, 'quota': quota}
        for i, (p, quota) in enumerate(order)]
    return scenario_mod.from_dict(data, name + '-arrivals')


#: ``cpu_allocation_ratio`` of the what-if; the shipped hardware uses
#: the simulator's default, Nova's ``initial_cpu_allocation_ratio`` 4.0.
WHAT_IF_RATIO = 1.0


def overcommit_variant(name, ratio=WHAT_IF_RATIO):
    """A shipped scenario with another ``cpu_allocation_ratio``.

    Not a tuning of the shipped scenario (the main tables use it as
    shipped, with Nova's default ratio 4.0): a labelled what-if showing
    what our swaps do without CPU over-commit (ratio 1.0), where the full
    Ahn hosts leave no room for the first of a swap's two live migrations.
    """
    with open(scenario_mod.resolve(name), encoding='utf-8') as fh:
        data = yaml.safe_load(fh)
    for hw in data['hardware'].values():
        hw['cpu_allocation_ratio'] = ratio
    data['name'] = '%s-cpu-ratio-%g' % (name, ratio)
    return scenario_mod.from_dict(data, data['name'])


OVERCOMMIT_ENTRIES = tuple(e for e in ENTRIES
                           if e.group in ('ours', 'oracle')
                           or e.label == 'none')


#: The row the price what-if reruns, and the lower prices it tries.
PRICE_ROW = 'numa_aware_swap (sensitivity_cost)'


#: ``migration_cost_per_gib`` values of the what-if (LLC misses/s of
#: predicted reduction a move must buy per GiB it copies); the shipped
#: default is :data:`SHIPPED_PRICE`, the main tables' row.
WHAT_IF_PRICES = (1e5, 0.0)

SHIPPED_PRICE = swap.SwapParameters().migration_cost_per_gib


def price_entry(price):
    """:data:`PRICE_ROW` with ``migration_cost_per_gib`` = ``price``."""
    base = ENTRIES_BY_LABEL[PRICE_ROW]
    return dataclasses.replace(
        base, label='%s, price %g' % (base.label, price),
        params=base.params + (('migration_cost_per_gib', price),))


ARRIVAL_ENTRIES = (
    Entry('simulator fallback (RAM spread)', 'none', group='baseline'),
    Entry('nova default weighers (real, child process)', 'nova_weighers',
          group='baseline'),
    Entry('cache_aware_swap (sensitivity_cost)', 'cache_aware_swap',
          (('victim_selection', 'sensitivity_cost'),), 'ours', True),
    Entry('numa_aware_swap (sensitivity_cost)', 'numa_aware_swap',
          (('victim_selection', 'sensitivity_cost'),), 'ours', True),
    Entry('oracle', 'oracle', group='oracle', moves_vms=True),
)


#: The two contention_weigher rows of the arrival experiment.
WEIGHER = 'contention_weigher (quick model from the scenario)'

FILTERED = 'contention_weigher + filter (quick model from the scenario)'


def weigher_entries():
    """The contention_weigher rows, or ((), why) if they cannot be built.

    With no model file the policy trains a quick model from the scenario
    it is bound to (``contention.perfmodel.train.QUICK`` through
    ``contention.sim.training.training_source``), as documented in
    ``doc/nova.md``; that training time is not decision time. The second
    row adds the ContentionFilter stage (``with_filter=true``, Nova's
    default thresholds, sensitive images by the policy's Merlin rule); both
    train the same model (same scenario and seed), so they differ only by
    the filter.
    """
    try:
        from contention.sim import training  # noqa: F401
    except ImportError:
        return (), ('no trained model: `contention.sim.training` (the '
                    'train-from-simulator path) is missing, so the '
                    'weigher rows are left out rather than run with a '
                    'neutral model that would only reproduce Nova\'s '
                    'default')
    return (Entry(WEIGHER, 'contention_weigher', group='ours'),
            Entry(FILTERED, 'contention_weigher', (('with_filter', 'true'),),
                  group='ours')), None


#: Images the sweep's instances run, for the model check's classes.
SWEEP_IMAGES = 20

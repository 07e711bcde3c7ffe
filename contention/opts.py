"""The core's configuration options: ``[contention_thresholds]``.

Merlin's classification thresholds and Liu & Li's overhead level
boundaries are platform dependent (both papers derived theirs by profiling
their own machines), so every component that classifies or aggregates (the
agent, the simulator, the strategies) reads them from this one group.
``list_opts`` is the ``oslo.config.opts`` entry point ``contention.core``;
the components' generator files include that namespace.
"""

from oslo_config import cfg
from oslo_config import types

from contention import classify
from contention import overhead

GROUP = 'contention_thresholds'

_CLASSIFY = classify.DEFAULT_THRESHOLDS
_OVERHEAD = overhead.DEFAULT_OVERHEAD_THRESHOLDS


def _levels_opt(name, default, help_text):
    return cfg.ListOpt(name, item_type=types.Float(min=0),
                       default=[str(v) for v in default], help=help_text)


threshold_opts = [
    cfg.FloatOpt('mpki_low', default=_CLASSIFY.mpki_low, min=0,
                 help='L3 MPKI (cache misses per 1000 instructions) below '
                      'which an instance\'s memory intensity is "low" '
                      '(Merlin section 3.2). A value equal to a boundary is '
                      '"medium".'),
    cfg.FloatOpt('mpki_high', default=_CLASSIFY.mpki_high, min=0,
                 help='L3 MPKI above which memory intensity is "high". Must '
                      'not be below mpki_low.'),
    cfg.FloatOpt('mf_low', default=_CLASSIFY.mf_low, min=0,
                 help='Memory Factor (cache misses / cache references) below '
                      'which an instance reuses its cache well ("low").'),
    cfg.FloatOpt('mf_high', default=_CLASSIFY.mf_high, min=0,
                 help='Memory Factor above which most misses go to memory '
                      '("high": MC/IC sensitive). Must not be below mf_low.'),
    cfg.FloatOpt('cpu_needs_more', default=_CLASSIFY.cpu_needs_more, min=0,
                 help='CPU used / allocated above which an instance is '
                      'highly CPU sensitive and needs more CPU (Merlin '
                      'section 3.4).'),
    cfg.FloatOpt('node_mpki_trigger', default=_CLASSIFY.node_mpki_trigger,
                 min=0,
                 help='Summed L3 MPKI of the instances on a NUMA node above '
                      'which the node needs memory-controller / '
                      'interconnect relief (Merlin section 3.4; the paper '
                      'derived 100 from the Stream benchmark).'),
    _levels_opt('llc_hit_rate_levels', _OVERHEAD.llc_hit_rate,
                'Descending cache hit rates; a node whose hit rate is below '
                'N of them has LLC contention level N (Liu & Li section '
                '4.1).'),
    _levels_opt('mc_cycle_loss_levels', _OVERHEAD.mc_cycle_loss,
                'Ascending fractions of cycles lost to misses served by the '
                'node\'s own memory; exceeding N of them is memory-'
                'controller congestion level N.'),
    _levels_opt('ic_cycle_loss_levels', _OVERHEAD.ic_cycle_loss,
                'Ascending fractions of cycles lost to misses served by the '
                'node\'s memory from other nodes; exceeding N of them is '
                'interconnect congestion level N.'),
    _levels_opt('remote_ipc_ratio_levels', _OVERHEAD.remote_ipc_ratio,
                'Ascending ratios of local to remote IPC for the node\'s '
                'memory; exceeding N of them is remote-latency level N.'),
    cfg.FloatOpt('miss_stall_cycles', default=_OVERHEAD.miss_stall_cycles,
                 min=1,
                 help='Effective core cycles stalled per cache miss served '
                      'by local memory (DRAM latency divided by the usual '
                      'memory-level parallelism), used to estimate the '
                      'cycles lost to misses; remote misses are scaled by '
                      'the NUMA distance / 10.'),
]


def register_opts(conf):
    conf.register_opts(threshold_opts, group=GROUP)


def list_opts():
    return [(GROUP, threshold_opts)]


def thresholds_from_conf(conf):
    """``(Thresholds, OverheadThresholds)`` from ``[contention_thresholds]``.

    Registers the options if needed. Raises ValueError naming the group
    when the values are inconsistent (e.g. mpki_low above mpki_high).
    """
    register_opts(conf)
    group = conf[GROUP]
    try:
        return (
            classify.Thresholds(
                mpki_low=group.mpki_low, mpki_high=group.mpki_high,
                mf_low=group.mf_low, mf_high=group.mf_high,
                cpu_needs_more=group.cpu_needs_more,
                node_mpki_trigger=group.node_mpki_trigger),
            overhead.OverheadThresholds(
                llc_hit_rate=tuple(group.llc_hit_rate_levels),
                mc_cycle_loss=tuple(group.mc_cycle_loss_levels),
                ic_cycle_loss=tuple(group.ic_cycle_loss_levels),
                remote_ipc_ratio=tuple(group.remote_ipc_ratio_levels),
                miss_stall_cycles=group.miss_stall_cycles))
    except ValueError as exc:
        raise ValueError('[%s]: %s' % (GROUP, exc)) from None

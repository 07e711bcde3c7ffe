"""Merlin's sensitivity metrics and its 9-state classification.

Tembey et al., "Merlin: sensitivity- and cost-aware multi-resource
management" (``shared/papers/000_*``), approximate what an application
takes from the shared LLC, memory controller (MC) and interconnect (IC)
with two counters (section 3.1):

* **L3 MPKI**, last-level cache misses per 1000 instructions: the absolute
  MC/IC usage (memory-bandwidth intensity);
* **Memory Factor** MF = L3 MPKI / L2 MPKI, the fraction of the misses of
  the level above that the LLC does not absorb, generalised as
  LLC/(LLC-1) MPKI. With the generic perf events it is
  ``cache_misses / cache_references``: low MF = high cache reuse, high MF =
  the misses go to memory.

Section 3.2 bins both into three levels (MPKI <2 low, 2-15 medium, >15
high; MF <0.25, 0.25-0.6, >0.6) measured on the authors' Westmere with the
Stream benchmark, hence :class:`Thresholds` is configurable. The paper
leaves the boundary values themselves open; here a value equal to a
boundary is ``medium``. CPU sensitivity is CPU used / allocated (> 0.8 =
needs more CPU, section 3.4); memory sensitivity is memory used / pages
initially allocated (section 3.2).

A class is written ``"<mpki level>/<mf level>"``, e.g. ``"high/low"``.
Figure 3 arranges the nine states as a grid: moving *right* (towards
states 2, 5, 8) is a rise of absolute L3 MPKI, i.e. more MC/IC use; moving
*down* the MF dimension is more of the misses reaching memory without a
matching change in the level above's misses, i.e. the application is
losing LLC (contention at the LLC). Left and up mean the demand has been
met (section 3.4). Merlin's repercussion check (section 3.5) watches for
co-runners moving right or down after a reconfiguration.

The node-level trigger (section 3.4): a NUMA node whose summed L3 MPKI is
over 100 needs MC/IC relief.
"""

import dataclasses
import math

LEVELS = ('low', 'medium', 'high')
CLASSES = tuple('%s/%s' % (m, f) for m in LEVELS for f in LEVELS)

#: Resource kinds of :func:`resource_sensitivities`.
CACHE = 'cache'
MC_IC = 'mc_ic'


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """Merlin's classification thresholds (section 3.2, 3.4 defaults).

    Platform dependent: the paper derives them by profiling Stream on its
    machine, so an operator may override each (``[contention_thresholds]``,
    see :mod:`contention.opts`).
    """

    mpki_low: float = 2.0
    mpki_high: float = 15.0
    mf_low: float = 0.25
    mf_high: float = 0.6
    #: CPU used / allocated above which the instance needs more CPU.
    cpu_needs_more: float = 0.8
    #: Summed L3 MPKI of a NUMA node above which it needs MC/IC relief.
    node_mpki_trigger: float = 100.0

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                    or not math.isfinite(value) or value < 0):
                raise ValueError('threshold %s must be a finite number >= 0,'
                                 ' got %r' % (field.name, value))
        for low, high in (('mpki_low', 'mpki_high'), ('mf_low', 'mf_high')):
            if getattr(self, low) > getattr(self, high):
                raise ValueError('threshold %s (%r) is above %s (%r)'
                                 % (low, getattr(self, low), high,
                                    getattr(self, high)))


DEFAULT_THRESHOLDS = Thresholds()


def _ratio(numerator, denominator, scale=1.0):
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return scale * numerator / denominator


def mpki(misses, instructions):
    """Cache misses per 1000 instructions; None if either is unavailable.

    Zero instructions (the instance did not run) gives None: MPKI is
    undefined, not zero.
    """
    return _ratio(misses, instructions, 1000.0)


def memory_factor(misses, references):
    """Merlin's MF: misses / references at the measured cache (section 3.1).

    None if either is unavailable or there were no references. Not clamped:
    with multiplexed events a value slightly above 1 can occur, and it is
    simply ``high``.
    """
    return _ratio(misses, references)


def level(value, low, high):
    """'low' below ``low``, 'high' above ``high``, else 'medium'."""
    if value is None:
        return None
    if value < low:
        return 'low'
    if value > high:
        return 'high'
    return 'medium'


def merlin_class(mpki, mf, th=DEFAULT_THRESHOLDS):
    """The 9-state class ``"<mpki level>/<mf level>"``; None if unmeasured.

    (The parameter shadows :func:`mpki` on purpose: callers pass
    ``mpki=``.)
    """
    if mpki is None or mf is None:
        return None
    return '%s/%s' % (level(mpki, th.mpki_low, th.mpki_high),
                      level(mf, th.mf_low, th.mf_high))


def parse_class(klass):
    """``"high/low"`` -> ``('high', 'low')``; ValueError if malformed."""
    parts = klass.split('/') if isinstance(klass, str) else ()
    if len(parts) != 2 or parts[0] not in LEVELS or parts[1] not in LEVELS:
        raise ValueError('not a Merlin class: %r (expected "<mpki level>/'
                         '<mf level>" with levels %s)'
                         % (klass, ', '.join(LEVELS)))
    return parts[0], parts[1]


@dataclasses.dataclass(frozen=True)
class Transition:
    """The direction of a move in Merlin's Figure 3 state grid.

    ``right``: MPKI level rose (more MC/IC use). ``down``: MF level rose
    (losing cache). ``left``/``up``: the opposite moves (demand met).
    ``worse``: moved right or down, the "hurt" Merlin's repercussion check
    (section 3.5) looks for in co-runners.
    """

    right: bool
    down: bool
    worse: bool
    left: bool = False
    up: bool = False

    @property
    def changed(self):
        return self.right or self.down or self.left or self.up


def transition(old_class, new_class):
    """How an instance moved between two intervals; None if either unknown."""
    if old_class is None or new_class is None:
        return None
    old_mpki, old_mf = (LEVELS.index(p) for p in parse_class(old_class))
    new_mpki, new_mf = (LEVELS.index(p) for p in parse_class(new_class))
    right = new_mpki > old_mpki
    down = new_mf > old_mf
    return Transition(right=right, down=down, worse=right or down,
                      left=new_mpki < old_mpki, up=new_mf < old_mf)


def cpu_sensitivity(util, th=DEFAULT_THRESHOLDS):
    """Whether an instance is highly CPU sensitive and needs more CPU.

    ``util`` is Merlin's CPU sensitivity, CPU used / allocated (an
    instance's :attr:`contention.report.Metrics.cpu_util` over its CPU
    quota: :func:`contention.swap.quota.needs_cpu`); over
    ``th.cpu_needs_more`` (0.8) the instance is "highly sensitive to the
    CPU resource type" and needs additional CPU (section 3.4). None if
    unmeasured.
    """
    if util is None:
        return None
    return util > th.cpu_needs_more


def resource_sensitivities(klass):
    """Which shared resources a class is sensitive to (section 3.2).

    * MC/IC (``'mc_ic'``): a large MPKI (medium or high) whose misses go to
      memory (MF medium or high); these also suffer remote latency;
    * cache (``'cache'``): a large MPKI with high cache reuse (MF low or
      medium), so it suffers when co-runners take its LLC share;
    * neither (empty set): low MPKI, little use of either.

    The paper gives the extremes (MF low / close to 1); a medium MF with a
    large MPKI is counted as sensitive to both, the cautious reading for a
    victim choice. None for an unknown class.
    """
    if klass is None:
        return None
    mpki_level, mf_level = parse_class(klass)
    if mpki_level == 'low':
        return frozenset()
    kinds = set()
    if mf_level != 'high':
        kinds.add(CACHE)
    if mf_level != 'low':
        kinds.add(MC_IC)
    return frozenset(kinds)


def node_needs_mc_ic_relief(mpki_sum, th=DEFAULT_THRESHOLDS):
    """Merlin's node trigger: summed L3 MPKI over the threshold (3.4)."""
    if mpki_sum is None:
        return None
    return mpki_sum > th.node_mpki_trigger

"""Model inputs: an instance profile and the state of a NUMA cell.

The interference model predicts, from what an instance does (its Merlin
profile: L3 MPKI, Memory Factor, IPC; its CPU utilisation and whether it
is a latency service, both optional; optionally its Memory Factor
measured with a quarter of the LLC, the slope of its miss-ratio curve;
its size) and what the cell it
would land on already carries (co-runners' summed MPKI, miss intensity,
CPU demand and vCPUs, memory bandwidth, free CPUs, Liu & Li overhead
levels), two numbers: the
instance's normalised performance there and the mean slowdown it causes
the co-runners. These dataclasses and :func:`feature_row` fix the order
and meaning of the inputs; :data:`SCHEMA_VERSION` changes whenever they
change, and a model file trained on another version is refused.
"""

import dataclasses
import math
from typing import Optional

from contention import aggregate
from contention import llc_share

SCHEMA_VERSION = 3

FEATURE_NAMES = (
    'mpki', 'mf', 'ipc', 'vcpus', 'memory_gib',
    'co_mpki_sum', 'co_vcpus', 'occupancy', 'mem_bw_gbps', 'free_cpus',
    'cell_cpus', 'llc_level', 'mc_level', 'ic_level', 'remote_level',
    # schema 2: CPU demand and miss intensity (misses per kilo-cycle of
    # CPU time x busy vCPUs) of the instance and of its co-runners
    'cpu_util', 'latency', 'miss_intensity', 'co_miss_intensity',
    'total_miss_intensity', 'co_cpu_demand', 'cpu_demand_ratio',
    # schema 3: the Memory Factor with SMALL_LLC_FRACTION of the LLC and
    # its rise over the MF alone (NaN when the profile lacks it)
    'mf_small_llc', 'mf_small_llc_rise',
)
#: The features of a profile without ``mf_small_llc``: what the fallback
#: forests of an InterferenceModel read (see contention.perfmodel.models).
COUNTER_FEATURES = FEATURE_NAMES[:FEATURE_NAMES.index('mf_small_llc')]

#: The share of the LLC ``mf_small_llc`` describes (see
#: :mod:`contention.llc_share`).
SMALL_LLC_FRACTION = llc_share.SMALL_LLC_FRACTION
TARGET_NAMES = ('performance', 'corunner_slowdown')


@dataclasses.dataclass(frozen=True)
class InstanceProfile:
    """What an instance does, as Merlin measures it (section 3.1)."""

    mpki: float
    mf: float
    ipc: float
    vcpus: int = 1
    memory_mib: int = 1024
    #: Where the profile came from: 'hint', 'flavor', 'image', 'prior'.
    source: str = 'prior'
    #: Mean CPU utilisation of its vCPUs, 0-1 (the agent's ``cpu_util``);
    #: None = unknown, read as :data:`NEUTRAL_CPU_UTIL`.
    cpu_util: Optional[float] = None
    #: Its performance is a response time (a latency service), as the
    #: operator declares it; counters cannot tell.
    latency: bool = False
    #: Its Memory Factor (LLC misses / LLC references) with
    #: :data:`SMALL_LLC_FRACTION` of the LLC: measured alone under a CAT
    #: allocation by offline profiling, or from the intervals in which
    #: instances of its image held about that share on a busy socket
    #: (:mod:`contention.llc_share`, the store's image profiles); None =
    #: not known. With ``mf`` (the MF with
    #: the whole LLC) it samples the miss-ratio curve at two points, which
    #: tells a workload whose working set only just fits the cache (it
    #: suffers when co-runners take the cache) from one that needs little
    #: of it: the same MPKI, MF and IPC otherwise.
    mf_small_llc: Optional[float] = None

    def __post_init__(self):
        for name in ('mpki', 'mf', 'ipc'):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                    or not math.isfinite(value) or value < 0):
                raise ValueError('profile %s must be a finite number >= 0, '
                                 'got %r' % (name, value))
        if not isinstance(self.vcpus, int) or self.vcpus < 1:
            raise ValueError('profile vcpus must be an integer >= 1, got %r'
                             % (self.vcpus,))
        for name in ('cpu_util', 'mf_small_llc'):
            value = getattr(self, name)
            if value is not None and (
                    isinstance(value, bool)
                    or not isinstance(value, (int, float))
                    or not math.isfinite(value) or not 0 <= value <= 1):
                raise ValueError('profile %s must be a number in 0-1, got %r'
                                 % (name, value))
        if not isinstance(self.latency, bool):
            raise ValueError('profile latency must be true or false, got %r'
                             % (self.latency,))

    @property
    def util(self):
        """``cpu_util``, or :data:`NEUTRAL_CPU_UTIL` when unknown."""
        return NEUTRAL_CPU_UTIL if self.cpu_util is None else self.cpu_util

    @property
    def miss_intensity(self):
        """LLC misses per kilo-cycle x busy vCPUs: MPKI x IPC x util x vCPUs.

        Proportional to the instance's DRAM traffic on a given host (the
        host's clock is the missing factor), from counters alone.
        """
        return self.mpki * self.ipc * self.util * self.vcpus


#: The CPU utilisation assumed when a profile does not give one (the
#: rule the reports' node loads follow too).
NEUTRAL_CPU_UTIL = aggregate.NEUTRAL_CPU_UTIL

#: The neutral prior: a "medium/medium" Merlin instance (section 3.2
#: bands), used when nothing better is known about a new instance.
NEUTRAL_PROFILE = InstanceProfile(mpki=5.0, mf=0.4, ipc=1.0)

#: The flavor extra spec that describes a flavor's workload
#: (:func:`parse_profile`): the weigher reads it for an arrival, the
#: strategies for whether an instance is a latency service.
PROFILE_SPEC = 'contention:profile'

_PROFILE_KEYS = {'mpki': float, 'mf': float, 'ipc': float}
_OPTIONAL_KEYS = ('cpu_util', 'latency', 'mf_small_llc')
_TRUE = ('1', 'true', 'yes')
_FALSE = ('0', 'false', 'no')


def parse_profile(text, vcpus=1, memory_mib=1024, source='hint'):
    """``"mpki=12,mf=0.7,ipc=0.8"`` -> InstanceProfile; ValueError if bad.

    ``mpki``, ``mf`` and ``ipc`` are required; ``cpu_util=`` (0-1),
    ``latency=`` (1/0, true/false, yes/no) and ``mf_small_llc=`` (0-1, see
    :attr:`InstanceProfile.mf_small_llc`) are optional. The message says
    which part is wrong.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError('empty contention profile')
    values = {}
    for part in text.split(','):
        key, sep, value = part.partition('=')
        key = key.strip().lower()
        if not sep or (key not in _PROFILE_KEYS
                       and key not in _OPTIONAL_KEYS):
            raise ValueError('contention profile %r: %r is not one of '
                             'mpki=, mf=, ipc=, cpu_util=, latency=, '
                             'mf_small_llc='
                             % (text, part.strip()))
        if key in values:
            raise ValueError('contention profile %r: %s given twice'
                             % (text, key))
        if key == 'latency':
            flag = value.strip().lower()
            if flag not in _TRUE + _FALSE:
                raise ValueError('contention profile %r: latency=%r is not '
                                 '1/0, true/false or yes/no'
                                 % (text, value.strip()))
            values[key] = flag in _TRUE
            continue
        try:
            values[key] = float(value)
        except ValueError:
            raise ValueError('contention profile %r: %s=%r is not a number'
                             % (text, key, value.strip())) from None
    missing = sorted(set(_PROFILE_KEYS) - set(values))
    if missing:
        raise ValueError('contention profile %r: missing %s'
                         % (text, ', '.join(missing)))
    return InstanceProfile(vcpus=vcpus, memory_mib=memory_mib,
                           source=source, **values)


def format_profile(profile):
    text = 'mpki=%g,mf=%g,ipc=%g' % (profile.mpki, profile.mf, profile.ipc)
    if profile.cpu_util is not None:
        text += ',cpu_util=%g' % profile.cpu_util
    if profile.latency:
        text += ',latency=1'
    if profile.mf_small_llc is not None:
        text += ',mf_small_llc=%g' % profile.mf_small_llc
    return text


@dataclasses.dataclass(frozen=True)
class CellState:
    """What a landing cell (one NUMA node, or several summed) carries."""

    #: Logical CPUs of the cell(s).
    cpus: int
    #: Summed MPKI of the instances already running there.
    co_mpki_sum: float = 0.0
    #: vCPUs already running there.
    co_vcpus: float = 0.0
    #: Summed :attr:`InstanceProfile.miss_intensity` of the instances
    #: there (None = unknown: estimated from ``co_mpki_sum``).
    co_miss_intensity: Optional[float] = None
    #: Summed busy vCPUs there, vCPUs x cpu_util (None = unknown: every
    #: vCPU counted busy).
    co_cpu_demand: Optional[float] = None
    #: DRAM bandwidth in use, bytes/s (None = not measured).
    mem_bw_bps: Optional[float] = None
    #: Liu & Li overhead levels (section 4.1), None = unknown.
    llc_level: Optional[int] = None
    mc_level: Optional[int] = None
    ic_level: Optional[int] = None
    remote_level: Optional[int] = None

    @property
    def occupancy(self):
        return self.co_vcpus / self.cpus if self.cpus else 1.0

    @property
    def free_cpus(self):
        return max(0.0, self.cpus - self.co_vcpus)


def _or(value, default):
    return default if value is None else value


def feature_row(profile, cell):
    """The model input for one (instance, cell) pair, in FEATURE_NAMES order.

    Unmeasured bandwidth and overhead levels are filled with estimates
    from the summed MPKI, so a host whose agent lacks resctrl still gets
    a meaningful row (the same fill is used in training). A profile
    without ``mf_small_llc`` gets NaN in its two columns; the model then
    answers from its forests that do not read them.
    """
    bw = cell.mem_bw_bps
    if bw is None:
        # ~64-byte lines at ~1e9 instructions/s per vCPU: a rough proxy.
        bw = cell.co_mpki_sum * 64e6
    # unknown co-runner intensity: IPC 1, one busy vCPU per MPKI summand
    co_int = _or(cell.co_miss_intensity, cell.co_mpki_sum)
    co_demand = _or(cell.co_cpu_demand, cell.co_vcpus)
    own_int = profile.miss_intensity
    demand = co_demand + profile.util * profile.vcpus
    small = (math.nan if profile.mf_small_llc is None
             else float(profile.mf_small_llc))
    return (
        float(profile.mpki), float(profile.mf), float(profile.ipc),
        float(profile.vcpus), profile.memory_mib / 1024.0,
        float(cell.co_mpki_sum), float(cell.co_vcpus),
        float(cell.occupancy), bw / 1e9, float(cell.free_cpus),
        float(cell.cpus),
        float(_or(cell.llc_level, 0)), float(_or(cell.mc_level, 0)),
        float(_or(cell.ic_level, 0)), float(_or(cell.remote_level, 0)),
        float(profile.util), float(profile.latency), float(own_int),
        float(co_int), float(co_int + own_int), float(co_demand),
        demand / cell.cpus if cell.cpus else float(demand),
        small, small - float(profile.mf),
    )


#: The largest magnitude a feature may have: scikit-learn's trees compare
#: in float32, and a larger value (or an infinity) makes prediction fail.
MAX_FEATURE_VALUE = 1e30
_OPTIONAL_FROM = len(COUNTER_FEATURES)


def row_problem(row):
    """None if ``row`` (a :func:`feature_row`) can be predicted, else why.

    Every counter feature must be finite and at most
    :data:`MAX_FEATURE_VALUE` in size; the ``mf_small_llc`` columns may
    also be NaN (unknown). Stored telemetry that slipped past validation
    (an infinite bandwidth, 1e300 misses) then makes one host's row
    unusable instead of failing the whole batch.
    """
    for i, value in enumerate(row):
        if value != value and i >= _OPTIONAL_FROM:
            continue
        if not -MAX_FEATURE_VALUE <= value <= MAX_FEATURE_VALUE:
            return 'feature %s is %r' % (FEATURE_NAMES[i], value)
    return None


def merge_cells(cells):
    """Several cells seen as one (a multi-node landing or a shared pool)."""
    cells = list(cells)
    if len(cells) == 1:
        return cells[0]

    def worst(name):
        values = [getattr(c, name) for c in cells]
        return None if any(v is None for v in values) else max(values)
    bws = [c.mem_bw_bps for c in cells]

    def total(name):
        values = [getattr(c, name) for c in cells]
        return None if any(v is None for v in values) else sum(values)
    return CellState(
        cpus=sum(c.cpus for c in cells),
        co_mpki_sum=sum(c.co_mpki_sum for c in cells),
        co_vcpus=sum(c.co_vcpus for c in cells),
        co_miss_intensity=total('co_miss_intensity'),
        co_cpu_demand=total('co_cpu_demand'),
        mem_bw_bps=None if any(b is None for b in bws) else sum(bws),
        llc_level=worst('llc_level'), mc_level=worst('mc_level'),
        ic_level=worst('ic_level'), remote_level=worst('remote_level'))


def cells_from_report(report):
    """{node id: CellState} from a HostReport's per-node aggregates.

    Co-runners' miss intensity and CPU demand are the aggregates' (schema
    1.3); a report of an older agent has them from its instance records
    (:func:`contention.aggregate.node_loads`, the rule the agent applies).
    Without either (an older report read without its instances, the store's
    node-level view) both are unknown on a node whose aggregate counts
    instances, so the features fall back to the summed MPKI and vCPUs,
    rather than taking the node for idle.
    """
    aggregates = {agg.node: agg for agg in report.nodes}
    loads = {}
    if any(agg.cpu_demand is None for agg in report.nodes):
        # an older agent's report: its instance records, if it has them
        loads = (aggregate.node_loads(report.topology, report.instances)
                 if report.instances else
                 {agg.node: (None, None) for agg in report.nodes
                  if agg.instances})
    cells = {}
    for node in report.topology.nodes:
        agg = aggregates.get(node.id)
        if agg is None:
            cells[node.id] = CellState(cpus=len(node.cpus))
            continue
        ov = agg.overhead
        intensity, demand = loads.get(node.id, (0.0, 0.0))
        if agg.cpu_demand is not None:
            intensity, demand = agg.miss_intensity, agg.cpu_demand
        cells[node.id] = CellState(
            cpus=len(node.cpus), co_mpki_sum=agg.mpki_sum or 0.0,
            co_vcpus=agg.vcpus, mem_bw_bps=agg.mem_bw_bps,
            co_miss_intensity=intensity, co_cpu_demand=demand,
            llc_level=ov.llc if ov else None, mc_level=ov.mc if ov else None,
            ic_level=ov.ic if ov else None,
            remote_level=ov.remote if ov else None)
    return cells


def choose_profile(hint=None, extra_spec=None, image_profile=None, vcpus=1,
                   memory_mib=1024):
    """The instance profile by precedence, and the problems met on the way.

    Hint (scheduler hint ``contention_profile``) > flavor extra spec
    (``contention:profile``) > the store's profile of the image (any object
    with ``mpki``, ``mf``, ``ipc``; ``cpu_util``, ``latency`` and
    ``mf_small_llc`` are read when it has them) > :data:`NEUTRAL_PROFILE`. A malformed
    hint or extra spec is skipped and reported in the returned list (the
    caller logs it), never an error.

    :returns: (InstanceProfile, [problem strings])
    """
    problems = []
    for source, text in (('hint', hint), ('flavor', extra_spec)):
        if text is None:
            continue
        try:
            return parse_profile(text, vcpus=vcpus, memory_mib=memory_mib,
                                 source=source), problems
        except ValueError as exc:
            problems.append('%s ignored: %s' % (
                'scheduler hint contention_profile' if source == 'hint'
                else 'flavor extra spec contention:profile', exc))
    if image_profile is not None and None not in (
            image_profile.mpki, image_profile.mf, image_profile.ipc):
        try:
            return InstanceProfile(
                mpki=image_profile.mpki, mf=image_profile.mf,
                ipc=image_profile.ipc, vcpus=vcpus, memory_mib=memory_mib,
                cpu_util=getattr(image_profile, 'cpu_util', None),
                latency=bool(getattr(image_profile, 'latency', False)),
                mf_small_llc=getattr(image_profile, 'mf_small_llc', None),
                source='image'), problems
        except ValueError as exc:
            problems.append('image profile ignored: %s' % exc)
    return dataclasses.replace(NEUTRAL_PROFILE, vcpus=vcpus,
                               memory_mib=memory_mib), problems

"""Model inputs: an instance profile and the state of a NUMA cell.

The interference model predicts, from what an instance does (its Merlin
profile: L3 MPKI, Memory Factor, IPC; its size) and what the cell it
would land on already carries (co-runners' summed MPKI and vCPUs, memory
bandwidth, free CPUs, Liu & Li overhead levels), two numbers: the
instance's normalised performance there and the mean slowdown it causes
the co-runners. These dataclasses and :func:`feature_row` fix the order
and meaning of the inputs; :data:`SCHEMA_VERSION` changes whenever they
change, and a model file trained on another version is refused.
"""

import dataclasses
import math
from typing import Optional

SCHEMA_VERSION = 1

FEATURE_NAMES = (
    'mpki', 'mf', 'ipc', 'vcpus', 'memory_gib',
    'co_mpki_sum', 'co_vcpus', 'occupancy', 'mem_bw_gbps', 'free_cpus',
    'cell_cpus', 'llc_level', 'mc_level', 'ic_level', 'remote_level',
)
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


#: The neutral prior: a "medium/medium" Merlin instance (section 3.2
#: bands), used when nothing better is known about a new instance.
NEUTRAL_PROFILE = InstanceProfile(mpki=5.0, mf=0.4, ipc=1.0)

_PROFILE_KEYS = {'mpki': float, 'mf': float, 'ipc': float}


def parse_profile(text, vcpus=1, memory_mib=1024, source='hint'):
    """``"mpki=12,mf=0.7,ipc=0.8"`` -> InstanceProfile; ValueError if bad.

    All three keys are required; the message says which part is wrong.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError('empty contention profile')
    values = {}
    for part in text.split(','):
        key, sep, value = part.partition('=')
        key = key.strip().lower()
        if not sep or key not in _PROFILE_KEYS:
            raise ValueError('contention profile %r: %r is not one of '
                             'mpki=, mf=, ipc=' % (text, part.strip()))
        if key in values:
            raise ValueError('contention profile %r: %s given twice'
                             % (text, key))
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
    return 'mpki=%g,mf=%g,ipc=%g' % (profile.mpki, profile.mf, profile.ipc)


@dataclasses.dataclass(frozen=True)
class CellState:
    """What a landing cell (one NUMA node, or several summed) carries."""

    #: Logical CPUs of the cell(s).
    cpus: int
    #: Summed MPKI of the instances already running there.
    co_mpki_sum: float = 0.0
    #: vCPUs already running there.
    co_vcpus: float = 0.0
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
    a meaningful row (the same fill is used in training).
    """
    bw = cell.mem_bw_bps
    if bw is None:
        # ~64-byte lines at ~1e9 instructions/s per vCPU: a rough proxy.
        bw = cell.co_mpki_sum * 64e6
    return (
        float(profile.mpki), float(profile.mf), float(profile.ipc),
        float(profile.vcpus), profile.memory_mib / 1024.0,
        float(cell.co_mpki_sum), float(cell.co_vcpus),
        float(cell.occupancy), bw / 1e9, float(cell.free_cpus),
        float(cell.cpus),
        float(_or(cell.llc_level, 0)), float(_or(cell.mc_level, 0)),
        float(_or(cell.ic_level, 0)), float(_or(cell.remote_level, 0)),
    )


def merge_cells(cells):
    """Several cells seen as one (a multi-node landing or a shared pool)."""
    cells = list(cells)
    if len(cells) == 1:
        return cells[0]

    def worst(name):
        values = [getattr(c, name) for c in cells]
        return None if any(v is None for v in values) else max(values)
    bws = [c.mem_bw_bps for c in cells]
    return CellState(
        cpus=sum(c.cpus for c in cells),
        co_mpki_sum=sum(c.co_mpki_sum for c in cells),
        co_vcpus=sum(c.co_vcpus for c in cells),
        mem_bw_bps=None if any(b is None for b in bws) else sum(bws),
        llc_level=worst('llc_level'), mc_level=worst('mc_level'),
        ic_level=worst('ic_level'), remote_level=worst('remote_level'))


def cells_from_report(report):
    """{node id: CellState} from a HostReport's per-node aggregates."""
    aggregates = {agg.node: agg for agg in report.nodes}
    cells = {}
    for node in report.topology.nodes:
        agg = aggregates.get(node.id)
        if agg is None:
            cells[node.id] = CellState(cpus=len(node.cpus))
            continue
        ov = agg.overhead
        cells[node.id] = CellState(
            cpus=len(node.cpus), co_mpki_sum=agg.mpki_sum or 0.0,
            co_vcpus=agg.vcpus, mem_bw_bps=agg.mem_bw_bps,
            llc_level=ov.llc if ov else None, mc_level=ov.mc if ov else None,
            ic_level=ov.ic if ov else None,
            remote_level=ov.remote if ov else None)
    return cells


def choose_profile(hint=None, extra_spec=None, image_profile=None, vcpus=1,
                   memory_mib=1024):
    """The instance profile by precedence, and the problems met on the way.

    Hint (scheduler hint ``contention_profile``) > flavor extra spec
    (``contention:profile``) > the store's profile of the image (any object
    with ``mpki``, ``mf``, ``ipc``) > :data:`NEUTRAL_PROFILE`. A malformed
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
                source='image'), problems
        except ValueError as exc:
            problems.append('image profile ignored: %s' % exc)
    return dataclasses.replace(NEUTRAL_PROFILE, vcpus=vcpus,
                               memory_mib=memory_mib), problems

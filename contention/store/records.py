"""The store's records: what its reads return and its writes count.

Plain frozen dataclasses, so Nova's weigher, Watcher's strategies and
``contention-status`` never see SQL rows.
"""

import dataclasses
from typing import Optional

DEFAULT_URL = 'sqlite:////var/lib/contention/telemetry.sqlite'
#: Weight of a new sample in a host's rolling means of an image: about the
#: last 1 / alpha samples count, so a profile follows an image whose
#: workload changes, without being swayed by one odd interval.
DEFAULT_PROFILE_ALPHA = 0.1
#: Seconds between stored instance samples of a host (see
#: :func:`contention.store.write.sampled`). A 40-instance host reporting
#: every 10 s would add 345,600 sample rows a day, the database's main
#: cost; the history is read a minute or more at a time (repercussion
#: checks, training), and every report's full body stays in the report
#: history anyway.
DEFAULT_SAMPLE_INTERVAL_S = 60.0
#: Rows or keys per statement (IN lists, multi-row inserts).
CHUNK = 500


@dataclasses.dataclass(frozen=True)
class ImageProfile:
    """What instances of one Glance image did so far.

    Each metric is the median, over the hosts that ran the image most
    recently, of each host's rolling mean (see
    :mod:`contention.store.write`): one host cannot move it.
    """

    image_id: str
    mpki: Optional[float]
    mf: Optional[float]
    ipc: Optional[float]
    merlin_class: Optional[str]
    #: Instance samples folded in (including ones without counters).
    samples: int
    #: When the profile last changed, seconds since the epoch.
    updated_at: float
    #: MF over the intervals in which its instances held about a quarter
    #: of their LLC (:mod:`contention.llc_share`); None until one did.
    mf_small_llc: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class InstanceSampleRow:
    """One instance in one stored report, flattened for history queries."""

    timestamp: float
    host: str
    uuid: str
    image_id: Optional[str]
    vcpus: int
    memory_mib: int
    #: NUMA node most of its vCPUs ran on (else most of its memory), or
    #: None when the report said neither.
    node: Optional[int]
    mpki: Optional[float]
    mf: Optional[float]
    ipc: Optional[float]
    llc_misses_per_s: Optional[float]
    cpu_util: Optional[float]
    merlin_class: Optional[str]


@dataclasses.dataclass(frozen=True)
class MoveRecord:
    """An instance moved between hosts by an action (``origin`` says who)."""

    uuid: str
    source_host: str
    dest_host: str
    moved_at: float
    origin: str


@dataclasses.dataclass(frozen=True)
class IngestResult:
    """What one :meth:`TelemetryStore.ingest` did with its reports.

    The three add up to the number of reports given: ``accepted`` were new
    and newer than every report of their host stored before them, in the
    order given (so the counts do not depend on how reports were batched:
    five in-order reports are five accepted, in one batch or five);
    ``stale`` were new and stored in the history, but an equal-or-newer
    report of their host was already stored (out-of-order delivery);
    ``duplicates`` were already stored (same host and timestamp) and
    changed nothing.
    """

    accepted: int = 0
    duplicates: int = 0
    stale: int = 0

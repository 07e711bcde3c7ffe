"""The one small interface every counter source implements.

A *source* reads one kind of measurement on a compute node (libvirt domains
and perf counters, resctrl monitoring, the QEMU processes' NUMA memory, or
the simulator's synthetic counters) and returns a :class:`SourceSample`.
Sources are plugins loaded with stevedore from the
``contention.agent.sources`` namespace, so a host runs only what it can
measure and the simulator can stand in for the hardware.

A source never computes deltas or derived metrics: it reports *cumulative*
counter values as the kernel or libvirt gives them, and the collection loop
(:mod:`compute_agent.loop`) merges the samples of all sources by instance
uuid, turns them into interval deltas with :mod:`contention.counters` and
builds the :class:`~contention.report.HostReport` with
:mod:`contention.aggregate`. Keeping the arithmetic in the core means reset
and wrap-around handling is written and tested once.

Conventions:

* ``None`` means *not measured*, never zero. A source that cannot measure
  anything on this host returns a sample whose ``status.available`` is
  False with the reason and the fix, and no counter values.
* Counter names are the field names of :class:`contention.report.Counters`.
  All of them are cumulative except the gauges in :data:`GAUGES`, which are
  values at ``now`` (passed through unchanged).
* Several sources may describe the same instance; the loop takes, for each
  field, the first non-None value in source order, so a source only fills
  in what it knows (``InstanceSample(uuid=..., memory_mib_per_node=...)``).
"""

import abc
import dataclasses
from typing import Optional

from contention.report import Counters
from contention.report import SourceStatus
from contention.topology import HostTopology

#: Counter names a source may report, in the report's order.
COUNTER_NAMES = tuple(f.name for f in dataclasses.fields(Counters))
#: Counters that are point-in-time values, not cumulative totals.
GAUGES = frozenset(['llc_occupancy_bytes'])
#: Cumulative counters, which go through the core's delta arithmetic.
CUMULATIVE = tuple(name for name in COUNTER_NAMES if name not in GAUGES)


@dataclasses.dataclass(frozen=True)
class InstanceSample:
    """What one source saw of one instance (libvirt domain) at ``now``.

    Every field but ``uuid`` is optional so that a source reports only what
    it measures; the loop merges the samples of all sources.
    """

    #: Nova instance uuid (the libvirt domain uuid).
    uuid: str
    name: Optional[str] = None
    vcpus: Optional[int] = None
    memory_mib: Optional[int] = None
    flavor: Optional[str] = None
    image_id: Optional[str] = None
    project_id: Optional[str] = None
    #: 'shared', 'dedicated' or 'mixed' (Nova's hw:cpu_policy).
    cpu_policy: Optional[str] = None
    #: Host CPU each vCPU last ran on, indexed by vCPU number.
    vcpu_cpus: Optional[tuple[int, ...]] = None
    #: Host CPUs the vCPUs may run on; empty = any.
    cpuset: Optional[tuple[int, ...]] = None
    #: MiB of the instance's memory per host NUMA node.
    memory_mib_per_node: Optional[dict[int, float]] = None
    #: CPU cap as a fraction of each vCPU (CFS quota / period); None = no
    #: cap or unknown.
    cpu_quota: Optional[float] = None
    #: Counter name (see :data:`COUNTER_NAMES`) -> cumulative value, or None
    #: when this source could not read it for this instance.
    counters: dict[str, Optional[int]] = dataclasses.field(
        default_factory=dict)
    #: Changes whenever the instance's counters restart from zero (e.g. the
    #: libvirt domain id, which is new after every domain start), so the
    #: delta code treats a drop as a reset rather than a wrap. None = unknown.
    incarnation: Optional[str] = None
    #: What happened to this instance's measurement, e.g.
    #: "vanished_mid_collection"; copied into the report.
    notes: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class SourceSample:
    """One source's answer for one collection cycle."""

    status: SourceStatus
    #: The host topology, from a source that reads it (libvirt, sim);
    #: None from the others.
    topology: Optional[HostTopology] = None
    instances: tuple[InstanceSample, ...] = ()
    #: Host-level events, e.g. "libvirt_reconnected".
    events: tuple[str, ...] = ()
    #: The moment (seconds since the epoch) the cumulative counters are
    #: of, from a source that knows it: an emulating source steps its
    #: simulator to the ``now`` it is given. None: while the source ran.
    read_at: Optional[float] = None


class Source(abc.ABC):
    """A counter source plugin (namespace ``contention.agent.sources``).

    The loop constructs the class without arguments, calls :meth:`open`
    once with the agent's configuration, then :meth:`collect` every
    interval, and :meth:`close` at shutdown. :meth:`collect` must not raise
    for conditions of the host (permissions, missing hardware support, a
    vanished domain, a lost connection): it reports them in the sample's
    status, events and notes, so the loop goes on.
    """

    #: The entry-point name, used in ``SourceStatus.name`` and in logs.
    name = None
    #: True for a source that plays the host itself (``sim``,
    #: ``emulated``): the agent's local actions then go to :meth:`act`
    #: instead of libvirt (:class:`compute_agent.actions.EmulatedActions`).
    emulates_host = False

    def open(self, conf):
        """Prepare to collect; ``conf`` is the agent's ConfigOpts."""

    @abc.abstractmethod
    def collect(self, now):
        """Read the source at ``now`` (seconds since the epoch).

        :returns: a :class:`SourceSample`.
        """

    def close(self):
        """Release connections and files."""

    def act(self, action):
        """Carry out a local action on the emulated host.

        Only for a source that :attr:`emulates_host`; called from the
        agent's RPC thread, while :meth:`collect` may run.

        :param action: a :class:`contention.cluster.Repin` or
            :class:`~contention.cluster.CpuQuota` naming a Nova instance.
        :returns: ``{'changed', 'vcpu_nodes', 'memory_nodes', 'quota'}``,
            what now holds.
        :raises ValueError: the emulated host refuses it; the message says
            why.
        """
        raise NotImplementedError('source %s does not emulate the host'
                                  % self.name)

    def unavailable(self, reason):
        """A sample saying this source cannot measure on this host."""
        return SourceSample(status=SourceStatus(self.name, False, reason))

    def available(self, **kwargs):
        """A sample from a source that could measure."""
        return SourceSample(status=SourceStatus(self.name, True), **kwargs)

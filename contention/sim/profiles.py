"""Workload profiles: how a simulated VM uses the core and the memory system.

A profile is what a scenario file's ``profiles:`` entry gives. Its fields
are the inputs of the contention solver (:mod:`contention.sim.solver`):

* ``base_cpi``: cycles per instruction when every LLC access hits (the
  core's own work, L1/L2 misses that hit the LLC included);
* ``llc_apki``: LLC accesses (L2 misses) per 1000 instructions;
* the **miss-ratio curve** (MRC): the fraction of LLC accesses that miss
  with ``c`` bytes of LLC,
  ``m(c) = mr_min + (mr_max - mr_min) * exp(-c / working_set)``.
  ``mr_min`` is the floor no cache removes (streaming, compulsory
  misses): it is Merlin's Memory Factor of a VM alone with a large cache.
  A *cache-sensitive* profile has a high ``llc_apki``, a low ``mr_min``
  and a working set of the order of the LLC; a *streaming* one a high
  ``mr_min``; a *CPU-bound* one a low ``llc_apki``;
* ``shared_fraction``: the fraction of the working set that all the VM's
  threads touch (a B-tree or a key-value store's cache that every worker
  reads), against data each vCPU keeps to itself (SPEC-rate copies, a
  partitioned scan). It matters only where the VM's vCPUs run in several
  L3 domains (a CCX on AMD, a node): each domain then holds its own copy
  of the shared part, so a VM spread over two caches gains room only for
  its private data. The placement paper (section 1, Figure 1) names this
  cooperative sharing as why a communicating workload can run best
  packed on one node; the cross-cache communication cost it also names
  is not modelled. 0 (the default) is data all private, what the model
  assumed before the field existed; no paper gives a value, so every
  value is our choice (``doc/simulator.md``);
* ``mlp``: memory-level parallelism, misses in flight per stall (stall
  cycles per miss = latency / mlp);
* ``writeback_ratio``: DRAM bytes written per byte read by misses;
* ``footprint_mib``: the most LLC the VM can hold (its touched memory);
  defaults to its memory size;
* ``vcpus``, ``memory_mib``; ``dirty_mib_s`` (memory written per
  second, for the live-migration model in :mod:`contention.sim.migration`);
* ``cpu_demand``: the fraction of each vCPU the VM wants to use, a
  constant or :class:`Phases` (Merlin's Figure 6: MapReduce codes whose
  demand varies over time);
* the **flavor's NUMA shape**, as Nova's flavor extra specs give it:
  ``numa_nodes`` (``hw:numa_nodes``: the instance is confined to exactly
  that many NUMA nodes of its host, its vCPUs and memory split evenly over
  them, within a socket where they fit, across sockets where Nova must);
  None keeps the simulator's historical shape (spread over every usable
  node of one socket). ``cpu_policy`` (``hw:cpu_policy``): ``shared``
  vCPUs float over their nodes' CPUs (so over every L3 domain there);
  ``dedicated`` vCPUs are pinned one per CPU, taken in order from the
  nodes' free CPUs as Nova's pinning does, so they fill one L3 domain
  before the next;
* ``metric``: ``throughput`` (performance = instructions per second
  relative to alone) or ``latency`` (performance = alone response time /
  response time, with an M/M/1 response time of the VM's vCPUs, so a
  latency-sensitive service degrades faster as its CPU saturates);
* ``response_cpu_share``: for a latency VM, the share of its response
  time alone that is CPU service (the rest, e.g. network transfer or a
  client's think time, does not stretch with contention). 1.0 (the
  default) is a service whose response is all CPU, like the co-run bench's
  (``bench/corun.py``); see the calibration in ``doc/simulator.md``.

Every shipped value is synthetic (see the scenario files).
"""

import dataclasses
import math
from typing import Optional

import numpy as np

METRICS = ('throughput', 'latency')
CPU_POLICIES = ('shared', 'dedicated')


@dataclasses.dataclass(frozen=True)
class Phases:
    """A CPU demand that steps through phases and repeats.

    ``phases`` is a tuple of ``(duration_s, demand)``; ``offset_s`` shifts
    where in the cycle the VM starts.
    """

    phases: tuple[tuple[float, float], ...]

    @property
    def period(self):
        return sum(d for d, _ in self.phases)

    def at(self, t):
        period = self.period
        t = math.fmod(t, period) if period > 0 else 0.0
        for duration, demand in self.phases:
            if t < duration:
                return demand
            t -= duration
        return self.phases[-1][1]


@dataclasses.dataclass(frozen=True)
class WorkloadProfile:
    """One application's behaviour (see the module docstring)."""

    name: str
    base_cpi: float = 1.0
    llc_apki: float = 5.0
    mr_min: float = 0.1
    mr_max: float = 0.95
    working_set_mib: float = 4.0
    mlp: float = 2.0
    shared_fraction: float = 0.0
    writeback_ratio: float = 0.3
    vcpus: int = 1
    memory_mib: int = 1024
    footprint_mib: Optional[float] = None
    #: Memory the VM dirties per second (live-migration pre-copy rounds).
    dirty_mib_s: float = 20.0
    cpu_demand: object = 1.0
    metric: str = 'throughput'
    #: Latency VMs: share of the response time alone spent on the CPU.
    response_cpu_share: float = 1.0
    #: Free-form class label shown in reports (e.g. "memory-bound").
    kind: str = ''
    #: Shift each instance's phase by a seeded random offset.
    desync_phases: bool = True
    #: Nova's hw:numa_nodes (None: one socket's usable nodes) and
    #: hw:cpu_policy (see the module docstring).
    numa_nodes: Optional[int] = None
    cpu_policy: str = 'shared'

    def demand_at(self, t):
        """Per-vCPU CPU demand (0..1] at time ``t`` seconds."""
        if isinstance(self.cpu_demand, Phases):
            return self.cpu_demand.at(t)
        return float(self.cpu_demand)

    @property
    def demand_period(self):
        if isinstance(self.cpu_demand, Phases):
            return self.cpu_demand.period
        return 0.0

    @property
    def footprint_bytes(self):
        mib = (self.footprint_mib if self.footprint_mib is not None
               else self.memory_mib)
        return mib * 1024.0 * 1024.0

    def miss_ratio(self, cache_bytes):
        """The MRC at ``cache_bytes`` (scalar or array)."""
        ws = self.working_set_mib * 1024.0 * 1024.0
        return self.mr_min + (self.mr_max - self.mr_min) * np.exp(
            -np.asarray(cache_bytes, dtype=float) / ws)

    def key(self):
        """What makes two instances interchangeable for the oracle."""
        return (self.name, self.vcpus, self.memory_mib)

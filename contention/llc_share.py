"""A workload's Memory Factor with a small share of the LLC, from history.

The placement model reads ``mf_small_llc``: an instance's Memory Factor
(LLC misses / LLC references, Merlin section 3.1) when it holds only
:data:`SMALL_LLC_FRACTION` of the last-level cache. With ``mf`` (the MF
it shows normally) it samples the workload's miss-ratio curve at two
points, which tells a workload whose working set only just fits the
cache from one that needs little of it (see
:class:`contention.perfmodel.features.InstanceProfile`).

Offline profiling measures it alone under a resctrl CAT allocation of
that share of the ways. Running clouds need not: the agent already
reports each instance's LLC occupancy (resctrl cache monitoring) next to
its MF, and on a busy socket instances often hold about that share
because their co-runners take the rest. A miss ratio depends on the
cache space a workload holds far more than on why it holds that much,
so an interval whose occupancy share lies within :data:`SMALL_LLC_BAND`
of the target is a sample of the same point of the curve. The store
folds such samples into the image's profile (``image_profiles``), which
the Nova weigher reads.

What it does not cover, on purpose:

* Hosts whose generic ``cache_misses`` event counts L2 misses (AMD Zen,
  :attr:`contention.topology.HostTopology.cache_miss_level`): their MF is
  not the L3's, so their intervals give no sample.
* Intervals without an occupancy reading (no resctrl), without known L3
  sizes, or with vCPUs the topology does not know: no sample.
* An image never seen near that share keeps no value, and the weigher's
  counters-only forests answer for it, as before.
"""

#: The share of the LLC ``mf_small_llc`` describes (a CAT allocation of a
#: quarter of the cache ways, or ``pqos -e``). Synthetic-only group
#: cross-validation (mean over the merlin-mix1 and ahn-wl1 hardware) gives
#: 0.0195 with 1/8, 1/4 and 1/2 alike (SIMULATED, see doc/nova.md).
SMALL_LLC_FRACTION = 0.25

#: How far, relative to :data:`SMALL_LLC_FRACTION`, an interval's
#: occupancy share may lie and still count as a sample of it: 0.2-0.3 of
#: the LLC. On the simulator the mean MF of such intervals lies within
#: 0.01 of the MF measured alone with a quarter of the cache for every
#: workload of ahn-wl1 and merlin-mix1, where the wider 0.125-0.375 is off
#: by up to 0.04 (doc/nova.md, SIMULATED).
SMALL_LLC_BAND = 0.2


def occupancy_share(record, topology):
    """The share of its L3 caches ``record`` held at the interval's end.

    Occupancy over the summed size of the L3 domains its vCPUs last ran
    on; None when occupancy, a vCPU's CPU, its L3 or that cache's size is
    not known.
    """
    occupancy = record.counters.llc_occupancy_bytes
    if occupancy is None or not record.vcpu_cpus:
        return None
    l3_of = topology.l3_of_cpus()
    sizes = {}
    for cpu_id in record.vcpu_cpus:
        l3 = l3_of.get(cpu_id)
        if l3 is None:
            return None
        sizes[l3[0]] = l3[1]
    return occupancy / sum(sizes.values())


def small_llc_mf(record, topology):
    """``record``'s MF when it is a sample of ``mf_small_llc``, else None.

    A sample: the host's ``cache_misses`` count L3 misses, the record has
    an MF, and its :func:`occupancy_share` lies within
    :data:`SMALL_LLC_BAND` (relative) of :data:`SMALL_LLC_FRACTION`.
    An MF over 1 (references undercounted against misses) counts as 1,
    the most a miss ratio can be, so one odd interval cannot make the
    image's profile invalid.
    """
    mf = record.metrics.mf
    if mf is None or topology.cache_miss_level != 'L3':
        return None
    share = occupancy_share(record, topology)
    if share is None:
        return None
    if abs(share - SMALL_LLC_FRACTION) > SMALL_LLC_BAND * SMALL_LLC_FRACTION:
        return None
    return min(mf, 1.0)

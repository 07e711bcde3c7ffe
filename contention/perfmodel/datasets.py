"""Training sets for the placement models, and where they come from.

Two sources of ground truth:

* **the telemetry store** (:func:`from_reports` / :func:`from_store`):
  observational history. Each instance sample is labelled with its IPC
  relative to the best IPC its workload (Glance image, else the instance)
  reached anywhere in the history, and the cell it ran on is described by
  the node aggregate minus its own share; the co-runner slowdown label is
  the mean shortfall of the other instances on that node relative to
  their own best. No experiment is needed, but only placements that
  happened are seen.
* **a performance source** (:func:`interference_dataset`,
  :func:`placement_vector_dataset`): anything that, given a host
  topology, a workload profile, the NUMA nodes and cores it runs on and
  its co-runners, returns normalised performance. That is the
  :data:`PerformanceSource` contract below; the simulator provides one
  (``contention.sim.training``, which calls this module: the model does
  not know the simulator).

Workload names group the samples for leave-one-workload-out
cross-validation.
"""

import collections
import dataclasses
import random
from typing import Callable
from typing import Optional

import numpy as np

from contention import aggregate
from contention import llc_share
from contention import reportview
from contention.perfmodel import features
from contention.topology import HostTopology


@dataclasses.dataclass(frozen=True)
class Workload:
    """A named workload with its counter profile."""

    name: str
    profile: features.InstanceProfile


@dataclasses.dataclass(frozen=True)
class CoRunner:
    """An instance already running on the host."""

    workload: Workload
    nodes: frozenset
    vcpus: int


@dataclasses.dataclass(frozen=True)
class Trial:
    """One question to a performance source.

    ``workload`` runs with ``workload.profile.vcpus`` vCPUs spread evenly
    over ``nodes`` using ``cores`` physical cores (fewer cores than vCPUs
    means SMT siblings are shared), beside ``corunners``.
    """

    topology: HostTopology
    workload: Workload
    nodes: frozenset
    cores: int
    corunners: tuple = ()


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A performance source's answer, all normalised to 1 = unhindered.

    ``performance``: the workload's performance relative to running alone
    in its best placement. ``corunner_performance``: each co-runner's
    performance with the workload present divided by without it, in the
    order of ``Trial.corunners``.
    """

    performance: float
    corunner_performance: tuple = ()
    #: The co-runners' DRAM traffic on the trial's nodes without the
    #: workload, bytes/s: what the host's report (resctrl MBM) shows
    #: before it lands. None: unknown (the row estimates it from the
    #: co-runners' MPKI, as for a report without resctrl).
    corunner_mem_bw_bps: Optional[float] = None


#: The contract a ground-truth source satisfies (the simulator's, or a
#: synthetic one in tests): a pure function of the trial, deterministic
#: for a given trial.
PerformanceSource = Callable[[Trial], Outcome]


@dataclasses.dataclass
class Dataset:
    """Rows for the interference model, with their workload names."""

    X: np.ndarray
    Y: np.ndarray
    groups: list
    source: str
    #: Workloads the leave-one-out error is reported on (None = all).
    #: With extra training workloads (another profile library) the
    #: reported error stays about the scenario's own workloads: each is
    #: held out in turn, and the others and the extras train its forest.
    evaluate: Optional[list] = None
    #: Synthetic training subjects among the groups (never evaluated).
    synthetic: list = dataclasses.field(default_factory=list)

    @property
    def workloads(self):
        return sorted(set(self.groups))

    def summary(self):
        result = {'source': self.source, 'samples': int(len(self.X)),
                  'workloads': len(set(self.workloads)
                                   - set(self.synthetic))}
        if self.synthetic:
            result['synthetic_workloads'] = len(self.synthetic)
        if self.evaluate is not None:
            result['evaluated_workloads'] = len(self.evaluate)
        return result


def _cell_of(topology, nodes, corunners, exclude=None):
    cells = []
    for node_id in sorted(nodes):
        node = topology.node(node_id)
        mpki = vcpus = intensity = demand = 0.0
        for co in corunners:
            if co is exclude or node_id not in co.nodes:
                continue
            share = co.vcpus / len(co.nodes)
            prof = co.workload.profile
            vcpus += share
            mpki += prof.mpki * share / co.vcpus
            intensity += prof.mpki * prof.ipc * prof.util * share
            demand += prof.util * share
        cells.append(features.CellState(
            cpus=len(node.cpus), co_mpki_sum=mpki, co_vcpus=vcpus,
            co_miss_intensity=intensity, co_cpu_demand=demand))
    return features.merge_cells(cells)


def interference_dataset(source, topology, workloads, samples_per_workload=40,
                         seed=0, label='source', extra=(), extra_samples=5,
                         copies_samples=0):
    """Rows from random single-node landings beside random co-runners.

    Each sample lands the workload on one NUMA node that already runs 0
    to 3 co-runners drawn from ``workloads``, as long as they fit the
    node's CPUs, and asks ``source`` for the outcome.

    ``copies_samples``: more landings of each workload beside 1 to 3
    copies of one workload (itself or another of ``workloads``), from a
    random stream of their own. Random draws almost never give a node
    several copies of one workload, the mix a cloud's images and Ahn et
    al.'s worst case make; without them the model reads four copies of a
    memory-streaming workload as a mild mix (doc/nova.md).

    ``extra``: more workloads (e.g. synthetic profiles) that are trial
    subjects only, ``extra_samples`` landings each beside co-runners
    drawn from ``workloads``, from a random stream of their own: the rows
    of ``workloads`` are the same with or without them.
    """
    rng = random.Random(seed)
    X, Y, groups = [], [], []
    _landings(source, topology, workloads, workloads, samples_per_workload,
              rng, X, Y, groups)
    if copies_samples:
        _landings(source, topology, workloads, workloads, copies_samples,
                  random.Random('%s/copies' % seed), X, Y, groups,
                  copies=True)
    if extra:
        _landings(source, topology, extra, workloads, extra_samples,
                  random.Random('%s/extra' % seed), X, Y, groups)
    return Dataset(np.asarray(X, float).reshape(
        -1, len(features.FEATURE_NAMES)), np.asarray(Y, float).reshape(-1, 2),
        groups, label)


def _landings(source, topology, subjects, pool, samples, rng, X, Y, groups,
              copies=False):
    """Landings of each subject beside 0-3 co-runners drawn from ``pool``.

    With ``copies``, 1-3 co-runners that are copies of one workload drawn
    from ``pool`` and the subject.
    """
    node_ids = [n.id for n in topology.nodes if n.cpus]
    for workload in subjects:
        for _ in range(samples):
            node = rng.choice(node_ids)
            capacity = len(topology.node(node).cpus)
            used = workload.profile.vcpus
            corunners = []
            if copies:
                copied = rng.choice(list(pool) + [workload])
                draws = [copied] * rng.randint(1, 3)
            else:
                draws = [rng.choice(pool) for _ in range(rng.randint(0, 3))]
            for other in draws:
                if used + other.profile.vcpus > capacity:
                    continue
                used += other.profile.vcpus
                corunners.append(CoRunner(other, frozenset([node]),
                                          other.profile.vcpus))
            trial = Trial(topology, workload, frozenset([node]),
                          cores=workload.profile.vcpus,
                          corunners=tuple(corunners))
            outcome = source(trial)
            cell = _cell_of(topology, trial.nodes, corunners)
            if outcome.corunner_mem_bw_bps is not None:
                cell = dataclasses.replace(
                    cell, mem_bw_bps=outcome.corunner_mem_bw_bps)
            slowdown = (1.0 - float(np.mean(outcome.corunner_performance))
                        if outcome.corunner_performance else 0.0)
            X.append(features.feature_row(workload.profile, cell))
            Y.append((outcome.performance, max(0.0, slowdown)))
            groups.append(workload.name)


def placement_vector_dataset(source, topology, workloads, placements):
    """(vectors, groups): each workload alone in every important placement.

    Following section 3, the workload does not share its NUMA nodes.
    """
    vectors, groups = [], []
    for workload in workloads:
        row = []
        for placement in placements:
            trial = Trial(topology, workload, placement.nodes,
                          cores=placement.l2)
            row.append(source(trial).performance)
        vectors.append(row)
        groups.append(workload.name)
    return np.asarray(vectors, float), groups


def placement_labels(placements):
    return [p.describe() for p in placements]


def from_reports(reports, min_samples=1, after=None, before=None):
    """A :class:`Dataset` from stored HostReports (observational).

    Samples without IPC, MPKI or MF are skipped; workloads (images, else
    instances) with fewer than ``min_samples`` samples are dropped. A
    workload's ``mf_small_llc`` is the mean MF of its intervals near a
    quarter of the LLC (:func:`contention.llc_share.small_llc_mf`, what
    the store's image profiles learn), or unknown without one.

    The rows mean what the simulator's rows mean (:mod:`contention.sim.
    training`), so a model trained on either serves the other's telemetry:

    * performance is the instance's IPC over the best its workload reached
      in the history, the nearest the history has to it running alone;
    * the subject's profile is its workload's counters in that best
      interval (its profile alone, as the simulator's and an operator's
      offline profile are), not the interval's own: an interval's IPC
      over the best is the label itself;
    * the cell is the node without the subject: its MPKI, vCPUs, miss
      intensity, CPU demand and DRAM traffic taken off the node's;
    * the co-runner slowdown is the one the subject *causes*: the
      simulator solves the node with and without it, the history cannot,
      so the co-runners' shortfall is attributed to the instances of the
      node by their share of its LLC miss intensity (misses per cycle x
      busy vCPUs: what contends for the cache, the memory controller and
      the interconnect).

    ``after`` / ``before``: only the samples of reports from ``after`` on
    and from before ``before``, labelled against all of ``reports`` (the
    best IPC an image reached anywhere), so a window is labelled as the
    whole history trains (the drift and the challenge of :mod:`.drift`).
    """
    reports = list(reports)
    best = {}
    small = collections.defaultdict(list)
    for report in reports:
        for rec in report.instances:
            key = rec.image_id or rec.uuid
            m = rec.metrics
            if (None not in (m.ipc, m.mpki, m.mf) and m.ipc > 0
                    and (key not in best or m.ipc > best[key].ipc)):
                best[key] = m
            mf = llc_share.small_llc_mf(rec, report.topology)
            if mf is not None:
                small[key].append(mf)
    small = {key: float(np.mean(values)) for key, values in small.items()}
    X, Y, groups = [], [], []
    for report in reports:
        if ((after is not None and report.timestamp < after)
                or (before is not None and report.timestamp >= before)):
            continue
        cells = features.cells_from_report(report)
        placed = []
        for rec in report.instances:
            m = rec.metrics
            node = reportview.dominant_node(rec, report.topology)
            key = rec.image_id or rec.uuid
            if None in (m.ipc, m.mpki, m.mf) or node is None or key not in best:
                continue
            placed.append((rec, node, key, m.ipc / best[key].ipc))
        for rec, node, key, perf in placed:
            cell = cells[node]
            alone = best[key]
            profile = features.InstanceProfile(
                mpki=alone.mpki, mf=alone.mf, ipc=alone.ipc,
                vcpus=rec.vcpus, memory_mib=rec.memory_mib, source='store',
                cpu_util=_util(alone.cpu_util),
                mf_small_llc=small.get(key))
            m = rec.metrics
            here = features.InstanceProfile(
                mpki=m.mpki, mf=m.mf, ipc=m.ipc, vcpus=rec.vcpus,
                memory_mib=rec.memory_mib, cpu_util=_util(m.cpu_util))
            intensity = cell.co_miss_intensity
            co_intensity = (None if intensity is None else
                            max(0.0, intensity - here.miss_intensity))
            bw = cell.mem_bw_bps
            if bw is not None and m.mem_bw_total_bps is not None:
                # the node's traffic counts the instance's own by its
                # vCPUs there (contention.aggregate)
                share = (aggregate.vcpus_per_node(
                    rec, report.topology).get(node, 0.0) / rec.vcpus)
                bw = max(0.0, bw - m.mem_bw_total_bps * share)
            cell = dataclasses.replace(
                cell, co_mpki_sum=max(0.0, cell.co_mpki_sum - m.mpki),
                mem_bw_bps=bw,
                co_vcpus=max(0.0, cell.co_vcpus - rec.vcpus),
                co_miss_intensity=co_intensity,
                co_cpu_demand=max(0.0, (cell.co_cpu_demand or 0.0)
                                  - here.util * rec.vcpus))
            others = [p for r, n, k, p in placed if n == node and r is not rec]
            slowdown = 0.0
            if others:
                total = here.miss_intensity + (co_intensity or 0.0)
                share = here.miss_intensity / total if total > 0 else 0.0
                slowdown = (1.0 - float(np.mean(others))) * share
            X.append(features.feature_row(profile, cell))
            Y.append((min(1.0, perf), max(0.0, slowdown)))
            groups.append(key)
    counts = collections.Counter(groups)
    keep = [i for i, g in enumerate(groups) if counts[g] >= min_samples]
    return Dataset(np.asarray([X[i] for i in keep], float).reshape(
        -1, len(features.FEATURE_NAMES)),
        np.asarray([Y[i] for i in keep], float).reshape(-1, 2),
        [groups[i] for i in keep], 'store')


def _util(value):
    """A measured cpu_util as a profile takes it (None stays unknown)."""
    return None if value is None else min(1.0, max(0.0, float(value)))


def from_store(store, since=None, limit=None, min_samples=1):
    """:func:`from_reports` over the store's training history."""
    return from_reports(store.training_samples(since=since, limit=limit),
                        min_samples=min_samples)


__all__ = ['CoRunner', 'Dataset', 'Outcome', 'PerformanceSource',
           'Trial', 'Workload', 'from_reports', 'from_store',
           'interference_dataset', 'placement_vector_dataset']

"""The scoring core shared by the Nova weigher and the simulator policy.

Kept apart, as in the Kubernetes scheduler framework: *score*
(:func:`score_hosts`: one batched model prediction for every candidate
with fresh telemetry, combined into a 0-1 score), *normalise* (Nova does
it, with the weigher's fixed ``minval``/``maxval`` = 0/1 so a score keeps
its meaning) and *multiply* (the adapter's multiplier). Nothing here knows
whether the cells came from Nova's HostStates or the simulator.

A host's score is::

    (1 - corunner_weight) * predicted performance
        + corunner_weight * (1 - predicted co-runner slowdown)

both predictions in 0-1, so the score is in 0-1 too: 1 means "the
instance runs unhindered and hurts no one" (:func:`combine`, the one
place the formula lives). Hosts without a landing cell state (no fresh
telemetry), with unusable telemetry, or on which the model is unsure
(:mod:`contention.perfmodel.confidence`) get ``neutral``.
"""

import dataclasses
from typing import Optional

import numpy as np

from contention.perfmodel import confidence
from contention.perfmodel import features

DEFAULT_CORUNNER_WEIGHT = 0.3
DEFAULT_NEUTRAL = 0.5


@dataclasses.dataclass(frozen=True)
class HostScore:
    """A host's score and what it came from (for logs and tests)."""

    host: str
    score: float
    performance: Optional[float] = None
    slowdown: Optional[float] = None
    #: Why the score is neutral, when it is.
    neutral_reason: Optional[str] = None
    #: The prediction's tree spread and domain excess
    #: (:mod:`contention.perfmodel.confidence`), when the model was asked.
    spread: Optional[float] = None
    excess: Optional[float] = None
    #: True when the model answered but was unsure (the score is neutral).
    abstained: bool = False

    @property
    def neutral(self):
        return self.neutral_reason is not None


def combine(performance, slowdown, corunner_weight=DEFAULT_CORUNNER_WEIGHT):
    """The 0-1 scores from the two predictions (arrays; see the module doc)."""
    w = corunner_weight
    return np.clip((1.0 - w) * np.asarray(performance, float)
                   + w * (1.0 - np.asarray(slowdown, float)), 0.0, 1.0)


def _row(profile, cell):
    """(feature row, None) or (None, why the cell cannot be scored)."""
    try:
        row = features.feature_row(profile, cell)
    except (TypeError, ValueError, ArithmeticError) as exc:
        return None, 'unusable telemetry: %s' % exc
    problem = features.row_problem(row)
    if problem:
        return None, 'unusable telemetry: %s' % problem
    return row, None


def node_share(profile, nodes):
    """The part of ``profile`` that runs on each of ``nodes`` NUMA nodes.

    Its vCPUs (rounded up) and memory spread evenly, as Nova splits a
    ``hw:numa_nodes`` flavor and as a floating instance's threads and
    pages spread over the shared pool on average.
    """
    if nodes <= 1:
        return profile
    return dataclasses.replace(
        profile, vcpus=-(-profile.vcpus // nodes),
        memory_mib=max(1, profile.memory_mib // nodes))


def score_hosts(model, profile, cells, corunner_weight=DEFAULT_CORUNNER_WEIGHT,
                neutral=DEFAULT_NEUTRAL, limits=confidence.Limits()):
    """{host: HostScore} with one batched prediction.

    Each host's landing is one CellState or a tuple of them, one per NUMA
    node the instance's vCPUs spread over (:func:`landing_cells`). An
    instance on several nodes is scored node by node, as the model was
    trained (single-node landings, :mod:`contention.perfmodel.datasets`):
    on each node its :func:`node_share`, and its performance and the
    slowdown it causes are the means over its nodes. The nodes merged into
    one cell would lie outside the training data on any loaded host (a
    two-socket host's merged cell has twice the co-runners and the memory
    bandwidth a node can), and the model would abstain there.

    Rows in the same state (idle hosts of one hardware type usually are)
    share one row of the batch. A host gets the neutral score, with the
    reason, when it has no cell state, when its stored telemetry gives an
    unusable feature (an infinity, a value beyond float32: that host
    only, never an exception), or when the model is unsure of any of its
    nodes (:func:`confidence.judge` with ``limits``; ``abstained`` is
    then set).

    :param model: an InterferenceModel, or None (every host neutral).
    :param profile: the arriving instance's InstanceProfile.
    :param cells: {host: CellState, a tuple of CellStates, or a string
        saying why there is none (e.g. 'no fresh telemetry')}.
    """
    result = {}
    rows, row_of, judged, shares = [], {}, [], {}
    for host, landing in cells.items():
        if isinstance(landing, features.CellState):
            landing = (landing,)
        if (not isinstance(landing, tuple) or not landing
                or not all(isinstance(c, features.CellState)
                           for c in landing)):
            result[host] = HostScore(host, neutral,
                                     neutral_reason=str(landing or 'unknown'))
            continue
        if model is None:
            result[host] = HostScore(host, neutral, neutral_reason='no model')
            continue
        k = len(landing)
        if k not in shares:
            shares[k] = node_share(profile, k)
        indices = []
        for cell in landing:
            key = (k, cell)
            index = row_of.get(key)
            if index is None:
                row, problem = _row(shares[k], cell)
                index = row_of[key] = problem if problem else len(rows)
                if row is not None:
                    rows.append(row)
            indices.append(index)
        problem = next((i for i in indices if isinstance(i, str)), None)
        if problem:
            result[host] = HostScore(host, neutral, neutral_reason=problem)
        else:
            judged.append((host, tuple(indices)))
    if not rows:
        return result
    prediction = model.predict_confident(np.asarray(rows, float))
    reasons = confidence.judge(prediction, limits)
    perf = prediction.values[:, 0].tolist()
    slow = prediction.values[:, 1].tolist()
    spread = prediction.spread.tolist()
    excess = prediction.excess.tolist()
    made = {}
    for host, indices in judged:
        parts = made.get(indices)
        if parts is None:
            # hosts whose nodes are in the same states share one answer
            n = len(indices)
            p = sum(perf[i] for i in indices) / n
            s = sum(slow[i] for i in indices) / n
            worst = max(indices, key=lambda i: (reasons[i] is not None,
                                                excess[i]))
            parts = made[indices] = (
                p, s, reasons[worst],
                float(combine(p, s, corunner_weight)),
                max(spread[i] for i in indices),
                max(excess[i] for i in indices))
        p, s, unsure, combined, most_spread, most_excess = parts
        result[host] = HostScore(
            host, neutral if unsure else combined, performance=p,
            slowdown=s, spread=most_spread, excess=most_excess,
            neutral_reason=unsure and 'model unsure: %s' % unsure,
            abstained=bool(unsure))
    return result


def cells_from_view(view, host_name):
    """{socket id: CellState} of a ClusterView host (simulator policy).

    The view's instances carry MPKI, IPC, CPU utilisation and the socket
    they run on; a socket stands for its NUMA node(s). Co-runners' miss
    intensity and CPU demand as :func:`features.cells_from_report` sums
    them (an unknown cpu_util counts as busy; an unknown MPKI or IPC makes
    the intensity unknown).
    """
    host = view.host(host_name)
    cells = {}

    def loads(instances):
        mpki = vcpus = demand = 0.0
        intensity = 0.0
        for inst in instances:
            util = (features.NEUTRAL_CPU_UTIL if inst.cpu_util is None
                    else min(1.0, inst.cpu_util))
            mpki += inst.mpki or 0.0
            vcpus += inst.vcpus
            demand += util * inst.vcpus
            if intensity is not None:
                intensity = (None if None in (inst.mpki, inst.ipc) else
                             intensity + inst.mpki * inst.ipc * util
                             * inst.vcpus)
        return mpki, vcpus, intensity, demand
    for socket in host.sockets:
        mpki, vcpus, intensity, demand = loads(
            view.instances_on(host_name, socket=socket.id))
        cells[socket.id] = features.CellState(
            cpus=socket.cpus, co_mpki_sum=mpki, co_vcpus=vcpus,
            co_miss_intensity=intensity, co_cpu_demand=demand)
    unplaced = [i for i in view.instances_on(host_name) if i.socket is None]
    if unplaced and cells:
        # spread instances (no socket) load every socket evenly
        share = 1.0 / len(cells)
        mpki, vcpus, intensity, demand = loads(unplaced)
        for key, cell in cells.items():
            cells[key] = dataclasses.replace(
                cell,
                co_mpki_sum=cell.co_mpki_sum + share * mpki,
                co_vcpus=cell.co_vcpus + share * vcpus,
                co_miss_intensity=(
                    None if None in (intensity, cell.co_miss_intensity)
                    else cell.co_miss_intensity + share * intensity),
                co_cpu_demand=cell.co_cpu_demand + share * demand)
    return cells


def landing_nodes(cells, vcpus, numa=False):
    """The ids of the cells an instance would land on, as a tuple.

    With a NUMA topology (``numa``) the instance lands on the node with
    the most free CPUs that fits it, as Nova's fitting tries nodes in
    order and the simulator packs; otherwise it floats over the host's
    shared pool (every cell). Empty when nothing fits.
    """
    if not numa:
        return tuple(cells)
    fitting = [key for key, c in sorted(cells.items())
               if c.free_cpus >= vcpus]
    if not fitting:
        return ()
    return (max(fitting, key=lambda key: cells[key].free_cpus),)


def landing_cells(cells, vcpus, numa=False):
    """The states of the cells an instance would land on, as a tuple.

    One per node of :func:`landing_nodes` (what :func:`score_hosts`
    takes); empty when nothing fits.
    """
    return tuple(cells[key] for key in landing_nodes(cells, vcpus,
                                                     numa=numa))

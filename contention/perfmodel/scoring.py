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


def score_hosts(model, profile, cells, corunner_weight=DEFAULT_CORUNNER_WEIGHT,
                neutral=DEFAULT_NEUTRAL, limits=confidence.Limits()):
    """{host: HostScore} with one batched prediction.

    Hosts whose landing cells are in the same state share one row of the
    batch (idle hosts of one hardware type usually do). A host gets the
    neutral score, with the reason, when it has no cell state, when its
    stored telemetry gives an unusable feature (an infinity, a value
    beyond float32: that host only, never an exception), or when the
    model is unsure of it (:func:`confidence.judge` with ``limits``;
    ``abstained`` is then set).

    :param model: an InterferenceModel, or None (every host neutral).
    :param profile: the arriving instance's InstanceProfile.
    :param cells: {host: CellState of its landing cell(s), or a string
        saying why there is none (e.g. 'no fresh telemetry')}.
    """
    result = {}
    rows, row_of, judged = [], {}, []
    for host, cell in cells.items():
        if not isinstance(cell, features.CellState):
            result[host] = HostScore(host, neutral,
                                     neutral_reason=str(cell or 'unknown'))
            continue
        if model is None:
            result[host] = HostScore(host, neutral, neutral_reason='no model')
            continue
        index = row_of.get(cell)
        if index is None:
            row, problem = _row(profile, cell)
            index = row_of[cell] = problem if problem else len(rows)
            if row is not None:
                rows.append(row)
        if isinstance(index, str):
            result[host] = HostScore(host, neutral, neutral_reason=index)
        else:
            judged.append((host, index))
    if not rows:
        return result
    prediction = model.predict_confident(np.asarray(rows, float))
    reasons = confidence.judge(prediction, limits)
    perf = prediction.values[:, 0].tolist()
    slow = prediction.values[:, 1].tolist()
    combined = combine(prediction.values[:, 0], prediction.values[:, 1],
                       corunner_weight).tolist()
    spread = prediction.spread.tolist()
    excess = prediction.excess.tolist()
    for host, i in judged:
        unsure = reasons[i]
        result[host] = HostScore(
            host, neutral if unsure else combined[i], performance=perf[i],
            slowdown=slow[i], spread=spread[i], excess=excess[i],
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


def landing_cell(cells, vcpus, numa=False):
    """The landing cell state for an instance on a host.

    The cell of :func:`landing_nodes`, or those cells merged (the shared
    pool). Returns None when nothing fits.
    """
    nodes = landing_nodes(cells, vcpus, numa=numa)
    if not nodes:
        return None
    return features.merge_cells(cells[key] for key in nodes)

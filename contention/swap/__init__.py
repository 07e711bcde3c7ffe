"""Ahn et al.'s cache-aware and NUMA-aware schedulers, one audit for all.

Ahn et al., "Dynamic VM scheduling in clouds for architectural shared
resources" (``shared/papers/004_*``), with Merlin's arbitration (Tembey
et al., ``shared/papers/000_*``). The package is laid out by job:

* :mod:`.audit`: :func:`run_audit`, the one entry point (cool-down,
  repercussion check, model check, order of the phases);
* :mod:`.params`: the parameters, defined once with their metadata;
* :mod:`.movelog`: what moved when (in memory, or the telemetry store);
* :mod:`.rollback`: our moves undone where an instance measures slower;
* :mod:`.state`: the one state type that applies actions to a view;
* :mod:`.measure`: LLC-miss loads, spread, predicted contention;
* :mod:`.feasibility`: capacity, oversubscription, worth of a move;
* :mod:`.arbitration`: Merlin's choice among candidate moves;
* the phases, each ``(state, params) -> (actions, skipped)``:
  :mod:`.repair`, :mod:`.local`, :mod:`.balance`,
  :mod:`.pressure_swaps`, :mod:`.quota`.

Other modules import this package's face only: the names below.
"""

from contention.swap.audit import ALGORITHMS
from contention.swap.audit import cache_aware
from contention.swap.audit import numa_aware
from contention.swap.audit import REASONS
from contention.swap.audit import run_audit
from contention.swap.measure import mix_class
from contention.swap.measure import performance_change
from contention.swap.measure import pressure
from contention.swap.measure import socket_loads
from contention.swap.measure import spread
from contention.swap.movelog import FAILED
from contention.swap.movelog import HALF_DONE
from contention.swap.movelog import InMemoryMoveLog
from contention.swap.movelog import Move
from contention.swap.movelog import MoveLog
from contention.swap.movelog import moves_of
from contention.swap.movelog import origin_of
from contention.swap.movelog import Seen
from contention.swap.movelog import StoreMoveLog
from contention.swap.movelog import UNKNOWN
from contention.swap.params import CACHE_AWARE
from contention.swap.params import NUMA_AWARE
from contention.swap.params import SwapParameters
from contention.swap.state import apply
from contention.swap.state import HOST
from contention.swap.state import SOCKET
from contention.swap.state import State

__all__ = [
    'ALGORITHMS', 'apply', 'CACHE_AWARE', 'cache_aware', 'FAILED',
    'HALF_DONE', 'HOST',
    'InMemoryMoveLog', 'mix_class', 'Move', 'MoveLog', 'moves_of',
    'origin_of',
    'NUMA_AWARE', 'numa_aware', 'performance_change', 'pressure',
    'REASONS', 'run_audit',
    'Seen', 'SOCKET', 'socket_loads', 'spread', 'State', 'StoreMoveLog',
    'SwapParameters', 'UNKNOWN',
]

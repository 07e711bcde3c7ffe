"""What moving a VM costs: live-migration time, copy traffic, slowdown.

Live migration (pre-copy, as QEMU does it): round 0 sends all ``M`` of
memory over a network of bandwidth ``W``; while it does, the guest dirties
``dirty`` MiB/s, so round ``j`` resends ``M r^j`` with ``r = dirty / W``,
until what is left is under ``stop_mib`` (or ``max_rounds``), which is
sent with the guest paused. Hence ``transferred = M (1 - r^(n+1)) / (1 -
r)`` and ``duration = transferred / W``. A guest that dirties faster than
the network sends (``r >= 1``) never converges; it is forced after
``max_rounds`` (QEMU's auto-converge would throttle it), and counted; a
round never resends more than the whole memory.

While a migration runs (it may span epochs) it costs:

* the migrating VM ``slowdown`` of its throughput (dirty-page tracking,
  then the pause);
* ``cpu_cores`` of CPU time on the source and on the destination node
  (QEMU's migration thread), which competes with the VMs there;
* the copy traffic on the source and destination memory controllers.

Moving memory inside a host (a NUMA page migration) runs at
``intra_host_gbs`` with the same CPU and memory-controller costs and
``memory_move_slowdown``. Moving vCPUs inside a host is immediate and
costs ``vcpu_move_us`` of CPU time per vCPU moved, counted in the
platform's CPU use (Merlin section 5.3: moving a VCPU to another socket
costs "3780 CPU cycles or 1.78 microseconds" on its Westmere processor,
cache effects excluded; the same on other hosts, our choice). The cold
cache after a move is not modelled (stated in ``doc/simulator.md``).
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class MigrationParams:
    network_gbs: float = 1.25
    stop_mib: float = 64.0
    max_rounds: int = 30
    slowdown: float = 0.2
    cpu_cores: float = 1.0
    intra_host_gbs: float = 4.0
    memory_move_slowdown: float = 0.1
    vcpu_move_us: float = 1.78


@dataclasses.dataclass(frozen=True)
class Transfer:
    """One copy: how long it takes and how much it moves."""

    duration_s: float
    transferred_mib: float
    rounds: int
    converged: bool = True


def live_migration(memory_mib, dirty_mib_s, params=MigrationParams()):
    """A pre-copy live migration's :class:`Transfer` (see module doc)."""
    bw_mib = params.network_gbs * 1e9 / (1024.0 * 1024.0)
    ratio = dirty_mib_s / bw_mib if bw_mib > 0 else float('inf')
    remaining = float(memory_mib)
    sent = 0.0
    rounds = 0
    while True:
        sent += remaining
        rounds += 1
        # A round cannot resend more than the whole memory.
        remaining = min(remaining * ratio, float(memory_mib))
        if remaining <= params.stop_mib or rounds >= params.max_rounds:
            break
    converged = remaining <= params.stop_mib
    sent += remaining       # the stop-and-copy round
    return Transfer(duration_s=sent / bw_mib, transferred_mib=sent,
                    rounds=rounds + 1, converged=converged)


def memory_move(memory_mib, params=MigrationParams()):
    """Moving ``memory_mib`` between NUMA nodes of one host."""
    bw_mib = params.intra_host_gbs * 1e9 / (1024.0 * 1024.0)
    return Transfer(duration_s=memory_mib / bw_mib,
                    transferred_mib=float(memory_mib), rounds=1)


@dataclasses.dataclass
class Running:
    """A copy in progress, charged to the epochs it overlaps."""

    uuid: str
    kind: str                   # 'live' or 'memory'
    #: Global node indices charged (source and destination).
    nodes: tuple[int, ...]
    remaining_s: float
    bytes_per_s: float
    slowdown: float
    cpu_cores: float


@dataclasses.dataclass
class Costs:
    """What the policies' actions cost over a run (all simulated)."""

    migrations: int = 0
    vcpu_moves: float = 0.0
    #: CPU seconds the vCPU moves took (``vcpu_move_us`` each).
    vcpu_move_cpu_s: float = 0.0
    memory_moves: int = 0
    memory_moved_gib: float = 0.0
    quota_changes: int = 0
    unconverged_migrations: int = 0
    migration_seconds: float = 0.0

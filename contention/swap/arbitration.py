"""Merlin's arbitration for the swap schedulers: which move, if any.

Tembey et al., "Merlin" (``shared/papers/000_*``), ranks reconfigurations
by cost (section 3.3: CPU cap < local vCPU move < remote vCPU move <
memory migration) and chooses "the lowest cost reconfiguration option that
also causes the least hurt to all applications affected" (section 3.4),
preferring, among remote moves, those of MC/IC-insensitive VMs or of the
VM with the smallest size (Figure 4, options a-c). After acting it watches
the co-runners for a repercussion interval and, when one moved to a worse
state, adds it to the application set and re-arbitrates (section 3.5).

Here that becomes, for Ahn et al.'s swap step (:mod:`contention.swap`):

* :func:`choose` picks one of the candidate swaps. ``extreme`` is the
  papers' rule (the candidate built from the max-miss and min-miss VMs);
  ``sensitivity_cost`` takes, among candidates reducing the spread within
  ``tolerance`` of the best one, the one moving the lowest Memory Factor
  (least MC/IC sensitive), then the least memory (cheapest to migrate),
  then the lowest priority;
* :func:`migration_cost` prices a candidate by the memory it migrates, in
  the same unit as its benefit (LLC misses/s of spread removed), so a
  move whose benefit does not repay its cost is skipped;
* :func:`in_cooldown` keeps a VM moved less than ``cooldown`` seconds ago
  where it is (no ping-pong between audits);
* :func:`hurt_corunners` is the repercussion check.
"""

import dataclasses
from typing import Optional

from contention import classify

EXTREME = 'extreme'
SENSITIVITY_COST = 'sensitivity_cost'
VICTIM_SELECTIONS = (EXTREME, SENSITIVITY_COST)

_GIB = 1024.0


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One possible swap (or one-way move when ``back`` is None).

    ``out`` leaves the loaded unit for the light one; ``back`` comes the
    other way. ``reduction`` is how much the difference between the two
    units' LLC misses/s shrinks; ``cost`` its migration cost in the same
    unit.
    """

    out: object
    back: Optional[object]
    reduction: float
    cost: float

    @property
    def moved(self):
        return (self.out,) if self.back is None else (self.out, self.back)

    @property
    def memory_mib(self):
        return sum(i.memory_mib for i in self.moved)


def in_cooldown(instance, now, cooldown_s):
    """Whether the instance was moved by us less than cooldown_s ago."""
    return (instance.last_moved_at is not None and cooldown_s > 0
            and now - instance.last_moved_at < cooldown_s)


def migration_cost(instances, cost_per_gib):
    """Cost of live-migrating ``instances``: their memory x cost_per_gib.

    Merlin section 3.3: memory migration is the most expensive
    reconfiguration, and it grows with the memory copied.
    """
    return sum(i.memory_mib for i in instances) / _GIB * cost_per_gib


def _mf_rank(instance):
    # Unknown MF is treated as MC/IC sensitive: the cautious choice.
    return 1.0 if instance.mf is None else instance.mf


def preference_key(candidate):
    """Merlin's order among moves reducing the spread about as much."""
    return (max(_mf_rank(i) for i in candidate.moved),
            candidate.memory_mib,
            max(i.priority for i in candidate.moved),
            -candidate.reduction,
            tuple(i.uuid for i in candidate.moved))


def choose(candidates, selection=SENSITIVITY_COST, tolerance=0.1):
    """The candidate to run, or None.

    ``candidates`` must already be the feasible ones (benefit over cost,
    capacity checked). For ``extreme`` the caller passes the papers'
    single max/min candidate; the best reduction wins.
    """
    if selection not in VICTIM_SELECTIONS:
        raise ValueError('victim_selection must be one of %s, not %r'
                         % (', '.join(VICTIM_SELECTIONS), selection))
    candidates = list(candidates)
    if not candidates:
        return None
    best = max(c.reduction for c in candidates)
    if selection == EXTREME:
        return min(candidates, key=largest_reduction_first)
    near = [c for c in candidates if is_near(c.reduction, best, tolerance)]
    return min(near, key=preference_key)


def largest_reduction_first(candidate):
    """Sort key: the largest reduction first, ties by the moved UUIDs.

    The ``extreme`` choice, and the order the balancing assesses
    candidates in.
    """
    return (-candidate.reduction, tuple(i.uuid for i in candidate.moved))


def is_near(reduction, best, tolerance=0.1):
    """Whether a reduction is within ``tolerance`` of the ``best`` one.

    :func:`choose` prefers among those only, so a candidate that is not
    near a reduction already found feasible need not be assessed.
    """
    return reduction >= best * (1 - tolerance)


@dataclasses.dataclass(frozen=True)
class Hurt:
    """A co-runner that moved to a worse Merlin state after a move."""

    uuid: str
    host: str
    socket: Optional[int]
    culprit: str
    before: str
    after: str


def hurt_corunners(view, moves, classes_before):
    """Merlin's repercussion check (section 3.5, Figure 4).

    ``moves`` are past moves (:class:`contention.swap.movelog.Move`);
    ``classes_before`` maps an instance uuid to
    its Merlin class just before the move. A co-runner is an instance now
    on the moved VM's destination host (and socket, when both are known)
    other than the moved VMs themselves; it is hurt when its class moved
    right or down in Figure 3's grid (:func:`classify.transition`). Each
    hurt co-runner is listed once, with the first move that explains it.
    """
    moved = {m.uuid for m in moves}
    by_host = {}
    for inst in view.instances:
        by_host.setdefault(inst.host, []).append(inst)
    where = {i.uuid: i for i in view.instances}
    hurt = []
    seen = set()
    for move in moves:
        arrived = where.get(move.uuid)
        if arrived is None or arrived.host != move.dest_host:
            continue
        for co in by_host.get(move.dest_host, ()):
            if co.uuid in moved or co.uuid in seen:
                continue
            if (arrived.socket is not None and co.socket is not None
                    and co.socket != arrived.socket):
                continue
            before = classes_before.get(co.uuid)
            try:
                change = classify.transition(before, co.merlin_class)
            except ValueError:
                change = None
            if change is not None and change.worse:
                seen.add(co.uuid)
                hurt.append(Hurt(co.uuid, co.host, co.socket, move.uuid,
                                 before, co.merlin_class))
    return hurt

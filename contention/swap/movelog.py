"""What moved when: the audit's memory between runs.

The cool-down (an instance moved less than ``cooldown`` seconds ago stays
where it is), Merlin's repercussion check (section 3.5: the co-runners
of a moved instance are watched, and one whose class got worse has its
unit arbitrated first) and the measured roll-back (:mod:`.rollback`:
where an instance measures slower than before our moves on its host,
they are undone) all read past moves and what was seen before them.
Every move is recorded, whoever ran it and however it ended: a live
migration (one-way or a leg of a swap), a re-pin, a CPU quota change,
and a swap leg that failed, was left half done, or whose instance Nova
could not place (the instance may have moved, so it is held back as if
it had; an unplaced one is recorded on the host it was sent to). ``origin`` says which
(``<runner>:<action>[:undo][:<outcome>]``; ``undo`` marks the measured
roll-back's moves back, :func:`is_undo`).

A :class:`MoveLog` is what the audit is given: :class:`InMemoryMoveLog`
in the simulator, :class:`StoreMoveLog` (the telemetry store's moves and
instance history) in Watcher.
"""

import abc
import bisect
import dataclasses
from typing import Optional

from contention import cluster
from contention import reportview
from contention import store as store_api

#: Outcome suffixes of ``Move.origin`` for moves that did not end as
#: planned.
FAILED = 'failed'
HALF_DONE = 'half_done'
UNKNOWN = 'unknown'
#: The ``Move.origin`` part marking the measured roll-back's moves back.
UNDO = 'undo'


@dataclasses.dataclass(frozen=True)
class Move:
    """An instance moved (or a move attempted) at ``moved_at``.

    A re-pin and a quota change have ``dest_host == source_host``.
    ``settled_at`` is when the copy of its memory ended, where that is
    later than ``moved_at``: the simulator records a move when it makes
    it and copies after, while Watcher's actions record a move once it
    has ended (None there: :attr:`settled` is ``moved_at``).
    """

    uuid: str
    source_host: str
    dest_host: str
    moved_at: float
    origin: str = 'audit'
    settled_at: Optional[float] = None

    @property
    def settled(self):
        """When the move and its copy had ended."""
        return self.moved_at if self.settled_at is None else self.settled_at


@dataclasses.dataclass(frozen=True)
class Seen:
    """An instance as measured at one time: where it ran, how fast.

    ``node`` is the NUMA node its vCPUs mostly ran on, ``memory_node``
    the one holding most of its memory (None where unknown).
    """

    host: str
    node: Optional[int] = None
    memory_node: Optional[int] = None
    ipc: Optional[float] = None
    cpu_util: Optional[float] = None
    merlin_class: Optional[str] = None

    @classmethod
    def of(cls, inst):
        """What a :class:`contention.cluster.InstanceView` shows."""
        return cls(inst.host, inst.node, inst.memory_node, inst.ipc,
                   inst.cpu_util, inst.merlin_class)


class MoveLog(abc.ABC):
    """Past moves, and the instances as seen before them."""

    @abc.abstractmethod
    def moves_since(self, t):
        """Moves at or after ``t``, oldest first."""

    @abc.abstractmethod
    def classes_before(self, when):
        """{uuid: Merlin class last seen in ``[since, t]``}.

        ``when`` is {uuid: (t, since)}; an instance without a class
        measured in its window is left out.
        """

    @abc.abstractmethod
    def seen_before(self, when):
        """{uuid: :class:`Seen`, as last seen in ``[since, t]``}.

        ``when`` is {uuid: (t, since)}; an instance not seen in its
        window is left out.
        """

    @abc.abstractmethod
    def record(self, moves, seen=None):
        """Remember ``moves``.

        ``seen`` ({uuid: :class:`Seen`}): the instances just before them,
        where the log has no telemetry of its own.
        """


class InMemoryMoveLog(MoveLog):
    """A move log in memory (the simulator's policies)."""

    def __init__(self):
        self.moves = []
        #: [(time, {uuid: Seen})], oldest first.
        self._seen = []

    def moves_since(self, t):
        return [m for m in self.moves if m.moved_at >= t]

    def _last(self, uuid, t, since, wanted):
        times = [when for when, _ in self._seen]
        for index in range(bisect.bisect_right(times, t) - 1, -1, -1):
            when, seen = self._seen[index]
            if when < since:
                break
            if uuid in seen and wanted(seen[uuid]):
                return seen[uuid]
        return None

    def classes_before(self, when):
        found = {}
        for uuid, (t, since) in when.items():
            seen = self._last(uuid, t, since,
                              lambda s: s.merlin_class is not None)
            if seen is not None:
                found[uuid] = seen.merlin_class
        return found

    def seen_before(self, when):
        found = {}
        for uuid, (t, since) in when.items():
            seen = self._last(uuid, t, since, lambda s: True)
            if seen is not None:
                found[uuid] = seen
        return found

    def record(self, moves, seen=None):
        moves = list(moves)
        self.moves.extend(moves)
        self.moves.sort(key=lambda m: m.moved_at)
        if seen and moves:
            when = min(m.moved_at for m in moves)
            self._seen.append((when, dict(seen)))
            self._seen.sort(key=lambda entry: entry[0])


class StoreMoveLog(MoveLog):
    """The telemetry store's moves and instance history (Watcher).

    The store keeps what the agents measured, so ``record`` needs no
    ``seen``.
    """

    def __init__(self, store):
        self.store = store

    def moves_since(self, t):
        return [Move(m.uuid, m.source_host, m.dest_host, m.moved_at,
                     m.origin) for m in self.store.moves_since(t)]

    def _samples(self, when):
        """{uuid: its samples in its window}: one read for all of them."""
        if not when:
            return {}
        rows = self.store.instances_history(
            when, since=min(since for _, since in when.values()),
            until=max(t for t, _ in when.values()))
        return {uuid: [r for r in rows.get(uuid, ())
                       if since <= r.timestamp <= t]
                for uuid, (t, since) in when.items()}

    def classes_before(self, when):
        found = {}
        for uuid, rows in self._samples(when).items():
            classes = [r.merlin_class for r in rows if r.merlin_class]
            if classes:
                found[uuid] = classes[-1]
        return found

    def seen_before(self, when):
        """The last samples; their memory node from their host's report.

        The samples of one host at one time are one report's, read and
        decoded once.
        """
        last = {uuid: rows[-1]
                for uuid, rows in self._samples(when).items() if rows}
        memory = {}
        for host, timestamp in sorted({(r.host, r.timestamp)
                                       for r in last.values()}):
            for report in self.store.host_history(host, since=timestamp,
                                                  until=timestamp):
                memory.update(
                    ((host, timestamp, record.uuid),
                     reportview.memory_node(record))
                    for record in report.instances if record.uuid in last)
        return {uuid: Seen(row.host, row.node,
                           memory.get((row.host, row.timestamp, uuid)),
                           row.ipc, row.cpu_util, row.merlin_class)
                for uuid, row in last.items()}

    def record(self, moves, seen=None):
        moves = list(moves)
        if moves:
            self.store.record_moves([
                store_api.MoveRecord(m.uuid, m.source_host, m.dest_host,
                                     m.moved_at, m.origin) for m in moves])


def origin_of(base, undo=False, outcome=None):
    """``Move.origin`` of a move by ``base`` (``<runner>:<action>``)."""
    return ':'.join([base] + ([UNDO] if undo else [])
                    + ([outcome] if outcome else []))


def is_undo(move):
    """Whether ``move`` is the measured roll-back's move back."""
    return UNDO in move.origin.split(':')[2:]


def failed(move):
    """Whether ``move`` did not end as planned (:data:`FAILED`, ...)."""
    return move.origin.rsplit(':', 1)[-1] in (FAILED, HALF_DONE, UNKNOWN)


def undone(move_log):
    """{uuid: hosts the measured roll-back took it off}, all the log holds.

    An undo (:func:`is_undo`) that did not fail is a move measured to
    harm: the instance was taken off the host it left (for a re-pin, the
    host it stays on, re-dealt). The harm check does not propose it there
    again while the log remembers the undo (the store's history
    retention; a simulated run's whole length), or the audit after the
    roll-back's hold would plan it again and the roll-back undo it again.
    """
    if move_log is None:
        return {}
    off = {}
    for move in move_log.moves_since(0.0):
        if is_undo(move) and not failed(move):
            off.setdefault(move.uuid, set()).add(move.source_host)
    return off


def moves_of(actions, now, origin, hosts=None):
    """The :class:`Move` s ``actions`` (a plan's, all run) make.

    ``hosts`` ({uuid: host}) gives a quota change's host when the action
    does not say it. A leg marked ``undo`` is recorded as one.
    """
    moves = []
    for action in actions:
        legs = ((action.first, action.second)
                if isinstance(action, cluster.Swap) else (action,))
        for leg in legs:
            mark = origin_of(origin, getattr(leg, 'undo', False))
            if isinstance(leg, cluster.Migrate):
                moves.append(Move(leg.instance, leg.source_host,
                                  leg.dest_host, now, mark))
            elif isinstance(leg, (cluster.Repin, cluster.CpuQuota)):
                host = leg.host or (hosts or {}).get(leg.instance)
                moves.append(Move(leg.instance, host, host, now, mark))
    return moves


def last_moved(move_log, now, cooldown_s):
    """{uuid: last moved_at} over the cool-down window (empty if 0)."""
    if not cooldown_s or move_log is None:
        return {}
    last = {}
    for move in move_log.moves_since(now - cooldown_s):
        last[move.uuid] = max(move.moved_at, last.get(move.uuid, move.moved_at))
    return last

"""Cumulative hardware/software counters -> deltas over one interval.

libvirt reports perf events and vCPU times as counts since the domain
started, but every metric of the host report (IPC, MPKI, MF, CPU
utilisation; Merlin section 3.1, Liu & Li section 4.1) is a rate over the
collection interval. Turning one into the other is where measurements
silently go wrong, so this module decides, for every sample, whether the
difference to the previous one is a real count and says why when it is
not:

* **first sample** (no previous value): nothing to subtract from, so no
  delta (``None``, note ``first_sample``);
* **unavailable** (the source returned nothing): ``None``, note
  ``unavailable``; a tracker also drops its state so the next delta does
  not silently span two intervals;
* **wrap-around**: a ``bits``-wide counter passed its maximum. The value
  dropped by more than half the range (a restarted counter almost never
  does, a wrapped one always does), and when ``max_rate`` is given the
  wrapped delta must also be possible within ``elapsed_s``. Note
  ``wrapped``. A counter that wraps more than once per interval cannot be
  told apart; at 64 bits that takes centuries;
* **reset**: the value dropped and it is not a plausible wrap, so the
  domain (or its perf events) restarted during the interval: the new value
  is what was counted since the restart. Note ``counter_reset``;
* **impossible rate**: the delta divided by ``elapsed_s`` exceeds
  ``max_rate``: a glitch (a migrated domain, a re-enabled event, a buggy
  source), refused as ``None`` with note ``impossible_rate`` rather than
  poisoning the averages downstream;
* **invalid** input (negative, wider than ``bits``, not an integer, or a
  non-positive interval): ``None`` with note ``invalid_value`` /
  ``invalid_interval``.

A ``None`` value always means "not measured", never zero
(see :mod:`contention.report`).
"""

import dataclasses
import math
import numbers
from typing import Optional

FIRST_SAMPLE = 'first_sample'
UNAVAILABLE = 'unavailable'
COUNTER_RESET = 'counter_reset'
WRAPPED = 'wrapped'
IMPOSSIBLE_RATE = 'impossible_rate'
INVALID_VALUE = 'invalid_value'
INVALID_INTERVAL = 'invalid_interval'

#: Notes that mean "the delta is a real measurement" (value is not None).
MEASURED_NOTES = (None, COUNTER_RESET, WRAPPED)


@dataclasses.dataclass(frozen=True)
class Delta:
    """The count over the interval, or None, and what happened.

    ``note`` is None for an ordinary delta; otherwise one of the module's
    constants. ``value`` is never negative.
    """

    value: Optional[int]
    note: Optional[str] = None


def _is_count(value, bits):
    if type(value) is int:      # the common case, without the ABC check
        return 0 <= value < 2 ** bits
    return (isinstance(value, numbers.Integral)
            and not isinstance(value, bool)
            and 0 <= value < 2 ** bits)


def delta(previous, current, elapsed_s, *, bits=64, max_rate=None):
    """The count between two cumulative samples ``elapsed_s`` apart.

    :param previous: the earlier cumulative value, or None (first sample).
    :param current: the later cumulative value, or None (unavailable).
    :param elapsed_s: seconds between the two samples (> 0).
    :param bits: counter width; values wrap at ``2 ** bits``.
    :param max_rate: the highest possible count per second, or None for
        no rate check.
    :returns: :class:`Delta`.
    """
    if current is None:
        return Delta(None, UNAVAILABLE)
    if not _is_count(current, bits):
        return Delta(None, INVALID_VALUE)
    if previous is None:
        return Delta(None, FIRST_SAMPLE)
    if not _is_count(previous, bits):
        return Delta(None, INVALID_VALUE)
    if type(elapsed_s) is not float and (      # float: skip the ABC check
            isinstance(elapsed_s, bool)
            or not isinstance(elapsed_s, numbers.Real)):
        return Delta(None, INVALID_INTERVAL)
    if not math.isfinite(elapsed_s) or elapsed_s <= 0:
        return Delta(None, INVALID_INTERVAL)
    limit = None if max_rate is None else max_rate * elapsed_s
    if current >= previous:
        value, note = current - previous, None
    else:
        wrapped = current + 2 ** bits - previous
        if (previous - current > 2 ** (bits - 1)
                and (limit is None or wrapped <= limit)):
            value, note = wrapped, WRAPPED
        else:
            value, note = current, COUNTER_RESET
    if limit is not None and value > limit:
        return Delta(None, IMPOSSIBLE_RATE)
    return Delta(value, note)


def plausible_max_rates(vcpus, *, max_hz=6.0e9, max_ipc=8.0, slack=1.25):
    """Upper bounds per second for the counters of a domain with ``vcpus``.

    No core runs above ``max_hz`` or retires more than ``max_ipc``
    instructions per cycle, nor misses or references its caches more than
    once per cycle; vCPU time cannot exceed wall time per vCPU (``slack``
    absorbs the skew between the agent's clock and libvirt's sampling).
    Memory-bandwidth bytes are not bounded here (None). The keys are the
    field names of :class:`contention.report.Counters`.
    """
    if vcpus < 1:
        raise ValueError('vcpus must be >= 1, got %r' % (vcpus,))
    cycles = vcpus * max_hz * slack
    return {
        'instructions': cycles * max_ipc,
        'cycles': cycles,
        'cache_references': cycles,
        'cache_misses': cycles,
        'cpu_time_ns': vcpus * 1e9 * slack,
        'vcpu_delay_ns': vcpus * 1e9 * slack,
        'mbm_local_bytes': None,
        'mbm_total_bytes': None,
    }


class CounterTracker(object):
    """Remembers the last cumulative value of each counter of each instance.

    Keys are ``(instance uuid, counter name)``. The agent calls
    :meth:`update` once per counter per interval and :meth:`forget` for the
    keys of instances that vanished, so a uuid reused later (or a domain
    that comes back) starts again from a first sample.
    """

    def __init__(self, bits=64):
        self.bits = bits
        self._last = {}

    def update(self, key, value, timestamp, *, max_rate=None):
        """Record ``value`` seen at ``timestamp`` (seconds); return a Delta.

        Unavailable or invalid values drop the key's state, so the next
        delta never spans more than one interval. A refused rate or a bad
        interval keeps the new value as the baseline: it is the best
        reference the next interval has.
        """
        last = self._last.get(key)
        if last is None:
            previous, elapsed = None, None
        else:
            previous, elapsed = last[0], timestamp - last[1]
        result = delta(previous, value, elapsed, bits=self.bits,
                       max_rate=max_rate)
        if result.note in (UNAVAILABLE, INVALID_VALUE):
            self._last.pop(key, None)
        else:
            self._last[key] = (value, timestamp)
        return result

    def update_all(self, uuid, values, timestamp, max_rates=None):
        """Update every counter of one instance; return name -> Delta.

        ``values`` maps counter names to cumulative values (None =
        unavailable); ``max_rates`` maps names to per-second bounds, e.g.
        :func:`plausible_max_rates`.
        """
        max_rates = max_rates or {}
        return {name: self.update((uuid, name), value, timestamp,
                                  max_rate=max_rates.get(name))
                for name, value in values.items()}

    def keys(self):
        """The (uuid, counter) keys with a remembered value."""
        return frozenset(self._last)

    def forget(self, keys):
        """Drop the state of ``keys`` (those not seen this interval)."""
        for key in keys:
            self._last.pop(key, None)


def instance_notes(deltas):
    """The notes of one instance's deltas, for ``InstanceRecord.notes``.

    ``first_sample`` appears once for the instance (all its counters start
    together); every other note is ``"<note>:<counter>"``, e.g.
    ``counter_reset:instructions``. Ordinary deltas and ``unavailable``
    counters (already visible as null counters and in the report's source
    status) add nothing.
    """
    notes = set()
    for name, result in deltas.items():
        if result.note == FIRST_SAMPLE:
            notes.add(FIRST_SAMPLE)
        elif result.note not in (None, UNAVAILABLE):
            notes.add('%s:%s' % (result.note, name))
    return tuple(sorted(notes))

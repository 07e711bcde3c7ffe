"""The audit's parameters, defined once.

Each field of :class:`SwapParameters` carries its metadata (the name an
operator types, bounds, help, which algorithms take it, a different
default per algorithm); from it come Watcher's ``get_schema()``
(:func:`schema`), the values an audit gets when it passes none or only
some (:func:`from_input`, used by the Watcher strategies and the
simulator's policies alike), and the table of ``doc/watcher.md``
(:func:`doc_table`; ``python -m contention.swap.params`` prints it, a
unit test keeps the doc current).
"""

import dataclasses
import math
import sys

from contention import classify
from contention.swap import arbitration
from contention.swap import measure

CACHE_AWARE = 'cache_aware'
NUMA_AWARE = 'numa_aware'
ALGORITHMS = (CACHE_AWARE, NUMA_AWARE)


def _field(default, help, name=None, minimum=None, maximum=None,
           exclusive_minimum=None, enum=None, algorithms=ALGORITHMS,
           defaults=None, audit=True):
    """A dataclass field with its metadata.

    ``name``: the parameter's name in an audit and a policy (the field's
    by default); ``algorithms``: those that take it; ``defaults``:
    {algorithm: default} where it differs; ``audit``: False for a value
    Watcher takes from its configuration, not from the audit.
    """
    meta = {'help': help, 'name': name, 'minimum': minimum,
            'maximum': maximum, 'exclusive_minimum': exclusive_minimum,
            'enum': enum, 'algorithms': tuple(algorithms),
            'defaults': dict(defaults or {}), 'audit': audit}
    return dataclasses.field(default=default, metadata=meta)


@dataclasses.dataclass(frozen=True)
class SwapParameters:
    """Parameters of one audit (both of Ahn et al.'s schedulers).

    The help of each field says what it does; the longer reasons are in
    the modules of the phases that read them.
    """

    threshold: float = _field(
        5e6, minimum=0,
        help='Smallest difference in LLC misses per second between the '
             'most and least loaded hosts (sockets for numa_aware_swap) '
             'worth a swap (Ahn et al.\'s threshold).')
    max_swaps: int = _field(
        5, minimum=0, maximum=1000,
        help='Most swaps (or one-way moves) one audit proposes.')
    victim_selection: str = _field(
        arbitration.SENSITIVITY_COST, enum=arbitration.VICTIM_SELECTIONS,
        help='extreme: the papers\' rule (the VM with the most misses on '
             'the most loaded unit, the one with the fewest on the least '
             'loaded). sensitivity_cost: among moves reducing the spread '
             'about as much, move the least memory-bound (low MF), '
             'smallest and lowest-priority instances.')
    cooldown_s: float = _field(
        3600.0, name='cooldown', minimum=0,
        help='Seconds during which an instance that was moved (migrated, '
             're-pinned, its CPU quota changed, or a leg of a swap that '
             'failed) is not moved again.')
    tolerance: float = _field(
        0.1, minimum=0, maximum=1,
        help='sensitivity_cost: moves within this fraction of the best '
             'reduction compete on sensitivity and cost. extreme: '
             'instances within this fraction of the most misses of the '
             'most loaded unit are victims too, and those within it of '
             'the fewest of the least loaded unit partners too.')
    migration_cost_per_gib: float = _field(
        2.5e5, minimum=0,
        help='Cost of moving one GiB of memory (live migration or a '
             're-pin with memory), in LLC misses/s of spread reduction; a '
             'move that reduces the difference by less than the cost of '
             'the memory it moves is skipped.')
    local_phase: bool = _field(
        True, algorithms=(CACHE_AWARE,),
        help='Re-pin instances within each host so its sockets have even '
             'LLC misses before swapping between hosts.')
    local_memory_mf: float = _field(
        classify.DEFAULT_THRESHOLDS.mf_low, minimum=0,
        algorithms=(CACHE_AWARE,),
        help='A re-pinned instance keeps its memory where it is only if '
             'its Memory Factor is below this (little DRAM traffic) and '
             'it is not a service answering requests; otherwise its '
             'memory moves with its vCPUs.')
    numa_repair: bool = _field(
        True,
        help='Before any swap, give an instance whose memory is mostly on '
             'another socket than its vCPUs the cheaper repair that pays: '
             're-pin its vCPUs to its memory\'s socket, or move its memory '
             'to its vCPUs\' node (contention_repin with move_memory).')
    cpu_quota: bool = _field(
        True,
        help='After the moves, give a capped instance using over 0.8 of '
             'its CPU quota one more core (contention_cpu_quota) when its '
             'socket has one free and no MC/IC-sensitive co-runner there '
             'would suffer its extra misses (Merlin sections 3.3-3.5).')
    min_predicted_gain: float = _field(
        0.1, minimum=0, maximum=1,
        help='A move must lower the predicted contention (co-runners\' LLC '
             'misses weighted by each instance\'s sensitivity) of the '
             'sockets it touches by its cost plus this fraction of it: a '
             'margin for the estimate\'s error.')
    max_vm_harm: float = _field(
        0.05, minimum=0, maximum=1,
        help='No instance\'s predicted performance (the placement model\'s, '
             'where it knows the instance\'s class) may fall by more than '
             'this fraction; the moves that would are dropped, and a plan '
             'lowering the predicted mean is dropped whole. Without a '
             'prediction, the co-runner LLC misses an instance faces, '
             'times its sensitivity, may not rise by more than this '
             'fraction of the misses of the cache it shares (its own with '
             'its co-runners\') where it lives on its cache, else of an '
             'average socket\'s load (or of what it faced, if more), nor '
             'may the share of its own LLC misses a re-pin '
             'leaves on another socket\'s memory, times the remote '
             'penalty (%g) and its sensitivity, rise by more than this '
             'fraction, nor, where the agents report their nodes\' memory '
             'bandwidth, the queue its misses meet at the memory '
             'controllers, times %g and its Memory Factor. Within the '
             'cool-down the audits share one bound: '
             'what an instance measures lost since our first move on its '
             'host (as rollback_harm measures it) is not available to the '
             'next plan\'s end.'
             % (measure.REMOTE_PENALTY, measure.MC_QUEUE_PENALTY))
    max_latency_harm: float = _field(
        0.02, minimum=0, maximum=1,
        help='max_vm_harm for latency services (those whose flavor\'s '
             'contention:profile says latency=1; where the flavor declares '
             'nothing, an instance using under %g of its CPU), whose '
             'response time suffers first.' % measure.SERVING_UTIL)
    rollback_harm: float = _field(
        0.15, minimum=0, maximum=1,
        help='Undo our moves on a host where an instance measures more '
             'than this fraction slower than before the first of them '
             'within the cool-down (its instructions per cycle; a service, '
             'its response time at the utilisation it had, netted at the '
             'same multiple of max_latency_harm): migrations go '
             'back to their host and socket, re-pins to their socket, each '
             'instance at most once per cool-down, and the host takes no '
             'new move until the cool-down has passed; an undone move is '
             'not proposed again while the move log remembers it. The '
             'audit that undoes plans nothing else; 0 never undoes. A host '
             'is judged only once the copies of our moves on it have '
             'ended. The default, three times max_vm_harm, is a net for a '
             'VM made much worse: on generated clusters it took the worst '
             'VM from 30-53 % slower to 6-22 % for under 1 % of the gain, '
             'and stays above counter noise and the papers\' own trades (a '
             'CPU-bound VM a few per cent slower for a memory-bound one '
             'much faster), which a value at max_vm_harm undoes '
             '(doc/watcher.md, "Measured roll-back"; simulated).')
    across_cpu_models: bool = _field(
        False,
        help='Also move instances between hosts whose agents report '
             'different CPU models. Off by default: the harm check '
             'estimates co-runners, not the speed of other hardware, and '
             'on generated clusters mixing hardware generations the moves '
             'it let through to slower machines cost instances up to 27 % '
             '(simulated). Between CPU vendors Nova cannot live-migrate, '
             'whatever this says.')
    contention_swaps: bool = _field(
        False, defaults={NUMA_AWARE: True},
        help='After the balancing, use the swaps left (max_swaps) on the '
             'swaps between the most and least contended units that lower '
             'the predicted contention most, even when the LLC misses are '
             'already even.')
    freshness: float = _field(
        120.0, exclusive_minimum=0,
        help='Seconds after which a host\'s latest report is too old to '
             'act on.')
    max_missing_ratio: float = _field(
        0.2, minimum=0, maximum=1,
        help='If more than this fraction of the instances in scope have no '
             'fresh telemetry, propose nothing and fail the audit with the '
             'reason.')
    repercussion_interval: float = _field(
        3600.0, minimum=0, audit=False,
        help='Seconds after a move during which its co-runners are watched '
             '(Merlin\'s repercussion check): a co-runner whose Merlin class '
             'got worse since the move has its host arbitrated first by the '
             'next audit. 0 disables the check.')

    def __post_init__(self):
        for f in dataclasses.fields(self):
            _check(f, getattr(self, f.name))


def _check(f, value):
    meta = f.metadata
    name = meta['name'] or f.name
    if f.type in (float, 'float'):
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and not math.isnan(value))
        kind = 'a number'
    elif f.type in (int, 'int'):
        ok = isinstance(value, int) and not isinstance(value, bool)
        kind = 'an integer'
    elif f.type in (bool, 'bool'):
        ok = isinstance(value, bool)
        kind = 'true or false'
    else:
        ok = isinstance(value, str)
        kind = 'a string'
    if not ok:
        raise ValueError('%s must be %s, not %r' % (name, kind, value))
    if meta['enum'] is not None and value not in meta['enum']:
        raise ValueError('%s must be one of %s, not %r'
                         % (name, ', '.join(meta['enum']), value))
    if meta['minimum'] is not None and value < meta['minimum']:
        raise ValueError('%s must be %s >= %s, not %r'
                         % (name, kind, meta['minimum'], value))
    if meta['maximum'] is not None and value > meta['maximum']:
        raise ValueError('%s must be %s <= %s, not %r'
                         % (name, kind, meta['maximum'], value))
    if (meta['exclusive_minimum'] is not None
            and value <= meta['exclusive_minimum']):
        raise ValueError('%s must be %s > %s, not %r'
                         % (name, kind, meta['exclusive_minimum'], value))


def fields(algorithm=None, audit_only=False):
    """The fields ``algorithm`` takes (all with None), in order."""
    return [f for f in dataclasses.fields(SwapParameters)
            if (algorithm is None or algorithm in f.metadata['algorithms'])
            and (f.metadata['audit'] or not audit_only)]


def name_of(f):
    """The name an operator gives ``f`` in an audit or a policy."""
    return f.metadata['name'] or f.name


def default(f, algorithm):
    return f.metadata['defaults'].get(algorithm, f.default)


def _coerce(f, value):
    """``value`` (maybe text, from ``--policy-arg``) as ``f``'s type."""
    name = name_of(f)
    try:
        if f.type in (bool, 'bool'):
            if isinstance(value, str):
                text = value.lower()
                if text not in ('true', 'false', '1', '0', 'yes', 'no'):
                    raise ValueError('expected true or false')
                return text in ('true', '1', 'yes')
            return bool(value)
        if f.type in (float, 'float'):
            return float(value)
        if f.type in (int, 'int'):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError('expected an integer')
            return int(value)
    except (TypeError, ValueError) as exc:
        raise ValueError('%s: %r is not valid: %s' % (name, value, exc))
    return value


def from_input(algorithm, given=None):
    """SwapParameters from ``given`` ({name: value}), defaults filled in.

    A missing or None value takes ``algorithm``'s default (Watcher passes
    no parameters when an audit sets none); text is converted to the
    field's type. An unknown name is an error that names it.
    """
    given = dict(given or {})
    by_name = {name_of(f): f for f in dataclasses.fields(SwapParameters)}
    unknown = sorted(set(given) - set(by_name))
    if unknown:
        raise ValueError('unknown parameter(s) %s; known: %s'
                         % (', '.join(unknown), ', '.join(sorted(by_name))))
    values = {}
    for name, f in by_name.items():
        value = given.get(name)
        if value is None or (algorithm not in f.metadata['algorithms']
                             and name not in given):
            value = default(f, algorithm)
        values[f.name] = _coerce(f, value)
    return SwapParameters(**values)


def as_input(params, algorithm=None):
    """{name: value} of ``params`` (the inverse of :func:`from_input`)."""
    return {name_of(f): getattr(params, f.name) for f in fields(algorithm)}


def schema(algorithm):
    """Watcher's ``get_schema()`` for ``algorithm``'s audit parameters."""
    properties = {}
    for f in fields(algorithm, audit_only=True):
        meta = f.metadata
        prop = {'description': meta['help'],
                'type': _JSON_TYPES[f.type if isinstance(f.type, str)
                                    else f.type.__name__],
                'default': default(f, algorithm)}
        if meta['enum'] is not None:
            prop['enum'] = list(meta['enum'])
        for key, schema_key in (('minimum', 'minimum'),
                                ('maximum', 'maximum'),
                                ('exclusive_minimum', 'exclusiveMinimum')):
            if meta[key] is not None:
                prop[schema_key] = meta[key]
        properties[name_of(f)] = prop
    return {'type': 'object', 'properties': properties,
            'additionalProperties': False}


_JSON_TYPES = {'float': 'number', 'int': 'integer', 'bool': 'boolean',
               'str': 'string'}


def doc_table():
    """The Markdown table of every parameter (``doc/watcher.md``)."""
    rows = ['| Parameter | Type | Default (cache_aware / numa_aware) | '
            'Bounds | What it does |',
            '|---|---|---|---|---|']
    for f in fields():
        meta = f.metadata
        kind = f.type if isinstance(f.type, str) else f.type.__name__
        defaults = []
        for algorithm in ALGORITHMS:
            if algorithm in meta['algorithms']:
                defaults.append('%s' % (default(f, algorithm),))
            else:
                defaults.append('-')
        shown = (defaults[0] if defaults[0] == defaults[1]
                 else ' / '.join(defaults))
        bounds = []
        if meta['enum'] is not None:
            bounds.append(', '.join(meta['enum']))
        if meta['minimum'] is not None:
            bounds.append('>= %s' % meta['minimum'])
        if meta['exclusive_minimum'] is not None:
            bounds.append('> %s' % meta['exclusive_minimum'])
        if meta['maximum'] is not None:
            bounds.append('<= %s' % meta['maximum'])
        where = '' if meta['audit'] else (
            ' (Watcher: the `[watcher_strategies.<strategy>]` option of '
            'this name, not an audit parameter)')
        rows.append('| `%s` | %s | %s | %s | %s%s |' % (
            name_of(f), _JSON_TYPES[kind], shown, '; '.join(bounds) or '-',
            meta['help'], where))
    return '\n'.join(rows) + '\n'


if __name__ == '__main__':
    sys.stdout.write(doc_table())

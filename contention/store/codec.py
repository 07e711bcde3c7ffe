"""Fast encoding of host reports to and from stored JSON.

Reports are validated once, when the collector receives them
(:meth:`HostReport.from_dict`). What the store wrote itself is trusted on
the way back, so decoding skips validation: it walks a plan derived once
per dataclass from its type hints, so it follows the schema in
:mod:`contention.report` without restating it. Encoding is orjson's, which
serialises the frozen dataclasses directly (their fields only, in order)
about seven times faster than ``dataclasses.asdict`` and ``json.dumps``;
together this is what lets one collector store a thousand reports a second
and the readers decode thousands of hosts per request.

Stored form: compact JSON of the report's dict (exactly what ``to_dict``
gives, so any JSON tool can read it), zlib-compressed (a 40-instance report
shrinks from about 48 KiB to 11 KiB with random counter values; real ones
compress better).
"""

import dataclasses
import hashlib
import types
import typing
import zlib

import orjson

from contention import report as report_mod

_SCALAR, _DATACLASS, _TUPLE, _TUPLE_DC, _DICT, _DICT_INT, _OPT_DC = range(7)

_PLANS = {}


def _kind(hint):
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1 and dataclasses.is_dataclass(inner[0]):
            return _OPT_DC, inner[0]
        return _kind(inner[0]) if len(inner) == 1 else (_SCALAR, None)
    if origin is tuple:
        if dataclasses.is_dataclass(args[0]):
            return _TUPLE_DC, args[0]
        return _TUPLE, None
    if origin is dict:
        return (_DICT_INT if args[0] is int else _DICT), None
    if dataclasses.is_dataclass(hint):
        return _DATACLASS, hint
    return _SCALAR, None


def _plan(cls):
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls)
        # Only the fields whose JSON value is not already the value.
        fields = tuple(
            (f.name,) + kind for f in dataclasses.fields(cls)
            for kind in [_kind(hints[f.name])] if kind[0] != _SCALAR)
        # Building through __dict__ skips the frozen __init__'s
        # object.__setattr__ per field; only safe for plain dataclasses.
        plain = not hasattr(cls, '__slots__') and not hasattr(
            cls, '__post_init__')
        # A report stored before a minor version added an optional field
        # lacks it; __init__ would fill its default, __dict__ does not.
        defaults = tuple(
            (f.name, f.default, f.default_factory)
            for f in dataclasses.fields(cls)
            if f.default is not dataclasses.MISSING
            or f.default_factory is not dataclasses.MISSING)
        plan = _PLANS[cls] = (fields, plain, len(dataclasses.fields(cls)),
                              defaults)
    return plan


#: Small all-scalar dataclasses that thousands of decoded reports share
#: (overhead levels 0-3, the same few source statuses): decoded once and
#: reused, which is safe because they are frozen.
_INTERNED = (report_mod.NodeOverhead, report_mod.SourceStatus)
_INTERN_MAX = 4096
_interned = {}


def from_plain(cls, data):
    """The dataclass of freshly decoded JSON this module wrote; no checks.

    ``data`` must be the caller's own: its dicts become the result's. JSON
    written by an older minor version of the schema may lack the optional
    fields added since; they get their defaults, as ``from_dict`` gives
    them (checked only by counting keys, so current data pays nothing).
    """
    if cls in _INTERNED:
        key = (cls,) + tuple(data.values())
        obj = _interned.get(key)
        if obj is None:
            if len(_interned) >= _INTERN_MAX:
                _interned.clear()
            obj = _interned[key] = _from_plain(cls, data)
        return obj
    return _from_plain(cls, data)


def _from_plain(cls, data):
    converted, plain, nfields, defaults = _plan(cls)
    if plain:
        obj = cls.__new__(cls)
        values = obj.__dict__
        values.update(data)
    else:
        values = dict(data)
    older = len(data) < nfields
    if older:
        # Written by an older minor version: convert what is there, then
        # give the fields it lacks their defaults (already Python values).
        converted = [c for c in converted if c[0] in values]
    for name, kind, sub in converted:
        value = values[name]
        if value is None:
            continue
        if kind == _TUPLE:
            value = tuple(tuple(v) if isinstance(v, list) else v
                          for v in value)
        elif kind == _TUPLE_DC:
            value = tuple([from_plain(sub, item) for item in value])
        elif kind == _DICT_INT:
            value = {int(k): v for k, v in value.items()}
        elif kind == _DICT:
            continue    # a JSON object decoded for this call alone
        else:
            value = from_plain(sub, value)
        values[name] = value
    if older and plain:
        for name, default, factory in defaults:
            if name not in values:
                values[name] = (default if factory is dataclasses.MISSING
                                else factory())
    return obj if plain else cls(**values)


#: Integer keys (memory per NUMA node) become JSON strings, as json does.
_OPTIONS = orjson.OPT_NON_STR_KEYS


def dumps(obj):
    """Compact JSON bytes of dataclasses, tuples, dicts and scalars."""
    return orjson.dumps(obj, option=_OPTIONS)


def encode(report):
    """Compressed JSON bytes of a HostReport."""
    return zlib.compress(dumps(report), 1)


_SUMMARY_FIELDS = tuple(f.name for f in dataclasses.fields(
    report_mod.HostReport) if f.name not in ('instances', 'topology'))


def encode_latest(report):
    """(body, summary, topology text, topology digest) of a report.

    What a ``latest_reports`` row holds.
    """
    topology = report.topology
    nameless = {f.name: getattr(topology, f.name)
                for f in dataclasses.fields(topology)}
    nameless['hostname'] = ''
    topology_text = dumps(nameless).decode('utf-8')
    head = {name: getattr(report, name) for name in _SUMMARY_FIELDS}
    head['topology_hostname'] = topology.hostname
    summary = dumps(head).decode('utf-8')
    return (encode(report), summary, topology_text,
            topology_digest(topology_text))


def decode(blob):
    """The HostReport stored by :func:`encode`."""
    return from_plain(report_mod.HostReport,
                      orjson.loads(zlib.decompress(blob)))


# -- the node-level view (latest reports without their instances) --------
#
# The Nova weigher reads every host's latest report once per cache TTL and
# uses only the node aggregates and the topology. Decoding 40 instance
# records per host would cost milliseconds per host; the summary is the
# report without its instances (a few hundred bytes of JSON). Topologies
# hardly ever change and hosts of one hardware model share theirs except
# for the host name, so the topology is stored apart without its host
# name (the summary carries it), under a digest of that text: a reader
# decodes one topology per hardware model and change, not per report.

def topology_digest(text):
    return hashlib.sha1(text.encode('utf-8')).hexdigest()


def decode_topology(text):
    """The topology text of :func:`encode_latest` (host name empty)."""
    from contention import topology as topology_mod
    return from_plain(topology_mod.HostTopology, orjson.loads(text))


def decode_summary(text, topology_of):
    """A HostReport without instances, from a summary.

    ``topology_of(hostname)`` gives the report's topology by the host name
    the summary recorded for it.
    """
    data = orjson.loads(text)
    hostname = data.pop('topology_hostname')
    data['instances'] = ()
    data['topology'] = None
    report = from_plain(report_mod.HostReport, data)
    object.__setattr__(report, 'topology', topology_of(hostname))
    return report

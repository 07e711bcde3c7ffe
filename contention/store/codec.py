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
gives, so any JSON tool can read it), compressed as an LZ4 frame (a
40-instance report shrinks from about 44 KiB to 17 KiB with random counter
values; real ones compress better). Bodies written before are zlib
streams, and still decode: the two are told apart by the LZ4 frame's magic
number. LZ4 rather than zlib because zlib's fastest level took 0.3 ms per
report, a fifth of the collector's CPU, and LZ4 takes 0.07 ms (and
decompresses three times faster) for about 45 % more bytes on disk.
"""

import dataclasses
import hashlib
import types
import typing
import zlib

import lz4.frame
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


#: Small all-scalar dataclasses that thousands of decoded reports share
#: (overhead levels 0-3, the same few source statuses): decoded once and
#: reused, which is safe because they are frozen.
_INTERNED = (report_mod.NodeOverhead, report_mod.SourceStatus)
_INTERN_MAX = 4096
_interned = {}
_DECODERS = {}


def from_plain(cls, data):
    """The dataclass of freshly decoded JSON this module wrote; no checks.

    ``data`` must be the caller's own: its dicts become the result's.
    """
    decoder = _DECODERS.get(cls)
    if decoder is None:
        decoder = _DECODERS[cls] = _compile_decoder(cls)
    return decoder(data)


def _dict_values(data):
    return tuple(data.values())


def _interning(cls, decode, key=_dict_values):
    """``decode`` sharing one object per distinct ``key(data)``.

    Keyed by the field values in declaration order, so a value decoded
    from a stored object and from a summary row is the same object.
    """
    def decode_interned(data):
        key_ = (cls, key(data))
        obj = _interned.get(key_)
        if obj is None:
            if len(_interned) >= _INTERN_MAX:
                _interned.clear()
            obj = _interned[key_] = decode(data)
        return obj
    return decode_interned


def _compile_decoder(cls):
    """Generated source converting only the fields JSON cannot hold as is.

    One function per dataclass, so a node-level read of 10,000 hosts does
    not walk a generic plan per object. A field missing from stored JSON
    (a report stored before the field existed) takes its default.
    """
    hints = typing.get_type_hints(cls)
    every = dataclasses.fields(cls)
    env = {'cls': cls, 'new': object.__new__, 'setattr': object.__setattr__,
           'from_plain': from_plain}
    body = ['def decode(data):']
    defaults = []
    for i, field in enumerate(every):
        if field.default is not dataclasses.MISSING:
            env['d%d' % i] = field.default
            defaults.append('        data.setdefault(%r, d%d)' % (field.name, i))
        elif field.default_factory is not dataclasses.MISSING:
            env['f%d' % i] = field.default_factory
            defaults += ['        if %r not in data:' % field.name,
                         '            data[%r] = f%d()' % (field.name, i)]
        kind, sub = _kind(hints[field.name])
        if kind in (_SCALAR, _DICT):
            continue    # _DICT: a JSON object decoded for this call alone
        env['s%d' % i] = sub
        name = field.name
        convert = {
            _TUPLE: 'tuple([tuple(x) if type(x) is list else x for x in v])',
            _TUPLE_DC: 'tuple([from_plain(s%d, x) for x in v])' % i,
            _DICT_INT: '{int(k): x for k, x in v.items()}',
        }.get(kind, 'from_plain(s%d, v)' % i)
        # .get: a field missing from older JSON is left to its default.
        body += ['    v = data.get(%r)' % name, '    if v is not None:',
                 '        data[%r] = %s' % (name, convert)]
    if defaults:
        # After the conversions: a default is already what the class holds.
        env['N'] = len(every)
        body += ['    if len(data) < N:'] + defaults
    if _plain(cls):
        # The decoded dict becomes the object's __dict__: no copy, and
        # none of the frozen __init__'s object.__setattr__ per field.
        body += ['    obj = new(cls)', "    setattr(obj, '__dict__', data)",
                 '    return obj']
    else:
        body.append('    return cls(**data)')
    return _finish_decoder(cls, body, env)


def _plain(cls):
    """Whether an object of ``cls`` may be built by filling its __dict__."""
    return not (hasattr(cls, '__slots__') or hasattr(cls, '__post_init__'))


def _finish_decoder(cls, body, env, key=_dict_values):
    """Compile the generated function ``decode`` of ``body``."""
    exec('\n'.join(body), env)      # noqa: S102 (our own generated source)
    decode = env['decode']
    return _interning(cls, decode, key) if cls in _INTERNED else decode


#: Integer keys (memory per NUMA node) become JSON strings, as json does.
_OPTIONS = orjson.OPT_NON_STR_KEYS


def dumps(obj):
    """Compact JSON bytes of dataclasses, tuples, dicts and scalars."""
    return orjson.dumps(obj, option=_OPTIONS)


#: What every LZ4 frame starts with (a zlib stream starts with 0x78).
_LZ4_MAGIC = b'\x04\x22\x4d\x18'


def encode(report):
    """Compressed JSON bytes of a HostReport."""
    return lz4.frame.compress(dumps(report))


def decompress(blob):
    """The JSON bytes of a stored body (LZ4 frame, or zlib from before)."""
    if bytes(blob[:4]) == _LZ4_MAGIC:
        return lz4.frame.decompress(blob)
    return zlib.decompress(blob)


def decode(blob):
    """The HostReport stored by :func:`encode`."""
    return from_plain(report_mod.HostReport, orjson.loads(decompress(blob)))


# -- the node-level view (latest reports without their instances) --------
#
# The Nova weigher reads every host's latest report once per cache TTL and
# uses only the node aggregates and the topology. Decoding 40 instance
# records per host would cost milliseconds per host; the summary is the
# report without its instances. Topologies hardly ever change and hosts of
# one hardware model share theirs except for the host name, so the topology
# is stored apart without its host name (the summary carries it), under a
# digest of that text: a reader decodes one topology per hardware model and
# change, not per report.
#
# The summary is a row, not an object: a JSON array of the field values in
# declaration order, nested dataclasses as arrays too, behind a tag naming
# that layout. Without the keys it is under half the bytes to send and to
# parse, and its decoder indexes a list instead of converting a dict; that
# is most of a 10,000-host read. It is a cache of the report (the body is
# the record), so a summary of another layout (written by another release,
# or an object from before this form) is not decoded: its host is read from
# its body instead, until its next report replaces the row.

def topology_digest(text):
    return hashlib.sha1(text.encode('utf-8')).hexdigest()


def decode_topology(text):
    """The topology text of :func:`encode_latest` (host name empty)."""
    from contention import topology as topology_mod
    return from_plain(topology_mod.HostTopology, orjson.loads(text))


#: HostReport fields a summary leaves out: the instances are the bulk of a
#: report, the topology is stored apart.
_NOT_SUMMARISED = ('topology', 'instances')
_ROW_ENCODERS = {}
_ROW_DECODERS = {}


def _row_fields(cls):
    skip = _NOT_SUMMARISED if cls is report_mod.HostReport else ()
    hints = typing.get_type_hints(cls)
    return [(f.name, _kind(hints[f.name])) for f in dataclasses.fields(cls)
            if f.name not in skip]


def _row_layout(cls):
    """The field names of ``cls``'s row, nested rows as [name, [...]]."""
    layout = []
    for name, (kind, sub) in _row_fields(cls):
        layout.append([name, _row_layout(sub)] if sub else name)
    return layout


def _row_codec(cls, table, compile_):
    fn = table.get(cls)
    if fn is None:
        fn = table[cls] = compile_(cls)
    return fn


def _compile_row_encoder(cls):
    """``enc(obj)``: the list of ``obj``'s summarised field values."""
    env, items = {}, []
    for i, (name, (kind, sub)) in enumerate(_row_fields(cls)):
        if sub is not None:
            env['e%d' % i] = _row_codec(sub, _ROW_ENCODERS,
                                        _compile_row_encoder)
        value = 'o.%s' % name
        items.append({
            _DATACLASS: 'e%d(%s)' % (i, value),
            _OPT_DC: 'None if %s is None else e%d(%s)' % (value, i, value),
            _TUPLE_DC: '[e%d(x) for x in %s]' % (i, value),
        }.get(kind, value))
    exec('def enc(o):\n    return [%s]' % ', '.join(items),  # noqa: S102
         env)
    return env['enc']


def _compile_row_decoder(cls):
    """``decode(row)``: the dataclass of a row :func:`_compile_row_encoder` made.

    One generated function per dataclass that stores the row's positions
    into a new object's own ``__dict__``, field by field in declaration
    order, nested decoders called directly. Filled in that order the dict
    keeps sharing its keys with the class's other objects, so it holds
    only the values: half the memory of a dict of its own, and twice as
    fast to build and free at 10,000 hosts. Small all-scalar values
    (overhead levels, source statuses) are shared between decoded reports,
    and so is a whole tuple of them (the same few sources on every host).
    """
    hints = typing.get_type_hints(cls)
    env = {'cls': cls, 'new': object.__new__}
    position = {name: i for i, (name, _) in enumerate(_row_fields(cls))}
    items = []
    for field in dataclasses.fields(cls):
        name = field.name
        if name not in position:        # HostReport's topology, instances
            items.append((name, '()' if name == 'instances' else 'None'))
            continue
        i = position[name]
        kind, sub = _kind(hints[name])
        value = 'v[%d]' % i
        if sub is not None:
            env['d%d' % i] = _row_codec(sub, _ROW_DECODERS,
                                        _compile_row_decoder)
        if kind == _TUPLE_DC and sub in _INTERNED:
            env['d%d' % i] = _interned_tuple(env['d%d' % i])
            convert = 'd%d(%s)' % (i, value)
        else:
            convert = {
                _DATACLASS: 'd%d(%s)' % (i, value),
                _OPT_DC: 'None if %s is None else d%d(%s)' % (value, i,
                                                              value),
                _TUPLE_DC: 'tuple([d%d(x) for x in %s])' % (i, value),
                _TUPLE: 'tuple([tuple(x) if type(x) is list else x '
                        'for x in %s])' % value,
                _DICT_INT: '{int(k): x for k, x in %s.items()}' % value,
            }.get(kind, value)
        items.append((name, convert))
    body = ['def decode(v):']
    if _plain(cls):
        body += ['    obj = new(cls)', '    data = obj.__dict__']
        body += ['    data[%r] = %s' % item for item in items]
        body.append('    return obj')
    else:
        body.append('    return cls(**{%s})' % ', '.join(
            '%r: %s' % item for item in items))
    return _finish_decoder(cls, body, env, key=tuple)


def _interned_tuple(decode_one):
    """Decode a list of rows of an interned class as one shared tuple."""
    shared = {}

    def decode_all(rows):
        key = tuple([tuple(row) for row in rows])
        value = shared.get(key)
        if value is None:
            if len(shared) >= _INTERN_MAX:
                shared.clear()
            value = shared[key] = tuple([decode_one(row) for row in rows])
        return value
    return decode_all


#: Names the summary's row layout: any change to a summarised field (a new
#: minor version's field, a rename) gives another tag.
SUMMARY_LAYOUT = hashlib.sha1(orjson.dumps(
    _row_layout(report_mod.HostReport))).hexdigest()[:8]


def encode_latest(report):
    """(body, summary, topology text, topology digest) of a report.

    What a ``latest_reports`` row holds.
    """
    topology = report.topology
    nameless = {f.name: getattr(topology, f.name)
                for f in dataclasses.fields(topology)}
    nameless['hostname'] = ''
    topology_text = dumps(nameless).decode('utf-8')
    encode_row = _row_codec(report_mod.HostReport, _ROW_ENCODERS,
                            _compile_row_encoder)
    summary = dumps([SUMMARY_LAYOUT, topology.hostname,
                     encode_row(report)]).decode('utf-8')
    return (encode(report), summary, topology_text,
            topology_digest(topology_text))


def decode_summary(text):
    """(topology's host name, HostReport without instances), or None.

    The report's topology is None until :func:`with_topology` sets the one
    the caller keeps for that host name (the summary does not hold it).
    None: the summary is of another layout, and the report must be read
    from its body.
    """
    data = orjson.loads(text)
    if type(data) is not list or data[0] != SUMMARY_LAYOUT:
        return None
    decode_row = _ROW_DECODERS.get(report_mod.HostReport) or _row_codec(
        report_mod.HostReport, _ROW_DECODERS, _compile_row_decoder)
    return data[1], decode_row(data[2])


def with_topology(report, topology):
    """``report`` (just decoded by :func:`decode_summary`) given its topology.

    Set in place: the report is the caller's own until returned, and
    replacing a frozen dataclass would copy it.
    """
    object.__setattr__(report, 'topology', topology)
    return report

"""Load plain dicts (decoded JSON) into frozen dataclasses, checking types.

Reports cross a message bus from hosts we do not control, so every field is
checked on the way in: its type, that floats are finite, that counts are not
negative. The checks are driven by the dataclasses' own type hints, so the
schema is written once, in the dataclass, and cannot drift from the loader.

Supported annotations: ``int``, ``float``, ``str``, ``bool``,
``Optional[X]``, ``tuple[X, ...]``, ``dict[K, V]`` (JSON object keys are
converted to ``K``) and nested dataclasses. A field's ``metadata`` may carry
``minimum`` (inclusive; for a tuple or dict it applies to every item) and
``choices``.
"""

import dataclasses
import math
import re
import types
import typing

_INT_KEY = re.compile(r'0|-?[1-9][0-9]*')


class InvalidData(ValueError):
    """A value does not match its schema; says where and why."""

    def __init__(self, path, problem):
        super().__init__('%s: %s' % (path, problem))
        self.path = path
        self.problem = problem


def load(cls, data, path):
    """Build dataclass ``cls`` from ``data``; raise InvalidData on mismatch."""
    return _load_dataclass(cls, data, path)


_HINTS = {}


def _hints(cls):
    hints = _HINTS.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _HINTS[cls] = hints
    return hints


_FIELDS = {}


def _fields(cls):
    """(fields to load, names of all fields) of ``cls``, computed once."""
    known = _FIELDS.get(cls)
    if known is None:
        every = dataclasses.fields(cls)
        known = _FIELDS[cls] = (tuple(f for f in every if f.init),
                                frozenset(f.name for f in every))
    return known


def _load_dataclass(cls, data, path):
    if not isinstance(data, dict):
        raise InvalidData(path, 'expected an object, got %s'
                          % type(data).__name__)
    hints = _hints(cls)
    init_fields, names = _fields(cls)
    kwargs = {}
    for field in init_fields:
        fpath = '%s.%s' % (path, field.name)
        if field.name not in data:
            if (field.default is not dataclasses.MISSING
                    or field.default_factory is not dataclasses.MISSING):
                continue
            raise InvalidData(fpath, 'missing field')
        value = _load_value(hints[field.name], data[field.name], fpath)
        _check_metadata(field, value, fpath)
        kwargs[field.name] = value
    unknown = set(data) - names
    if unknown:
        raise InvalidData(path, 'unknown field(s) %s'
                          % ', '.join(sorted(map(str, unknown))))
    return cls(**kwargs)


def _check_metadata(field, value, path):
    minimum = field.metadata.get('minimum')
    if minimum is not None and value is not None:
        if isinstance(value, dict):
            values = tuple(value.values())
        elif isinstance(value, tuple):
            values = value
        else:
            values = (value,)
        for item in values:
            if item < minimum:
                raise InvalidData(path, 'must be >= %s, got %r'
                                  % (minimum, item))
    choices = field.metadata.get('choices')
    if choices is not None and value is not None and value not in choices:
        raise InvalidData(path, 'must be one of %s, got %r'
                          % (', '.join(map(repr, choices)), value))


_SHAPES = {}


def _shape(hint):
    """(origin, args, is a dataclass) of a type hint, computed once."""
    shape = _SHAPES.get(hint)
    if shape is None:
        shape = _SHAPES[hint] = (typing.get_origin(hint),
                                 typing.get_args(hint),
                                 dataclasses.is_dataclass(hint))
    return shape


#: Item types whose JSON values are already what the dataclass holds, so
#: a list of them all of exactly that type is checked in one pass (a
#: report has thousands of CPU ids); anything else takes the item-by-item
#: path, which names the offending item.
_PLAIN_ITEMS = (int, str)


def _load_value(hint, value, path):
    origin, args, is_dataclass = _shape(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError('unsupported union %r at %s' % (hint, path))
        return _load_value(inner[0], value, path)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise InvalidData(path, 'expected a list, got %s'
                              % type(value).__name__)
        item_hint = args[0]
        if item_hint in _PLAIN_ITEMS and all(
                type(item) is item_hint for item in value):
            return tuple(value)
        return tuple(_load_value(item_hint, item, '%s[%d]' % (path, i))
                     for i, item in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise InvalidData(path, 'expected an object, got %s'
                              % type(value).__name__)
        key_hint, value_hint = args
        result = {}
        for key, item in value.items():
            kpath = '%s[%r]' % (path, key)
            result[_load_key(key_hint, key, kpath)] = _load_value(
                value_hint, item, kpath)
        return result
    if is_dataclass:
        return _load_dataclass(hint, value, path)
    return _load_scalar(hint, value, path)


def _load_key(hint, key, path):
    if hint is int:
        # JSON object keys are strings; accept only the canonical spelling
        # ("7", not "07" or " 7") so two keys cannot collapse into one.
        if isinstance(key, int) and not isinstance(key, bool):
            return key
        if isinstance(key, str) and _INT_KEY.fullmatch(key):
            return int(key)
        raise InvalidData(path, 'key must be an integer')
    if hint is str and isinstance(key, str):
        return key
    raise InvalidData(path, 'bad key %r' % (key,))


def _load_scalar(hint, value, path):
    if hint is bool:
        if not isinstance(value, bool):
            raise InvalidData(path, 'expected true or false, got %r'
                              % (value,))
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise InvalidData(path, 'expected an integer, got %r' % (value,))
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidData(path, 'expected a number, got %r' % (value,))
        if not math.isfinite(value):
            raise InvalidData(path, 'must be a finite number, got %r'
                              % (value,))
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise InvalidData(path, 'expected a string, got %r' % (value,))
        return value
    raise TypeError('unsupported type %r at %s' % (hint, path))


def dump(obj):
    """The JSON-ready dict of a dataclass (inverse of :func:`load`)."""
    return dataclasses.asdict(obj)


def non_negative(**extra):
    """Field metadata for counts and rates."""
    return dict(minimum=0, **extra)

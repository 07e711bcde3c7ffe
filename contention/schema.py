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

The collector validates every report it receives (thousands of values
each, a thousand reports a second), so each dataclass is compiled twice:

* a *checked* loader, one closure per field that already knows its type,
  bounds and name; it converts what may be converted (an integral JSON
  number where a float is declared, integer keys spelled as strings) and
  names the path and the problem of anything wrong;
* a *fast* loader, one generated Python function per dataclass, that
  accepts only values already exactly of their declared type and within
  bounds (what a well-behaved agent sends) and builds the same objects
  without a call per field. Anything else makes it give up, and
  :func:`load` runs the checked loader on the whole object instead. The
  fast loader therefore never accepts what the checked one refuses, never
  words an error itself, and costs a well-formed report about a third of
  the checked loader's time.
"""

import dataclasses
import math
import re
import sys
import types
import typing

_INT_KEY = re.compile(r'0|-?[1-9][0-9]{0,19}')

#: The largest integer (in magnitude) a report may hold: the widest
#: hardware counter (perf's are unsigned 64-bit). Python's integers are
#: unbounded, JSON's too; a 400-digit counter passed every type check and
#: then broke the code that formats or stores it.
INT_MAX = 2 ** 64 - 1


class InvalidData(ValueError):
    """A value does not match its schema; says where and why."""

    def __init__(self, path, problem):
        super().__init__('%s: %s' % (path, problem))
        self.path = path
        self.problem = problem


def load(cls, data, path, preloaded=None):
    """Build dataclass ``cls`` from ``data``; raise InvalidData on mismatch.

    ``preloaded`` ({field name: value}) gives fields of the top-level
    object that the caller already loaded and checked: their data is not
    looked at again.
    """
    try:
        return _fast_loader(cls)(data, preloaded)
    except _GiveUp:
        return _class_loader(cls)(data, path, preloaded)


def dump(obj):
    """The JSON-ready dict of a dataclass (inverse of :func:`load`)."""
    return dataclasses.asdict(obj)


def non_negative(**extra):
    """Field metadata for counts and rates."""
    return dict(minimum=0, **extra)


# -- compiled loaders ---------------------------------------------------
#
# A value loader is ``load(value, parent, suffix)``: it returns the value
# as the dataclass holds it, or raises InvalidData at path
# ``parent + suffix`` (e.g. 'report.instances[3]' + '.vcpus').

_CLASS_LOADERS = {}


def _class_loader(cls):
    loader = _CLASS_LOADERS.get(cls)
    if loader is None:
        loader = _CLASS_LOADERS[cls] = _compile_class(cls)
    return loader


def _compile_class(cls):
    hints = typing.get_type_hints(cls)
    every = dataclasses.fields(cls)
    names = frozenset(f.name for f in every)
    specs, defaults = [], []
    for field in every:
        if not field.init:
            continue
        required = (field.default is dataclasses.MISSING
                    and field.default_factory is dataclasses.MISSING)
        specs.append((field.name, '.' + field.name, required,
                      _compile_field(hints[field.name], field.metadata)))
        if not required:
            defaults.append((field.name, field.default,
                             field.default_factory))
    # Filling __dict__ skips the frozen __init__'s object.__setattr__ per
    # field; only the same as calling __init__ for plain dataclasses.
    direct = (all(f.init for f in every) and not hasattr(cls, '__slots__')
              and not hasattr(cls, '__post_init__'))

    def load_class(data, path, preloaded=None):
        if not isinstance(data, dict):
            raise InvalidData(path, 'expected an object, got %s'
                              % type(data).__name__)
        kwargs = {}
        for name, suffix, required, load_field in specs:
            if preloaded and name in preloaded:
                kwargs[name] = preloaded[name]
            elif name in data:
                kwargs[name] = load_field(data[name], path, suffix)
            elif required:
                raise InvalidData(path + suffix, 'missing field')
        if len(data) != len(kwargs) and not names.issuperset(data):
            raise InvalidData(path, 'unknown field(s) %s' % ', '.join(
                sorted(map(str, set(data) - names))))
        if not direct:
            return cls(**kwargs)
        for name, default, factory in defaults:
            if name not in kwargs:
                kwargs[name] = (default if factory is dataclasses.MISSING
                                else factory())
        obj = cls.__new__(cls)
        obj.__dict__.update(kwargs)
        return obj
    return load_class


_INF = math.inf


def _compile_field(hint, metadata):
    """The loader of one field: its type, then its metadata's bounds.

    Most of a report is counters and rates: an int or float, maybe None,
    maybe with a minimum. Those get a first test that accepts a
    well-formed value in one comparison (NaN and infinities fail it); any
    other value takes the general path, which converts or names the
    problem.
    """
    load_value = _compile_value(hint)
    check = _compile_check(metadata)
    if check is None:
        checked = load_value
    else:
        def checked(value, parent, suffix):
            value = load_value(value, parent, suffix)
            check(value, parent, suffix)
            return value
    args = typing.get_args(hint)
    optional = type(None) in args
    scalar = ([a for a in args if a is not type(None)] if optional
              else [hint])
    if metadata.get('choices') is not None or scalar not in ([int],
                                                             [float]):
        return checked
    minimum = metadata.get('minimum')
    if scalar == [int]:
        low = -INT_MAX if minimum is None else minimum

        def load_int(value, parent, suffix):
            if type(value) is int and low <= value <= INT_MAX:
                return value
            if value is None and optional:
                return None
            return checked(value, parent, suffix)
        return load_int
    # Not -inf when unbounded: -inf <= -inf would let it through.
    low = -sys.float_info.max if minimum is None else float(minimum)

    def load_float(value, parent, suffix):
        if type(value) is float and low <= value < _INF:
            return value
        if value is None and optional:
            return None
        return checked(value, parent, suffix)
    return load_float


def _compile_check(metadata):
    minimum = metadata.get('minimum')
    choices = metadata.get('choices')
    if minimum is None and choices is None:
        return None

    def check(value, parent, suffix):
        if value is None:
            return
        if minimum is not None:
            if isinstance(value, dict):
                values = value.values()
            elif isinstance(value, tuple):
                values = value
            else:
                values = (value,)
            for item in values:
                if item < minimum:
                    raise InvalidData(parent + suffix, 'must be >= %s, got %r'
                                      % (minimum, item))
        if choices is not None and value not in choices:
            raise InvalidData(parent + suffix, 'must be one of %s, got %r'
                              % (', '.join(map(repr, choices)), value))
    return check


#: Item types whose JSON values are already what the dataclass holds, so
#: a list of them all of exactly that type is checked in one pass (a
#: report has thousands of CPU ids); anything else takes the item-by-item
#: path, which names the offending item.
_PLAIN_ITEMS = (int, str)


def _compile_value(hint):
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError('unsupported union %r' % (hint,))
        load_inner = _compile_value(inner[0])
        if len(inner) == len(args):
            return load_inner

        def load_optional(value, parent, suffix):
            if value is None:
                return None
            return load_inner(value, parent, suffix)
        return load_optional
    if origin is tuple:
        return _compile_tuple(args[0])
    if origin is dict:
        return _compile_dict(*args)
    if dataclasses.is_dataclass(hint):
        def load_nested(value, parent, suffix):
            return _class_loader(hint)(value, parent + suffix)
        return load_nested
    loader = _SCALARS.get(hint)
    if loader is None:
        raise TypeError('unsupported type %r' % (hint,))
    return loader


def _compile_tuple(item_hint):
    load_item = _compile_value(item_hint)
    plain = item_hint in _PLAIN_ITEMS

    def load_tuple(value, parent, suffix):
        if not isinstance(value, (list, tuple)):
            raise InvalidData(parent + suffix, 'expected a list, got %s'
                              % type(value).__name__)
        if plain and all(type(item) is item_hint for item in value):
            return tuple(value)
        path = parent + suffix
        return tuple(load_item(item, path, '[%d]' % i)
                     for i, item in enumerate(value))
    return load_tuple


def _compile_dict(key_hint, value_hint):
    load_item = _compile_value(value_hint)

    def load_dict(value, parent, suffix):
        if not isinstance(value, dict):
            raise InvalidData(parent + suffix, 'expected an object, got %s'
                              % type(value).__name__)
        path = parent + suffix
        result = {}
        for key, item in value.items():
            kpath = '[%r]' % (key,)
            result[_load_key(key_hint, key, path + kpath)] = load_item(
                item, path, kpath)
        return result
    return load_dict


def _load_key(hint, key, path):
    if hint is int:
        # JSON object keys are strings; accept only the canonical spelling
        # ("7", not "07" or " 7") so two keys cannot collapse into one.
        if isinstance(key, str) and _INT_KEY.fullmatch(key):
            key = int(key)
        if isinstance(key, int) and not isinstance(key, bool):
            if -INT_MAX <= key <= INT_MAX:
                return key
            raise InvalidData(path, 'key out of the 64-bit range')
        raise InvalidData(path, 'key must be an integer')
    if hint is str and isinstance(key, str):
        return key
    raise InvalidData(path, 'bad key %r' % (key,))


def _load_bool(value, parent, suffix):
    if value is True or value is False:
        return value
    raise InvalidData(parent + suffix, 'expected true or false, got %r'
                      % (value,))


def _load_int(value, parent, suffix):
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidData(parent + suffix, 'expected an integer, got %r'
                          % (value,))
    if not -INT_MAX <= value <= INT_MAX:
        raise InvalidData(parent + suffix, 'integer out of the 64-bit range '
                          '(%d digits)' % len(str(abs(value))))
    return value


def _load_float(value, parent, suffix):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidData(parent + suffix, 'expected a number, got %r'
                          % (value,))
    if isinstance(value, int) and not -INT_MAX <= value <= INT_MAX:
        raise InvalidData(parent + suffix, 'integer out of the 64-bit range '
                          '(%d digits)' % len(str(abs(value))))
    if not math.isfinite(value):
        raise InvalidData(parent + suffix, 'must be a finite number, got %r'
                          % (value,))
    return float(value)


def _load_str(value, parent, suffix):
    if isinstance(value, str):
        return value
    raise InvalidData(parent + suffix, 'expected a string, got %r'
                      % (value,))


_SCALARS = {bool: _load_bool, int: _load_int, float: _load_float,
            str: _load_str}


# -- fast loaders --------------------------------------------------------
#
# Generated source, one function per dataclass: for each field an inline
# test that the JSON value is exactly what the dataclass holds (or a call
# to the nested class's fast loader), else ``raise _GiveUp``. Generated
# rather than closures because a report has a hundred nested objects and
# a thousand values: a call per value was most of the checked loader's
# cost.

class _GiveUp(Exception):
    """The fast loader met something only the checked loader may judge."""


_FAST_LOADERS = {}
_ONLY = {int: frozenset({int}), str: frozenset({str})}


def _fast_loader(cls):
    loader = _FAST_LOADERS.get(cls)
    if loader is None:
        loader = _FAST_LOADERS[cls] = _compile_fast(cls)
    return loader


#: Classes whose fast loader is being generated (a class may contain
#: itself, directly or not).
_COMPILING = set()


def _fast_nested(cls):
    """``cls``'s fast loader, bound now unless it is being generated.

    Bound now, a nested object costs one call; a class that contains
    itself gets a late-bound call instead.
    """
    if cls not in _COMPILING:
        return _fast_loader(cls)

    def load_nested(value, preloaded=None):
        return _fast_loader(cls)(value, preloaded)
    return load_nested


def _compile_fast(cls):
    _COMPILING.add(cls)
    try:
        return _generate_fast(cls)
    finally:
        _COMPILING.discard(cls)


def _generate_fast(cls):
    hints = typing.get_type_hints(cls)
    every = [f for f in dataclasses.fields(cls) if f.init]
    env = {'_GiveUp': _GiveUp, 'cls': cls, 'new': object.__new__,
           'InvalidData': InvalidData, 'INF': _INF}
    body = ['def load_fast(data, preloaded=None):',
            '    if type(data) is not dict:',
            '        raise _GiveUp',
            '    n = 0',
            '    out = {}']
    nested_names = []
    for i, field in enumerate(every):
        name = field.name
        lines, nested = _fast_field(i, hints[name], field.metadata, env)
        if nested:
            nested_names.append(name)
            body += ['    if preloaded and %r in preloaded:' % name,
                     '        out[%r] = preloaded[%r]' % (name, name),
                     '        n += %r in data' % name,
                     '    elif %r in data:' % name]
        else:
            body.append('    if %r in data:' % name)
        body += ['        v = data[%r]' % name, '        n += 1']
        body += ['        ' + line for line in lines]
        body.append('        out[%r] = v' % name)
        if field.default is not dataclasses.MISSING:
            env['d%d' % i] = field.default
            body += ['    else:', '        out[%r] = d%d' % (name, i)]
        elif field.default_factory is not dataclasses.MISSING:
            env['f%d' % i] = field.default_factory
            body += ['    else:', '        out[%r] = f%d()' % (name, i)]
        else:
            body += ['    else:', '        raise _GiveUp']
    env['NESTED'] = frozenset(nested_names)
    body.insert(3, '    if preloaded and not NESTED.issuperset(preloaded):')
    body.insert(4, '        raise _GiveUp')
    body += ['    if n != len(data):', '        raise _GiveUp']
    if (len(every) == len(dataclasses.fields(cls))
            and not hasattr(cls, '__slots__')
            and not hasattr(cls, '__post_init__')):
        body += ['    obj = new(cls)', '    obj.__dict__.update(out)',
                 '    return obj']
    else:
        body += ['    try:', '        return cls(**out)',
                 '    except Exception:', '        raise _GiveUp']
    exec('\n'.join(body), env)      # noqa: S102 (our own generated source)
    return env['load_fast']


def _fast_field(i, hint, metadata, env):
    """(lines checking and converting ``v``, whether it is a dataclass).

    The lines leave in ``v`` what the checked loader would return, or
    raise _GiveUp. Kinds without an inline test call the field's checked
    loader and give up on any error it finds.
    """
    args = typing.get_args(hint)
    optional = type(None) in args
    inner = [a for a in args if a is not type(None)] if optional else [hint]
    minimum, choices = metadata.get('minimum'), metadata.get('choices')
    lines = []
    if optional and len(inner) == 1:
        lines.append('if v is not None:')
        indent = '    '
    else:
        indent = ''
    kind = inner[0] if len(inner) == 1 else None
    origin = typing.get_origin(kind)
    item = typing.get_args(kind)[0] if origin is tuple else None
    if kind is int and choices is None:
        low = -INT_MAX if minimum is None else minimum
        test = 'type(v) is not int or not %r <= v <= %r' % (low, INT_MAX)
        lines += [indent + 'if %s:' % test, indent + '    raise _GiveUp']
    elif kind is float and choices is None:
        low = -sys.float_info.max if minimum is None else float(minimum)
        env['low%d' % i] = low
        lines += [indent + 'if type(v) is not float or not '
                  'low%d <= v < INF:' % i, indent + '    raise _GiveUp']
    elif kind is str:
        test = 'type(v) is not str'
        if choices is not None:
            env['c%d' % i] = frozenset(choices)
            test += ' or v not in c%d' % i
        lines += [indent + 'if %s:' % test, indent + '    raise _GiveUp']
    elif kind is bool and choices is None:
        lines += [indent + 'if v is not True and v is not False:',
                  indent + '    raise _GiveUp']
    elif dataclasses.is_dataclass(kind):
        env['n%d' % i] = _fast_nested(kind)
        lines.append(indent + 'v = n%d(v)' % i)
        return lines, not optional
    elif (origin is tuple and dataclasses.is_dataclass(item)
            and minimum is None and choices is None):
        env['n%d' % i] = _fast_nested(item)
        lines += [indent + 'if type(v) is not list and type(v) is not tuple:',
                  indent + '    raise _GiveUp',
                  indent + 'v = tuple([n%d(x) for x in v])' % i]
    elif origin is tuple and item in _ONLY and choices is None:
        env['only%d' % i] = _ONLY[item]
        test = ('type(v) is not list and type(v) is not tuple'
                ' or not only%d.issuperset(map(type, v))' % i)
        if item is int:
            low = -INT_MAX if minimum is None else minimum
            test += (' or (v and (min(v) < %r or max(v) > %r))'
                     % (low, INT_MAX))
        elif minimum is not None:
            test += ' or (v and min(v) < %r)' % minimum
        lines += [indent + 'if %s:' % test, indent + '    raise _GiveUp',
                  indent + 'v = tuple(v)']
    elif (origin is dict and typing.get_args(kind)[0] in (int, str)
            and typing.get_args(kind)[1] in (int, float) and choices is None):
        key, value = typing.get_args(kind)
        env['dict%d' % i] = _fast_dict(key is int, value, minimum)
        lines.append(indent + 'v = dict%d(v)' % i)
    else:
        # Tuples of tuples and the rest: the checked loader.
        env['slow%d' % i] = _compile_field(hint, metadata)
        return ['try:', '    v = slow%d(v, "", "")' % i,
                'except InvalidData:', '    raise _GiveUp'], False
    return lines, False


def _fast_dict(int_keys, value_type, minimum):
    """Fast loader of a dict of scalars (memory per node, class counts)."""
    if value_type is float:
        low = -sys.float_info.max if minimum is None else float(minimum)
        high = _INF
    else:
        low = -INT_MAX if minimum is None else minimum
        high = INT_MAX + 1

    def load_dict(value):
        if type(value) is not dict:
            raise _GiveUp
        out = {}
        for key, item in value.items():
            if type(item) is not value_type or not low <= item < high:
                raise _GiveUp
            if int_keys and type(key) is not int:
                if type(key) is not str or not _INT_KEY.fullmatch(key):
                    raise _GiveUp
                key = int(key)
            if int_keys and not -INT_MAX <= key <= INT_MAX:
                raise _GiveUp
            elif not int_keys and type(key) is not str:
                raise _GiveUp
            out[key] = item
        return out
    return load_dict

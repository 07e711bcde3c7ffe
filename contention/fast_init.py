"""A faster ``__init__`` for the frozen dataclasses built by the thousand.

A frozen dataclass's generated ``__init__`` stores every field through
``object.__setattr__`` (its own ``__setattr__`` refuses), about a tenth of
a microsecond a field. An audit at 1,000 hosts builds 20,000
:class:`contention.cluster.InstanceView` s of 27 fields and as many
inventory entries, which made construction alone a fifth of its decision
time (``bench/watcher.py``). :func:`fast_init` gives such a class an
``__init__`` with the same signature that fills the new object's own
``__dict__`` in declaration order: the same object (equality, hash, repr
and frozenness are the dataclass's), about three times faster, and its
dict shares its keys with the class's other objects, as the store's
decoders build them (:mod:`contention.store.codec`).
"""

import dataclasses

__all__ = ['fast_init']


def fast_init(cls):
    """Class decorator, after ``@dataclasses.dataclass(frozen=True)``.

    Only for plain frozen dataclasses: every field in ``__init__``, no
    ``__post_init__``, no ``__slots__``; anything else raises TypeError
    when the class is defined, not when it is built.
    """
    if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:
        raise TypeError('fast_init: %s is not a frozen dataclass'
                        % cls.__qualname__)
    if hasattr(cls, '__post_init__') or '__slots__' in vars(cls):
        raise TypeError('fast_init: %s has __post_init__ or __slots__, '
                        'which the dataclass __init__ must run or fill'
                        % cls.__qualname__)
    missing = dataclasses.MISSING
    env = {'MISSING': missing}
    params = []
    body = ['    data = self.__dict__']
    for i, field in enumerate(dataclasses.fields(cls)):
        name = field.name
        if not field.init:
            raise TypeError('fast_init: %s.%s is not an __init__ field'
                            % (cls.__qualname__, name))
        if field.default is not missing:
            env['d%d' % i] = field.default
            params.append('%s=d%d' % (name, i))
            body.append('    data[%r] = %s' % (name, name))
        elif field.default_factory is not missing:
            env['f%d' % i] = field.default_factory
            params.append('%s=MISSING' % name)
            body.append('    data[%r] = f%d() if %s is MISSING else %s'
                        % (name, i, name, name))
        else:
            params.append(name)
            body.append('    data[%r] = %s' % (name, name))
    source = 'def __init__(self, %s):\n%s' % (', '.join(params),
                                              '\n'.join(body))
    exec(source, env)       # noqa: S102 (generated from the class's fields)
    init = env['__init__']
    init.__qualname__ = '%s.__init__' % cls.__qualname__
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    return cls

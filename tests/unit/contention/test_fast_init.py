"""fast_init builds the same frozen dataclass objects as their own __init__."""

import dataclasses
from typing import Optional

import testtools

from contention import cluster
from contention.fast_init import fast_init


def _twin(cls):
    """``cls``'s fields in a new frozen dataclass with the plain __init__."""
    fields = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            fields.append((f.name, f.type, dataclasses.field(
                default=f.default)))
        elif f.default_factory is not dataclasses.MISSING:
            fields.append((f.name, f.type, dataclasses.field(
                default_factory=f.default_factory)))
        else:
            fields.append((f.name, f.type))
    return dataclasses.make_dataclass(cls.__name__, fields, frozen=True)


@fast_init
@dataclasses.dataclass(frozen=True)
class _Sample:
    name: str
    count: int
    ratio: float = 1.0
    tags: tuple = ()
    items: list = dataclasses.field(default_factory=list)
    note: Optional[str] = None


class TestFastInit(testtools.TestCase):

    def test_the_same_object_as_the_dataclass_init(self):
        plain = _twin(_Sample)
        for args, kwargs in (((('a', 1), {})),
                             (('a', 1, 0.5), {'note': 'x'}),
                             ((), {'name': 'b', 'count': 2, 'items': [3]})):
            fast, slow = _Sample(*args, **kwargs), plain(*args, **kwargs)
            self.assertEqual(dataclasses.astuple(slow),
                             dataclasses.astuple(fast))
            self.assertEqual(repr(slow).replace(plain.__qualname__, ''),
                             repr(fast).replace('_Sample', ''))
        self.assertEqual(_Sample('a', 1), _Sample(name='a', count=1))
        self.assertNotEqual(_Sample('a', 1), _Sample('a', 2))

    def test_a_default_factory_gives_each_object_its_own_value(self):
        first, second = _Sample('a', 1), _Sample('a', 1)
        first.items.append(1)
        self.assertEqual([], second.items)

    def test_still_frozen(self):
        inst = _Sample('a', 1)
        self.assertRaises(dataclasses.FrozenInstanceError, setattr, inst,
                          'count', 2)

    def test_bad_arguments_fail_as_the_dataclass_init_does(self):
        self.assertRaises(TypeError, _Sample, 'a')              # missing
        self.assertRaises(TypeError, _Sample, 'a', 1, colour='red')
        self.assertRaises(TypeError, _Sample, 'a', 1, 2.0, (), [], 'n', 7)

    def test_refuses_what_its_init_could_not_build(self):
        @dataclasses.dataclass(frozen=True)
        class Checked:
            x: int

            def __post_init__(self):
                pass

        @dataclasses.dataclass(frozen=True)
        class Hidden:
            x: int
            y: int = dataclasses.field(default=0, init=False)

        @dataclasses.dataclass
        class Mutable:
            x: int

        for cls in (Checked, Hidden, Mutable):
            self.assertRaises(TypeError, fast_init, cls)

    def test_the_views_keep_their_dataclass_behaviour(self):
        for cls, kwargs in (
                (cluster.InstanceView, {'uuid': 'u', 'host': 'h',
                                        'vcpus': 2, 'memory_mib': 512,
                                        'socket': 1, 'latency': True}),
                (cluster.HostView, {'name': 'h', 'sockets': (),
                                    'vcpus_total': 8,
                                    'memory_mib_total': 1024})):
            fast = cls(**kwargs)
            slow = _twin(cls)(**kwargs)
            self.assertEqual(dataclasses.astuple(slow),
                             dataclasses.astuple(fast))
            self.assertEqual(fast, dataclasses.replace(fast))
            self.assertEqual(hash(slow), hash(fast))

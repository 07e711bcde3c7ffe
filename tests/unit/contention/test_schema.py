"""The type-hint-driven loader on its own, with a small dataclass."""

import dataclasses
from typing import Optional

from hypothesis import given
from hypothesis import strategies as st
from oslotest import base

from contention import schema


@dataclasses.dataclass(frozen=True)
class Inner:
    level: str = dataclasses.field(metadata=dict(choices=('low', 'high')))


@dataclasses.dataclass(frozen=True)
class Outer:
    count: int = dataclasses.field(metadata=schema.non_negative())
    ratio: Optional[float] = None
    flag: bool = False
    ids: tuple[int, ...] = dataclasses.field(default=(),
                                             metadata=schema.non_negative())
    per_node: dict[int, float] = dataclasses.field(default_factory=dict)
    tallies: dict[str, int] = dataclasses.field(
        default_factory=dict, metadata=schema.non_negative())
    inner: Optional[Inner] = None


@dataclasses.dataclass(frozen=True)
class Ambiguous:
    value: Optional[int | str] = None


def _load(data):
    return schema.load(Outer, data, 'x')


class TestLoad(base.BaseTestCase):

    def assertInvalid(self, data, path, problem):
        exc = self.assertRaises(schema.InvalidData, _load, data)
        self.assertEqual((path, problem), (exc.path, exc.problem))

    def test_defaults_fill_missing_optional_fields(self):
        self.assertEqual(Outer(count=3), _load({'count': 3}))

    def test_everything(self):
        loaded = _load({'count': 1, 'ratio': 2, 'flag': True, 'ids': [3, 4],
                        'per_node': {'0': 1.5, '-1': 2.0},
                        'tallies': {'a': 0}, 'inner': {'level': 'high'}})
        self.assertEqual(Outer(1, 2.0, True, (3, 4), {0: 1.5, -1: 2.0},
                               {'a': 0}, Inner('high')), loaded)
        self.assertIsInstance(loaded.ratio, float)

    def test_integral_float_is_an_integer(self):
        self.assertEqual(7, _load({'count': 7.0}).count)
        self.assertInvalid({'count': 7.5}, 'x.count',
                           'expected an integer, got 7.5')

    def test_non_finite_floats_are_refused_with_or_without_a_bound(self):
        for bad in (float('nan'), float('inf'), float('-inf')):
            self.assertInvalid({'count': 0, 'ratio': bad}, 'x.ratio',
                               'must be a finite number, got %r' % bad)
        self.assertEqual(-1e308, _load({'count': 0, 'ratio': -1e308}).ratio)

    def test_the_quick_path_refuses_what_the_full_one_refuses(self):
        self.assertInvalid({'count': -1}, 'x.count', 'must be >= 0, got -1')
        self.assertInvalid({'count': True}, 'x.count',
                           'expected an integer, got True')
        self.assertInvalid({'count': None}, 'x.count',
                           'expected an integer, got None')
        self.assertInvalid({'count': 0, 'ratio': '1'}, 'x.ratio',
                           "expected a number, got '1'")
        loaded = _load({'count': 2.0, 'ratio': 3})
        self.assertEqual((2, 3.0), (loaded.count, loaded.ratio))
        self.assertIs(int, type(loaded.count))
        self.assertIs(float, type(loaded.ratio))

    def test_minimum_applies_to_tuple_items_and_dict_values(self):
        self.assertInvalid({'count': 0, 'ids': [1, -2]}, 'x.ids',
                           'must be >= 0, got -2')
        self.assertInvalid({'count': 0, 'tallies': {'a': 1, 'b': -1}},
                           'x.tallies', 'must be >= 0, got -1')

    def test_list_items_are_checked_one_by_one_when_not_all_plain(self):
        # Lists of exact ints take a one-pass check; anything else must
        # still be converted or named item by item.
        self.assertEqual((1, 2), _load({'count': 0, 'ids': [1, 2.0]}).ids)
        self.assertInvalid({'count': 0, 'ids': [1, True]}, 'x.ids[1]',
                           'expected an integer, got True')
        self.assertInvalid({'count': 0, 'ids': [1, 'a']}, 'x.ids[1]',
                           "expected an integer, got 'a'")

    def test_integer_keys_must_be_canonical(self):
        for key in ('01', ' 1', '+1', '-0', '1_0', '1.0', '', '\u0661'):
            self.assertInvalid({'count': 0, 'per_node': {key: 1.0}},
                               'x.per_node[%r]' % key,
                               'key must be an integer')

    def test_nested_choice(self):
        self.assertInvalid({'count': 0, 'inner': {'level': 'mid'}},
                           'x.inner.level',
                           "must be one of 'low', 'high', got 'mid'")

    def test_nested_not_an_object(self):
        self.assertInvalid({'count': 0, 'inner': 'high'}, 'x.inner',
                           'expected an object, got str')

    def test_unknown_fields_are_listed_sorted(self):
        self.assertInvalid({'count': 0, 'zeta': 1, 'alpha': 2}, 'x',
                           'unknown field(s) alpha, zeta')

    def test_unsupported_union_is_a_programming_error(self):
        self.assertRaises(TypeError, schema.load, Ambiguous, {'value': 1},
                          'a')

    @given(st.integers(min_value=-schema.INT_MAX, max_value=schema.INT_MAX))
    def test_any_integer_key_round_trips_through_its_json_spelling(self,
                                                                   key):
        loaded = _load({'count': 0, 'per_node': {str(key): 1.0}})
        self.assertEqual({key: 1.0}, loaded.per_node)

    @given(st.integers(min_value=schema.INT_MAX + 1, max_value=10 ** 400),
           st.sampled_from((1, -1)))
    def test_integers_past_64_bits_are_refused_everywhere(self, big, sign):
        # The store holds BIGINTs; past them a value broke the code that
        # formatted or stored it (issue 21).
        for data in ({'count': sign * big, 'per_node': {}},
                     {'count': 0, 'per_node': {str(sign * big): 1.0}},
                     {'count': 0, 'per_node': {'0': sign * big}}):
            self.assertRaises(schema.InvalidData, _load, data)

    @given(st.text(max_size=4))
    def test_a_key_loads_only_if_it_is_the_json_spelling_of_an_int(self,
                                                                   key):
        try:
            loaded = _load({'count': 0, 'per_node': {key: 1.0}})
        except schema.InvalidData:
            return
        (number,) = loaded.per_node
        self.assertEqual(key, str(number))

    def test_dump_is_the_inverse_of_load(self):
        data = {'count': 1, 'ratio': None, 'flag': False, 'ids': (2,),
                'per_node': {0: 1.0}, 'tallies': {}, 'inner': None}
        self.assertEqual(data, schema.dump(_load(data)))


#: JSON values of every kind, well- and ill-formed, for Outer's fields.
_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3)
    | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
        ['low', 'high', 'mid', '0', '07', '-1']),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(['0', '1', '07', 'a', 'level']), inner, max_size=3),
    max_leaves=6)
_OUTER_FIELDS = [f.name for f in dataclasses.fields(Outer)] + ['zeta']


class TestFastLoader(base.BaseTestCase):
    """The generated loader agrees with the checked one, or gives up."""

    def checked(self, data):
        try:
            return schema._class_loader(Outer)(data, 'x')
        except schema.InvalidData as exc:
            return exc

    @given(st.dictionaries(st.sampled_from(_OUTER_FIELDS), _ANY_JSON,
                           max_size=6))
    def test_never_accepts_what_the_checked_loader_refuses(self, data):
        expected = self.checked(data)
        try:
            fast = schema._fast_loader(Outer)(data)
        except schema._GiveUp:
            return
        self.assertNotIsInstance(expected, schema.InvalidData)
        self.assertEqual(expected, fast)
        # Same types too: 1 == 1.0 == True would hide a missed conversion.
        for field in dataclasses.fields(Outer):
            self.assertIs(type(getattr(expected, field.name)),
                          type(getattr(fast, field.name)))

    def test_takes_well_formed_json_whole(self):
        data = {'count': 1, 'ratio': 2.5, 'flag': True, 'ids': [3, 4],
                'per_node': {'0': 1.5}, 'tallies': {'a': 0},
                'inner': {'level': 'high'}}
        self.assertEqual(self.checked(data), schema._fast_loader(Outer)(data))

    def test_gives_up_on_what_needs_converting_or_naming(self):
        for data in ({'count': 2.0}, {'count': 0, 'ratio': 3},
                     {'count': True}, {'count': -1},
                     {'count': 0, 'ratio': float('nan')},
                     {'count': 0, 'ids': [1, True]},
                     {'count': 0, 'per_node': {'07': 1.0}},
                     {'count': 0, 'inner': {'level': 'mid'}},
                     {'count': 0, 'zeta': 1}, {}):
            self.assertRaises(schema._GiveUp, schema._fast_loader(Outer),
                              data)


@dataclasses.dataclass(frozen=True)
class Tree:
    label: str
    children: tuple['Tree', ...] = ()


class TestSelfNesting(base.BaseTestCase):

    def test_a_class_that_contains_itself_loads_fast(self):
        data = {'label': 'a', 'children': [
            {'label': 'b', 'children': [{'label': 'c'}]}]}
        fast = schema._fast_loader(Tree)(data)
        self.assertEqual(Tree('a', (Tree('b', (Tree('c'),)),)), fast)
        self.assertEqual(fast, schema.load(Tree, data, 'x'))

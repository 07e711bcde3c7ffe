"""A State's fork: the same walk's start, at a fraction of the cost."""

import hypothesis
import testtools

from contention.swap import state as state_mod
from tests.unit.contention.swap import test_harm
from tests.unit.contention.swap import views as v

INDEXES = ('inst', 'on_host', 'used', 'cell_used', 'sock_stats', 'load',
           'unit_weight', 'socket_weight', 'moved', 'typical_load')


def indexes(state):
    """The State's indexes as plain values, zeros left out."""
    def plain(value):
        if isinstance(value, dict):
            return {k: plain(x) for k, x in value.items()
                    if plain(x) not in (0.0, [0.0, 0.0], [0.0, 0.0, 0.0],
                                        {})}
        if isinstance(value, list):
            return [round(x, 3) for x in value]
        if isinstance(value, float):
            return round(value, 3)
        return value
    return {name: plain(getattr(state, name)) for name in INDEXES}


def first_move(view):
    """(uuid, host, socket): an instance to the other socket of its host."""
    inst = view.instances[0]
    return inst.uuid, inst.host, 1 - (inst.socket or 0)


class TestFork(testtools.TestCase):
    @hypothesis.settings(max_examples=40, deadline=None)
    @hypothesis.given(test_harm.full_views())
    def test_a_fork_is_what_a_fresh_build_gives(self, drawn):
        view, _ = drawn
        start = state_mod.State(view)
        for unit in state_mod.UNITS:
            fork = start.fork(unit, hurt=('x',))
            self.assertEqual(indexes(state_mod.State(view, unit)),
                             indexes(fork))
            self.assertEqual((unit, ('x',), 0, None),
                             (fork.unit, fork.hurt, fork.steps, fork.reason))

    @hypothesis.settings(max_examples=40, deadline=None)
    @hypothesis.given(test_harm.full_views())
    def test_moves_on_a_fork_leave_its_origin_untouched(self, drawn):
        view, _ = drawn
        hypothesis.assume(view.instances)
        start = state_mod.State(view)
        fork = start.fork(state_mod.SOCKET)
        fork.move(*first_move(view))
        fork.steps += 1
        self.assertEqual(indexes(state_mod.State(view)), indexes(start))
        self.assertEqual(0, start.steps)
        # A fork of the moved one carries its moves, not its counters.
        again = fork.fork(state_mod.HOST)
        self.assertEqual(fork.moved, again.moved)
        self.assertEqual(fork.inst, again.inst)
        self.assertEqual(0, again.steps)

    def test_an_unknown_unit_is_refused(self):
        view = v.view([v.host('h0')], [v.vm('a', 'h0', 1e6, socket=0)])
        self.assertRaises(ValueError, state_mod.State(view).fork, 'rack')

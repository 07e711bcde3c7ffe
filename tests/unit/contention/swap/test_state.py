"""A State's fork and its figures kept per host: the same, for less."""

import hypothesis
from hypothesis import strategies as st
import testtools

from contention.swap import measure
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


class TestWeighedMoves(testtools.TestCase):
    @hypothesis.settings(max_examples=40, deadline=None)
    @hypothesis.given(test_harm.full_views())
    def test_weighing_a_move_gives_what_running_it_gives(self, drawn):
        # State.pressure and State.vcpus with moves that have not run
        # must read what the State reads once they have.
        view, _ = drawn
        hypothesis.assume(view.instances)
        uuid, host, socket = first_move(view)
        state = state_mod.State(view)
        moves = [(state.inst[uuid], host, socket)]
        before = state.inst[uuid]
        keys = {(before.host, before.socket), (host, socket)}
        weighed = (state.pressure(keys, moves),
                   state.vcpus(host, socket, moves))
        state.move(uuid, host, socket)
        self.assertAlmostEqual(state.pressure(keys), weighed[0],
                               delta=1e-6 * max(1.0, abs(weighed[0])))
        self.assertEqual(state.vcpus(host, socket), weighed[1])


class TestPerHost(testtools.TestCase):
    """Figures kept while a host's instances are unchanged."""

    def test_a_figure_is_kept_until_its_host_changes(self):
        view = v.view([v.host('h0'), v.host('h1')],
                      [v.vm('a', 'h0', 1e6), v.vm('b', 'h1', 1e6)])
        state = state_mod.State(view)
        calls = []

        def read():
            calls.append(1)
            return len(calls)
        self.assertEqual(1, state.per_host('h0', 'k', read))
        self.assertEqual(1, state.per_host('h0', 'k', read))
        self.assertEqual(2, state.per_host('h0', 'other', read))
        state.move('b', 'h1', 1)
        self.assertEqual(1, state.per_host('h0', 'k', read))
        a = state.inst['a']
        state.move('a', 'h0', 1)
        self.assertEqual(3, state.per_host('h0', 'k', read))
        state.restore(a)
        self.assertEqual(4, state.per_host('h0', 'k', read))
        # A fork keeps none: it walks on its own.
        self.assertEqual(5, state.fork().per_host('h0', 'k', read))
        self.assertEqual(4, state.per_host('h0', 'k', read))

    @hypothesis.settings(max_examples=40, deadline=None)
    @hypothesis.given(test_harm.full_views(), st.data())
    def test_kept_co_runner_terms_are_a_fresh_read(self, drawn, data):
        view, _ = drawn
        hypothesis.assume(view.instances)
        state = state_mod.State(view)
        uuids = [i.uuid for i in view.instances]
        hosts = sorted({h.name for h in view.hosts})
        for _ in range(data.draw(st.integers(1, 4))):
            for inst in list(state.inst.values()):
                if inst.socket is None:
                    continue
                for worst in (False, True):
                    fresh = measure.co_load(
                        list(state.on_host[inst.host].values()), inst,
                        state.hosts[inst.host], state.socket_weight,
                        worst=worst)
                    self.assertEqual(fresh, state.co_load(
                        inst, worst=worst, rate_key='measured'))
            uuid = data.draw(st.sampled_from(uuids))
            if data.draw(st.booleans()):
                state.restore(view.instances[uuids.index(uuid)])
            else:
                state.move(uuid, data.draw(st.sampled_from(hosts)),
                           data.draw(st.sampled_from((0, 1, None))))

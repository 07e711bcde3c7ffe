"""`make system`'s audits, planned here without the cloud.

tools/system/scenario.py boots four milc-like servers on one host and four
CPU-bound ones (cpu-loop) on the other (one image, told apart by the
flavor), as its agents' emulated source plays them (tools/system/
emulated.yaml), runs an
audit with its AUDIT_COMMAND, starts the plan, and checks that the next
audit proposes no new swap. Its constants are read from the file (not
imported: it starts a cloud), so a change of them is planned here too.
"""

import ast
import dataclasses
import os
import uuid

import numpy as np
import testtools

from contention import cluster
from contention import reportview
from contention.sim import scenario as scenario_mod
from contention.sim import simulator
from contention import swap
from contention.swap import params as params_mod
from tests.unit import system_tools
from tests.unit.watcher_strategies import fixtures as f

NOW = 100000.0
SCENARIO = os.path.join(system_tools.DIR, 'scenario.py')
EMULATED = os.path.join(system_tools.DIR, 'emulated.yaml')


def _constants(*names):
    with open(SCENARIO) as src:
        tree = ast.parse(src.read())
    found = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in names):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    return [found[n] for n in names]


def _params(argv):
    """The audit's ``-p name=value`` arguments as SwapParameters."""
    given = {}
    for flag, arg in zip(argv[::2], argv[1::2]):
        assert flag == '-p', argv
        name, value = arg.split('=', 1)
        given[name] = value
    return params_mod.from_input(swap.CACHE_AWARE, given)


def _swaps(plan):
    return [a for a in plan.actions if isinstance(a, cluster.Swap)]


class TestSystemScenario(testtools.TestCase):

    def _audit(self, servers, now, params, log):
        reports, inventory = f.system_layout(now, servers)
        view = reportview.view_from_reports(reports, inventory, now,
                                            params.freshness).view
        return view, swap.run_audit(view, params, log)

    def test_the_next_audit_proposes_no_new_swap(self):
        command, batches, profiles = _constants(
            'AUDIT_COMMAND', 'BATCHES', 'FLAVOR_PROFILES')
        params = _params(command[command.index('-s') + 2:])
        servers = [('%s-%d' % (name, i + 1), flavor, host, profiles[flavor])
                   for name, flavor, host, n in batches for i in range(n)]
        log = swap.InMemoryMoveLog()
        view, first = self._audit(servers, NOW, params, log)
        swaps = _swaps(first)
        self.assertTrue(swaps, (first.reason, first.skipped))
        # The plan ran: Watcher records its swaps' legs (the cool-down),
        # and the agents measure each server beside its new co-runner.
        log.record(swap.moves_of(swaps, NOW, 'watcher:contention_swap'))
        after = swap.apply(view, first.actions)
        moved = []
        for name, flavor, host, profile in servers:
            inst = after.instance(f.uid(name))
            moved.append((name, flavor, inst.host, profile, inst.socket))
        _, second = self._audit(moved, NOW + 120, params, log)
        self.assertEqual([], _swaps(second),
                         '%d swap(s) in the first audit' % len(swaps))

    def test_a_lopsided_host_is_evened_in_one_plan(self):
        """The layouts make system's NUMA repair leaves: three on a socket.

        The local re-deal would put a memory-bound server beside the one
        alone on the other socket, which a swap takes away: refused in its
        place, it runs after a swap. Either way, the plan evens the hosts
        with two swaps and one re-pin, and the next audit proposes nothing.
        """
        command, = _constants('AUDIT_COMMAND')
        params = _params(command[command.index('-s') + 2:])
        for alone in range(4):
            for crowded in (0, 1):
                sockets = [1 - crowded if k == alone else crowded
                           for k in range(4)]
                self._evened_in_one_plan(params, sockets)

    def _evened_in_one_plan(self, params, sockets):
        servers = [('mem-%d' % (k + 1), 'c1.mem', 'cmp-1', 'milc', s)
                   for k, s in enumerate(sockets)]
        servers += [('cpu-%d' % (i + 1), 'c1.cpu', 'cmp-2', 'cpu-loop', i % 2)
                    for i in range(4)]
        log = swap.InMemoryMoveLog()
        view, first = self._audit(servers, NOW, params, log)
        kinds = [type(a).__name__ for a in first.actions]
        log.record(swap.moves_of(first.actions, NOW, 'watcher:plan'))
        after = swap.apply(view, first.actions)
        moved = []
        for name, flavor, host, profile, _ in servers:
            inst = after.instance(f.uid(name))
            moved.append((name, flavor, inst.host, profile, inst.socket))
        _, second = self._audit(moved, NOW + 120, params, log)
        self.assertEqual((), second.actions, (sockets, kinds))
        if kinds:
            self.assertEqual(['Repin', 'Swap', 'Swap'], sorted(kinds),
                             sockets)


class TestSystemScenarioSimulated(testtools.TestCase):
    """make system's cloud as the emulated source plays it, audits and all.

    Each agent's emulated source places its servers in UUID order on
    alternate sockets of its scenario's host (emulated.yaml); the system test then moves one
    memory-bound server's vCPUs to the other socket and leaves its memory
    behind. Which server, and so which socket ends up crowded, follows
    from the UUIDs Nova draws: here several draws, in the simulator that
    the emulated source runs, with the audit the system test types. The
    first plan repairs the memory, evens the host and swaps; the next
    audit proposes nothing.
    """

    def _scenario(self, draw):
        base = scenario_mod.load(EMULATED)
        hardware = base.hosts[0][1]
        profiles, = _constants('FLAVOR_PROFILES')
        names = [str(uuid.UUID(int=(draw * 8 + k) * 2654435761 % 2 ** 128))
                 for k in range(8)]
        mems, cpus = sorted(names[:4]), sorted(names[4:])
        remote = mems[draw % 4]
        specs = []
        for k, name in enumerate(mems):
            socket = 1 - k % 2 if name == remote else k % 2
            specs.append(scenario_mod.InstanceSpec(
                profile=profiles['c1.mem'], name=name, host='cmp-1',
                socket=socket,
                memory_socket=k % 2))
        specs += [scenario_mod.InstanceSpec(
            profile=profiles['c1.cpu'], name=name, host='cmp-2', socket=k % 2,
            memory_socket=k % 2) for k, name in enumerate(cpus)]
        return dataclasses.replace(
            base, name='make-system', hosts=(('cmp-1', hardware),
                                             ('cmp-2', hardware)),
            instances=tuple(specs), arrivals=(), placement='explicit')

    def test_every_draw_is_evened_in_one_plan(self):
        command, = _constants('AUDIT_COMMAND')
        given = dict(arg.split('=', 1) for arg in
                     command[command.index('-s') + 3::2])
        for draw in range(8):
            sim = simulator.Simulator(self._scenario(draw))
            policy = simulator.load_policy(command[command.index('-s') + 1],
                                           **given)
            policy.bind(sim)
            rng = np.random.default_rng(0)
            plans = []
            for _ in range(2):
                sim.arrive(policy, rng)
                plans.append(sim.audit(policy, rng)[0])
                sim.step()
            first, second = plans
            self.assertTrue(_swaps(first), (draw, first.skipped))
            self.assertEqual((), second.actions, (draw, first.actions))


class TestTheDocsShowIt(testtools.TestCase):
    """The system test types the audit doc/watcher.md's walkthrough shows."""

    def test_the_walkthrough_shows_the_audit(self):
        snippets = system_tools.load('doc_snippets')
        command, = _constants('AUDIT_COMMAND')
        self.assertIn(list(command), snippets.commands('watcher.md'))

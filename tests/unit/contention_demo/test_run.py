"""The demo's pure parts: arrivals, URL masking, plan translation."""

import os
import subprocess
import sys
import types

import fixtures
import testtools

from compute_agent import loop
from contention import cluster
from contention import sim
from contention_demo import run
from contention_demo import telemetry
from contention_demo import watcher_stage


class TestSharedSimSource(testtools.TestCase):

    def test_agents_read_the_interval_the_demo_measured(self):
        # Four agents on one simulator: each cycle's counters are one
        # interval's, whichever agent collects first.
        scen = sim.load_scenario('ahn-wl1')
        emulated = sim.Simulator(scen)
        clock = telemetry.EmulatedClock(0.0)
        agents = [loop.Collector(
            h.name, [telemetry.SharedSimSource(emulated, h.name)], 10.0,
            clock=clock, nova_cpus=h.model.nova_cpus())
            for h in emulated.state.hosts]
        cycles = []
        for _ in range(4):
            clock.advance(10.0)
            emulated.measure(clock.elapsed - 5.0, 10.0)
            cycles.append({rec.name: rec.counters for agent in agents
                           for rec in agent.collect().instances})
        first = cycles[1]
        for counts in cycles[2:]:
            for name, c in counts.items():
                self.assertIsNotNone(c.cycles, name)
                self.assertAlmostEqual(1.0, c.instructions
                                       / first[name].instructions,
                                       delta=0.2, msg=name)
                self.assertAlmostEqual(1.0, c.mbm_total_bytes
                                       / first[name].mbm_total_bytes,
                                       delta=0.2, msg=name)


class TestSplitArrivals(testtools.TestCase):

    def test_one_per_host_held_back_rest_stays_put(self):
        scen = sim.load_scenario('ahn-wl1')
        base, arriving = run.split_arrivals(scen, 4)
        self.assertEqual(4, len(arriving))
        self.assertEqual(28, len(base.instances))
        self.assertEqual('explicit', base.placement)
        full = sim.Simulator(scen)
        start = sim.Simulator(base)
        where = {i.name: (full.state.hosts[i.host].name,
                          full.state.socket_of(i))
                 for i in full.state.instances}
        # every remaining instance is where the scenario put it
        for inst in start.state.instances:
            self.assertEqual(where[inst.name],
                             (start.state.hosts[inst.host].name,
                              start.state.socket_of(inst)))
        # one held back per host: four hosts with room
        self.assertEqual(4, len({where[s.name][0] for s in arriving}))

    def test_scenario_arrivals_are_kept(self):
        scen = sim.load_scenario('ahn-wl1')
        scen = scen.__class__(**dict(
            scen.__dict__, arrivals=(sim.scenario.Arrival(
                epoch=3, profile='milc', count=2),)))
        base, arriving = run.split_arrivals(scen, 4)
        self.assertEqual(len(scen.instances), len(base.instances))
        self.assertEqual(['milc', 'milc'], [a.profile for a in arriving])
        self.assertEqual((), base.arrivals)


class TestMasked(testtools.TestCase):

    def test_passwords_hidden(self):
        self.assertEqual('rabbit://u:***@h1:5672,v:***@h2:5672/',
                         telemetry.masked('rabbit://u:p@h1:5672,v:q@h2:5672/'))
        self.assertEqual('fake://', telemetry.masked('fake://'))


def action(kind, **params):
    return types.SimpleNamespace(action_type=kind, input_parameters=params)


class TestToPlan(testtools.TestCase):

    def test_each_action_type(self):
        plan = watcher_stage.to_plan([
            action('contention_swap', resource_id='a', source_node='h1',
                   destination_node='h2', partner_id='b',
                   partner_source_node='h2', partner_destination_node='h1'),
            action('migrate', resource_id='c', source_node='h1',
                   destination_node='h3'),
            action('contention_repin', resource_id='d', host='h1', socket=1,
                   move_memory=True),
            action('contention_cpu_quota', resource_id='f', host='h1',
                   quota=0.75, old_quota=0.5),
            action('nop', resource_id='e'),
        ])
        self.assertEqual((
            cluster.Swap(cluster.Migrate('a', 'h1', 'h2'),
                         cluster.Migrate('b', 'h2', 'h1')),
            cluster.Migrate('c', 'h1', 'h3'),
            cluster.Repin('d', 'h1', 1, move_memory=True),
            cluster.CpuQuota('f', 'h1', 0.75)), plan.actions)
        self.assertEqual(['e'], [s.subject for s in plan.skipped])


class TestImports(testtools.TestCase):

    def test_parser_loads_neither_nova_nor_watcher(self):
        code = ('import sys\n'
                'from contention.sim import cmd\n'
                'cmd.build_parser().parse_args(["demo", "--seed", "2"])\n'
                'bad = [m for m in sys.modules\n'
                '       if m.split(".")[0] in ("nova", "watcher")]\n'
                'print(",".join(bad))\n')
        proc = subprocess.run([sys.executable, '-c', code],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual('', proc.stdout.strip())


class TestTrainModel(testtools.TestCase):

    def test_no_data_anywhere_gives_no_model_and_says_why(self):
        from contention.sim import training
        from contention import store as api

        def unavailable(*a, **kw):
            raise ValueError('no simulator here')
        self.useFixture(fixtures.MonkeyPatch(
            'contention.sim.training.train_from_sim', unavailable))
        self.assertIs(training.train_from_sim, unavailable)
        store = api.open_store('sqlite://')
        store.upgrade()
        self.addCleanup(store.dispose)
        path, note = run.train_model(sim.load_scenario('ahn-wl1'), store,
                                     '/nonexistent/model')
        self.assertIsNone(path)
        self.assertIn('no simulator here', note)
        self.assertIn('neutral', note)

    def test_trained_from_the_simulator(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'm')
        got, note = run.train_model(
            sim.load_scenario(os.path.join(
                os.path.dirname(__file__), os.pardir, os.pardir,
                'functional', 'data', 'demo-small.yaml')), None, path)
        self.assertEqual(path, got)
        self.assertTrue(os.path.exists(path))
        self.assertIn('trained on the simulator', note)

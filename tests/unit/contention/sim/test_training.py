"""The simulator's training hook for the placement models."""

import ast
import dataclasses
import os

import testtools

from contention.perfmodel import datasets
from contention.perfmodel import features
from contention.sim import scenario
from contention.sim import simulator
from contention.sim import training
from contention import topology as topo


def _parts(name='ahn-wl1'):
    topology, workloads, source = training.training_source(name)
    return topology, {w.name: w for w in workloads}, source


class TrainingSourceTest(testtools.TestCase):

    def test_hook_is_what_datasets_expects(self):
        topology, workloads, source = training.training_source('ahn-wl1')
        self.assertIsInstance(topology, topo.HostTopology)
        self.assertEqual(2, len(topology.nodes))
        self.assertTrue(all(isinstance(w, datasets.Workload)
                            for w in workloads))
        self.assertEqual(sorted(scenario.load('ahn-wl1').profiles),
                         sorted(w.name for w in workloads))

    def test_libraries_add_training_workloads(self):
        _, workloads, source = training.training_source(
            'merlin-mix1', libraries=('all',))
        names = {w.name for w in workloads}
        merlin = set(scenario.load('merlin-mix1').profiles)
        spec = set(scenario.load('ahn-wl1').profiles)
        self.assertEqual(merlin | spec, names)
        self.assertEqual(merlin, source.own)
        # the extra profiles are the shipped ones, unchanged
        self.assertEqual(scenario.load('ahn-wl1').profiles['lbm'],
                         source.profiles['lbm'])
        self.assertEqual(['ahn-spec2006', 'merlin'],
                         training.shipped_libraries())
        self.assertRaises(ValueError, training.library_profiles,
                          ['no-such-library'])
        _, plain, plain_source = training.training_source('merlin-mix1')
        self.assertEqual(merlin, {w.name for w in plain})
        self.assertEqual(merlin, plain_source.own)

    def test_profiles_come_from_synthetic_counters(self):
        _, wl, _ = _parts()
        lbm, povray = wl['lbm'].profile, wl['povray'].profile
        # A streaming code: high MPKI and Memory Factor; a CPU-bound one
        # low (Merlin section 3.1 bands).
        self.assertGreater(lbm.mpki, 15)
        self.assertGreater(lbm.mf, 0.6)
        self.assertLess(povray.mpki, 2)
        self.assertGreater(povray.ipc, lbm.ipc)
        self.assertEqual('sim', lbm.source)

    def test_small_llc_mf_tells_cache_sensitive_codes(self):
        _, wl, _ = _parts('merlin-mix1')
        for w in wl.values():
            # a quarter of the LLC never misses less than the whole one
            self.assertGreaterEqual(w.profile.mf_small_llc,
                                    w.profile.mf - 1e-9)
        # voldemort's working set fits the LLC alone (low MF) but not a
        # quarter of it; scalparc streams either way
        vold, scal = wl['voldemort'].profile, wl['scalparc'].profile
        self.assertGreater(vold.mf_small_llc - vold.mf, 0.2)
        self.assertLess(scal.mf_small_llc - scal.mf,
                        vold.mf_small_llc - vold.mf)

    def test_alone_is_at_most_one_and_corunners_hurt(self):
        topology, wl, source = _parts()
        soplex, lbm = wl['soplex'], wl['lbm']
        alone = source(datasets.Trial(topology, soplex, frozenset([0]), 1))
        self.assertLessEqual(alone.performance, 1.0)
        self.assertGreater(alone.performance, 0.9)
        self.assertEqual((), alone.corunner_performance)
        crowd = tuple(datasets.CoRunner(lbm, frozenset([0]), 1)
                      for _ in range(3))
        hurt = source(datasets.Trial(topology, soplex, frozenset([0]), 1,
                                     crowd))
        self.assertLess(hurt.performance, alone.performance - 0.05)
        self.assertEqual(3, len(hurt.corunner_performance))
        self.assertTrue(all(r < 1.0 for r in hurt.corunner_performance))

    def test_the_best_alone_is_a_spread_nova_can_give(self):
        # A busy 1-vCPU service whose working set (14 MiB) overflows its
        # node's 12 MiB LLC: "spread" over both nodes the solver lends its
        # one vCPU both caches and its response time improves almost
        # twofold, but Nova cannot split one vCPU over two NUMA nodes, so
        # the label's reference stays its own node.
        from contention.sim import profiles
        service = dict(base_cpi=0.64, llc_apki=4.35, mr_min=0.2,
                       working_set_mib=13.9, mlp=2.84, memory_mib=2048,
                       cpu_demand=0.936, metric='latency')
        one = profiles.WorkloadProfile(name='one', vcpus=1, **service)
        two = profiles.WorkloadProfile(name='two', vcpus=2, **service)
        _, hw = training.main_hardware(scenario.load('ahn-wl1'))
        source = training.SimulatorPerformance(hw, {'one': one, 'two': two})
        nodes = tuple(source.host.model.node_ids[:2])
        self.assertGreater(float(source._solve([(one, nodes)])[0]), 1.5)
        self.assertEqual(1.0, source.best_alone('one'))
        # two vCPUs may take a node each: that spread sets the reference
        spread = float(source._solve([(two, nodes)])[0])
        self.assertGreater(spread, 1.0)
        self.assertEqual(spread, source.best_alone('two'))

    def test_training_cell_is_what_the_host_report_shows(self):
        # Train/serve consistency: the cell a training row describes (a
        # co-runner on node 0, before the subject lands) is the cell the
        # weigher reads from that host's report, memory bandwidth
        # (resctrl MBM) and miss intensity included.
        topology, wl, source = _parts()
        lbm = wl['lbm']
        co = (datasets.CoRunner(lbm, frozenset([0]), lbm.profile.vcpus),)
        outcome = source(datasets.Trial(topology, wl['soplex'],
                                        frozenset([0]), 1, co))
        trained = dataclasses.replace(
            datasets._cell_of(topology, frozenset([0]), co),
            mem_bw_bps=outcome.corunner_mem_bw_bps)
        scen = scenario.load('ahn-wl1')
        host_class = training.main_hardware(scen)[0]
        alone = dataclasses.replace(
            scen, hosts=(('h', host_class),), arrivals=(),
            placement='explicit', noise=0.0, instances=(scenario.InstanceSpec(
                profile='lbm', name='lbm-1', host='h', socket=0,
                memory_socket=0),))
        emulated = simulator.Simulator(alone)
        emulated.step()
        served = features.cells_from_report(emulated.host_reports()[0])[0]
        self.assertGreater(outcome.corunner_mem_bw_bps, 1e9)
        for name in ('co_mpki_sum', 'co_vcpus', 'mem_bw_bps',
                     'co_miss_intensity', 'co_cpu_demand'):
            self.assertAlmostEqual(getattr(trained, name),
                                   getattr(served, name),
                                   delta=1e-3 * getattr(served, name),
                                   msg=name)

    def test_cpu_bound_newcomer_barely_hurts(self):
        topology, wl, source = _parts()
        co = (datasets.CoRunner(wl['soplex'], frozenset([0]), 1),)
        quiet = source(datasets.Trial(topology, wl['povray'],
                                      frozenset([0]), 1, co))
        loud = source(datasets.Trial(topology, wl['lbm'],
                                     frozenset([0]), 1, co))
        self.assertGreater(quiet.corunner_performance[0],
                           loud.corunner_performance[0])
        self.assertGreater(quiet.corunner_performance[0], 0.97)

    def test_deterministic_across_sources(self):
        topology, wl, a = _parts()
        _, _, b = _parts()
        trial = datasets.Trial(
            topology, wl['milc'], frozenset([1]), 1,
            (datasets.CoRunner(wl['gcc'], frozenset([1]), 1),))
        self.assertEqual(a(trial), b(trial))
        self.assertEqual(a(trial), a(trial))

    def test_shared_smt_cores_are_slower(self):
        topology, workloads, source = training.training_source(
            'merlin-mix1')
        wl = {w.name: w for w in workloads}
        w = wl['matmul']
        node = topology.nodes[0].id
        full = source(datasets.Trial(topology, w, frozenset([node]),
                                     w.profile.vcpus))
        half = source(datasets.Trial(topology, w, frozenset([node]),
                                     w.profile.vcpus // 2))
        self.assertLess(half.performance, full.performance)

    def test_unknown_workload_is_a_clear_error(self):
        topology, wl, source = _parts()
        stranger = datasets.Workload('stranger', wl['gcc'].profile)
        e = self.assertRaises(ValueError, source, datasets.Trial(
            topology, stranger, frozenset([0]), 1))
        self.assertIn('stranger', str(e))

    def test_perfmodel_does_not_import_the_simulator(self):
        # The simulator (its policies, its training source) sits above the
        # performance model: the arrow points from contention.sim down to
        # contention.perfmodel, never back; not at module level, not in a
        # function, not by name (importlib, __import__). Only cmd.py,
        # contention-train's composition root, may wire the simulator in.
        from contention import perfmodel
        root = os.path.dirname(perfmodel.__file__)
        for dirpath, _, files in os.walk(root):
            for name in files:
                if not name.endswith('.py') or name == 'cmd.py':
                    continue
                with open(os.path.join(dirpath, name)) as fh:
                    source = fh.read()
                for node in ast.walk(ast.parse(source)):
                    mods = []
                    if isinstance(node, ast.Import):
                        mods = [a.name for a in node.names]
                    elif isinstance(node, ast.ImportFrom):
                        mods = [node.module or '']
                    elif isinstance(node, ast.Constant) and isinstance(
                            node.value, str):
                        mods = [node.value]     # a module named by string
                    for mod in mods:
                        self.assertFalse(
                            mod.startswith('contention.sim'),
                            '%s names %s' % (name, mod))
                self.assertNotIn('importlib', source, name)
                self.assertNotIn('__import__', source, name)

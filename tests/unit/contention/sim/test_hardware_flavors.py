"""Hardware shapes (NPS4, CCX L3 domains, SNC, links), flavors, Nova's
live-migration rules and the best-known reference at scale."""

import numpy as np
from oslotest import base

from contention import cluster
from contention.sim import placement
from contention.sim import scenario
from contention.sim import simulator
from contention.sim.policies import oracle


def _epyc(instances, profiles, **extra):
    data = {'format': 2, 'name': 'epyc', 'placement': 'explicit',
            'hardware': {'epyc': {'base': 'amd-2s-nps4'}},
            'hosts': [{'class': 'epyc', 'count': 1}],
            'profiles': profiles, 'instances': instances}
    data.update(extra)
    return simulator.Simulator(scenario.from_dict(data, 'epyc.yaml'))


CACHE = {'llc_apki': 20, 'mr_min': 0.05, 'working_set_mib': 12,
         'vcpus': 8, 'cpu_policy': 'dedicated', 'numa_nodes': 1}
STREAM = {'llc_apki': 30, 'mr_min': 0.8, 'working_set_mib': 64,
          'vcpus': 8, 'cpu_policy': 'dedicated', 'numa_nodes': 1}


class TestHostClasses(base.BaseTestCase):

    def test_nps4_topology_has_ccx_domains_smt_and_the_matrix(self):
        sim = _epyc([], {})
        model = sim.state.hosts[0].model
        topo = model.topology
        self.assertEqual(8, len(topo.nodes))
        self.assertEqual(32, len(topo.l3_domains()))
        self.assertEqual(32, model.n_domains)
        self.assertEqual({4.0}, set(model.dom_cores))
        self.assertEqual(16 * 1024 * 1024, model.dom_l3_bytes[0])
        self.assertEqual((0, 128), topo.cpu(0).siblings)
        self.assertEqual((10, 11, 12, 32),
                         (topo.distance(0, 0), topo.distance(0, 1),
                          topo.distance(0, 2), topo.distance(0, 4)))

    def test_agent_sim_source_reports_the_same_topology(self):
        sim = _epyc([{'profile': 'c', 'host': 'epyc-0', 'nodes': [3]}],
                    {'c': CACHE})
        report = sim.host_reports()[0]
        self.assertEqual(sim.state.hosts[0].model.topology, report.topology)
        inst = report.instances[0]
        self.assertEqual({3}, {report.topology.node_of_cpu(c)
                               for c in inst.vcpu_cpus})
        self.assertEqual({3: 1024.0}, inst.memory_mib_per_node)

    def test_snc2_and_per_pair_links(self):
        hw = scenario.hardware_class('x', {'base': 'intel-2s-snc2'})
        self.assertEqual(4, hw.nodes)
        self.assertEqual(83.2, hw.link_bandwidth()[0][1])
        self.assertEqual(41.6, hw.link_bandwidth()[0][2])


class TestL3Domains(base.BaseTestCase):

    def _perf_of_cache_vm(self, second_nodes, second_first=False):
        instances = [{'profile': 'c', 'host': 'epyc-0', 'nodes': [0]},
                     {'profile': 's', 'host': 'epyc-0',
                      'nodes': second_nodes}]
        sim = _epyc(instances, {'c': dict(CACHE, vcpus=4),
                                's': dict(STREAM, vcpus=4)})
        return sim.performance()[sim.state.instances[0].uuid], sim

    def test_dedicated_vcpus_fill_one_ccx_before_the_next(self):
        sim = _epyc([{'profile': 'c', 'host': 'epyc-0', 'nodes': [0],
                      'count': 2}], {'c': CACHE})
        p = sim.state.problem(0.0)
        # 8 vCPUs = one CCX (4 cores x 2 threads) each, the next CCX for
        # the second instance.
        self.assertEqual([0], list(np.nonzero(p.vcpu_frac[0])[0]))
        self.assertEqual([1], list(np.nonzero(p.vcpu_frac[1])[0]))

    def test_sharing_a_ccx_hurts_more_than_sharing_the_node(self):
        # two 4-vCPU pinned VMs on node 0 share CCX 0; on nodes 0 and 1
        # they share nothing but the socket.
        same_ccx, _ = self._perf_of_cache_vm([0])
        other_node, _ = self._perf_of_cache_vm([1])
        self.assertLess(same_ccx, other_node - 0.05)

    def test_shared_data_is_held_in_every_ccx_the_vm_runs_in(self):
        # 4 floating vCPUs over node 0's four 16 MiB CCXs, 40 MiB of data:
        # private data sums the four caches, shared data is copied into
        # each, so all shared is the VM alone in one CCX.
        def perf(shared, **flavor):
            prof = dict(CACHE, working_set_mib=40, shared_fraction=shared,
                        **flavor)
            sim = _epyc([{'profile': 'c', 'host': 'epyc-0', 'nodes': [0]}],
                        {'c': prof})
            return sim.performance()[sim.state.instances[0].uuid]
        floating = dict(vcpus=4, cpu_policy='shared')
        private, half, shared = (perf(h, **floating) for h in (0, 0.5, 1))
        self.assertGreater(private, half + 0.1)
        self.assertGreater(half, shared + 0.05)
        self.assertAlmostEqual(1.0, shared, places=3)
        # pinned into one CCX, the fraction changes nothing
        pinned = dict(vcpus=4, cpu_policy='dedicated')
        self.assertEqual(perf(0, **pinned), perf(1, **pinned))

    def test_per_node_memory_bandwidth_is_the_nodes_own(self):
        slow = [41] * 8
        slow[1] = 4
        instances = [{'profile': 's', 'host': 'epyc-0', 'nodes': [n]}
                     for n in (0, 1)]
        sim = _epyc(instances, {'s': dict(STREAM, vcpus=16)},
                    hardware={'epyc': {'base': 'amd-2s-nps4',
                                       'mc_bandwidth_gbs_per_node': slow}})
        perf = sim.performance()
        a, b = [i.uuid for i in sim.state.instances]
        self.assertLess(perf[b], perf[a] - 0.1)


class TestFlavors(base.BaseTestCase):

    def test_numa_nodes_on_a_socket_and_across_sockets(self):
        sim = simulator.Simulator('epyc-nps4')
        by_name = {i.name: i for i in sim.state.instances}
        model = sim.state.hosts[0].model
        one = by_name['db-1node-1']
        self.assertEqual(1, int((one.vcpu_frac > 0).sum()))
        two = by_name['web-2node-1']
        nodes = np.nonzero(two.vcpu_frac)[0]
        self.assertEqual(2, len(nodes))
        self.assertEqual(1, len({int(model.sockets[k]) for k in nodes}))
        span = by_name['hpc-span']
        nodes = np.nonzero(span.vcpu_frac)[0]
        self.assertEqual(6, len(nodes))
        self.assertEqual(2, len({int(model.sockets[k]) for k in nodes}))
        np.testing.assert_allclose(span.vcpu_frac, span.mem_frac)

    def test_reports_describe_spanning_instances_exactly(self):
        sim = simulator.Simulator('epyc-nps4')
        span = [i for i in sim.state.instances if i.name == 'hpc-span'][0]
        report = [r for r in sim.host_reports()
                  if r.host == sim.state.hosts[span.host].name][0]
        rec = [r for r in report.instances if r.uuid == span.uuid][0]
        model = sim.state.hosts[span.host].model
        want = {model.node_ids[k] for k in np.nonzero(span.vcpu_frac)[0]}
        self.assertEqual(want, set(rec.memory_mib_per_node))
        self.assertEqual(want, {report.topology.node_of_cpu(c)
                                for c in rec.vcpu_cpus})
        self.assertEqual(48, len(rec.vcpu_cpus))

    def test_pinned_vcpus_cannot_overfill_a_node(self):
        instances = [{'profile': 'c', 'host': 'epyc-0', 'nodes': [n],
                      'count': 4} for n in range(4)]
        instances.append({'profile': 'c', 'host': 'epyc-0', 'nodes': [4]})
        sim = _epyc(instances, {'c': CACHE})
        last = sim.state.instances[-1]
        # socket 0's nodes have 32 CPUs each, all pinned: a pinned VM from
        # socket 1 cannot land on any of them.
        outcome = sim.apply(cluster.Plan(actions=(cluster.Repin(
            last.uuid, 'epyc-0', 0),)))
        self.assertEqual('pinned_cpus', outcome.rejected[0].kind)
        self.assertEqual({'pinned_cpus': 1}, sim.rejected_reasons)

    def test_worst_placement_builds_with_flavors_wider_than_a_socket(self):
        data = {'format': 2, 'name': 'wide', 'placement': 'worst',
                'hardware': {'h': {'sockets': 2, 'cores_per_node': 4}},
                'hosts': [{'class': 'h', 'count': 2}],
                'profiles': {'big': {'vcpus': 6}, 'small': {}},
                'instances': [{'profile': 'big', 'count': 2},
                              {'profile': 'small', 'count': 4}]}
        sim = simulator.Simulator(scenario.from_dict(data, 'wide'))
        self.assertEqual(6, len(sim.state.instances))


class TestLiveMigration(base.BaseTestCase):

    def _full(self, staging, other_vendor=False):
        scen = scenario.load('full-hosts')
        if staging:
            data = scenario.to_dict(scen)
            if other_vendor:
                # listed first, so the reference must pass it over
                data['hardware']['small-amd'] = dict(
                    data['hardware']['small'], cpu_vendor='amd')
                data['hosts'].insert(1, {'class': 'small-amd',
                                         'names': ['spare-amd']})
            data['hosts'].append({'class': 'small', 'names': ['spare',
                                                              'spare-2']})
            scen = scenario.from_dict(data, 'full-hosts+spare')
        return simulator.Simulator(scen)

    def _swap(self, sim):
        a = [i for i in sim.state.instances if i.name == 'milc-1'][0]
        b = [i for i in sim.state.instances if i.name == 'namd-1'][0]
        return cluster.Swap(cluster.Migrate(a.uuid, 'full-0', 'full-1', 0),
                            cluster.Migrate(b.uuid, 'full-1', 'full-0', 0))

    def test_swap_between_full_hosts_is_refused_and_counted(self):
        sim = self._full(staging=False)
        swap = self._swap(sim)
        outcome = sim.apply(cluster.Plan(actions=(swap,)))
        self.assertEqual('first_leg', outcome.rejected[0].kind)
        self.assertIn('first leg', outcome.rejected[0].reason)
        self.assertEqual({'first_leg': 1}, sim.rejected_reasons)
        self.assertEqual(0, sim.costs.migrations)
        result = sim.result('test', 0.0)
        self.assertEqual((('first_leg', 1),), result.rejected_reasons)

    def test_the_reference_goes_through_a_staging_host_or_not_at_all(self):
        for staging, expect in ((False, 0), (True, 3)):
            sim = self._full(staging)
            ref = oracle.OraclePolicy()
            ref.bind(sim)
            plan = ref._feasible((self._swap(sim),))
            self.assertEqual(expect, len(plan))
            outcome = sim.apply(cluster.Plan(actions=plan))
            self.assertEqual((), outcome.rejected)
            if staging:
                self.assertEqual('spare', plan[0].dest_host)

    def test_staging_host_is_one_the_instance_can_live_migrate_to(self):
        sim = self._full(staging=True, other_vendor=True)
        ref = oracle.OraclePolicy()
        ref.bind(sim)
        plan = ref._feasible((self._swap(sim),))
        self.assertEqual(['spare', 'full-0', 'full-1'],
                         [leg.dest_host for leg in plan])
        self.assertEqual((), sim.apply(cluster.Plan(actions=plan)).rejected)

    def test_a_swap_its_own_hosts_refuse_is_not_staged_anywhere(self):
        # the second leg names a socket full-0 does not have: whichever
        # host holds the first instance meanwhile, that leg is refused,
        # so one staging host is tried and the scratch is put back
        sim = self._full(staging=True)
        swap = self._swap(sim)
        swap = cluster.Swap(swap.first, cluster.Migrate(
            swap.second.instance, 'full-1', 'full-0', 7))
        ref = oracle.OraclePolicy()
        ref.bind(sim)
        scratch = sim.scratch()
        self.assertEqual('first_leg', scratch.attempt(swap).kind)
        tried = []
        attempt = scratch.attempt

        def counted(action):
            tried.append(action)
            return attempt(action)
        scratch.attempt = counted
        self.assertEqual((), ref._staged(scratch, swap))
        self.assertEqual(['spare', 'full-0'],
                         [leg.dest_host for leg in tried])
        moved = scratch.state.by_uuid[swap.first.instance]
        self.assertEqual('full-0', scratch.state.hosts[moved.host].name)

    def test_reference_on_full_hosts_emits_only_accepted_actions(self):
        result = simulator.run('full-hosts', 'oracle', epochs=2)
        self.assertEqual(0, result.rejected_actions)

    def test_reference_evaluates_each_instance_of_a_class_apart(self):
        # four 8-vCPU numa_nodes=1 VMs of one class on a socket of four
        # 16-core nodes: Nova gives each its own node, and so must the
        # compositions the reference values
        sim = _epyc([{'profile': 's', 'host': 'epyc-0', 'nodes': [k]}
                     for k in range(4)], {'s': STREAM})
        orc = oracle.OraclePolicy()
        orc.bind(sim)
        t = orc.decision_time()
        keys, members = orc._classes(t)
        self.assertEqual([4], [len(m) for m in members])
        value = orc._evaluate(keys, members, [(4,)], 0, 0, t).sum()
        self.assertAlmostEqual(sum(sim.performance().values()), value, 3)


class TestReferenceAtScale(base.BaseTestCase):

    def test_no_state_count_overflow_and_a_best_known_plan(self):
        # 200 hosts, 1,013 VMs of 14 classes: the state count is ~1e26,
        # past int64, which used to turn negative and crash.
        profiles = scenario._library('ahn-spec2006', 'test')
        names = sorted(profiles)
        data = {'format': 2, 'name': 'big', 'placement': 'random',
                'hardware': {'h': {'sockets': 2, 'cores_per_node': 4,
                                   'memory_gib_per_node': 8}},
                'hosts': [{'class': 'h', 'count': 200}],
                'profile_libraries': ['ahn-spec2006'],
                'instances': [{'profile': names[k % len(names)],
                               'name': 'vm%d' % k} for k in range(1013)]}
        sim = simulator.Simulator(scenario.from_dict(data, 'big'))
        ref = oracle.OraclePolicy(search_tries=1000)
        ref.bind(sim)
        found, why = ref.search(ref.decision_time())
        self.assertIsNone(found)
        self.assertIn('too many', why)
        plan = ref.rebalance(sim.view(), np.random.default_rng(0))
        outcome = sim.apply(plan)
        self.assertEqual((), outcome.rejected)
        self.assertIn('best known', ref.notes[-1])
        for h in range(len(sim.state.hosts)):
            cpu, mem = placement.host_free(sim.state, h)
            self.assertGreaterEqual(mem, 0)

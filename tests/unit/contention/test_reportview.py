"""view_from_reports: the core's view from reports and an inventory."""

import dataclasses

import testtools

from contention import cluster
from contention import report
from contention import reportview
from contention import swap
from contention import topology
from contention.swap import params as swap_params
from tests.unit.contention.store import reports
from tests.unit.watcher_strategies import fixtures as f

NOW = 1000.0
M = 1e6


def _inventory(*hosts):
    return reportview.Inventory(
        tuple(reportview.HostInventory(h, 8, 16384) for h in hosts),
        tuple(reportview.InstanceInventory(f.uid(h + '-vm'), h, 2, 2048)
              for h in hosts))


class TestViewFromReports(testtools.TestCase):

    def test_a_bad_stored_value_skips_the_host_with_a_reason(self):
        good = f.host_report('good', NOW - 5,
                             [f.record('good-vm', 2 * M)])
        bad_record = dataclasses.replace(
            f.record('bad-vm', 1 * M),
            metrics=report.Metrics(llc_misses_per_s=float('nan')))
        bad = f.host_report('bad', NOW - 5, [bad_record])
        odd = dataclasses.replace(
            f.host_report('odd', NOW - 5, []), timestamp='yesterday')
        built = reportview.view_from_reports(
            {'good': good, 'bad': bad, 'odd': odd},
            _inventory('good', 'bad', 'odd'), NOW, 120)
        hosts = {h.name: h for h in built.view.hosts}
        self.assertTrue(hosts['good'].enabled)
        self.assertFalse(hosts['bad'].enabled)
        self.assertTrue(hosts['bad'].skip_reason.startswith('bad_report'))
        self.assertIn(f.uid('bad-vm'), hosts['bad'].skip_reason)
        self.assertTrue(hosts['odd'].skip_reason.startswith('bad_report'))
        movable = {i.uuid: i.movable for i in built.view.instances}
        self.assertEqual({f.uid('good-vm'): True, f.uid('bad-vm'): False,
                          f.uid('odd-vm'): False}, movable)
        self.assertEqual((2, 3), (built.missing, built.in_scope))

    def test_stale_and_unknown(self):
        stale = f.host_report('a', NOW - 500, [f.record('a-vm', 1 * M)])
        fresh = f.host_report('b', NOW - 5, [f.record('b-vm', 1 * M),
                                             f.record('stranger', 1 * M)])
        built = reportview.view_from_reports(
            {'a': stale, 'b': fresh}, _inventory('a', 'b'), NOW, 120)
        reasons = {i.uuid: i.skip_reason for i in built.view.instances}
        self.assertTrue(reasons[f.uid('a-vm')].startswith('no_telemetry'))
        self.assertIsNone(reasons[f.uid('b-vm')])
        self.assertTrue(
            reasons[f.uid('stranger')].startswith('unknown_to_nova'))
        b_vm = built.view.instance(f.uid('b-vm'))
        self.assertEqual((0, 0), (b_vm.socket, b_vm.node))
        # The interval measured ends at the report's timestamp; a stale
        # report's is not the view's.
        since = {h.name: h.measured_since for h in built.view.hosts}
        self.assertEqual({'a': None, 'b': NOW - 5 - fresh.interval_s},
                         since)
        self.assertRaises(reportview.TelemetryMissing,
                          reportview.check_telemetry, built, 0.1)

    def test_the_flavor_s_latency_declaration_reaches_the_view(self):
        rep = f.host_report('h', NOW - 5, [f.record('h-vm', 1 * M)])
        inv = _inventory('h')
        declared = dataclasses.replace(inv, instances=tuple(
            dataclasses.replace(i, latency=True) for i in inv.instances))
        for inventory, latency in ((inv, None), (declared, True)):
            built = reportview.view_from_reports({'h': rep}, inventory,
                                                 NOW, 120)
            self.assertIs(latency, built.view.instance(
                f.uid('h-vm')).latency)

    def test_dominant_node_votes_by_vcpus_then_memory(self):
        rec = f.record('x', 1 * M, socket=1)
        topology = f.host_report('h', NOW, [rec]).topology
        self.assertEqual(1, reportview.dominant_node(rec, topology))
        no_cpus = dataclasses.replace(rec, vcpu_cpus=(99,))
        self.assertEqual(1, reportview.dominant_node(no_cpus, topology))

    def test_only_the_cpus_nova_places_on_count(self):
        rep = f.host_report('h', NOW - 5, [f.record('h-vm', 1 * M)])
        full = reportview.view_from_reports(
            {'h': rep}, _inventory('h'), NOW, 120).view.hosts[0]
        # Nova's sets hold two CPUs of one node and none of the other.
        cpus = [n.cpus for n in rep.topology.nodes]
        kept = cpus[0][:2]
        rep = dataclasses.replace(rep, nova_cpus=kept)
        part = reportview.view_from_reports(
            {'h': rep}, _inventory('h'), NOW, 120).view.hosts[0]
        self.assertEqual(2, len(full.sockets))
        self.assertEqual([(0, (0,), 2)],
                         [(s.id, s.nodes, s.cpus) for s in part.sockets])
        self.assertEqual(full.sockets[0].memory_mib,
                         part.sockets[0].memory_mib)

    def test_the_hosts_cpu_is_its_reports(self):
        rep = f.host_report('h', NOW - 5, [f.record('h-vm', 1 * M)])
        amd = dataclasses.replace(rep, topology=dataclasses.replace(
            rep.topology, cpu_vendor='amd', cpu_model='EPYC-Rome'))
        built = reportview.view_from_reports(
            {'h': amd}, _inventory('h', 'g'), NOW, 120)
        cpus = {h.name: (h.cpu_vendor, h.cpu_model)
                for h in built.view.hosts}
        # no report, no vendor: not judged (cluster.live_migratable)
        self.assertEqual({'h': ('amd', 'EPYC-Rome'), 'g': (None, None)},
                         cpus)

    def test_the_nodes_memory_bandwidth_is_the_sockets(self):
        rep = f.host_report('h', NOW - 5, [f.record('h-vm', 1 * M)])

        def sockets(rep):
            return [s.memory_bandwidth_bps for s in reportview.view_from_reports(
                {'h': rep}, _inventory('h'), NOW, 120).view.hosts[0].sockets]

        self.assertEqual([None, None], sockets(rep))
        stated = dataclasses.replace(
            rep, topology=topology.with_memory_bandwidth(rep.topology, 20e9))
        self.assertEqual([20e9, 20e9], sockets(stated))
        # A node of unknown bandwidth leaves its socket's unknown.
        first, second = stated.topology.nodes
        half = dataclasses.replace(rep, topology=dataclasses.replace(
            rep.topology, nodes=(first, rep.topology.nodes[1])))
        self.assertEqual([20e9, None], sockets(half))

    def test_dominant_node_prefers_vcpus_then_memory(self):
        topo = reports.small_topology('a')
        rec = reports.instance('u', vcpu_cpus=(0, 4, 5))
        self.assertEqual(1, reportview.dominant_node(rec, topo))
        rec = reports.instance('u', vcpu_cpus=())
        self.assertEqual(0, reportview.dominant_node(rec, topo))

    def test_busiest_node_is_on_the_busiest_socket(self):
        # Nodes 0-3 on socket 0, 4-7 on socket 1 (an NPS4 host).
        socket_of = {n: n // 4 for n in range(8)}
        # Spanning both sockets: node 0 is the busiest single node, but
        # socket 1 holds two thirds of the vCPUs.
        spread = {0: 10, 3: 6, 4: 8, 5: 8, 6: 8, 7: 8}
        self.assertEqual(4, reportview.busiest_node(spread, socket_of))
        # Ties go to the lowest id, shares work as counts, zeros are not
        # votes.
        self.assertEqual(4, reportview.busiest_node(
            {4: 0.25, 5: 0.25, 6: 0.25, 7: 0.25, 0: 0.0}, socket_of))
        self.assertIsNone(reportview.busiest_node({2: 0}, socket_of))

    def test_the_reports_flavor_fills_the_inventorys_gap(self):
        # Watcher's instance element has no flavor: the agent's report,
        # which reads it from the domain's metadata, gives it.
        reps, inventory = f.system_layout(NOW, [
            ('a', 'c1.mem', 'h', 'milc'), ('b', 'c1.cpu', 'h', 'cpu-loop'),
            ('stranger', 'c1.cpu', 'h', 'cpu-loop')])
        inventory = dataclasses.replace(inventory, instances=(
            inventory.instances[0],
            dataclasses.replace(inventory.instances[1], flavor='nova-b')))
        built = reportview.view_from_reports(reps, inventory, NOW, 120)
        flavors = {i.uuid: i.flavor for i in built.view.instances}
        self.assertEqual({f.uid('a'): 'c1.mem', f.uid('b'): 'nova-b',
                          f.uid('stranger'): 'c1.cpu'}, flavors)

    def test_make_systems_layout_gets_a_swap(self):
        # tools/system: one image for all, the workload told apart by the
        # flavor alone, which only the agents' reports carry.
        servers = ([('mem-%d' % i, 'c1.mem', 'cmp-1', 'milc')
                    for i in range(1, 5)]
                   + [('cpu-%d' % i, 'c1.cpu', 'cmp-2', 'cpu-loop')
                      for i in range(1, 5)])
        reps, inventory = f.system_layout(NOW, servers)
        params = swap_params.from_input(swap.CACHE_AWARE,
                                        {'victim_selection': 'extreme'})
        # Without the flavor anywhere (an agent that cannot read it), the
        # same image does not make them alike either.
        no_flavor = {h: dataclasses.replace(r, instances=tuple(
            dataclasses.replace(i, flavor=None) for i in r.instances))
            for h, r in reps.items()}
        for given in (reps, no_flavor):
            built = reportview.view_from_reports(given, inventory, NOW, 120)
            plan = swap.run_audit(built.view, params)
            swaps = [a for a in plan.actions if isinstance(a, cluster.Swap)]
            self.assertTrue(swaps, (plan.reason, plan.skipped))
            for action in swaps:
                self.assertEqual(
                    {'cmp-1', 'cmp-2'},
                    {action.first.source_host, action.second.source_host})

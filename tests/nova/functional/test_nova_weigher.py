"""The weigher and filter inside Nova's in-process harness.

Real nova-api, conductor, scheduler (with ``nova_filters.ContentionWeigher``
enabled through ``[filter_scheduler] weight_classes``), fake computes and
the placement fixture; the telemetry store is a throwaway PostgreSQL
database seeded with host reports. Servers must land where the model
prefers, and follow the telemetry when it changes.
"""

# Nova's functional package must be imported first: it selects the
# threading mode before any other Nova module is loaded.
import nova.tests.functional  # noqa: F401,I100 isort:skip

import os
import time

import fixtures
import nova
from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional import integrated_helpers
from nova.tests.functional.libvirt import base

from contention import report
from contention.perfmodel import persist
from contention import store as store_api
import nova_filters
from nova_filters import opts
from tests.functional import services
from tests.unit.contention.perfmodel import test_models
from tests.unit.contention.store import reports as store_reports

HEAVY = 'mpki=25,mf=0.9,ipc=0.4'


def api_paste_config():
    """The venv's etc/nova/api-paste.ini (where the nova wheel puts it)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(nova.__file__)))
    for _ in range(4):
        candidate = os.path.join(root, 'etc', 'nova', 'api-paste.ini')
        if os.path.exists(candidate):
            return candidate
        root = os.path.dirname(root)
    raise RuntimeError('etc/nova/api-paste.ini not found near %s'
                       % nova.__file__)


def node(node_id, mpki_sum, vcpus):
    return report.NodeAggregate(node=node_id, instances=int(vcpus // 2),
                                vcpus=float(vcpus), mpki_sum=float(mpki_sum),
                                mem_bw_bps=mpki_sum * 64e6)


def busy(host):
    return store_reports.host_report(host, time.time(), (), nodes=(
        node(0, 90, 4), node(1, 80, 4)))


def calm(host):
    return store_reports.host_report(host, time.time(), (), nodes=(
        node(0, 0, 0), node(1, 0, 0)))


def _enable_weigher(test):
    """Store on PostgreSQL, a trained model, the weigher in Nova's config.

    Called before Nova's ``setUp``: the weigher classes are read when the
    scheduler starts.
    """
    opts.register_opts(nova.conf.CONF)
    test.db = test.useFixture(services.PostgresDatabase())
    test.store = store_api.open_store(test.db.url)
    test.store.upgrade()
    test.addCleanup(test.store.dispose)
    tmp = test.useFixture(fixtures.TempDir()).path
    model = os.path.join(tmp, 'model.skops')
    persist.save(test_models.trained_bundle(), model)
    test.flags(api_paste_config=api_paste_config(), group='wsgi')
    test.flags(weight_classes=[
        'nova.scheduler.weights.all_weighers',
        'nova_filters.ContentionWeigher'], group='filter_scheduler')
    test.flags(model_path=model, store_connection=test.db.url,
               store_cache_ttl=0, weight_multiplier=10.0, group='contention')
    from nova_filters import service
    service.reset_service()
    test.addCleanup(service.reset_service)


class TestContentionWeigherInNova(integrated_helpers._IntegratedTestBase):

    compute_driver = 'fake.MediumFakeDriver'
    microversion = 'latest'
    ADMIN_API = True

    def _setup_compute_service(self):
        pass                         # the computes are started below

    def setUp(self):
        _enable_weigher(self)
        super().setUp()
        self._start_compute('host1')
        self._start_compute('host2')
        self.flavor = self._create_flavor(
            vcpu=2, memory_mb=1024, extra_spec={'contention:profile': HEAVY})

    def test_servers_land_where_the_model_prefers(self):
        self.store.ingest([busy('host1'), calm('host2')])
        server = self._create_server(flavor_id=self.flavor, networks='none')
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])
        # host1 is now the emptier host, which Nova's spreading weighers
        # prefer; the contention weight (x10) keeps the heavy instance off
        # the busy host anyway.
        server = self._create_server(flavor_id=self.flavor, networks='none')
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])
        # The telemetry turns around: the next server follows it.
        self.store.ingest([calm('host1'), busy('host2')])
        server = self._create_server(flavor_id=self.flavor, networks='none')
        self.assertEqual('host1', server['OS-EXT-SRV-ATTR:host'])

    def test_stale_telemetry_leaves_nova_default(self):
        # Reports an hour old are stale: neutral scores, so Nova's own
        # weighers spread the servers over both hosts.
        old = time.time() - 3600
        self.store.ingest([
            store_reports.host_report('host1', old, (), nodes=(
                node(0, 90, 4), node(1, 80, 4))),
            store_reports.host_report('host2', old, (), nodes=(
                node(0, 0, 0), node(1, 0, 0)))])
        hosts = {self._create_server(flavor_id=self.flavor, networks='none')[
            'OS-EXT-SRV-ATTR:host'] for _ in range(2)}
        self.assertEqual({'host1', 'host2'}, hosts)


class TestContentionWeigherNUMA(base.ServersTestBase):
    """hw:numa_nodes=1 on fake-libvirt hosts with two NUMA cells.

    On an empty host Nova puts a one-cell instance on cell 0. The weigher
    must score the cell Nova will use, not the host's best cell: a host
    whose cell 1 is idle but whose cell 0 is saturated loses to a host
    that is lightly loaded on both cells, and wins when the idle cell is
    cell 0.
    """

    ADDITIONAL_FILTERS = ['NUMATopologyFilter']
    microversion = 'latest'
    ADMIN_API = True

    def setUp(self):
        _enable_weigher(self)
        super().setUp()
        for name in ('host1', 'host2'):
            self.start_compute(hostname=name, host_info=fakelibvirt.HostInfo(
                cpu_nodes=2, cpu_sockets=1, cpu_cores=4, cpu_threads=1,
                kB_mem=16 * 1024 * 1024))
        self.flavor = self._create_flavor(vcpu=2, memory_mb=1024, extra_spec={
            'hw:numa_nodes': '1', 'contention:profile': HEAVY})

    def report(self, host, cell0, cell1):
        return store_reports.host_report(host, time.time(), (), nodes=(
            node(0, cell0, 2 if cell0 else 0),
            node(1, cell1, 2 if cell1 else 0)))

    def test_landing_cell_decides(self):
        # host1's best cell (1, idle) beats host2's (lightly loaded), but
        # Nova would land the instance on host1's cell 0, which is saturated.
        self.store.ingest([self.report('host1', 150, 0),
                           self.report('host2', 5, 5)])
        server = self._create_server(flavor_id=self.flavor, networks='none')
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])
        weigher = [w for w in self.scheduler.manager.host_manager.weighers
                   if isinstance(w, nova_filters.ContentionWeigher)][0]
        scores = weigher.last_scores
        self.assertLess(scores['host1'].score, scores['host2'].score)

    def test_calm_landing_cell_wins(self):
        self.store.ingest([self.report('host1', 0, 150),
                           self.report('host2', 5, 5)])
        server = self._create_server(flavor_id=self.flavor, networks='none')
        self.assertEqual('host1', server['OS-EXT-SRV-ATTR:host'])

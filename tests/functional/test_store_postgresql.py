"""The telemetry store on the real PostgreSQL on localhost."""

from oslotest import base

from contention import store as api
from tests.functional import services
from tests.unit.contention.store import reports


class TestStoreOnPostgreSQL(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        db = self.useFixture(services.PostgresDatabase())
        self.store = api.open_store(db.url, sample_interval_s=0)
        self.addCleanup(self.store.dispose)
        self.store.upgrade()

    def test_migrations_reach_head_and_back(self):
        self.assertIsNotNone(self.store.schema_revision())
        self.store.downgrade('base')
        self.assertIsNone(self.store.schema_revision())
        self.store.upgrade()
        self.assertIsNotNone(self.store.schema_revision())

    def test_redelivered_and_older_reports(self):
        newer = reports.host_report('c1', 200, [reports.instance('i-1')])
        older = reports.host_report('c1', 100, [reports.instance('i-1')])
        first = self.store.ingest([newer], now=201)
        self.assertEqual(1, first.accepted)
        again = self.store.ingest([newer, older], now=202)
        self.assertEqual((0, 1, 1),
                         (again.accepted, again.duplicates, again.stale))
        latest = self.store.latest_reports(now=203)
        self.assertEqual(200.0, latest['c1'].timestamp)
        self.assertEqual(2, len(self.store.host_history('c1')))

    def test_instance_samples_through_copy(self):
        odd = reports.instance('i-"odd",\n1', image_id=None, mpki=None,
                               merlin_class=None)
        plain = reports.instance('i-2', image_id='')
        self.store.ingest([reports.host_report('c1', 100, [odd, plain])])
        rows = self.store.instance_history('i-"odd",\n1')
        self.assertEqual([(None, None, None, 1.5)], [
            (r.image_id, r.mpki, r.merlin_class, r.ipc) for r in rows])
        self.assertEqual('', self.store.instance_history('i-2')[0].image_id)

    def test_image_profiles_of_one_batch_each_get_their_own_fold(self):
        # Images with different sample counts in one batch: each has its
        # own decay, which a batched statement must not share.
        embedded = api.open_store('sqlite://')
        self.addCleanup(embedded.dispose)
        embedded.upgrade()
        batches = [
            [reports.host_report('h%d' % i, 100 + i, [reports.instance(
                'u%d' % i, image_id='img-%d' % (i % 3), mpki=float(i))])
             for i in range(9)],
            [reports.host_report('h%d' % i, 200 + i, [reports.instance(
                'u%d' % i, image_id='img-%d' % (i % 2),
                mpki=float(10 * i + 1))]) for i in range(7)]]
        for store in (self.store, embedded):
            for batch in batches:
                store.ingest(batch)
        for image in ('img-0', 'img-1', 'img-2'):
            here, there = (s.image_profile(image)
                           for s in (self.store, embedded))
            self.assertEqual(there.samples, here.samples)
            self.assertAlmostEqual(there.mpki, here.mpki, places=9)
        self.assertNotAlmostEqual(self.store.image_profile('img-0').mpki,
                                  self.store.image_profile('img-1').mpki)

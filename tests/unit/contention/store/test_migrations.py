"""Migrations build the schema the code uses, from an empty database."""

from alembic import autogenerate
from alembic.runtime import migration
from oslotest import base
import sqlalchemy as sa

from contention.store import codec
from contention.store import models
from contention.store import open_store
from tests.unit.contention.store import reports


class TestMigrations(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.store = open_store('sqlite://')
        self.addCleanup(self.store.dispose)

    def test_empty_database_has_no_revision(self):
        self.assertIsNone(self.store.schema_revision())

    def test_upgrade_from_empty_matches_models(self):
        self.store.upgrade()
        self.assertEqual('0005', self.store.schema_revision())
        with self.store.engine.connect() as conn:
            context = migration.MigrationContext.configure(conn)
            diff = autogenerate.compare_metadata(context, models.metadata)
        self.assertEqual([], diff)

    def test_upgrade_twice_is_harmless(self):
        self.store.upgrade()
        self.store.upgrade()
        self.assertEqual('0005', self.store.schema_revision())

    def test_downgrade_to_empty(self):
        self.store.upgrade()
        self.store.downgrade('base')
        names = sa.inspect(self.store.engine).get_table_names()
        self.assertEqual(['alembic_version'], names)

    def test_upgrade_reaches_the_code_head(self):
        self.store.upgrade()
        self.assertEqual(self.store.head_revision(),
                         self.store.schema_revision())

    def test_upgrade_keeps_the_reports_of_the_previous_revision(self):
        self.store.upgrade('0001')
        rep = reports.host_report('a', 100, [reports.instance('u1')])
        with self.store.engine.begin() as conn:
            conn.execute(sa.text(
                'INSERT INTO latest_reports (host, timestamp, received_at, '
                'body) VALUES (:h, :t, :t, :b)'), dict(
                    h='a', t=100.0, b=codec.encode(rep)))
        self.store.upgrade()
        self.assertEqual({'a': rep}, self.store.latest_reports())
        self.assertEqual((), self.store.latest_reports(
            with_instances=False)['a'].instances)
        self.store.ingest([reports.host_report('a', 110)])
        self.assertEqual(110.0, self.store.latest_reports(
            with_instances=False)['a'].timestamp)

    def test_0003_keeps_latest_reports_and_shares_topologies(self):
        self.store.upgrade('0002')
        a = reports.host_report('a', 100, [reports.instance('u1')])
        b = reports.host_report('b', 90)
        with self.store.engine.begin() as conn:
            for rep, in_history in ((a, True), (b, False)):
                body, summary, topology, digest = codec.encode_latest(rep)
                if in_history:
                    conn.execute(sa.text(
                        'INSERT INTO reports (host, timestamp, received_at, '
                        'body) VALUES (:h, :t, :t, :b)'), dict(
                            h=rep.host, t=rep.timestamp, b=body))
                conn.execute(sa.text(
                    'INSERT INTO latest_reports (host, timestamp, '
                    'received_at, body, summary, topology, topology_digest) '
                    'VALUES (:h, :t, :t, :b, :s, :x, :d)'), dict(
                        h=rep.host, t=rep.timestamp, b=body, s=summary,
                        x=topology, d=digest))
        self.store.upgrade()
        self.assertEqual({'a': a, 'b': b}, self.store.latest_reports())
        with self.store.engine.connect() as conn:
            self.assertEqual(1, conn.execute(sa.text(
                'SELECT COUNT(*) FROM topologies')).scalar())
            self.assertEqual(2, conn.execute(sa.text(
                'SELECT COUNT(*) FROM reports')).scalar())
        fresh = open_store('sqlite://')
        fresh.engine = self.store.engine
        light = fresh.latest_reports(with_instances=False)
        self.assertEqual('b', light['b'].topology.hostname)
        self.assertEqual((), light['a'].instances)

        self.store.downgrade('0002')
        with self.store.engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT host, body, topology FROM latest_reports '
                'ORDER BY host')).all()
        self.assertEqual(a, codec.decode(rows[0].body))
        self.assertEqual(codec.encode_latest(b)[2], rows[1].topology)

    def test_0004_keeps_image_profiles_which_learn_the_new_field_later(self):
        self.store.upgrade('0003')
        with self.store.engine.begin() as conn:
            conn.execute(sa.text(
                'INSERT INTO image_profiles (image_id, mpki, samples, '
                "updated_at) VALUES ('image-a', 3.0, 1, 100.0)"))
        self.store.upgrade()
        profile = self.store.image_profile('image-a')
        self.assertEqual((3.0, 1, None),
                         (profile.mpki, profile.samples, profile.mf_small_llc))
        self.store.downgrade('0003')
        with self.store.engine.connect() as conn:
            self.assertEqual(1, conn.execute(sa.text(
                'SELECT samples FROM image_profiles')).scalar())

    def test_0005_keeps_profiles_as_one_vote_that_new_hosts_outvote(self):
        self.store.upgrade('0004')
        with self.store.engine.begin() as conn:
            conn.execute(sa.text(
                'INSERT INTO image_profiles (image_id, mpki, mf, samples, '
                "updated_at) VALUES ('image-a', 3.0, 0.5, 7, 100.0)"))
        self.store.upgrade()
        profile = self.store.image_profile('image-a')
        self.assertEqual((3.0, 0.5, 7), (profile.mpki, profile.mf,
                                         profile.samples))
        # Two hosts at 10 outvote the one pre-0005 vote at 3.
        self.store.ingest([reports.host_report(h, 200, [reports.instance(
            'u-' + h, image_id='image-a', mpki=10.0)]) for h in ('a', 'b')])
        self.assertEqual(10.0, self.store.image_profile('image-a').mpki)
        self.store.downgrade('0004')
        self.assertNotIn('image_host_profiles',
                         sa.inspect(self.store.engine).get_table_names())

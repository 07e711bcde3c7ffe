"""The collector's command line and retention loop."""

import time

import fixtures
import oslo_messaging
from oslotest import base

from contention.collector import cmd
from contention.collector import opts
from contention.collector import service
from contention import store as api
from contention.store import open_store
from tests.unit.contention.store import reports


class TestRetentionLoop(base.BaseTestCase):

    def test_run_once_enforces_the_limits(self):
        store = open_store('sqlite://', history_max_rows_per_host=1)
        store.upgrade()
        now = time.time()
        store.ingest([reports.host_report('a', now - t) for t in (1, 2, 3)])
        loop = service.RetentionLoop(store, interval=3600)
        self.assertEqual(2, loop.run_once())
        self.assertEqual(1, len(store.host_history('a')))

    def test_failure_is_logged_not_raised(self):
        log = self.useFixture(fixtures.FakeLogger())
        store = open_store('sqlite://')         # no schema
        self.assertIsNone(service.RetentionLoop(store, 1).run_once())
        self.assertIn('Retention pass failed', log.output)


class TestCmd(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.url = 'sqlite:///%s/t.sqlite' % self.dir
        conf = self.dir + '/collector.conf'
        with open(conf, 'w') as fh:
            fh.write('[store]\nconnection = %s\n' % self.url)
        self.args = ['--config-file', conf]

    def test_upgrade_db(self):
        self.assertEqual(0, cmd.main(self.args + ['--upgrade-db']))
        self.assertEqual(api.TelemetryStore.head_revision(),
                         open_store(self.url).schema_revision())

    def test_more_than_one_worker_is_supervised(self):
        self.assertEqual(0, cmd.main(self.args + ['--upgrade-db']))
        with open(self.args[1], 'a') as fh:
            fh.write('[collector]\nworkers = 3\n')
        supervise = self.useFixture(fixtures.MockPatchObject(
            cmd, 'supervise', return_value=0)).mock
        serve = self.useFixture(fixtures.MockPatchObject(cmd, 'serve')).mock
        self.assertEqual(0, cmd.main(self.args))
        supervise.assert_called_once_with(self.args, 3)
        serve.assert_not_called()

    def test_one_worker_serves_in_process_with_retention(self):
        self.assertEqual(0, cmd.main(self.args + ['--upgrade-db']))
        serve = self.useFixture(fixtures.MockPatchObject(
            cmd, 'serve', return_value=0)).mock
        self.assertEqual(0, cmd.main(self.args))
        self.assertEqual(1, serve.call_count)

    def test_only_the_first_worker_enforces_retention(self):
        conf = cmd.parse_args(self.args)
        transport = oslo_messaging.get_notification_transport(
            conf, url='fake://')
        self.addCleanup(transport.cleanup)
        store = open_store(self.url)
        self.assertIsNone(service.CollectorService(
            conf, store, transport, retention=False).retention)
        self.assertIsNotNone(service.CollectorService(
            conf, store, transport).retention)

    def test_refuses_to_run_on_an_empty_store(self):
        log = self.useFixture(fixtures.MockPatchObject(cmd, 'LOG')).mock
        self.assertEqual(1, cmd.main(self.args))
        self.assertIn('--upgrade-db', log.error.call_args[0][0])

    def test_refuses_to_run_on_an_old_schema(self):
        log = self.useFixture(fixtures.MockPatchObject(cmd, 'LOG')).mock
        self.assertEqual(0, cmd.main(self.args + ['--upgrade-db']))
        current = api.TelemetryStore.head_revision()
        self.useFixture(fixtures.MockPatchObject(
            api.TelemetryStore, 'head_revision', return_value='9999'))
        self.assertEqual(1, cmd.main(self.args))
        self.assertEqual((current, '9999'), log.error.call_args[0][1:])

    def test_every_option_has_help(self):
        for _group, group_opts in opts.list_opts():
            for opt in group_opts:
                self.assertTrue(opt.help, opt.name)


class TestCollectorService(base.BaseTestCase):

    def test_start_stop_closes_the_transport_it_opened(self):
        conf = cmd.parse_args([])
        transport = oslo_messaging.get_notification_transport(
            conf, url='fake:/')
        cleanup = self.useFixture(fixtures.MockPatchObject(
            transport, 'cleanup')).mock
        self.useFixture(fixtures.MockPatch(
            'oslo_messaging.get_notification_transport',
            return_value=transport))
        store = open_store('sqlite://')
        store.upgrade()
        collector = service.CollectorService(conf, store)
        collector.start()
        collector.stop()
        cleanup.assert_called_once_with()

    def test_a_given_transport_is_left_open(self):
        conf = cmd.parse_args([])
        transport = oslo_messaging.get_notification_transport(
            conf, url='fake:/')
        cleanup = self.useFixture(fixtures.MockPatchObject(
            transport, 'cleanup')).mock
        store = open_store('sqlite://')
        store.upgrade()
        collector = service.CollectorService(conf, store, transport)
        collector.start()
        collector.stop()
        cleanup.assert_not_called()

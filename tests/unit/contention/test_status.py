"""contention-status: the view over the store and its command line."""

import io
import json
import os

import fixtures
from oslotest import base

from contention import report
from contention import status
from contention.store import open_store
from tests.unit.contention.store import reports

NOW = 1000.0


def sample_reports():
    busy = reports.host_report('busy', NOW - 5, [
        reports.instance('u-1', vcpu_cpus=(0, 1), mpki=20.0, mf=0.7,
                         merlin_class='high/high'),
        reports.instance('u-2', vcpu_cpus=(4,), mpki=None, mf=None,
                         merlin_class=None)])
    # No node aggregates at all: every figure unmeasured, not zero.
    quiet = reports.host_report('quiet', NOW - 300, nodes=())
    return {'busy': busy, 'quiet': quiet}


class TestView(base.BaseTestCase):

    def test_per_node_figures_and_staleness(self):
        view = status.status(sample_reports(), NOW, stale_after=60)
        busy, quiet = view['hosts']
        self.assertEqual(('busy', 5.0, False),
                         (busy['host'], busy['age_s'], busy['stale']))
        self.assertEqual(('quiet', True), (quiet['host'], quiet['stale']))
        node0 = busy['nodes'][0]
        self.assertEqual(1e9, node0['mem_bw_bps'])
        self.assertEqual(1 << 20, node0['llc_occupancy_bytes'])
        self.assertEqual(1, node0['overhead']['total'])
        self.assertEqual({'low/low': 2}, node0['classes'])
        # Nodes of the topology without figures are listed, unmeasured.
        self.assertEqual([0, 1], [n['node'] for n in quiet['nodes']])
        self.assertIsNone(quiet['nodes'][0]['mpki_sum'])
        self.assertIsNone(quiet['nodes'][0]['overhead'])
        self.assertNotIn('instances', busy)

    def test_instances_and_missing_hosts(self):
        view = status.status(sample_reports(), NOW, hosts=['busy', 'gone'],
                             instances=True)
        self.assertEqual(['busy'], [h['host'] for h in view['hosts']])
        self.assertEqual(['gone'], view['missing'])
        rows = view['hosts'][0]['instances']
        self.assertEqual([('u-1', 0, 'high/high', 20.0),
                          ('u-2', 1, None, None)],
                         [(r['uuid'], r['node'], r['merlin_class'],
                           r['mpki']) for r in rows])

    def test_json_is_the_view(self):
        text = status.render(sample_reports(), NOW, fmt='json',
                             counters={'accepted': 3, 'rejected:invalid': 1})
        data = json.loads(text)
        self.assertEqual({'accepted': 3, 'rejected:invalid': 1},
                         data['ingestion'])
        self.assertEqual(['busy', 'quiet'], [h['host'] for h in data['hosts']])

    def test_table_marks_stale_hosts_and_unmeasured_values(self):
        text = status.render(sample_reports(), NOW, stale_after=60,
                             counters={'accepted': 3})
        lines = text.splitlines()
        self.assertEqual(status.NODE_COLUMNS[:3],
                         tuple(lines[0].split()[:3]))
        busy = [line for line in lines if line.startswith('busy ')]
        quiet = [line for line in lines if line.startswith('quiet ')]
        self.assertEqual(2, len(busy))
        self.assertIn('1.0 GB/s', busy[0])
        self.assertIn('1.0 MiB', busy[0])
        self.assertIn('1 (1/0/0/0)', busy[0])
        self.assertIn('low/low:2', busy[0])
        self.assertNotIn('STALE', busy[0])
        self.assertTrue(all('5m00s STALE' in line for line in quiet))
        self.assertIn('1 stale host(s)', text)
        self.assertIn('Reports ingested since the store was created: 3 '
                      'stored: 3 became their host\'s latest.', text)
        self.assertNotIn('UUID', text)

    def test_table_of_instances(self):
        text = status.render(sample_reports(), NOW, hosts=['busy'],
                             instances=True)
        self.assertIn('UUID', text)
        row = [line for line in text.splitlines() if 'u-2' in line][0]
        # u-2 has no counters: dashes, not zeros.
        self.assertEqual(['busy', '1', 'u-2', 'instance-u-2', '1', '50%',
                          '1.50', '-', '-', '-', '-'], row.split())

    def test_mc_ic_relief(self):
        rep = reports.host_report('h', NOW, nodes=(report.NodeAggregate(
            node=0, instances=9, vcpus=9.0, mpki_sum=140.0,
            mc_ic_pressure=True),))
        text = status.render({'h': rep}, NOW)
        self.assertIn('relief', text.splitlines()[1])

    def test_empty_store(self):
        self.assertIn('No host reports', status.render({}, NOW))

    def test_unknown_host_is_not_an_empty_store(self):
        text = status.render(sample_reports(), NOW, hosts=['nosuch'],
                             known_hosts=['busy', 'quiet'])
        self.assertNotIn('No host reports', text)
        self.assertIn('No report in the store from: nosuch (hosts that '
                      'report: busy, quiet)', text)

    def test_ingestion_counters_in_words(self):
        text = status.ingestion_text({'accepted': 12, 'stale': 24,
                                      'rejected:invalid': 1})
        # 36 stored: stale reports are kept, not refused.
        self.assertEqual(
            'Reports ingested since the store was created: 36 stored: 12 '
            'became their host\'s latest; 24 kept in the history only (a '
            'newer report of their host was already latest); 1 rejected '
            '(invalid).', text)

    def test_unknown_format(self):
        self.assertRaises(ValueError, status.render, {}, NOW, fmt='yaml')


class TestUnits(base.BaseTestCase):

    def test_age(self):
        self.assertEqual(['0s', '59s', '1m00s', '59m59s', '1h00m', '2d03h'],
                         [status.age(s) for s in (
                             -3, 59.4, 60, 3599, 3600, 2 * 86400 + 3 * 3600)])

    def test_bandwidth_and_size(self):
        self.assertEqual('999 B/s', status.bandwidth(999))
        self.assertEqual('1.5 GB/s', status.bandwidth(1.5e9))
        self.assertEqual('2048.0 TB/s', status.bandwidth(2.048e15))
        self.assertEqual('32.0 MiB', status.size(32 << 20))
        self.assertEqual('-', status.size(None))


class TestCommand(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.url = 'sqlite:///%s/t.sqlite' % self.dir
        self.stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        self.stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        # No collector.conf of the machine running the tests.
        self.useFixture(fixtures.MonkeyPatch(
            'contention.status.DEFAULT_CONFIG', self.dir + '/none.conf'))

    def fill(self):
        store = open_store(self.url)
        store.upgrade()
        store.ingest(list(sample_reports().values()))
        store.dispose()

    def test_store_url(self):
        self.fill()
        self.assertEqual(0, status.main(['--store', self.url, '--format',
                                         'json', '--host', 'busy']))
        data = json.loads(self.stdout.getvalue())
        self.assertEqual(['busy'], [h['host'] for h in data['hosts']])
        self.assertEqual(2, len(data['hosts'][0]['instances']))
        self.assertEqual({'accepted': 2}, data['ingestion'])

    def test_config_file(self):
        self.fill()
        conf = self.dir + '/collector.conf'
        with open(conf, 'w') as fh:
            fh.write('[store]\nconnection = %s\n' % self.url)
        self.assertEqual(0, status.main(['--config-file', conf,
                                         '--instances']))
        out = self.stdout.getvalue()
        self.assertIn('quiet', out)
        self.assertIn('u-1', out)

    def test_unknown_host_names_the_known_ones(self):
        self.fill()
        self.assertEqual(0, status.main(['--store', self.url,
                                         '--host', 'nosuch']))
        out = self.stdout.getvalue()
        self.assertIn('No report in the store from: nosuch (hosts that '
                      'report: busy, quiet)', out)

    def test_missing_sqlite_file_is_not_created(self):
        path = self.dir + '/typo.sqlite'
        self.assertEqual(2, status.main(['--store', 'sqlite:///' + path]))
        self.assertIn('no such file %s' % path, self.stderr.getvalue())
        self.assertFalse(os.path.exists(path))

    def test_store_without_schema(self):
        open(self.dir + '/t.sqlite', 'w').close()
        self.assertEqual(2, status.main(['--store', self.url]))
        self.assertIn('--upgrade-db', self.stderr.getvalue())

    def test_password_is_not_printed(self):
        url = 'postgresql+psycopg2://u:secret@127.0.0.1:1/none'
        self.assertEqual(2, status.main(['--store', url]))
        self.assertNotIn('secret', self.stderr.getvalue())
        self.assertIn('127.0.0.1', self.stderr.getvalue())

"""``contention-agent --once`` with a fake libvirt behind libvirt.open."""

import io
import json
import os

import fixtures
from oslo_config import cfg

from compute_agent import cmd
from contention import report as report_mod
from tests.unit.compute_agent import base
from tests.unit.compute_agent import fake_libvirt


class TestOnce(base.AgentTestCase):

    def setUp(self):
        super().setUp()
        self.opener = fake_libvirt.FakeOpener(self.conn)
        self.useFixture(fixtures.MonkeyPatch('libvirt.open', self.opener))
        self.useFixture(fixtures.MonkeyPatch(
            'compute_agent.cmd.logging.setup', lambda *a, **k: None))
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', self.stdout))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', self.stderr))
        self.config = os.path.join(self.tmp, 'agent.conf')
        with open(self.config, 'w') as f:
            f.write('[agent]\nhost = compute-7\n'
                    'sysfs_root = %(t)s/nosys\nproc_root = %(t)s/proc\n'
                    'resctrl_root = %(t)s/resctrl\n' % {'t': self.tmp})

    def main(self, *args):
        return cmd.main(['--config-file', self.config] + list(args),
                        conf=cfg.ConfigOpts())

    def test_once_prints_a_valid_report(self):
        dom = self.conn.add(name='vm-1', vcpus=2)
        rc = self.main('--once', '--libvirt-uri', 'qemu+tcp://elsewhere/')
        self.assertEqual(0, rc, self.stderr.getvalue())
        report = report_mod.HostReport.from_dict(
            json.loads(self.stdout.getvalue()))
        self.assertEqual('compute-7', report.host)
        self.assertEqual([dom.uuid], [r.uuid for r in report.instances])
        self.assertEqual(['libvirt', 'resctrl', 'numa_memory'],
                         [s.name for s in report.sources])
        self.assertFalse(report.sources[1].available)
        # The libvirt and resctrl sources each hold a connection.
        self.assertEqual({'qemu+tcp://elsewhere/'}, set(self.opener.uris))

    def test_once_without_libvirt_fails_clearly(self):
        self.opener.failures = 5
        self.assertEqual(1, self.main('--once'))
        self.assertEqual('', self.stdout.getvalue())
        self.assertIn('no source reported the host topology',
                      self.stderr.getvalue())

    def test_unknown_source_is_a_config_error(self):
        with open(self.config, 'a') as f:
            f.write('sources = libvirt,pmu\n')
        self.assertEqual(1, self.main('--once'))
        self.assertIn('unknown source(s) pmu', self.stderr.getvalue())

    def test_thresholds_come_from_the_config(self):
        with open(self.config, 'a') as f:
            f.write('[contention_thresholds]\nmpki_low = 1.5\n'
                    'mpki_high = 9\nnode_mpki_trigger = 80\n')
        conf = cfg.ConfigOpts()
        cmd._register(conf)
        conf(['--config-file', self.config], project='contention')
        collector, _ = cmd.build(conf)
        self.addCleanup(collector.close)
        self.assertEqual((1.5, 9.0, 80.0),
                         (collector.thresholds.mpki_low,
                          collector.thresholds.mpki_high,
                          collector.thresholds.node_mpki_trigger))

    def _built(self, agent_options):
        """The collector of the test's config plus ``[agent]`` lines."""
        with open(self.config) as f:
            text = f.read()
        config = os.path.join(self.tmp, 'built.conf')
        with open(config, 'w') as f:
            f.write(text + agent_options)
        conf = cfg.ConfigOpts()
        cmd._register(conf)
        conf(['--config-file', config], project='contention')
        collector, _ = cmd.build(conf)
        self.addCleanup(collector.close)
        return conf, collector

    def test_reports_name_the_cpus_nova_places_on(self):
        conf, collector = self._built('shared_cpu_set = 2-3\n'
                                      'dedicated_cpu_set = 6,7\n')
        self.assertEqual(frozenset([2, 3, 6, 7]), collector.nova_cpus)
        self.conn.add(name='vm-1', vcpus=2)
        self.assertEqual((2, 3, 6, 7), collector.collect().nova_cpus)
        _conf, collector = self._built('')
        self.assertIsNone(collector.nova_cpus)
        self.assertEqual((), collector.collect().nova_cpus)

    def test_no_transport_unless_configured(self):
        # oslo.messaging's own default would be rabbit://guest@localhost.
        conf, _ = self._built('')
        self.assertFalse(cmd._transport_configured(conf))

    def test_inconsistent_thresholds_are_a_config_error(self):
        with open(self.config, 'a') as f:
            f.write('[contention_thresholds]\nmpki_low = 20\n'
                    'mpki_high = 10\n')
        self.assertEqual(1, self.main('--once'))
        self.assertIn('[contention_thresholds]', self.stderr.getvalue())


class TestCompression(base.AgentTestCase):
    """[agent] compress_reports sets the rabbit driver's compression."""

    def compression(self, *lines):
        path = os.path.join(self.tmp, 'compress.conf')
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        conf = cfg.ConfigOpts()
        cmd._register(conf)
        conf(['--config-file', path], project='contention')
        cmd.apply_compression(conf)
        return conf.oslo_messaging_rabbit.kombu_compression

    def test_gzip_by_default(self):
        self.assertEqual('gzip', self.compression('[agent]'))

    def test_an_explicit_choice_wins(self):
        self.assertEqual('bz2', self.compression(
            '[oslo_messaging_rabbit]', 'kombu_compression = bz2'))

    def test_off(self):
        self.assertIsNone(self.compression('[agent]', 'compress_reports = false'))

"""devstack/plugin.sh, sourced with devstack's functions stubbed.

Runs the plugin's phases the way stack.sh and unstack.sh call them and
checks what an operator would get: the ini files it wrote and the
processes, databases and packages it asked devstack for.
"""

import getpass
import os
import shutil
import subprocess
import tempfile

from oslotest import base

from tests.unit.devstack import ini
from tests.unit import system_tools

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, os.pardir, os.pardir, os.pardir))
PHASES = (('stack', 'install'), ('stack', 'post-config'),
          ('stack', 'extra'), ('unstack', ''), ('clean', ''))


class TestDevstackPlugin(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.bin = os.path.join(self.tmp, 'bin')
        os.mkdir(self.bin)
        self.log = os.path.join(self.tmp, 'stub.log')
        # The plugin runs contention-collector --upgrade-db and
        # contention-train: log their command lines.
        for command in ('contention-collector', 'contention-train'):
            path = os.path.join(self.bin, command)
            with open(path, 'w') as f:
                f.write('#!/bin/sh\necho "%s $*" >> %s\n'
                        % (command, self.log))
            os.chmod(path, 0o755)
        self.nova_conf = os.path.join(self.tmp, 'nova.conf')
        self.watcher_conf = os.path.join(self.tmp, 'watcher.conf')
        self.conf_dir = os.path.join(self.tmp, 'contention')

    def run_plugin(self, services, nova_conf_lines=(), local_conf='',
                   phases=PHASES):
        with open(self.nova_conf, 'w') as f:
            f.write('\n'.join(nova_conf_lines) + '\n')
        script = ['set -eu', 'source %s/stubs.sh' % HERE,
                  'ENABLED_SERVICES=%s' % services,
                  'source %s/devstack/settings' % ROOT, local_conf]
        for phase in phases:
            script.append('source %s/devstack/plugin.sh %s %s'
                          % ((ROOT,) + phase))
        env = dict(os.environ, STUB_DIR=HERE, STUB_LOG=self.log,
                   STUB_BIN=self.bin, DEST=self.tmp, STACK_USER=getpass.getuser(),
                   ENABLE_DEBUG_LOG_LEVEL='True', NOVA_CONF=self.nova_conf,
                   WATCHER_CONF=self.watcher_conf,
                   CONTENTION_CONF_DIR=self.conf_dir,
                   CONTENTION_MODEL_PATH=os.path.join(self.tmp, 'model'),
                   NOVA_FILTERS='ComputeFilter,ImagePropertiesFilter')
        result = subprocess.run(['bash', '-c', '\n'.join(script)], env=env,
                                capture_output=True, text=True)
        self.assertEqual(0, result.returncode, result.stderr[-2000:])
        with open(self.log) as f:
            return f.read().splitlines()

    def values(self, path, section, key):
        return [v for k, v in ini.load(path).get(section, []) if k == key]

    def test_all_in_one(self):
        log = self.run_plugin('rabbit,mysql,nova,watcher-api,'
                              'contention-watcher')
        self.assertIn('setup_develop %s/contention-aware-placement '
                      'agent,nova,watcher' % self.tmp, log)
        self.assertIn('recreate_database contention', log)
        self.assertIn('contention-collector --config-file %s/collector.conf '
                      '--upgrade-db' % self.conf_dir, log)
        self.assertIn('contention-train train --from-sim ahn-wl1 '
                      '--library all --out '
                      '%s/model' % self.tmp, log)
        self.assertEqual(['%s/model' % self.tmp], self.values(
            self.nova_conf, 'contention', 'model_path'))
        processes = [line for line in log if line.startswith('run_process')]
        self.assertEqual(2, len(processes))
        self.assertIn('contention-agent --config-file', processes[1])
        self.assertTrue(processes[1].endswith('| root'))
        self.assertEqual(['stop_process contention-agent',
                          'stop_process contention-collector'],
                         [line for line in log if 'stop_process' in line])
        self.assertIn('restart_service devstack@watcher-decision-engine', log)
        # Nova: our weigher after the defaults, our filter available and
        # enabled after the existing ones, perf events for libvirt.
        self.assertEqual(['nova.scheduler.weights.all_weighers,'
                          'nova_filters.ContentionWeigher'],
                         self.values(self.nova_conf, 'filter_scheduler',
                                     'weight_classes'))
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          'nova_filters.ContentionFilter'],
                         self.values(self.nova_conf, 'filter_scheduler',
                                     'available_filters'))
        self.assertEqual(['ComputeFilter,ImagePropertiesFilter,'
                          'ContentionFilter'],
                         self.values(self.nova_conf, 'filter_scheduler',
                                     'enabled_filters'))
        self.assertIn('cache_misses', self.values(
            self.nova_conf, 'libvirt', 'enabled_perf_events')[0])
        store = 'mysql+pymysql://root:secret@10.0.0.1/contention'
        self.assertEqual([store], self.values(self.nova_conf, 'contention',
                                              'store_connection'))
        for group in ('watcher_strategies.cache_aware_swap',
                      'watcher_strategies.numa_aware_swap',
                      'watcher_actions.contention_swap',
                      'watcher_actions.contention_migrate',
                      'watcher_actions.contention_repin',
                      'watcher_actions.contention_cpu_quota'):
            self.assertEqual([store], self.values(self.watcher_conf, group,
                                                  'connection'))
        # The agent and collector configs were written, then removed by
        # ./clean.sh.
        self.assertFalse(os.path.exists(self.conf_dir))

    def test_the_docs_show_what_the_plugin_writes(self):
        """doc/nova.md's and doc/watcher.md's settings, as the plugin writes.

        make system checks the same on the running services' files.
        """
        snippets = system_tools.load('doc_snippets')
        self.run_plugin('rabbit,mysql,nova,watcher-api,contention-watcher')
        for doc, path in (('nova.md', self.nova_conf),
                          ('watcher.md', self.watcher_conf)):
            shown = {}
            for block in snippets.fenced(doc, 'ini'):
                shown.update(snippets.ini_settings(block))
            with open(path) as f:
                written = snippets.ini_settings(f.read())
            self.assertTrue(shown, doc)
            self.assertEqual([], snippets.differences(shown, written), doc)

    def test_no_doc_puts_a_comment_inside_a_value(self):
        # oslo.config takes "host = cmp-1  # the host" as a host named
        # with the comment.
        snippets = system_tools.load('doc_snippets')
        self.assertEqual(['host = a  # b'], snippets.inline_comments(
            '[x]\n# c = d  # e\nhost = a  # b\nurl = rabbit://u#x\n'))
        found = []
        for doc in sorted(os.listdir(os.path.join(ROOT, 'doc'))):
            if doc.endswith('.md'):
                for block in snippets.fenced(doc, 'ini'):
                    found += ['%s: %s' % (doc, line) for line in
                              snippets.inline_comments(block)]
        self.assertEqual([], found)

    def test_doc_values_and_their_ellipsis(self):
        snippets = system_tools.load('doc_snippets')
        shown = snippets.ini_settings(
            '[f]\n# a comment\nenabled = A,...,C\nmodel_path = /x\n'
            'avail = one\navail = two\n')
        self.assertEqual({('f', 'enabled'): ['A,...,C'],
                          ('f', 'model_path'): ['/x'],
                          ('f', 'avail'): ['one', 'two']}, shown)
        good = {('f', 'enabled'): ['A,B,B2,C'], ('f', 'model_path'): ['/y'],
                ('f', 'avail'): ['one', 'two']}
        self.assertEqual([], snippets.differences(shown, good))
        bad = {('f', 'enabled'): ['A,B'], ('f', 'avail'): ['one']}
        self.assertEqual(
            ["[f] avail is ['one'], the doc shows ['one', 'two']",
             "[f] enabled is ['A,B'], the doc shows ['A,...,C']",
             '[f] model_path is not set'],
            snippets.differences(shown, bad))

    def test_configuration_is_idempotent(self):
        lines = ['[filter_scheduler]',
                 'weight_classes = nova.scheduler.weights.all_weighers,'
                 'nova_filters.ContentionWeigher',
                 'enabled_filters = ComputeFilter,ContentionFilter']
        self.run_plugin('contention-nova', lines)
        self.assertEqual(['nova.scheduler.weights.all_weighers,'
                          'nova_filters.ContentionWeigher'],
                         self.values(self.nova_conf, 'filter_scheduler',
                                     'weight_classes'))
        self.assertEqual(['ComputeFilter,ContentionFilter'],
                         self.values(self.nova_conf, 'filter_scheduler',
                                     'enabled_filters'))

    def test_the_agent_gets_the_memory_bandwidth_if_set(self):
        agent_conf = os.path.join(self.conf_dir, 'agent.conf')
        self.run_plugin('nova', phases=PHASES[:2])
        self.assertEqual([], self.values(agent_conf, 'agent',
                                         'memory_bandwidth_gbps'))
        self.run_plugin('nova', phases=PHASES[:2],
                        local_conf='CONTENTION_MEMORY_BANDWIDTH_GBPS=25.6')
        self.assertEqual(['25.6'], self.values(agent_conf, 'agent',
                                               'memory_bandwidth_gbps'))

    def test_compute_node_runs_only_the_agent(self):
        log = self.run_plugin('nova', local_conf='disable_service '
                              'contention-collector contention-nova')
        self.assertNotIn('recreate_database contention', log)
        self.assertFalse([line for line in log if 'contention-train' in line])
        self.assertEqual(['contention-agent'],
                         [line.split()[1] for line in log
                          if line.startswith('run_process')])

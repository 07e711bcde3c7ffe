"""What a production install (``pip install '.[agent]'``) must bring.

tox installs the test requirements, Nova and Watcher, which bring
``fixtures`` and ``oslo.service[threading]`` whether or not the project
declares them; these tests check the agent against the declared
dependencies only (issue 23, defect 1).
"""

import os
import subprocess
import sys

from packaging import requirements
import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _declared(path):
    with open(os.path.join(ROOT, path)) as f:
        lines = [line.split('#')[0].strip() for line in f]
    return [requirements.Requirement(line) for line in lines if line]


class TestDeclaredDependencies(testtools.TestCase):

    def test_threading_backend_is_a_core_requirement(self):
        # compute_agent and contention.collector select oslo.service's
        # threading backend, which fails with "Unknown backend:
        # 'threading'" unless its extra (cotyledon, futurist) is installed.
        found = [r for r in _declared('requirements.txt')
                 if r.name == 'oslo.service']
        self.assertEqual(1, len(found), 'oslo.service not in requirements')
        self.assertIn('threading', found[0].extras)

    def test_agent_runs_without_test_only_packages(self):
        # A child interpreter where importing ``fixtures`` fails, as in a
        # fresh virtualenv: the agent must import and register all its
        # options (oslo.messaging's included) without it.
        code = '\n'.join([
            'import sys',
            "sys.modules['fixtures'] = None",
            'from oslo_config import cfg',
            'from compute_agent import cmd',
            'conf = cfg.ConfigOpts()',
            'cmd._register(conf)',
            "conf([], project='contention')",
            'print(conf.oslo_messaging_metrics.metrics_enabled,',
            '      conf.oslo_messaging_tracing.tracing_enabled)',
        ])
        proc = subprocess.run([sys.executable, '-c', code], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual('False False', proc.stdout.strip())

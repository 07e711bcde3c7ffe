"""Every command's --help is its help alone: no library notice before it."""

import configparser
import os
import subprocess
import sys

from oslotest import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))


def console_scripts():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'setup.cfg'))
    for line in cfg['entry_points']['console_scripts'].strip().splitlines():
        name, target = (part.strip() for part in line.split('='))
        yield name, target


class TestHelp(base.BaseTestCase):

    def test_help_has_nothing_on_stderr(self):
        for name, target in console_scripts():
            module, func = target.split(':')
            code = ('import sys; sys.argv = [%r, "--help"]; from %s import '
                    '%s; sys.exit(%s())' % (name, module, func, func))
            proc = subprocess.run([sys.executable, '-c', code], cwd=ROOT,
                                  capture_output=True, text=True,
                                  timeout=120)
            self.assertEqual(0, proc.returncode, (name, proc.stderr))
            self.assertIn('usage', proc.stdout.lower(), name)
            self.assertEqual('', proc.stderr, name)

"""Run a directory of Nova-importing tests in a child Python process."""

import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                    os.pardir, os.pardir))


def run(test_case, start_dir, timeout):
    """Discover and run ``start_dir`` in a child; fail with its output."""
    proc = subprocess.run(
        [sys.executable, '-m', 'testtools.run', 'discover', '-s', start_dir,
         '-t', '.'],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    tail = (proc.stdout + proc.stderr)[-20000:]
    test_case.assertEqual(0, proc.returncode,
                          'tests in %s failed:\n%s' % (start_dir, tail))
    test_case.assertIn('OK', tail)
    return tail

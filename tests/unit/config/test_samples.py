"""The checked-in sample configs match what oslo-config-generator writes.

An option added or changed without ``tox -e genconfig`` would leave the
samples operators copy out of date; this test names the stale file.
"""

import configparser
import glob
import os
import subprocess
import sys
import tempfile

from oslotest import base

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                    os.pardir, os.pardir, os.pardir))
GENERATOR_DIR = os.path.join(ROOT, 'etc', 'oslo-config-generator')


class TestSampleConfigs(base.BaseTestCase):

    def test_every_sample_is_up_to_date(self):
        generator_files = sorted(glob.glob(os.path.join(GENERATOR_DIR,
                                                        '*.conf')))
        self.assertTrue(generator_files)
        for generator_file in generator_files:
            parser = configparser.ConfigParser(strict=False)
            parser.read(generator_file)
            sample = os.path.join(ROOT, parser['DEFAULT']['output_file'])
            with tempfile.TemporaryDirectory() as tmp:
                fresh = os.path.join(tmp, 'sample.conf')
                subprocess.run(
                    [sys.executable, '-m', 'oslo_config.generator',
                     '--config-file', generator_file, '--output-file', fresh],
                    cwd=ROOT, check=True, capture_output=True)
                with open(fresh) as f:
                    expected = f.read()
            with open(sample) as f:
                actual = f.read()
            self.assertEqual(
                expected, actual,
                '%s is out of date: run `tox -e genconfig`'
                % os.path.relpath(sample, ROOT))

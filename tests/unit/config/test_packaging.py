"""The package ships the samples and units the docs tell operators to copy."""

import configparser
import glob
import os
import re

from oslotest import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
PREFIX = '/opt/contention'


def data_files():
    """{installed directory: [repository files]} from setup.cfg.

    Read as pbr reads it: ``target = dir/*`` ships the directory's files
    (pbr expands only a trailing ``*``, nothing like ``*.sample``: the
    wheel build failed on one), ``target =`` followed by indented lines
    ships exactly the files named, each of which must exist.
    """
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'setup.cfg'))
    out, target = {}, None
    for line in cfg['files']['data_files'].strip().splitlines():
        if '=' in line:
            target, source = (part.strip() for part in line.split('='))
            out[target] = []
        else:
            source = line.strip()
        if not source:
            continue
        if source.endswith('/*'):
            directory = os.path.join(ROOT, source[:-2])
            out[target] += sorted(os.path.relpath(os.path.join(directory, f),
                                                  ROOT)
                                  for f in os.listdir(directory))
            continue
        if '*' in source or not os.path.isfile(os.path.join(ROOT, source)):
            raise AssertionError('setup.cfg data_files: %r is not a file pbr '
                                 'can ship' % source)
        out[target].append(source)
    return out


class TestPackaging(base.BaseTestCase):

    def test_samples_units_and_docs_are_shipped(self):
        shipped = {f for files in data_files().values() for f in files}
        for pattern in ('etc/contention/*.sample', 'etc/systemd/*.service',
                        'doc/*.md'):
            wanted = glob.glob(os.path.join(ROOT, pattern))
            self.assertTrue(wanted, pattern)
            for path in wanted:
                self.assertIn(os.path.relpath(path, ROOT), shipped)

    def test_units_point_at_what_the_package_installs(self):
        targets = data_files()
        for unit in glob.glob(os.path.join(ROOT, 'etc/systemd/*.service')):
            with open(unit) as f:
                text = f.read()
            exec_start = re.search(r'^ExecStart=(\S+)', text, re.M).group(1)
            self.assertEqual(PREFIX + '/bin/' + os.path.basename(
                unit)[:-len('.service')], exec_start, unit)
            doc = re.search(r'^Documentation=file://(\S+)', text,
                            re.M).group(1)
            directory, name = os.path.split(doc)
            self.assertTrue(directory.startswith(PREFIX + '/'), doc)
            shipped = targets[os.path.relpath(directory, PREFIX)]
            self.assertIn('doc/' + name, shipped, unit)

"""The Nova plugins' unit tests, run in a child process.

They import Nova, which cannot share a process with Watcher (see
``tests/nova/__init__.py``); this runs ``tests/nova/unit`` apart and fails
with its output if any of its tests fails.
"""

import testtools

from tests.nova import isolated


class TestNovaPluginsUnit(testtools.TestCase):

    def test_nova_plugin_unit_tests_pass(self):
        isolated.run(self, 'tests/nova/unit', timeout=900)

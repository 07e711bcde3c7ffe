"""The Nova plugins' functional tests, run in a child process.

Nova's in-process harness cannot share a process with Watcher's (see
``tests/nova/__init__.py``); this runs ``tests/nova/functional`` apart
(real PostgreSQL for the store) and fails with its output if any of its
tests fails.
"""

import testtools

from tests.nova import isolated


class TestNovaPluginsFunctional(testtools.TestCase):

    def test_nova_plugin_functional_tests_pass(self):
        isolated.run(self, 'tests/nova/functional', timeout=1800)

"""What the system test reads from ``tempest run``'s output."""

import testtools

from tests.unit import system_tools

#: ``tempest run`` (stestr's subunit-trace) on two failures, a pass and a
#: skip, as it prints them.
OUTPUT = '''\
{0} watcher_tempest_plugin.tests.api.admin.test_audit.TestA.test_bad \
[0.000132s] ... FAILED

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):

      File "/x/test_audit.py", line 6, in test_bad
    raise RuntimeError('audit CANCELLED, expected SUCCEEDED')

    RuntimeError: audit CANCELLED, expected SUCCEEDED

{0} watcher_tempest_plugin.tests.api.admin.test_audit.TestA.test_ok \
[0.000063s] ... ok
{0} watcher_tempest_plugin.tests.api.admin.test_audit.TestA.test_skip \
... SKIPPED: nope
{1} watcher_tempest_plugin.tests.api.admin.test_goal.TestB.test_bad2\
[id-1234] [0.000074s] ... FAILED

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):

      File "/x/test_goal.py", line 12, in test_bad2
    self.assertEqual(1, 2)

    AssertionError: 1 != 2


==============================
Failed 2 tests - output below:
==============================

watcher_tempest_plugin.tests.api.admin.test_audit.TestA.test_bad
----------------------------------------------------------------

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    RuntimeError: audit CANCELLED, expected SUCCEEDED

======
Totals
======
Ran: 4 tests in 0.0058 sec.
 - Passed: 1
 - Skipped: 1
 - Expected Fail: 0
 - Unexpected Success: 0
 - Failed: 2
'''


class TestTempestOutput(testtools.TestCase):
    def setUp(self):
        super().setUp()
        self.peer_tests = system_tools.load('peer_tests')

    def test_totals(self):
        self.assertEqual({'passed': 1, 'skipped': 1, 'failed': 2},
                         self.peer_tests.totals(OUTPUT))

    def test_skips_by_name(self):
        self.assertEqual(['test_skip'], self.peer_tests.skipped(OUTPUT))

    def test_each_failure_with_its_exception(self):
        self.assertEqual(
            ['test_bad: RuntimeError: audit CANCELLED, expected SUCCEEDED',
             'test_bad2: AssertionError: 1 != 2'],
            self.peer_tests.failed(OUTPUT))

    def test_a_clean_run_has_no_failures(self):
        clean = '\n'.join(line for line in OUTPUT.splitlines()
                          if '... ok' in line)
        self.assertEqual([], self.peer_tests.failed(clean))

"""Tests that import Nova, kept apart from the rest.

Nova and Watcher cannot share one Python process: both register a
``host`` option on oslo.config's global ``CONF`` (with different help, so
the second raises ``DuplicateOptError``) and select different
oslo.service backends (``BackendAlreadySelected``). The main unit and
functional suites import Watcher, so these tests are discovered from
their own roots and run in a child process by
``tests/unit/test_nova_plugins.py`` and
``tests/functional/test_nova_plugins.py``. To run them directly::

    python -m testtools.run discover -s tests/nova/unit -t .
    python -m testtools.run discover -s tests/nova/functional -t .
"""

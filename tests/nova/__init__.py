"""Tests that import Nova, kept apart from the rest.

Nova and Watcher cannot share one Python process: both register a
``host`` option on oslo.config's global ``CONF`` (with different help, so
the second raises ``DuplicateOptError``) and select different
oslo.service backends (``BackendAlreadySelected``). The main unit and
functional suites import Watcher, so these tests are discovered from their
own roots in runs of their own (``tox -e py3`` and ``tox -e functional``
each run stestr twice)::

    stestr --test-path=./tests/nova/unit run
    stestr --test-path=./tests/nova/functional run --concurrency 1
"""

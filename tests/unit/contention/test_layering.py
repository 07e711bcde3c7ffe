"""The arrows point down: the core never reaches up to an adapter.

``contention/`` is imported by the agent, the Nova weigher, the Watcher
plugins and the demo; none of those may be imported by it, directly,
lazily (inside a function) or by name (``importlib``, ``__import__``,
a stevedore or hook string). Help texts may name their configuration
groups (``[watcher_strategies.<strategy>]``), which are not modules.
"""

import ast
import os
import re

import testtools

import contention

ADAPTERS = ('compute_agent', 'nova_filters', 'watcher_strategies',
            'contention_demo')
#: A string that names an adapter module (``pkg`` or ``pkg.mod[:attr]``).
MODULE_NAME = re.compile(r'^(%s)(\.[A-Za-z_][\w.]*)?(:\w+)?$'
                         % '|'.join(ADAPTERS))


def _core_files():
    root = os.path.dirname(contention.__file__)
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith('.py'):
                yield os.path.join(dirpath, name)


def offences(source, path='<source>'):
    """``[(line, what)]``: every import of an adapter in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or '']
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and MODULE_NAME.match(node.value)):
            names = [node.value]
        for name in names:
            if name.split('.')[0].split(':')[0] in ADAPTERS:
                found.append((node.lineno, name))
    return sorted(found)


class TestArrowsPointDown(testtools.TestCase):

    def test_the_check_sees_every_kind_of_import(self):
        source = ('import compute_agent\n'
                  'def f():\n'
                  '    from watcher_strategies import actions\n'
                  '    importlib.import_module("contention_demo.run")\n'
                  'HOOK = "nova_filters.weigher:ContentionWeigher"\n'
                  'HELP = "set [watcher_strategies.numa_aware_swap] x"\n')
        self.assertEqual([1, 3, 4, 5],
                         [line for line, _ in offences(source)])

    def test_no_core_module_imports_an_adapter(self):
        bad = []
        for path in _core_files():
            with open(path) as fh:
                for line, name in offences(fh.read(), path):
                    bad.append('%s:%d %s' % (path, line, name))
        self.assertEqual([], bad)

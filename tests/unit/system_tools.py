"""Modules of tools/system/ (a script directory, not a package) for tests."""

import importlib.util
import os
import sys

DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'tools', 'system')


def load(name):
    """tools/system/<name>.py as a module (only those starting no cloud).

    Its siblings import each other by name, as the scripts do when run.
    """
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(DIR, name + '.py'))
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, DIR)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(DIR)
    return module

"""Modules of tools/system/ (a script directory, not a package) for tests."""

import importlib.util
import os

DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'tools', 'system')


def load(name):
    """tools/system/<name>.py as a module (only those importing no cloud)."""
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(DIR, name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

"""Run every benchmark and write the results into doc/.

``tox -e bench`` runs this. Each area's module under ``bench/`` has a
``main()`` that prints a Markdown section of what it measured; this runner
captures each into ``doc/benchmarks/<area>.md`` and assembles
``doc/benchmarks.md`` with the command, date, machine and versions, so the
published figures always come with how they were produced. What a person
wrote about a run (which machine, what changed since the last one, a
table measured apart) lives in ``doc/benchmarks/<area>.notes.md``: the
index appends it after the area's figures, and a rerun, which rewrites
``<area>.md``, keeps it. Nothing in ``doc/benchmarks.md`` is written by
hand, so assembling it again loses nothing.

    python -m bench.run_all                 # everything
    python -m bench.run_all store sim       # only these areas
"""

import contextlib
import datetime
import importlib
import inspect
import io
import os
import platform
import sys
import time
from importlib import metadata

#: Areas in the order doc/benchmarks.md presents them; an area is the
#: module bench/<area>.py or the package bench/<area>/, and only the areas
#: that exist are run.
ORDER = ('agent', 'store', 'sim', 'sim_scale', 'corun', 'fidelity', 'watcher',
         'indicators', 'nova',
         'placement', 'evaluation')
BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
AREAS = tuple(area for area in ORDER
              if os.path.exists(os.path.join(BENCH_DIR, area + '.py'))
              or os.path.exists(os.path.join(BENCH_DIR, area,
                                             '__init__.py')))
DOC_DIR = os.path.join(BENCH_DIR, os.pardir, 'doc')
VERSIONS = ('contention-aware-placement', 'nova', 'python-watcher', 'numpy',
            'scikit-learn', 'SQLAlchemy', 'oslo.messaging', 'matplotlib')


def environment():
    """Markdown lines describing where and with what the figures were made."""
    lines = ['- date: %s' % datetime.datetime.now(
        datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
        '- machine: %s, %d CPUs, Python %s' % (
            platform.platform(), os.cpu_count() or 0,
            platform.python_version())]
    for dist in VERSIONS:
        try:
            lines.append('- %s %s' % (dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            lines.append('- %s: not installed' % dist)
    return lines


def run_area(area):
    """Run one area's benchmark; return (markdown, seconds)."""
    module = importlib.import_module('bench.%s' % area)
    out = io.StringIO()
    start = time.monotonic()
    takes_argv = bool(inspect.signature(module.main).parameters)
    with contextlib.redirect_stdout(out):
        module.main([]) if takes_argv else module.main()
    return out.getvalue(), time.monotonic() - start


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    areas = argv or list(AREAS)
    unknown = set(areas) - set(AREAS)
    if unknown:
        sys.exit('unknown benchmark area(s): %s (known: %s)'
                 % (', '.join(sorted(unknown)), ', '.join(AREAS)))
    os.makedirs(os.path.join(DOC_DIR, 'benchmarks'), exist_ok=True)
    for area in areas:
        print('bench: running %s ...' % area, flush=True)
        text, seconds = run_area(area)
        path = os.path.join(DOC_DIR, 'benchmarks', '%s.md' % area)
        with open(path, 'w', encoding='utf-8') as fh:
            fh.write('Command: `python -m bench.%s` (%.0f s)\n\n'
                     % (area, seconds))
            fh.write(text)
        print('bench: %s done in %.0f s -> %s' % (area, seconds, path))
    write_index(environment())


def kept_environment(path):
    """The environment lines of the index at ``path``, or None."""
    if not os.path.exists(path):
        return None
    with open(path, encoding='utf-8') as fh:
        text = fh.read()
    head = '## Environment\n\n'
    if head not in text:
        return None
    block = text.split(head, 1)[1].split('\n\n', 1)[0]
    return block.splitlines()


def write_index(env=None):
    """Assemble doc/benchmarks.md from the per-area result files.

    ``env``: the environment lines; by default the index's own (only
    reassembled, nothing was measured), else :func:`environment`.
    """
    index = os.path.join(DOC_DIR, 'benchmarks.md')
    env = env or kept_environment(index) or environment()
    parts = ['# Benchmarks', '',
             'Produced by `tox -e bench` (`python -m bench.run_all`); '
             'one area alone: `python -m bench.run_all AREA`. Figures '
             'marked simulated come from the simulator (`contention.sim`), '
             'not from real hardware.', '', '## Environment', '']
    parts += env
    for area in AREAS:
        path = os.path.join(DOC_DIR, 'benchmarks', '%s.md' % area)
        if not os.path.exists(path):
            continue
        with open(path, encoding='utf-8') as fh:
            body = fh.read().strip()
        parts += ['', '## %s' % area.capitalize(), '', body]
        notes = os.path.join(DOC_DIR, 'benchmarks', '%s.notes.md' % area)
        if os.path.exists(notes):
            with open(notes, encoding='utf-8') as fh:
                parts += ['', fh.read().strip()]
    with open(index, 'w', encoding='utf-8') as fh:
        fh.write('\n'.join(parts) + '\n')


if __name__ == '__main__':
    main()

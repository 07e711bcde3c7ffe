"""A small stand-in for devstack's iniset/iniget family, for the tests.

``python ini.py set FILE SECTION KEY VALUE...`` (several values = devstack's
``iniset_multiline``), ``python ini.py get FILE SECTION KEY`` prints each
value on its own line. Keys may repeat, as in oslo.config's multi-valued
options.
"""

import os
import sys


def load(path):
    sections = {}
    if not os.path.exists(path):
        return sections
    current = None
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('[') and line.endswith(']'):
                current = sections.setdefault(line[1:-1], [])
            elif '=' in line and current is not None:
                key, value = line.split('=', 1)
                current.append((key.strip(), value.strip()))
    return sections


def save(path, sections):
    with open(path, 'w') as f:
        for name, items in sections.items():
            f.write('[%s]\n' % name)
            for key, value in items:
                f.write('%s = %s\n' % (key, value))


def main(argv):
    command, path, section, key = argv[1:5]
    sections = load(path)
    if command == 'get':
        for k, value in sections.get(section, []):
            if k == key:
                print(value)
        return
    items = [(k, v) for k, v in sections.get(section, []) if k != key]
    items += [(key, value) for value in argv[5:]]
    sections[section] = items
    save(path, sections)


if __name__ == '__main__':
    main(sys.argv)

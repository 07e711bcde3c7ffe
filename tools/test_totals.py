"""Add up the stestr totals of every tox environment in a log.

stestr prints a ``Totals`` block per run; the README's test command runs
several, so this prints one closing line for all of them:
``tests: N passed, N failed, N skipped``.
"""

import re
import sys


def totals(text):
    counts = {'Passed': 0, 'Failed': 0, 'Skipped': 0}
    for name in counts:
        for match in re.finditer(r'^ - %s: (\d+)' % name, text, re.M):
            counts[name] += int(match.group(1))
    return counts


def main(argv):
    with open(argv[1], encoding='utf-8', errors='replace') as log:
        counts = totals(log.read())
    print('tests: %(Passed)d passed, %(Failed)d failed, %(Skipped)d skipped'
          % counts)


if __name__ == '__main__':
    main(sys.argv)

"""``python -m bench.evaluation``."""

import sys

from bench.evaluation import command

command.main(sys.argv[1:])

"""``python -m bench.evaluation``."""

import sys

from bench.evaluation import main

main.main(sys.argv[1:])

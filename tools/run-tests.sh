#!/usr/bin/env bash
# The test command of the README: style checks, the unit tests (which include
# the check that the sample configs are up to date) and the functional tests
# against the local RabbitMQ, PostgreSQL and libvirt's test driver. Prints the
# totals last.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bash tools/bootstrap.sh || exit 1

mkdir -p .tox
log=.tox/run-tests.log
.tools/bin/tox -e pep8,py3,functional -- "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

python3 tools/test_totals.py "$log"
exit "$rc"

#!/usr/bin/env bash
# The demo command of the README: the whole system on the embedded default
# (simulated cluster, SQLite store, in-process message bus).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/bootstrap.sh
exec .tools/bin/tox -e demo -- "$@"

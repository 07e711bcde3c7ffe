#!/usr/bin/env bash
# `make system`: build the system test's own environment (.system/venv) from
# PyPI, pinned by the constraints file of the OpenStack release the project
# supports, then run the system test (tools/system/scenario.py). The
# environment is rebuilt when the constraints or the requirements change.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/bootstrap.sh     # libvirt-dev and pkg-config for libvirt-python

constraints=tools/system/constraints-2026.2.txt
venv=.system/venv
stamp=$venv/.contention-stamp
want=$(cat "$constraints" tools/system/requirements.txt setup.cfg | sha256sum | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "system: building $venv (OpenStack 2026.2 from PyPI, a few minutes)"
    start=$(date +%s)
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q -c "$constraints" \
        -r tools/system/requirements.txt -e '.[agent,emulated,mysql]'
    echo "$want" > "$stamp"
    echo "system: environment built in $(( $(date +%s) - start )) s"
fi
exec "$venv/bin/python" tools/system/scenario.py "$@"

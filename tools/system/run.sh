#!/usr/bin/env bash
# `make system`: build the system test's own environment (.system/venv) from
# PyPI, pinned by the constraints file of the OpenStack release the project
# supports, then run the system test (tools/system/scenario.py). The
# environment is rebuilt when the constraints or the requirements change.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/bootstrap.sh     # libvirt-dev and pkg-config for libvirt-python
# Debian's Chromium and its WebDriver for the Horizon check (never a
# browser download).
if ! dpkg -s chromium chromium-driver >/dev/null 2>&1; then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq chromium chromium-driver
fi

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

# An environment of its own for a client of the cloud that would not fit
# the services' (Horizon brings Django 5; Tempest only talks HTTP):
# side_env DIR CONSTRAINTS EXECUTABLE WHAT PACKAGE..., rebuilt when its
# constraints change.
side_env() {
    local dir=$1 constraints=$2 exe=$3 what=$4
    shift 4
    local want
    want=$(sha256sum "$constraints" | cut -d' ' -f1)
    if [ ! -x "$dir/bin/$exe" ] || [ "$(cat "$dir/.contention-stamp" 2>/dev/null)" != "$want" ]; then
        echo "system: building $dir ($what)"
        rm -rf "$dir"
        python3 -m venv "$dir"
        "$dir/bin/pip" install -q --upgrade pip
        "$dir/bin/pip" install -q -c "$constraints" "$@"
        echo "$want" > "$dir/.contention-stamp"
    fi
}
side_env .system/horizon tools/system/constraints-2026.2-horizon.txt python \
    "Horizon 27, watcher-dashboard 16, Selenium" \
    horizon watcher-dashboard python-watcherclient gunicorn selenium
side_env .system/tempest tools/system/constraints-2026.2-tempest.txt tempest \
    "Tempest 47, watcher-tempest-plugin 3.9.0" tempest watcher-tempest-plugin
exec "$venv/bin/python" tools/system/scenario.py "$@"

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

horizon=.system/horizon
hconstraints=tools/system/constraints-2026.2-horizon.txt
hstamp=$horizon/.contention-stamp
hwant=$(sha256sum "$hconstraints" | cut -d' ' -f1)
if [ ! -x "$horizon/bin/python" ] || [ "$(cat "$hstamp" 2>/dev/null)" != "$hwant" ]; then
    echo "system: building $horizon (Horizon 27, watcher-dashboard 16, Selenium)"
    rm -rf "$horizon"
    python3 -m venv "$horizon"
    "$horizon/bin/pip" install -q --upgrade pip
    "$horizon/bin/pip" install -q -c "$hconstraints" horizon watcher-dashboard \
        python-watcherclient gunicorn selenium
    echo "$hwant" > "$hstamp"
fi
tempest=.system/tempest
tconstraints=tools/system/constraints-2026.2-tempest.txt
tstamp=$tempest/.contention-stamp
twant=$(sha256sum "$tconstraints" | cut -d' ' -f1)
if [ ! -x "$tempest/bin/tempest" ] || [ "$(cat "$tstamp" 2>/dev/null)" != "$twant" ]; then
    echo "system: building $tempest (Tempest 47, watcher-tempest-plugin 3.9.0)"
    rm -rf "$tempest"
    python3 -m venv "$tempest"
    "$tempest/bin/pip" install -q --upgrade pip
    "$tempest/bin/pip" install -q -c "$tconstraints" tempest watcher-tempest-plugin
    echo "$twant" > "$tstamp"
fi
exec "$venv/bin/python" tools/system/scenario.py "$@"

#!/usr/bin/env bash
# Install what a fresh machine lacks to build and test the project: the
# Debian packages libvirt-python compiles against (libvirt-dev, pkg-config),
# the shell linter the style checks run, and tox in a private virtualenv
# (.tools/) so nothing is installed into the system Python.
set -euo pipefail
cd "$(dirname "$0")/.."

need_debs=()
for deb in libvirt-dev pkg-config shellcheck; do
    dpkg -s "$deb" >/dev/null 2>&1 || need_debs+=("$deb")
done
if [ "${#need_debs[@]}" -gt 0 ]; then
    echo "bootstrap: installing Debian packages: ${need_debs[*]}"
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${need_debs[@]}"
fi

if [ ! -x .tools/bin/tox ]; then
    echo "bootstrap: installing tox into .tools/"
    python3 -m venv .tools
    .tools/bin/pip install -q --upgrade pip
    .tools/bin/pip install -q 'tox>=4.0.0'
fi

#!/usr/bin/env bash
# Syntax-check (bash -n) and lint (shellcheck) every shell script of the
# project: tools/, .ci/run and the devstack plugin. tools/bootstrap.sh
# installs shellcheck; without it only the syntax check runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts=(tools/*.sh tools/system/*.sh .ci/run)
devstack=()
for f in devstack/plugin.sh devstack/settings; do
    [ -f "$f" ] && devstack+=("$f")
done
for f in "${scripts[@]}" "${devstack[@]}"; do
    bash -n "$f"
done
if ! command -v shellcheck >/dev/null 2>&1; then
    echo "shellcheck not installed; only bash -n ran (apt-get install shellcheck)"
    exit 0
fi
shellcheck -x "${scripts[@]}"
if [ "${#devstack[@]}" -gt 0 ]; then
    # devstack's functions and globals are defined by stack.sh, not here.
    shellcheck -x -e SC1090,SC1091,SC2034,SC2154 "${devstack[@]}"
fi

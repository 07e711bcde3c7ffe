#!/usr/bin/env bash
# Run shellcheck over the project's shell scripts when it is installed
# (tools/bootstrap.sh does not require it; the devstack tests run bash -n).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v shellcheck >/dev/null 2>&1; then
    echo "shellcheck not installed; skipping (apt-get install shellcheck)"
    exit 0
fi
shellcheck -x tools/*.sh .ci/run
if [ -f devstack/plugin.sh ]; then
    shellcheck -x -e SC1090,SC1091,SC2034,SC2154 devstack/plugin.sh devstack/settings
fi

#!/usr/bin/env bash
# Run one configure function of devstack/plugin.sh outside devstack, for the
# system test (tools/system/stack.py): the settings it writes into nova.conf,
# watcher.conf and the contention files are then the plugin's own, so the
# system test exercises the plugin's configuration for real.
#
#   devstack-shim.sh FUNCTION      (environment: see stack.py's make_shim)
#
# Only the few devstack helpers the configure functions call are provided:
# ini editing (the same small editor the plugin's unit tests use), the
# transport and database URLs of the system test's own vhost and database.
set -euo pipefail

function iniset { python3 "$REPO/tests/unit/devstack/ini.py" set "$@"; }
function iniset_multiline { python3 "$REPO/tests/unit/devstack/ini.py" set "$@"; }
function iniget { python3 "$REPO/tests/unit/devstack/ini.py" get "$@" | tail -n 1; }
function iniget_multiline { python3 "$REPO/tests/unit/devstack/ini.py" get "$@"; }
function is_service_enabled { return 0; }
function enable_service { :; }
function get_transport_url { echo "$TRANSPORT_URL"; }
function database_connection_url { echo "$STORE_URL"; }
function get_python_exec_prefix { echo "$BIN"; }
function sudo {
    # install -d -o STACK_USER DIR: create the directory, owner unchanged.
    if [[ "$1" == install ]]; then
        mkdir -p "${@: -1}"
    else
        "$@"
    fi
}

export STACK_USER DEST ENABLE_DEBUG_LOG_LEVEL NOVA_FILTERS
STACK_USER=$(id -un)
DEST=$(dirname "$REPO")
ENABLE_DEBUG_LOG_LEVEL=True
NOVA_FILTERS=ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter
export NOVA_CONF="${NOVA_CONF:-}" WATCHER_CONF="${WATCHER_CONF:-}"
# shellcheck source=devstack/settings
source "$REPO/devstack/settings"
# shellcheck source=devstack/plugin.sh
source "$REPO/devstack/plugin.sh" shim
"$1"

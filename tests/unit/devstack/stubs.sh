# shellcheck shell=bash
# devstack's functions, stubbed: configuration goes to real ini files (via
# ini.py), and every process, database and install action is logged to
# $STUB_LOG so the test can check what the plugin asked devstack to do.

function is_service_enabled {
    local service
    for service in "$@"; do
        [[ ",$ENABLED_SERVICES," == *",$service,"* ]] && return 0
    done
    return 1
}
function enable_service {
    local service
    for service in "$@"; do
        is_service_enabled "$service" || ENABLED_SERVICES+=",$service"
    done
}
function disable_service {
    local service
    for service in "$@"; do
        ENABLED_SERVICES=$(echo ",$ENABLED_SERVICES," | sed "s/,$service,/,/g")
    done
}
function iniset { python3 "$STUB_DIR/ini.py" set "$@"; }
function iniset_multiline { python3 "$STUB_DIR/ini.py" set "$@"; }
function iniget { python3 "$STUB_DIR/ini.py" get "$@" | tail -n 1; }
function iniget_multiline { python3 "$STUB_DIR/ini.py" get "$@"; }
function echo_summary { :; }
function get_transport_url { echo "rabbit://stackrabbit:secret@10.0.0.1:5672/"; }
function database_connection_url { echo "mysql+pymysql://root:secret@10.0.0.1/$1"; }
function get_python_exec_prefix { echo "$STUB_BIN"; }
function setup_develop { echo "setup_develop $*" >> "$STUB_LOG"; }
function install_package { echo "install_package $*" >> "$STUB_LOG"; }
function recreate_database { echo "recreate_database $*" >> "$STUB_LOG"; }
function run_process {
    is_service_enabled "$1" && echo "run_process $1 | $2 | ${4:-}" >> "$STUB_LOG"
    return 0
}
function stop_process { echo "stop_process $*" >> "$STUB_LOG"; }
function restart_service { echo "restart_service $*" >> "$STUB_LOG"; }
function sudo { "$@"; }

#!/usr/bin/env bash
# plugin.sh - DevStack plugin for contention-aware-placement
#
# Installs the distribution with the extras each enabled service needs, runs
# contention-agent on compute nodes and contention-collector on the
# controller, creates the telemetry store database, and wires the Nova
# weigher / filter and the Watcher strategies into nova.conf and
# watcher.conf. See devstack/README.rst.

_XTRACE_CONTENTION=$(set +o | grep xtrace)
set -o xtrace

function contention_extras {
    local extras=() service
    for service in agent nova watcher; do
        if is_service_enabled "contention-$service"; then
            extras+=("$service")
        fi
    done
    local IFS=,
    echo "${extras[*]}"
}

function contention_store_url {
    database_connection_url "$CONTENTION_DB_NAME"
}

function install_contention {
    if is_service_enabled contention-agent; then
        install_package pkg-config libvirt-dev
    fi
    setup_develop "$CONTENTION_DIR" "$(contention_extras)"
}

function configure_contention_agent {
    sudo install -d -o "$STACK_USER" "$CONTENTION_CONF_DIR"
    iniset "$CONTENTION_AGENT_CONF" DEFAULT debug "$ENABLE_DEBUG_LOG_LEVEL"
    iniset "$CONTENTION_AGENT_CONF" DEFAULT transport_url "$(get_transport_url)"
    iniset "$CONTENTION_AGENT_CONF" agent host "$(hostname)"
    iniset "$CONTENTION_AGENT_CONF" agent interval "$CONTENTION_AGENT_INTERVAL"
    iniset "$CONTENTION_AGENT_CONF" agent libvirt_uri "qemu:///system"
    if [[ -n "$CONTENTION_MEMORY_BANDWIDTH_GBPS" ]]; then
        iniset "$CONTENTION_AGENT_CONF" agent memory_bandwidth_gbps \
            "$CONTENTION_MEMORY_BANDWIDTH_GBPS"
    fi
    # Nova starts every instance with these perf events enabled.
    iniset "$NOVA_CONF" libvirt enabled_perf_events "$CONTENTION_PERF_EVENTS"
    if [[ -n "${NOVA_CPU_CONF:-}" && "$NOVA_CPU_CONF" != "$NOVA_CONF" ]]; then
        iniset "$NOVA_CPU_CONF" libvirt enabled_perf_events "$CONTENTION_PERF_EVENTS"
    fi
}

function configure_contention_collector {
    sudo install -d -o "$STACK_USER" "$CONTENTION_CONF_DIR"
    iniset "$CONTENTION_COLLECTOR_CONF" DEFAULT debug "$ENABLE_DEBUG_LOG_LEVEL"
    iniset "$CONTENTION_COLLECTOR_CONF" DEFAULT transport_url "$(get_transport_url)"
    iniset "$CONTENTION_COLLECTOR_CONF" store connection "$(contention_store_url)"
}

function configure_contention_nova {
    local weighers filters
    weighers=$(iniget "$NOVA_CONF" filter_scheduler weight_classes)
    weighers=${weighers:-nova.scheduler.weights.all_weighers}
    if [[ ",$weighers," != *",nova_filters.ContentionWeigher,"* ]]; then
        iniset "$NOVA_CONF" filter_scheduler weight_classes \
            "$weighers,nova_filters.ContentionWeigher"
    fi
    if ! iniget_multiline "$NOVA_CONF" filter_scheduler available_filters | \
            grep -q nova_filters.ContentionFilter; then
        iniset_multiline "$NOVA_CONF" filter_scheduler available_filters \
            nova.scheduler.filters.all_filters nova_filters.ContentionFilter
    fi
    filters=$(iniget "$NOVA_CONF" filter_scheduler enabled_filters)
    filters=${filters:-$NOVA_FILTERS}
    if [[ ",$filters," != *",ContentionFilter,"* ]]; then
        iniset "$NOVA_CONF" filter_scheduler enabled_filters \
            "$filters,ContentionFilter"
    fi
    iniset "$NOVA_CONF" contention store_connection "$(contention_store_url)"
    iniset "$NOVA_CONF" contention model_path "$CONTENTION_MODEL_PATH"
}

function bootstrap_contention_model {
    if [[ -e "$CONTENTION_MODEL_PATH" || -z "$CONTENTION_BOOTSTRAP_SCENARIO" ]]; then
        return 0
    fi
    sudo install -d -o "$STACK_USER" "$(dirname "$CONTENTION_MODEL_PATH")"
    # nova-scheduler reloads the model when the file appears.
    "$CONTENTION_BIN_DIR/contention-train" train \
        --from-sim "$CONTENTION_BOOTSTRAP_SCENARIO" --library all \
        --out "$CONTENTION_MODEL_PATH"
}

function configure_contention_watcher {
    local group
    # The strategies read the store; every action records its moves there
    # for the cool-down and the repercussion check (doc/watcher.md).
    for group in watcher_strategies.cache_aware_swap \
            watcher_strategies.numa_aware_swap \
            watcher_actions.contention_swap \
            watcher_actions.contention_migrate \
            watcher_actions.contention_repin \
            watcher_actions.contention_cpu_quota; do
        iniset "$WATCHER_CONF" "$group" connection "$(contention_store_url)"
    done
}

function init_contention {
    recreate_database "$CONTENTION_DB_NAME"
    "$CONTENTION_BIN_DIR/contention-collector" \
        --config-file "$CONTENTION_COLLECTOR_CONF" --upgrade-db
}

function start_contention {
    run_process contention-collector \
        "$CONTENTION_BIN_DIR/contention-collector --config-file $CONTENTION_COLLECTOR_CONF"
    # The agent reads libvirt and /proc of QEMU processes: it runs as root.
    run_process contention-agent \
        "$CONTENTION_BIN_DIR/contention-agent --config-file $CONTENTION_AGENT_CONF" \
        "" root
}

function stop_contention {
    stop_process contention-agent
    stop_process contention-collector
}

function cleanup_contention {
    sudo rm -rf "$CONTENTION_CONF_DIR"
}

CONTENTION_BIN_DIR=${CONTENTION_BIN_DIR:-$(get_python_exec_prefix)}

if is_service_enabled contention-agent contention-collector contention-nova contention-watcher; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing contention-aware-placement"
        install_contention
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring contention-aware-placement"
        if is_service_enabled contention-agent; then
            configure_contention_agent
        fi
        if is_service_enabled contention-collector; then
            configure_contention_collector
        fi
        if is_service_enabled contention-nova; then
            configure_contention_nova
        fi
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Starting contention-aware-placement"
        if is_service_enabled contention-collector; then
            init_contention
        fi
        if is_service_enabled contention-nova; then
            bootstrap_contention_model
        fi
        start_contention
        if is_service_enabled contention-watcher; then
            # watcher.conf is written by Watcher's own plugin; ours adds to
            # it once it exists and restarts the services that read it.
            configure_contention_watcher
            restart_service devstack@watcher-decision-engine
            restart_service devstack@watcher-applier
        fi
    fi
    if [[ "$1" == "unstack" ]]; then
        stop_contention
    fi
    if [[ "$1" == "clean" ]]; then
        cleanup_contention
    fi
fi

$_XTRACE_CONTENTION

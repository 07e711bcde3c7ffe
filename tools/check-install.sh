#!/usr/bin/env bash
# Install the project as an operator does, one extra at a time, each in a
# fresh virtual environment with nothing but what the project declares
# (no test requirements, no Nova or Watcher unless the extra brings them),
# then run every console script's --help and one real command. tox cannot
# show a missing dependency: its environments hold the test requirements
# and every extra at once.
#
#   tools/check-install.sh [core|agent|nova|watcher|plot|postgresql|mysql|emulated ...]
#   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
extras=("$@")
[ "${#extras[@]}" -gt 0 ] || extras=(core agent nova watcher plot postgresql mysql emulated)
# The scripts every install has; the agent's needs the agent extra.
core_scripts=(contention-collector contention-train contention-sim contention-status)
work=$(mktemp -d)
# pip builds the wheel in the source tree (setuptools' build/): leave the
# tree as it was found.
had_build=false
[ -e build ] && had_build=true
cleanup() {
    rm -rf "$work"
    "$had_build" || rm -rf build
}
trap cleanup EXIT
failed=()

check() {
    local extra=$1 venv=$work/$1 spec=.
    [ "$extra" = core ] || spec=".[$extra]"
    echo "check-install: $extra: pip install '$spec' into a new venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q "$spec"
    local scripts=("${core_scripts[@]}")
    [ "$extra" = agent ] && scripts+=(contention-agent)
    for script in "${scripts[@]}"; do
        "$venv/bin/$script" --help >/dev/null
    done
    case $extra in
        core|plot)
            "$venv/bin/contention-sim" scenarios >/dev/null ;;
        agent)
            # A real collection on libvirt's test driver (no daemon).
            "$venv/bin/contention-agent" --once \
                --libvirt-uri test:///default >/dev/null ;;
        nova)
            "$venv/bin/python" -c 'import nova_filters.weigher' ;;
        watcher)
            "$venv/bin/python" -c 'import watcher_strategies.strategies' ;;
        postgresql|mysql)
            # SQLAlchemy loads the driver a store URL names when the
            # engine is made (no server needed).
            url=postgresql://u@127.0.0.1/x
            [ "$extra" = mysql ] && url=mysql+pymysql://u@127.0.0.1/x
            "$venv/bin/python" -c "import sqlalchemy as sa, sys
sa.create_engine(sys.argv[1]); sa.create_engine(sys.argv[2])" \
                "$url" "${url/postgresql:/postgresql+psycopg2:}" ;;
        emulated)
            "$venv/bin/python" -c 'from oslo_config import cfg
from compute_agent.sources import emulated
emulated.register_opts(cfg.ConfigOpts())' ;;
    esac
    "$venv/bin/oslo-config-generator" --namespace contention.core >/dev/null
    echo "check-install: $extra: OK"
}

for extra in "${extras[@]}"; do
    # Not "if ! check": errexit is off inside a condition, and a failing
    # step must fail the extra.
    set +e
    (set -e; check "$extra")
    rc=$?
    set -e
    if [ "$rc" -ne 0 ]; then
        echo "check-install: $extra: FAILED"
        failed+=("$extra")
    fi
done
if [ "${#failed[@]}" -gt 0 ]; then
    echo "check-install: failed: ${failed[*]}"
    exit 1
fi

#!/usr/bin/env bash
# Regenerate every sample configuration in etc/contention/ from the
# oslo-config-generator files in etc/oslo-config-generator/. `tox -e genconfig`
# runs this; tests/unit/test_config_samples.py fails when a checked-in sample
# differs from what this would write.
set -euo pipefail
cd "$(dirname "$0")/.."
for conf in etc/oslo-config-generator/*.conf; do
    oslo-config-generator --config-file "$conf"
done

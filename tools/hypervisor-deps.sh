#!/usr/bin/env bash
# Install what the real-hypervisor tests (tox -e hypervisor) need and a
# fresh Debian 12 machine lacks: QEMU and libvirt's daemon with its QEMU
# driver. The packages bring no running service (no libvirt-daemon-system):
# the tests start their own private libvirtd (tests/functional/hypervisor/).
set -euo pipefail

need_debs=()
for deb in qemu-system-x86 libvirt-daemon libvirt-daemon-driver-qemu \
        libvirt-clients util-linux; do
    dpkg -s "$deb" >/dev/null 2>&1 || need_debs+=("$deb")
done
if [ "${#need_debs[@]}" -gt 0 ]; then
    echo "hypervisor-deps: installing Debian packages: ${need_debs[*]}"
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
        --no-install-recommends "${need_debs[@]}"
fi

#!/usr/bin/env bash
# Fetches Debian's stock x86-64 kernel for QEMU guests without installing it:
# `apt-get download` of the package linux-image-amd64 depends on, and its
# boot/vmlinuz-* alone (no modules) into DIR (default target/qemu-kernel), the
# package then removed. Prints the vmlinuz path, for `-kernel` and for the
# QEMU tests' OSBENCH_QEMU_KERNEL:
#
#   export OSBENCH_QEMU_KERNEL=$(scripts/qemu-kernel.sh)
#
# Needs apt (Debian or a derivative with that package name) and dpkg-deb.
# Nothing is installed: the host's own kernel and /boot are left alone.
# Already there: prints the path and fetches nothing. As root, with no package
# lists yet, runs apt-get update first.
set -euo pipefail
dir=${1:-target/qemu-kernel}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
found=$(ls "$dir"/vmlinuz-* 2>/dev/null | head -n 1 || true)
if [ -n "$found" ]; then echo "$found"; exit 0; fi
depends() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ { print $2; exit }'; }
package=$(depends)
if [ -z "$package" ] && [ "$(id -u)" = 0 ]; then
    apt-get update -qq >&2   # a fresh machine may have no package lists yet
    package=$(depends)
fi
if [ -z "$package" ]; then
    echo "qemu-kernel.sh: apt knows no linux-image-amd64 (run apt-get update first)" >&2
    exit 2
fi
(cd "$dir" && apt-get download "$package" >&2)
deb=$(ls "$dir/${package}"_*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" --strip-components=2 --wildcards './boot/vmlinuz-*'
rm -f "$deb"
ls "$dir"/vmlinuz-*

#!/usr/bin/env bash
# Builds the anchors scripts/crosscheck.sh compares osbench with, outside the
# repository, from their upstream sources, and prints the environment that
# points the script at them. Nothing of theirs is vendored: DIR holds a
# checkout of each (git clone, or however the machine gets GitHub's sources):
#
#   DIR/lmbench         https://github.com/intel/lmbench
#   DIR/will-it-scale   https://github.com/antonblanchard/will-it-scale
#   DIR/schbench        https://github.com/masoncl/schbench
#   DIR/librseq         https://github.com/compudj/librseq
#
#   scripts/build-anchors.sh DIR
#
# A source tree that is absent is reported and skipped (its checks are then
# recorded as unavailable). Debian's packages they need (libtirpc-dev,
# libhwloc-dev, autoconf, automake, libtool) and the packaged anchors
# (rt-tests, linux-perf, fio) are installed with apt-get when missing, and
# a perf 6.12 (for seccomp-notify and uprobe, which Debian 12's perf 6.1
# lacks) is built with BPF skeletons from Debian's linux-source-6.12 into
# DIR/perf and put first on the PATH the printed line exports.
#
# lmbench is built as its own Makefile builds it: its library an archive
# (lmbench.a), each program linked with -lm, and libtirpc (where today's
# glibc keeps the RPC calls lib_tcp.c makes) only into the programs that
# use it (-Wl,--as-needed). Linked into every program, libtirpc brings
# krb5's libraries along, and lat_proc fork took 182 µs against 100: a
# process's mappings weigh on fork (7 Dec, Intel). lmbench's own build
# script leaves libtirpc commented out, and glibc no longer has the RPC
# headers its sources include (Debian keeps them in libtirpc-dev): hence this.
set -euo pipefail
[ $# -eq 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2; }
dir=$(cd "$1" && pwd)
sudo=$([ "$(id -u)" = 0 ] || echo sudo)
# Installs with apt-get those of the packages named that are not installed.
install_missing() {
    local pkg missing=()
    for pkg in "$@"; do
        dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] || $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >&2
}
install_missing libtirpc-dev libhwloc-dev autoconf automake libtool rt-tests linux-perf fio

# perf built from Debian's linux-source-6.12 with BPF skeletons, installed
# in $perf_root/usr: Debian's perf packages are built without them, and
# their `perf bench uprobe empty` then attaches no program and times the
# baseline again. Only the trees perf's build reads are unpacked.
perf_built_with_skeletons() {
    install_missing linux-source-6.12 flex bison libelf-dev clang libdw-dev libtraceevent-dev \
        libzstd-dev libcap-dev || return 1
    local src=$perf_root/src/linux-source-6.12
    [ -d "$src/tools/perf" ] || {
        mkdir -p "$perf_root/src"
        tar -xf /usr/src/linux-source-6.12.tar.xz -C "$perf_root/src" \
            --exclude=linux-source-6.12/{drivers,Documentation,sound,fs,net}
    } || return 1
    mkdir -p "$perf_root/build"
    make -C "$src/tools/perf" -j"$(nproc)" BUILD_BPF_SKEL=1 NO_LIBPYTHON=1 NO_LIBPERL=1 NO_JEVENTS=1 \
        O="$perf_root/build" prefix="$perf_root/usr" install-bin >&2
}
with_skeletons() { "$perf_root/usr/bin/perf" version --build-options 2>/dev/null | grep -qE 'bpf_skeletons: +\[ on'; }

# bookworm-backports' linux-perf unpacked into $perf_root, with apt's
# lists, cache and sources for it kept under $perf_root/apt.
newer_perf_unpacked() {
    local apt_dir=$perf_root/apt deb
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
    echo "deb http://deb.debian.org/debian bookworm-backports main" >"$apt_dir/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
        -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir" -o "Dir::Cache::Archives=$apt_dir/archives")
    apt-get "${opts[@]}" update >&2 || return 1
    (cd "$apt_dir" && apt-get "${opts[@]}" download linux-perf/bookworm-backports) >&2 || return 1
    deb=$(ls "$apt_dir"/linux-perf_*.deb | tail -1) || return 1
    dpkg-deb -x "$deb" "$perf_root" || return 1
    # Its libraries: the Depends names (alternatives' first).
    install_missing $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*//; s/:any//; s/ //g' | sort -u)
}

# The lmbench programs crosscheck.sh runs (enough: the interval its
# calibration chooses, said in the log), and its sources for the drivers
# that include lat_sig.c and lat_mem_rd.c.
lmbench_programs=(enough lat_sig lat_pagefault lat_mmap lat_proc lat_select lat_connect lat_fs
    bw_pipe bw_unix bw_tcp bw_file_rd bw_mmap_rd bw_mem lat_mem_rd)
env=()
if [ -d "$dir/lmbench/src" ]; then
    (
        cd "$dir/lmbench/src"
        mkdir -p ../bin
        flags=(-O2 -w -DHAVE_uint64_t=1 -I/usr/include/tirpc)
        libs=(lib_tcp lib_udp lib_unix lib_timing lib_mem lib_stats lib_debug lib_sched getopt)
        for l in "${libs[@]}"; do gcc "${flags[@]}" -c -o "$l.o" "$l.c"; done
        rm -f lmbench.a && ar rcs lmbench.a "${libs[@]/%/.o}"
        for p in "${lmbench_programs[@]}"; do
            gcc "${flags[@]}" -o "../bin/$p" "$p.c" lmbench.a -Wl,--no-as-needed -lm -Wl,--as-needed -ltirpc
        done
    ) >&2
    env+=("LMBENCH=$dir/lmbench/bin" "LMBENCH_SRC=$dir/lmbench/src")
else
    echo "no $dir/lmbench/src: the lmbench checks will be unavailable" >&2
fi
if [ -d "$dir/will-it-scale" ]; then
    make -C "$dir/will-it-scale" >&2
    env+=("WIS=$dir/will-it-scale")
else
    echo "no $dir/will-it-scale: the will-it-scale checks will be unavailable" >&2
fi
if [ -d "$dir/schbench" ]; then
    make -C "$dir/schbench" >&2
    env+=("SCHBENCH=$dir/schbench/schbench")
else
    echo "no $dir/schbench: the schbench checks will be unavailable" >&2
fi
if [ -d "$dir/librseq" ]; then
    (cd "$dir/librseq" && ./bootstrap && ./configure && make -j"$(nproc)") >&2
    env+=("LIBRSEQ=$dir/librseq")
else
    echo "no $dir/librseq: rseq-inc will be unavailable" >&2
fi
# A perf with `perf bench sched seccomp-notify` (perf 6.3) and `perf bench
# uprobe` (6.7) with BPF skeletons: Debian 12's is 6.1, built without them.
# Built from source into DIR/perf; when that fails, bookworm-backports'
# package is unpacked there instead (not installed: the backports list
# lives in DIR/perf/apt, so the machine's own apt sources are left as they
# were; only its missing libraries are installed), which has
# seccomp-notify but leaves uprobe unavailable. Skipped with a word when
# neither can be had.
perf_root=$dir/perf
with_skeletons || perf_built_with_skeletons || [ -x "$perf_root/usr/bin/perf" ] || newer_perf_unpacked || true
if "$perf_root/usr/bin/perf" version >&2 2>/dev/null; then
    env+=("PATH=$perf_root/usr/bin:\$PATH")
    with_skeletons || echo "$perf_root's perf has no BPF skeletons: uprobe will be unavailable" >&2
else
    echo "no perf 6.3 or later in $perf_root: seccomp-notify and uprobe will be unavailable" >&2
fi
echo "export ${env[*]}"

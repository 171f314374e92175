#!/usr/bin/env bash
# Cross-checks `osbench run syscall:case=null` against `perf bench syscall basic`
# (Debian package linux-perf): the two run alternately ROUNDS times (default 5);
# prints each figure, both medians, their ratio, and the CV of osbench's medians
# across its invocations. Needs a release build: cargo build --release.
set -euo pipefail
rounds=${1:-5}
bin=${OSBENCH:-target/release/osbench}
command -v perf >/dev/null || { echo "perf not found: apt-get install -y linux-perf" >&2; exit 2; }
[ -x "$bin" ] || { echo "$bin not found: cargo build --release" >&2; exit 2; }
ours=() perfs=()
for ((i = 1; i <= rounds; i++)); do
    p=$(perf bench syscall basic | awk '/usecs\/op/ { printf "%.1f", $1 * 1000 }')
    o=$("$bin" run syscall:case=null -q | awk '$1 == "syscall" && $2 == "null" { print $3 }')
    echo "round $i: perf bench ${p} ns   osbench ${o} ns"
    perfs+=("$p") ours+=("$o")
done
printf '%s\n' "${perfs[@]}" > /tmp/crosscheck-perf.$$
printf '%s\n' "${ours[@]}" > /tmp/crosscheck-ours.$$
python3 - /tmp/crosscheck-perf.$$ /tmp/crosscheck-ours.$$ <<'PY'
import statistics as st, sys
perf = [float(x) for x in open(sys.argv[1])]
ours = [float(x) for x in open(sys.argv[2])]
mp, mo = st.median(perf), st.median(ours)
print(f"median: perf bench {mp:.1f} ns, osbench {mo:.1f} ns, ratio osbench/perf {mo / mp:.3f}")
print(f"CV across invocations: osbench {st.stdev(ours) / st.mean(ours) * 100:.2f}%, perf bench {st.stdev(perf) / st.mean(perf) * 100:.2f}%")
PY
rm -f /tmp/crosscheck-perf.$$ /tmp/crosscheck-ours.$$

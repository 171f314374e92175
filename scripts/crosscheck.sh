#!/usr/bin/env bash
# Runs osbench and an anchor alternately ROUNDS times (default 5) and prints
# each figure, both medians, their ratio, and the CV of each tool's figures
# across its invocations. Needs a release build (cargo build --release) and
# Debian's linux-perf for the perf anchors.
#
#   scripts/crosscheck.sh syscall [ROUNDS]   null syscall vs `perf bench syscall basic` (ns)
#   scripts/crosscheck.sh pipe [ROUNDS]      ipc:kind=pipe --pin same vs `taskset -c CPU perf bench sched pipe` (µs)
#   scripts/crosscheck.sh ctx [ROUNDS]       ctx:procs=2,size=0 --pin same, alone (its anchor, lmbench, is not packaged)
#   scripts/crosscheck.sh messaging PARAMS [ROUNDS]
#                                            messaging:PARAMS (e.g. groups=10,transport=pipe) vs the same
#                                            `hackbench` (Debian rt-tests), Time: in seconds
#
# CPU (default 0) is where both tools run for `pipe` and `ctx` (osbench under taskset).
set -euo pipefail
what=${1:?usage: crosscheck.sh syscall|pipe|ctx [ROUNDS] or crosscheck.sh messaging PARAMS [ROUNDS]}
if [ "$what" = messaging ]; then params=${2:?messaging needs PARAMS, e.g. groups=10}; shift; fi
rounds=${2:-5}
cpu=${CPU:-0}
bin=${OSBENCH:-target/release/osbench}
[ -x "$bin" ] || { echo "$bin not found: cargo build --release" >&2; exit 2; }
need_perf() { command -v perf >/dev/null || { echo "perf not found: apt-get install -y linux-perf" >&2; exit 2; }; }
median_of() { awk -v b="$1" -v c="$2" '$1 == b && $2 == c { if (!seen++) print $3 }'; }

case $what in
syscall) need_perf
    ours() { "$bin" run syscall:case=null -q --no-store | median_of syscall null; }
    anchor() { perf bench syscall basic | awk '/usecs\/op/ { printf "%.1f", $1 * 1000 }'; }
    unit=ns anchor_name="perf bench syscall basic" ;;
pipe) need_perf
    ours() { taskset -c "$cpu" "$bin" run ipc:kind=pipe --pin same -q --no-store | median_of ipc pipe; }
    anchor() { taskset -c "$cpu" perf bench sched pipe | awk '/usecs\/op/ { print $1 }'; }
    unit=µs anchor_name="taskset -c $cpu perf bench sched pipe" ;;
ctx)
    ours() { taskset -c "$cpu" "$bin" run ctx:procs=2,size=0 --pin same -q --no-store | median_of ctx 2p/0K; }
    anchor() { :; }
    unit=µs anchor_name="" ;;
messaging)
    command -v hackbench >/dev/null || { echo "hackbench not found: apt-get install -y rt-tests" >&2; exit 2; }
    # osbench prints the equivalent hackbench command in front of its Time: line.
    line=$("$bin" run "messaging:$params" -q --no-store --samples 3 --warmup 0 | grep 'Time:')
    hb=$(echo "$line" | sed 's/ *Time:.*//')
    ours() { "$bin" run "messaging:$params" -q --no-store | awk '$1 == "messaging" { if (!seen++) print $3 }'; }
    anchor() { $hb | awk '/^Time:/ { print $2 }'; }
    unit=s anchor_name="$hb" ;;
*) echo "unknown check '$what': syscall, pipe, ctx or messaging" >&2; exit 2 ;;
esac

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for ((i = 1; i <= rounds; i++)); do
    a=$(anchor) o=$(ours)
    echo "round $i: ${anchor_name:+$anchor_name $a $unit   }osbench $o $unit"
    if [ -n "$a" ]; then echo "$a" >> "$tmp/anchor"; fi
    echo "$o" >> "$tmp/ours"
done
python3 - "$tmp" "$unit" "$anchor_name" <<'PY'
import os, statistics as st, sys
tmp, unit, anchor_name = sys.argv[1:]
def read(name):
    path = os.path.join(tmp, name)
    return [float(x) for x in open(path)] if os.path.exists(path) else []
ours, anchor = read("ours"), read("anchor")
cv = lambda v: st.stdev(v) / st.mean(v) * 100 if len(v) > 1 else float("nan")
mo = st.median(ours)
print(f"osbench: median {mo:.4g} {unit}, CV across invocations {cv(ours):.2f}%")
if anchor:
    ma = st.median(anchor)
    print(f"{anchor_name}: median {ma:.4g} {unit}, CV across invocations {cv(anchor):.2f}%")
    print(f"ratio osbench / anchor: {mo / ma:.3f}")
PY

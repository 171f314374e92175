#!/usr/bin/env bash
# Fault injection: runs osbench (the release binary, or $OSBENCH) through the
# faults of issue 18 and the ones that already passed — signals at every
# stage, SIGKILL, hung set-ups, nohup, FIFOs, colliding fallbacks, hostile
# documents, big documents, full disks, resource limits, bad arguments — in a
# scratch directory, and prints a Markdown table: fault | expected | observed
# | ok. Exits 1 if a row fails. Every osbench runs in a session of its own
# (setsid), so what it leaves behind is found by session id; the script
# checks that nothing of its sessions is left and that nothing outside its
# scratch directory changed. Rows that need root (a tmpfs, another user)
# say "skipped" without it.
#
#   cargo build --release && scripts/faults.sh    # the table on stdout
set -uo pipefail
B=${OSBENCH:-$(cd "$(dirname "$0")/.." && pwd)/target/release/osbench}
[ -x "$B" ] || { echo "faults.sh: no $B (cargo build --release)" >&2; exit 2; }
S=$(mktemp -d /tmp/osbench-faults.XXXXXX)
export OSBENCH_STORE=$S/store.sqlite HOME=$S TMPDIR=$S
cd "$S" || exit 2
QUICK=(--samples 3 --sample-time 1 --warmup 0)
failed=0
sessions=()

row() { # fault, expected, observed, ok (0/1)
    local mark=yes
    [ "$4" = 0 ] || { mark=NO; failed=1; }
    printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$mark"
}
# Starts osbench in a session of its own; its pid (= session id) in $pid.
start() { setsid "$B" "$@" >"$S/out" 2>"$S/err" & pid=$!; sessions+=("$pid"); }
finish() { wait "$pid"; rc=$?; }
# Processes of session $1 that still run (zombies whose parent died are
# about to be reaped by init).
left() { ps -o stat= -s "$1" 2>/dev/null | grep -vc '^Z'; }
# Milliseconds now, in $now: bash's own clock, no process started (a `date`
# would wait for a CPU behind thousands of runnable hackbench workers).
ms() { now=$((${EPOCHREALTIME/./} / 1000)); }

echo "| fault | expected | observed | ok |"
echo "|---|---|---|---|"

# --- Signals and processes ---------------------------------------------------
start run syscall:case=null --samples 400 --sample-time 5 --json "$S/int.json" -q
sleep 1.5; kill -INT "$pid"; finish
complete=$(grep -o '"complete": *[a-z]*' "$S/int.json" 2>/dev/null | head -1 | tr -d ' ')
row "Ctrl-C mid-case" "exit 130, samples kept, complete=false" "exit $rc, $complete" \
    "$([ $rc = 130 ] && [ "$complete" = '"complete":false' ]; echo $?)"

echo orig >"$S/t"
start run syscall:case=null "${QUICK[@]}" --config a="echo on > $S/t; sleep 1000" \
    --teardown a="echo orig > $S/t" --config b=true -q --no-store
sleep 2; kill -INT "$pid"; finish; sleep 0.5
row "Ctrl-C during a hung set-up" "exit 130, tear-down ran, nothing left" \
    "exit $rc, toggle '$(cat "$S/t")', $(left "$pid") left" \
    "$([ $rc = 130 ] && [ "$(cat "$S/t")" = orig ] && [ "$(left "$pid")" = 0 ]; echo $?)"

start time --setup 'sleep 1000' --cleanup "touch $S/cleaned" --runs 2 true --no-store -q
sleep 2; kill -TERM "$pid"; finish; sleep 0.5
row "SIGTERM during a hung time --setup" "exit 130, --cleanup ran, nothing left" \
    "exit $rc, cleanup $([ -e "$S/cleaned" ] && echo ran || echo 'not run'), $(left "$pid") left" \
    "$([ $rc = 130 ] && [ -e "$S/cleaned" ] && [ "$(left "$pid")" = 0 ]; echo $?)"

start time 'sleep 100' --runs 2 --no-store -q
sleep 2; kill -KILL "$pid"; finish; sleep 1
row "SIGKILL of osbench timing a command" "the command dies with it" "$(left "$pid") processes left" \
    "$([ "$(left "$pid")" = 0 ]; echo $?)"

setsid nohup "$B" run syscall:case=null "${QUICK[@]}" --no-store -q >/dev/null 2>&1 & pid=$!
sessions+=("$pid"); sleep 0.3; kill -HUP "$pid"; finish
row "SIGHUP under nohup" "ignored: the run completes, exit 0" "exit $rc" "$([ $rc = 0 ]; echo $?)"

worst=0
for delay in 0.3 0.6 1.0 1.5; do
    start run messaging:groups=50 --samples 5 --no-store -q
    sleep "$delay"; ms; t0=$now; kill -INT "$pid"; finish; ms; t=$((now - t0))
    [ $t -gt $worst ] && worst=$t
done
row "Ctrl-C of messaging groups=50 (processes) at 0.3–1.5 s" "stops in < 500 ms" "worst ${worst} ms" \
    "$([ $worst -lt 500 ]; echo $?)"
worst=0
for delay in 0.3 0.6 1.0 1.5; do
    start run messaging:groups=50,mode=threads --samples 5 --no-store -q
    sleep "$delay"; ms; t0=$now; kill -INT "$pid"; finish; ms; t=$((now - t0))
    [ $t -gt $worst ] && worst=$t
done
row "Ctrl-C of messaging groups=50 (threads) at 0.3–1.5 s" "stops in < 500 ms" "worst ${worst} ms" \
    "$([ $worst -lt 500 ]; echo $?)"

# --- Files and data ------------------------------------------------------------
mkfifo "$S/fifo"; cat "$S/fifo" >"$S/fifo.out" & reader=$!
"$B" run syscall:case=null "${QUICK[@]}" --no-store -q --json "$S/fifo" >/dev/null 2>&1; rc=$?
wait $reader
row "--json to a FIFO" "written through, the FIFO stays" \
    "exit $rc, $( [ -p "$S/fifo" ] && echo 'still a FIFO' || echo replaced), $(wc -c <"$S/fifo.out") bytes" \
    "$([ $rc = 0 ] && [ -p "$S/fifo" ] && [ -s "$S/fifo.out" ]; echo $?)"

mkdir -p "$S/fallback" && cd "$S/fallback" || exit 2
for _ in 1 2 3; do
    OSBENCH_STORE=/proc/osbench.sqlite "$B" run syscall:case=null "${QUICK[@]}" -q >/dev/null 2>&1 &
done
wait; n=$(ls "$S/fallback"/osbench-*.json 2>/dev/null | wc -l); cd "$S" || exit 2
row "3 runs falling back to files at once" "3 distinct files" "$n files" "$([ "$n" = 3 ]; echo $?)"

"$B" run syscall:case=null "${QUICK[@]}" --no-store -q --json "$S/good.json" >/dev/null 2>&1
python3 - "$S/good.json" "$S/empty.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); d["series"][0]["samples"] = []
json.dump(d, open(sys.argv[2], "w"))
EOF
"$B" compare "$S/empty.json" "$S/good.json" >/dev/null 2>"$S/err"; rc=$?
row "a series with no samples" "exit 2 naming file and series" "exit $rc: $(head -c 90 "$S/err")" \
    "$([ $rc = 2 ] && grep -q empty.json "$S/err"; echo $?)"

"$B" run syscall:case=null --samples 1000000 --sample-time 0.002 --warmup 0 --no-perf --no-store -q \
    --json "$S/big.json" >/dev/null 2>&1
ms; t0=$now; "$B" compare "$S/big.json" "$S/big.json" >/dev/null 2>&1; rc=$?; ms; t=$((now - t0))
ms; t1=$now; "$B" plot "$S/big.json" --out "$S/plots" >/dev/null 2>&1; rp=$?; ms; tp=$((now - t1))
row "compare and plot of 1,000,000-sample documents" "compare < 10 s, plot < 10 s" \
    "compare exit $rc in ${t} ms, plot exit $rp in ${tp} ms" \
    "$([ $rc = 0 ] && [ $rp = 0 ] && [ $t -lt 10000 ] && [ $tp -lt 10000 ]; echo $?)"
rm -f "$S/big.json"

if [ "$(id -u)" = 0 ] && mkdir -p "$S/disk" && mount -t tmpfs -o size=2M tmpfs "$S/disk" 2>/dev/null; then
    "$B" run syscall:case=null "${QUICK[@]}" -q --label full --store "$S/disk/s.sqlite" >/dev/null 2>&1
    dd if=/dev/zero of="$S/disk/fill" bs=64k >/dev/null 2>&1
    "$B" history --store "$S/disk/s.sqlite" >"$S/out" 2>"$S/err"; rc=$?
    umount "$S/disk"
    row "history with the store's disk full" "lists the runs" "exit $rc, $(grep -c full "$S/out") run" \
        "$([ $rc = 0 ] && grep -q full "$S/out"; echo $?)"
else
    row "history with the store's disk full" "lists the runs" "skipped: needs root to mount a tmpfs" 0
fi

echo garbage >"$S/corrupt.sqlite"
"$B" history --store "$S/corrupt.sqlite" >/dev/null 2>"$S/err"; rc=$?
row "a corrupt store" "exit 2, says it is not a database" "exit $rc: $(head -c 90 "$S/err")" \
    "$([ $rc = 2 ] && grep -q "not an SQLite database" "$S/err"; echo $?)"

# --- Limits and messages ------------------------------------------------------
bash -c "ulimit -v 60000; exec '$B' run messaging:groups=10,mode=threads -q --no-store" >/dev/null 2>"$S/err"; rc=$?
row "ulimit -v 60000, 400 threads" "exit 2 naming ulimit -v before measuring" "exit $rc: $(grep -o 'ulimit -v[^:]*' "$S/err" | head -1)" \
    "$([ $rc = 2 ] && grep -q 'ulimit -v' "$S/err"; echo $?)"

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    chmod 755 "$S"; mkdir -m 1777 "$S/nobody"
    TMPDIR=$S/nobody HOME=$S/nobody setpriv --reuid=65534 --regid=65534 --clear-groups bash -c \
        "ulimit -u 1; exec '$B' run proc:case=exec -q --no-store" >/dev/null 2>"$S/err"; rc=$?
    row "ulimit -u 1 (user nobody), exec" "exit 2 naming ulimit -u, not TMPDIR" "exit $rc: $(grep -o 'raise `ulimit -[a-z]`' "$S/err" | head -1)" \
        "$([ $rc = 2 ] && grep -q 'ulimit -u' "$S/err" && ! grep -q TMPDIR "$S/err"; echo $?)"
else
    row "ulimit -u 1 (another user), exec" "exit 2 naming ulimit -u" "skipped: needs root and setpriv" 0
fi

bash -c "ulimit -n 4; exec '$B' history" >/dev/null 2>"$S/err"; rc=$?
row "ulimit -n 4, history" "exit 2 naming ulimit -n" "exit $rc: $(grep -o 'ulimit -n is [0-9]*' "$S/err")" \
    "$([ $rc = 2 ] && grep -q 'ulimit -n' "$S/err"; echo $?)"

bash -c "ulimit -n 16; exec '$B' run ctx:procs=16 -q --no-store" >/dev/null 2>"$S/err"; rc=$?
row "ulimit -n 16, 16-process ring" "exit 2 naming ulimit -n" "exit $rc" \
    "$([ $rc = 2 ] && grep -q 'ulimit -n' "$S/err"; echo $?)"

"$B" run syscall:case=null "${QUICK[@]}" --label $'a\nb' >/dev/null 2>"$S/err"; rc=$?
row "--label with a line break" "exit 2, one line" "exit $rc, $(wc -l <"$S/err") line" \
    "$([ $rc = 2 ] && [ "$(wc -l <"$S/err")" = 1 ]; echo $?)"
"$B" run syscall:case=null --samples -1 >/dev/null 2>"$S/err"; rc=$?
row "--samples -1" "exit 2 naming the allowed range" "exit $rc: $(head -c 80 "$S/err")" \
    "$([ $rc = 2 ] && grep -q '1..=1000000\|1000000' "$S/err"; echo $?)"
"$B" run syscall:case=null --samples 3 --sample-time 1 --warmup 0 --no-store -q >/dev/null 2>&1; rc=$?
row "--warmup 0" "accepted" "exit $rc" "$([ $rc = 0 ]; echo $?)"

# --- Nothing left behind ------------------------------------------------------
still=0
for s in "${sessions[@]}"; do still=$((still + $(left "$s"))); done
row "after the script: processes of its sessions" "none" "$still" "$([ $still = 0 ]; echo $?)"
outside=$(find /tmp -maxdepth 1 -newer "$S/t" -name 'osbench*' ! -path "$S" 2>/dev/null | wc -l)
row "after the script: osbench files in /tmp outside its directory" "none" "$outside" \
    "$([ "$outside" = 0 ]; echo $?)"
cd / && rm -rf "$S"
exit $failed

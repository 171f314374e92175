#!/usr/bin/env bash
# Fault injection: runs osbench (the release binary, or $OSBENCH) through the
# faults of issues 18, 31 and 44 (stores, guests, the agent, fleets; hanging
# builds, reboot commands and agents, the worker's spool) and the ones
# that already passed — PostgreSQL servers that never answer or are stopped,
# passwords with `/` and `?`, self-signed roots, foreign stores, guests
# writing endless lines or bad series, absurd agent policies, a fleet host
# whose file fails — signals at every
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
#   scripts/faults.sh --only hangs                 # one section: signals, files,
#                                                  # limits, stores, guests, hangs
# CI runs `--only hangs` with the debug binary (tests/faults.rs): its rows
# take seconds and need neither root nor PostgreSQL.
set -uo pipefail
ONLY=
[ "${1:-}" = --only ] && ONLY=${2:?--only SECTION}
want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }
B=${OSBENCH:-$(cd "$(dirname "$0")/.." && pwd)/target/release/osbench}
[ -x "$B" ] || { echo "faults.sh: no $B (cargo build --release)" >&2; exit 2; }
S=$(mktemp -d /tmp/osbench-faults.XXXXXX)
export OSBENCH_STORE=$S/store.sqlite HOME=$S TMPDIR=$S
cd "$S" || exit 2
QUICK=(--samples 3 --sample-time 1 --warmup 0)
# The workers here run `time` plans, kernel jobs and shell set-ups: a
# policy that lets them (docs/running-workers-safely.md), owned by whoever
# runs the script and writable by nobody else.
printf 'any_shell = true\nkernel_jobs = true\nguests = true\nknobs = ["*"]\ntime_commands = ["*"]\n' \
    >"$S/policy.toml" && chmod 600 "$S/policy.toml"
export OSBENCH_WORKER_POLICY=$S/policy.toml
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
# `finish`, but at most $1 seconds: then the session is SIGKILLed (rc 137).
finish_within() {
    local i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt $(($1 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL -- -"$pid" 2>/dev/null; finish
}
# Processes of session $1 that still run (zombies whose parent died are
# about to be reaped by init).
left() { ps -o stat= -s "$1" 2>/dev/null | grep -vc '^Z'; }
# Milliseconds now, in $now: bash's own clock, no process started (a `date`
# would wait for a CPU behind thousands of runnable hackbench workers).
ms() { now=$((${EPOCHREALTIME/./} / 1000)); }

echo "| fault | expected | observed | ok |"
echo "|---|---|---|---|"

# --- Signals and processes ---------------------------------------------------
if want signals; then
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
fi

# --- Files and data ------------------------------------------------------------
if want files; then
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

# Untrusted text (issue 44, S3, S4): a label with ESC ] 52, BEL, CR LF.
python3 - "$S/good.json" "$S/hostile.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); d["run"]["label"] = "ok\u001b]52;c;aGk=\u0007\r\nforged"
json.dump(d, open(sys.argv[2], "w"))
EOF
"$B" import "$S/hostile.json" --store "$S/hostile.sqlite" >"$S/out" 2>"$S/err"; rc=$?
row "import of a label with ESC, BEL, CR LF" "exit 2, refused as --label refuses it, nothing raw on the terminal" \
    "exit $rc: $(grep -c $'\e' "$S/err") raw ESC, $(grep -o 'contains control characters' "$S/err" | head -1)" \
    "$([ $rc = 2 ] && ! grep -q $'\e' "$S/err" && grep -q 'control characters' "$S/err"; echo $?)"
odd="$S/a b/\$(touch PWNED)"
mkdir -p "$odd" && cp "$B" "$odd/osbench"
(cd "$S" && "$odd/osbench" run syscall:null "${QUICK[@]}" -q --no-store --invocations 2 >/dev/null 2>"$S/err"); rc=$?
row "--invocations from a directory named 'a b/\$(touch PWNED)'" "exit 0, nothing touched" \
    "exit $rc, $( [ -e "$S/PWNED" ] && echo PWNED created || echo nothing touched)" \
    "$([ $rc = 0 ] && [ ! -e "$S/PWNED" ]; echo $?)"
rm -rf "$S/a b"

"$B" regressions --webhook $'http://127.0.0.1:9/x\r\nX-Injected: 1' >/dev/null 2>"$S/err"; rc=$?
row "webhook URL with CR LF" "exit 2 before any connection, no raw CR" \
    "exit $rc, $(grep -c $'\r' "$S/err") raw CR: $(grep -o 'has a control character' "$S/err" | head -1)" \
    "$([ $rc = 2 ] && ! grep -q $'\r' "$S/err" && grep -q 'control character' "$S/err"; echo $?)"
"$B" regressions --webhook 'https://bob:hunter2@hooks.example.com/services/T1/B2/sekrit' >/dev/null 2>"$S/err"; rc=$?
row "webhook URL with user:password@ and a Slack token" "exit 2, neither secret shown" \
    "exit $rc, $(grep -c -e hunter2 -e sekrit "$S/err") lines with a secret" \
    "$([ $rc = 2 ] && ! grep -q -e hunter2 -e sekrit "$S/err"; echo $?)"
fi

# --- Limits and messages ------------------------------------------------------
if want limits; then
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
fi

# --- Stores (issue 31), each osbench under `ulimit -v 4000000` ----------------
if want stores; then
# Like `start`, with the address space limited as the issue asks.
startv() {
    setsid bash -c 'ulimit -v 4000000; exec "$0" "$@"' "$B" "$@" >"$S/out" 2>"$S/err" &
    pid=$!; sessions+=("$pid")
}
# A listener that accepts and never answers (python3 holds the connections).
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True); held = []
while True: held.append(s.accept())
' >"$S/silent.port" & silent=$!
while [ ! -s "$S/silent.port" ]; do sleep 0.1; done
SILENT="postgresql://u:pw@127.0.0.1:$(cat "$S/silent.port")/db"
ms; t0=$now; startv history --store "$SILENT"; finish; ms; t=$((now - t0))
row "PostgreSQL listener that never answers: history" "exit 2 at the 10 s handshake limit" \
    "exit $rc in ${t} ms: $(grep -o 'did not answer within [^;]*' "$S/err")" \
    "$([ $rc = 2 ] && grep -q 'did not answer within 10 s' "$S/err"; echo $?)"
mkdir -p "$S/silent" && cd "$S/silent" || exit 2
startv run syscall:case=null "${QUICK[@]}" -q --store "$SILENT?connect_timeout=120"
sleep 1.5; ms; t0=$now; kill -INT "$pid"; finish; ms; t=$((now - t0))
row "Ctrl-C while run waits for that listener" "measured meanwhile (issue 44); exit 130 at once, the run in a file" \
    "exit $rc in ${t} ms, $(ls osbench-*.json 2>/dev/null | wc -l) file" \
    "$([ $rc = 130 ] && [ $t -lt 2000 ] && [ "$(ls osbench-*.json 2>/dev/null | wc -l)" = 1 ]; echo $?)"
rm -f osbench-*.json
startv run syscall:case=null "${QUICK[@]}" -q --store "$SILENT?connect_timeout=1"; finish
row "run with connect_timeout=1 on that listener" "exit 0, the run in a file" \
    "exit $rc, $(ls osbench-*.json 2>/dev/null | wc -l) file" \
    "$([ $rc = 0 ] && [ "$(ls osbench-*.json 2>/dev/null | wc -l)" = 1 ]; echo $?)"
cd "$S" || exit 2
kill "$silent"; wait "$silent" 2>/dev/null
for root in /dev/zero fifo; do
    [ "$root" = fifo ] && { mkfifo "$S/root.fifo"; root=$S/root.fifo; }
    ms; t0=$now
    startv history --store "$SILENT?sslmode=verify-ca&sslrootcert=$root"; finish; ms; t=$((now - t0))
    row "sslrootcert=$(basename "$root")" "exit 2 at once, naming what it is" \
        "exit $rc in ${t} ms: $(grep -o 'it is a [a-zA-Z]*' "$S/err")" \
        "$([ $rc = 2 ] && [ $t -lt 2000 ] && grep -q 'it is a' "$S/err"; echo $?)"
done
python3 -c 'import sqlite3; c = sqlite3.connect("'"$S"'/notes.sqlite"); c.execute("CREATE TABLE notes (t)"); c.execute("INSERT INTO notes VALUES (1)"); c.commit()'
startv history --store "$S/notes.sqlite"; finish
kept=$(python3 -c 'import sqlite3; c = sqlite3.connect("'"$S"'/notes.sqlite"); print(len(c.execute("SELECT name FROM sqlite_master").fetchall()), c.execute("SELECT count(*) FROM notes").fetchone()[0])')
row "a foreign SQLite database as the store" "exit 2, one line, left as it was" \
    "exit $rc, $(wc -l <"$S/err") line, tables and rows: $kept" \
    "$([ $rc = 2 ] && [ "$(wc -l <"$S/err")" = 1 ] && [ "$kept" = '1 1' ]; echo $?)"
"$B" import - --store "$S/stdin.sqlite" <"$S/good.json" >"$S/out" 2>&1; rc=$?
row "import - (standard input)" "stored" "exit $rc: $(head -c 60 "$S/out")" \
    "$([ $rc = 0 ] && grep -q 'standard input: stored as run 1' "$S/out"; echo $?)"

# A throwaway PostgreSQL cluster (as the postgres user when root), with TLS
# by a self-signed certificate (the PostgreSQL documentation's recipe).
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -n "$PGBIN" ] && [ -x "$PGBIN/initdb" ] && command -v openssl >/dev/null; then
    PGD=$S/pg; mkdir -p "$PGD"; echo 's3cret' >"$PGD/pw"
    as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
    [ "$(id -u)" = 0 ] && { chmod 755 "$S"; chown -R postgres "$PGD"; }
    (cd "$PGD" && as_pg openssl req -new -x509 -days 1 -nodes -text -subj /CN=localhost \
        -keyout server.key -out server.crt >/dev/null 2>&1 && chmod 600 server.key)
    as_pg "$PGBIN/initdb" -D "$PGD/data" -U osbench --pwfile "$PGD/pw" -A scram-sha-256 \
        --no-sync >/dev/null 2>&1
    printf 'local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n' >"$PGD/data/pg_hba.conf"
    PGPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_pg "$PGBIN/pg_ctl" -D "$PGD/data" -l "$PGD/log" -w -o "-c listen_addresses=127.0.0.1 \
        -c unix_socket_directories=$PGD -c fsync=off -p $PGPORT -c ssl=on \
        -c ssl_cert_file=$PGD/server.crt -c ssl_key_file=$PGD/server.key" start >/dev/null 2>&1
    psql_() { "$PGBIN/psql" -h "$PGD" -p "$PGPORT" -U osbench -d postgres -XAtq -c "$1"; }
    PG="postgresql://osbench:s3cret@127.0.0.1:$PGPORT/postgres"
    POSTMASTER=$(head -1 "$PGD/data/postmaster.pid")

    startv run syscall:case=null "${QUICK[@]}" -q --rounds 2 --json "$S/pg-run.json" \
        --store "$PG?connect_timeout=120" --config "a=kill -STOP $POSTMASTER" --config b=true
    while [ ! -e "$S/pg-run.json" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    sleep 0.5; ms; t0=$now; kill -INT "$pid"; finish; ms; t=$((now - t0)); kill -CONT "$POSTMASTER"
    row "PostgreSQL SIGSTOPped mid-run, then Ctrl-C" "--json written first; exit 130 at once, the warning names it" \
        "exit $rc in ${t} ms, $(grep -c 'it is in .*pg-run.json' "$S/err") warning" \
        "$([ $rc = 130 ] && [ $t -lt 2000 ] && grep -q 'it is in .*pg-run.json' "$S/err"; echo $?)"

    startv run syscall:case=null "${QUICK[@]}" -q --store "$PG?options=-c%20statement_timeout%3D1000" \
        --config "a=kill -STOP $POSTMASTER; kill -STOP \$(pgrep -P $POSTMASTER)" --config b=true --rounds 2
    ms; t0=$now; finish; ms; t=$((now - t0)); kill -CONT "$POSTMASTER" $(pgrep -P "$POSTMASTER")
    row "PostgreSQL and its backends SIGSTOPped mid-run" "exit 0 within the limits, the run in a file" \
        "exit $rc, $(grep -o 'did not answer within [0-9.]* s ([a-z_]*' "$S/err" | head -1)" \
        "$([ $rc = 0 ] && grep -q 'did not answer' "$S/err" && grep -q 'it is in ' "$S/err"; echo $?)"
    rm -f osbench-*.json

    psql_ "CREATE ROLE slash LOGIN PASSWORD 'ab/cd?ef+gh'" && psql_ "CREATE DATABASE slashdb OWNER slash"
    startv run syscall:case=null "${QUICK[@]}" --store "postgresql://slash:ab/cd?ef+gh@127.0.0.1:$PGPORT/slashdb"; finish
    row "a password with / and ? in the URL" "stored; the password shown nowhere" \
        "exit $rc, $(grep -o 'saved as run [0-9]* in [^ ]*' "$S/err"), $(cat "$S/out" "$S/err" | grep -c 'ab/cd\|cd?ef') leaks" \
        "$([ $rc = 0 ] && ! grep -q 'ab/cd\|cd?ef' "$S/out" "$S/err"; echo $?)"

    cp "$PGD/server.crt" "$S/root.crt"
    startv history --store "postgresql://osbench:s3cret@localhost:$PGPORT/postgres?sslmode=verify-full&sslrootcert=$S/root.crt"; finish
    row "self-signed server certificate as sslrootcert, verify-full" "accepted, as libpq does" "exit $rc" \
        "$([ $rc = 0 ]; echo $?)"

    psql_ "CREATE DATABASE foreign_db" && "$PGBIN/psql" -h "$PGD" -p "$PGPORT" -U osbench -d foreign_db -XAtq \
        -c "CREATE TABLE osbench_schema (version BIGINT, note TEXT); INSERT INTO osbench_schema VALUES (0, 'keep')"
    startv history --store "postgresql://osbench:s3cret@127.0.0.1:$PGPORT/foreign_db"; finish
    n=$("$PGBIN/psql" -h "$PGD" -p "$PGPORT" -U osbench -d foreign_db -XAtq -c "SELECT count(*) FROM osbench_schema")
    row "a foreign osbench_schema table" "exit 2, its rows kept" "exit $rc, $n row" \
        "$([ $rc = 2 ] && [ "$n" = 1 ]; echo $?)"

    # The queue (issue 44): workers w1… against this server.
    OSBENCH_STORE=$PG "$B" submit --time 'sleep 0.5' --hosts w1 -- --runs 60 >/dev/null 2>&1
    ms; t0=$now; startv worker --name w1 --once --max-job-time 2 --spool "$S/spool1" --store "$PG"
    finish_within 60; ms; t=$((now - t0))
    job=$(psql_ "SELECT state || ': ' || coalesce(error, '') FROM jobs WHERE host = 'w1'")
    row "a time job of 30 s, worker --max-job-time 2" "stopped at the limit; the job failed naming it" \
        "exit $rc in ${t} ms, job $(head -c 90 <<<"$job")" \
        "$([ $rc = 0 ] && [ $t -lt 15000 ] && grep -q "^failed: .*max-job-time of 2 s" <<<"$job"; echo $?)"

    python3 - "$S/good.json" "$S/spool1/osbench-1.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); d["series"][0]["case"] = "a\u0000b"
json.dump(d, open(sys.argv[2], "w"))
EOF
    cp "$S/good.json" "$S/spool1/osbench-2.json"
    startv worker --name w1 --once --spool "$S/spool1" --store "$PG"; finish_within 60
    row "a spool document PostgreSQL refuses (NUL in a case), one good after it" \
        "moved to rejected/ and named; the good one sent; --once exits 0" \
        "exit $rc, $(ls "$S/spool1/rejected" 2>/dev/null | wc -l) set aside, $(ls "$S"/spool1/*.json 2>/dev/null | wc -l) left, $(grep -c 'refused .*osbench-1.json' "$S/err") warning" \
        "$([ $rc = 0 ] && [ -e "$S/spool1/rejected/osbench-1.json" ] && ! ls "$S"/spool1/*.json >/dev/null 2>&1 \
            && grep -q 'refused .*osbench-1.json' "$S/err"; echo $?)"

    printf 'select = ["syscall:null"]\nsamples = 3\nsample_time = 1\nwarmup = 0\n[kernel]\nrelease = "6.99.0-faults"\n' >"$S/kernel.toml"
    OSBENCH_STORE=$PG "$B" submit "$S/kernel.toml" --hosts w2 >/dev/null 2>&1
    startv worker --name w2 --poll 0.2 --spool "$S/spool2" --store "$PG" --reboot-command 'sleep 1000'
    for _ in $(seq 300); do [ "$(psql_ "SELECT state FROM jobs WHERE host = 'w2'")" = rebooting ] && break; sleep 0.1; done
    ms; t0=$now; kill -TERM "$pid"; finish_within 30; ms; t=$((now - t0)); sleep 0.3
    state=$(psql_ "SELECT state FROM jobs WHERE host = 'w2'")
    row "SIGTERM of a worker whose reboot command hangs" "exit 130 at once; the job queued again; nothing left" \
        "exit $rc in ${t} ms, job $state, $(left "$pid") left" \
        "$([ $rc = 130 ] && [ $t -lt 2000 ] && [ "$state" = queued ] && [ "$(left "$pid")" = 0 ]; echo $?)"

    OSBENCH_STORE=$PG "$B" submit syscall:null --hosts w3 -- --samples 3 >/dev/null 2>&1
    psql_ "UPDATE jobs SET meta = '[1]' WHERE host = 'w3'"
    "$B" jobs --store "$PG" >"$S/out" 2>"$S/err"; rc=$?
    row "a job row whose meta is no JSON map" "jobs lists every job, that one as unreadable" \
        "exit $rc, $(grep -c 'unreadable' "$S/out") unreadable" \
        "$([ $rc = 0 ] && grep -q 'unreadable' "$S/out"; echo $?)"
    as_pg "$PGBIN/pg_ctl" -D "$PGD/data" -m immediate -w stop >/dev/null 2>&1
else
    row "PostgreSQL rows (stopped server, password, self-signed, foreign table)" "" \
        "skipped: no PostgreSQL server (apt-get install postgresql) or openssl" 0
fi
fi

# --- Guests, agents and fleets (issue 31), each osbench under `ulimit -v 4000000`
if want guests; then
# Waits for $pid like `finish`, its peak resident memory (VmHWM) in $peak MB.
finishpeak() {
    peak=0
    while kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null) && [ -n "$kb" ]; do
        peak=$((kb / 1024)); sleep 0.1
    done
    finish
}
# The configurations and series that document $1 kept ("native:3,g:3"), and
# whether it is complete.
kept() {
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(",".join(s["config"] + ":" + str(len(s["samples"])) for s in d["series"]), "complete=" + str(d["run"]["complete"]).lower())' "$1" 2>/dev/null || echo "no document"
}
# A misbehaving command guest: runs `OSBENCH agent` and passes its channel
# through, but from its second run request on (round 1 is measured and must
# be kept) it writes an endless protocol line, asks for another case, or
# empties or spoils the series; `cr` writes `\r`-only progress on stderr
# throughout and behaves otherwise.
cat >"$S/guest.py" <<'PY'
import json, subprocess, sys, threading
mode, osbench = sys.argv[1], sys.argv[2]
agent = subprocess.Popen([osbench, "agent"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
out = sys.stdout.buffer
if mode == "cr":
    def progress():
        while True:
            sys.stderr.buffer.write(b"measuring 42%\r" * 300)
    threading.Thread(target=progress, daemon=True).start()
out.write(agent.stdout.readline()); out.flush()
runs = 0
for line in sys.stdin.buffer:
    req = json.loads(line)
    runs += "run" in req
    late = "run" in req and runs == 2
    if late and mode == "endless":
        out.write(b"{")
        while True:
            out.write(b"a" * 65536)
    if late and mode == "othercase":
        req["run"]["selector"] = "syscall:case=null"
    agent.stdin.write(json.dumps(req).encode() + b"\n"); agent.stdin.flush()
    reply = json.loads(agent.stdout.readline())
    if late and mode in ("nosamples", "huge"):
        reply["series"]["samples"] = [] if mode == "nosamples" else [1e308, -1e308, 1e308]
    out.write(json.dumps(reply).encode() + b"\n"); out.flush()
PY
# `run spin:work=100` beside the command guest `g` running $1, in two rounds.
guestrun() {
    rm -f "$S/g.json"
    startv run spin:work=100 --no-perf --config native= --guest "g=command:$1" \
        "${QUICK[@]}" --rounds 2 --json "$S/g.json" --no-store -q
}
export OSBENCH_GUEST_TIMEOUT=3
guestrun "echo booting; yes | tr -d '\\n'"; finishpeak
row "command guest: a line without end on stdout at boot" \
    "exit 2 at the 3 s limit naming 'g', the line cut at 4 KiB" \
    "exit $rc, peak ${peak} MB: $(grep -o 'did not answer within 3 s' "$S/err"), $(grep -c 'more than 4096 bytes, cut' "$S/err") cut" \
    "$([ $rc = 2 ] && grep -q "configuration 'g'.*did not answer within 3 s" "$S/err" \
        && grep -q 'more than 4096 bytes, cut' "$S/err" && [ $peak -lt 1000 ]; echo $?)"
unset OSBENCH_GUEST_TIMEOUT
guestrun "python3 $S/guest.py endless {osbench}"; finishpeak
row "command guest: a protocol line without end at its 2nd run" \
    "exit 2 naming 'g' and the 256 MiB bound; round 1 kept" \
    "exit $rc, peak ${peak} MB, $(grep -o 'a protocol line of more than 256 MiB' "$S/err" | head -1); $(kept "$S/g.json")" \
    "$([ $rc = 2 ] && grep -q "configuration 'g'.*more than 256 MiB" "$S/err" \
        && kept "$S/g.json" | grep -q 'native:[36],g:3 complete=false'; echo $?)"
guestrun "python3 $S/guest.py cr {osbench}"; finishpeak
row "command guest: \\r-only progress on stderr throughout" "exit 0, complete, memory bounded" \
    "exit $rc, peak ${peak} MB; $(kept "$S/g.json")" \
    "$([ $rc = 0 ] && kept "$S/g.json" | grep -q 'g:6 complete=true' && [ $peak -lt 1000 ]; echo $?)"
for m in othercase nosamples huge; do
    case $m in
        othercase) what="a reply for another case"; named='answered with a series of syscall null' ;;
        nosamples) what='a series with samples: []'; named='samples is empty' ;;
        huge) what='a series of ±1e308 samples'; named='more than 1e6 s per operation' ;;
    esac
    guestrun "python3 $S/guest.py $m {osbench}"; finishpeak
    row "command guest: $what at its 2nd run" "exit 2 naming 'g' and the fault; round 1 kept" \
        "exit $rc: $(grep -o "$named" "$S/err" | head -1); $(kept "$S/g.json")" \
        "$([ $rc = 2 ] && grep -q "configuration 'g'.*$named" "$S/err" \
            && kept "$S/g.json" | grep -q 'g:3 complete=false'; echo $?)"
done

for policy in samples=0 samples=1000000000 samples=18446744073709551615 \
    sample_time_ns=1000000000000000000 warmup_ns=18446744073709551615; do
    declare -A p=([samples]=3 [sample_time_ns]=1000000 [warmup_ns]=0)
    p[${policy%%=*}]=${policy#*=}
    printf '{"run":{"selector":"syscall:case=null","policy":{"samples":%s,"sample_time_ns":%s,"warmup_ns":%s},"perf":false}}\n' \
        "${p[samples]}" "${p[sample_time_ns]}" "${p[warmup_ns]}" >"$S/request"
    ms; t0=$now; setsid bash -c 'ulimit -v 4000000; exec timeout 60 "$0" agent' "$B" <"$S/request" >"$S/out" 2>"$S/err" &
    pid=$!; sessions+=("$pid"); finish; ms; t=$((now - t0))
    row "agent asked for $policy" "an error naming the field and its range, no abort" \
        "exit $rc in ${t} ms: $(grep -o '"error":"[^"]*' "$S/out" | cut -c10- | head -c 90)" \
        "$([ $rc = 0 ] && grep -q "\"error\":\"the run request's policy: ${policy%%=*} is ${policy#*=}; it must be from" "$S/out"; echo $?)"
done

# A fleet of two hosts reached through a stand-in for ssh that runs the
# remote command here. The set-up makes a directory of host a's --out file
# mid-run, so a's file fails at the end; with --no-store it goes to a file
# of its own, and b's is written.
mkdir -p "$S/bin" "$S/fleet" "$S/fleetcwd"
cat >"$S/bin/ssh" <<'SH'
#!/bin/sh
# faults.sh's stand-in for ssh: runs the command after `--` here.
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
shift; exec sh -c "$*"
SH
chmod +x "$S/bin/ssh"
printf '[[host]]\nname = "%s"\ntarget = "local"\nosbench = "%s"\n\n' a "$B" b "$B" >"$S/hosts.toml"
cd "$S/fleetcwd" || exit 2
PATH=$S/bin:$PATH startv fleet run spin:work=100 --no-perf "${QUICK[@]}" --rounds 2 \
    --hosts "$S/hosts.toml" --out "$S/fleet" --no-store -q \
    --config "mk=mkdir -p $S/fleet/a.json" --config kept=true
finish
fell=$(ls osbench-*.json 2>/dev/null | wc -l); cd "$S" || exit 2
row "fleet run: host a's --out file fails at the end, no store" \
    "exit 2 naming host a; b's file written, a's run in a file of its own, both shown" \
    "exit $rc, b.json $([ -s "$S/fleet/b.json" ] && echo written || echo missing), $fell file of its own, table: $(head -1 "$S/out" | tr -s ' ')" \
    "$([ $rc = 2 ] && grep -q "host 'a'" "$S/err" && [ -s "$S/fleet/b.json" ] && [ "$fell" = 1 ] \
        && head -1 "$S/out" | grep -q 'case *a *b'; echo $?)"
fi

# --- Hangs and lost data (issue 44) ------------------------------------------
if want hangs; then
# A repository of two commits for bisect, whose build hangs.
git init -q -b main "$S/repo" && for i in 1 2; do
    echo "$i" >"$S/repo/f"
    git -C "$S/repo" add f && git -C "$S/repo" -c user.name=t -c user.email=t@example.org commit -qm "$i"
done
for sig in INT TERM; do
    start bisect --repo "$S/repo" --good HEAD~1 --bad HEAD --build 'sleep 1000' --command true
    sleep 1.5; ms; t0=$now; kill -"$sig" "$pid"; finish_within 30; ms; t=$((now - t0)); sleep 0.3
    trees=$(git -C "$S/repo" worktree list | wc -l); dirs=$(ls -d "$S"/osbench-bisect-* 2>/dev/null | wc -l)
    row "SIG$sig of bisect during a hanging build" "exit 130 at once; no build, work tree or directory left" \
        "exit $rc in ${t} ms, $(left "$pid") left, $trees work tree, $dirs directories" \
        "$([ $rc = 130 ] && [ $t -lt 2000 ] && [ "$(left "$pid")" = 0 ] && [ "$trees" = 1 ] && [ "$dirs" = 0 ]; echo $?)"
done
start bisect --repo "$S/repo" --good HEAD~1 --bad HEAD --build 'sleep 1000' --command true --build-timeout 1
finish_within 30
row "bisect whose build outlasts --build-timeout 1" "exit 2: the good revision does not build, the timeout named" \
    "exit $rc: $(grep -o 'does not build.*' "$S/err" | head -c 90)" \
    "$([ $rc = 2 ] && grep -q 'does not build.*timeout' "$S/err"; echo $?)"

# The agents of run --invocations, the third one SIGSTOPped as it starts:
# waited for (then Ctrl-C), or not.
for then in wait int; do
    rm -f "$S/inv.json"
    start run syscall:case=null --invocations 6 --samples 12 --sample-time 100 --warmup 0 \
        --no-perf --no-store -q --json "$S/inv.json"
    seen=" "
    while kill -0 "$pid" 2>/dev/null && [ "$(wc -w <<<"$seen")" -lt 3 ]; do
        for a in $(pgrep -s "$pid" -f 'osbench agent'); do
            [[ $seen == *" $a "* ]] || seen="$seen$a "
        done
        sleep 0.02
    done
    kill -STOP "$(awk '{print $3}' <<<"$seen")" 2>/dev/null
    [ "$then" = int ] && { sleep 1; kill -INT "$pid"; }
    ms; t0=$now; finish_within 60; ms; t=$((now - t0))
    kept=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(len(d["series"][0]["invocations"]), "invocations")' "$S/inv.json" 2>/dev/null || echo "no document")
    case $then in
        wait) want="exit 2 within 15 s naming the stopped agent; 2 invocations kept"; code=2; most=15000 ;;
        int) want="exit 130 within 5 s; 2 invocations kept"; code=130; most=5000 ;;
    esac
    row "run --invocations 6, 3rd agent SIGSTOPped ($then)" "$want" "exit $rc in ${t} ms, $kept" \
        "$([ $rc = $code ] && [ $t -lt $most ] && [ "$kept" = '2 invocations' ]; echo $?)"
done

"$B" import /dev/zero --store "$S/zero.sqlite" >/dev/null 2>"$S/err"; rc=$?
row "import /dev/zero" "exit 2 at the 256 MiB cap, naming it" "exit $rc: $(grep -o 'more than [0-9]* MiB' "$S/err")" \
    "$([ $rc = 2 ] && grep -q 'more than 256 MiB' "$S/err"; echo $?)"
fi

# --- Nothing left behind ------------------------------------------------------
still=0
for s in "${sessions[@]}"; do still=$((still + $(left "$s"))); done
row "after the script: processes of its sessions" "none" "$still" "$([ $still = 0 ]; echo $?)"
outside=$(find /tmp -maxdepth 1 -newer "$S/t" -name 'osbench*' ! -path "$S" 2>/dev/null | wc -l)
row "after the script: osbench files in /tmp outside its directory" "none" "$outside" \
    "$([ "$outside" = 0 ]; echo $?)"
cd / && rm -rf "$S"
exit $failed

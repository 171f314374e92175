#!/usr/bin/env bash
# Measures the results store at scale, on SQLite and on PostgreSQL: the wall
# time (and osbench's CPU time) of `osbench import` of 1,000 documents (into an empty store, and into
# one that holds 9,000 runs) and of `osbench history` over 10,000 stored runs
# (all runs, and one host's). The documents are tests/data/small-run.json
# (7.9 kB, 4 series) relabelled, so each is a different document. Prints a
# Markdown table (the one in docs/store-scale.md). Not a test: nothing is
# asserted. Needs a release build and Debian's postgresql; the cluster is
# started in a temporary directory on a loopback port (as the postgres user
# when run as root) and stopped on exit, with fsync on, as a real one.
#
#   scripts/store-scale.sh            (OSBENCH=path/to/osbench to time another build)
#
# With `queue`, the job queue instead: 1,000 jobs queued for one host and
# claimed by 8 concurrent claimers (each its own connection, as 8 workers),
# the claim latency's percentiles and the count of duplicate claims (the
# ignored test claims_of_1000_jobs_by_8_workers in tests/queue.rs, release
# build, against this script's cluster with fsync on):
#
#   scripts/store-scale.sh queue
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${OSBENCH:-target/release/osbench}")
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
work=$(mktemp -d)
as_pg=()
[ "$(id -u)" != 0 ] || as_pg=(runuser -u postgres --)
cleanup() {
    [ ! -f "$work/pg/postmaster.pid" ] || "${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/pg" -m fast -w stop >/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# A PostgreSQL cluster of our own, fsync on as a real one; its URL in $pg_url.
start_pg() {
    [ "$(id -u)" != 0 ] || chown postgres "$work"
    "${as_pg[@]}" "$pgbin/initdb" -D "$work/pg" -U osbench -A trust --no-instructions >/dev/null
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$work" start >/dev/null
    pg_url="postgresql://osbench@127.0.0.1:$port/postgres"
}

if [ "${1:-}" = queue ]; then
    start_pg
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    OSBENCH_SCALE_STORE=$pg_url cargo test --release --test queue -- --ignored --nocapture \
        --exact claims_of_1000_jobs_by_8_workers 2>&1 | grep '^queue:'
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 0
fi

# Ten batches of 1,000 documents, every one different (label, start, host).
python3 - "$work" <<'EOF'
import json, os, sys
work = sys.argv[1]
doc = json.load(open("tests/data/small-run.json"))
for batch in range(10):
    os.makedirs(f"{work}/docs{batch}")
    for i in range(1000):
        n = batch * 1000 + i
        doc["run"]["label"] = f"scale-{n}"
        doc["run"]["started"] = f"2026-{1 + n // 1000:02}-01T{n // 60 % 24:02}:{n % 60:02}:00Z"
        doc["env"]["hostname"] = f"host{n % 8}"
        json.dump(doc, open(f"{work}/docs{batch}/{i:04}.json", "w"), indent=2)
EOF

# The seconds `$@` takes (wall clock), and the CPU time osbench used (user +
# system; the server's is not in it), its output discarded.
seconds() {
    local TIMEFORMAT='%R %U %S' times
    times=$({ time "$@" >/dev/null; } 2>&1)
    awk '{ printf "%.2f s (cpu %.2f s)", $1, $2 + $3 }' <<<"$times"
}

# The median of three timings of `$@`.
median3() {
    printf '%s\n' "$(seconds "$@")" "$(seconds "$@")" "$(seconds "$@")" | sort -n | sed -n 2p
}

# One table row for the store at $1.
measure() {
    local store=$1 name=$2 first last all one
    export OSBENCH_STORE=$store
    first=$(seconds "$bin" import "$work"/docs0/*.json)
    for batch in 1 2 3 4 5 6 7 8; do "$bin" import "$work"/docs$batch/*.json >/dev/null; done
    last=$(seconds "$bin" import "$work"/docs9/*.json)
    all=$(median3 "$bin" history)
    one=$(median3 "$bin" history --host host3)
    [ "$("$bin" history | wc -l)" = 10001 ] || { echo "expected 10,000 runs in $name" >&2; exit 2; }
    echo "| $name | $first | $last | $all | $one |"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| store | import 1,000 (empty store) | import 1,000 (9,000 stored) | history, 10,000 runs | history --host (1,250 of 10,000) |"
echo "|---|---|---|---|---|"
measure "$work/results.sqlite" SQLite

start_pg
measure "$pg_url" "PostgreSQL $(basename "$(dirname "$pgbin")")"
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

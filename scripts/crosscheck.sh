#!/usr/bin/env bash
# Cross-checks osbench against its anchors on this machine: for each check,
# osbench and the anchor run alternately ROUNDS times (default 7; the one that
# goes first swaps every round), each round waiting until the CPUs are quiet
# (other tasks under 10 % busy over a second, up to 60 s; the busy share seen
# is printed). A round gives one osbench figure (the median of its default 11
# samples) and one anchor figure (for hackbench, the median of ANCHOR_RUNS
# runs, default 11, so both sides are medians of as many runs; perf bench's
# one long run is its own figure). Prints every figure and each side's median
# and CV across rounds, then a Markdown summary whose ratio is the median of
# the rounds' osbench/anchor ratios — each taken side by side, so the host's
# slow phases, which last seconds, cancel — with its distribution-free 95 %
# interval (order statistics of the per-round ratios). A row agrees when that
# interval lies inside ±5 % (±10 % for the schbench rows). Not a test: nothing is asserted.
# Needs a release build (cargo build --release), rt-tests (hackbench) and
# linux-perf (perf bench): apt-get install -y rt-tests linux-perf.
#
#   scripts/crosscheck.sh [-r ROUNDS] [-c] CHECK...
#
# CHECK is one of
#   syscall              syscall:case=null vs `perf bench syscall basic` (ns per getppid)
#   pipe                 ipc:kind=pipe --pin same vs `perf bench sched pipe`, both under taskset -c CPU (µs)
#   ctx                  ctx:procs=2,size=0 --pin same alone: its CV across invocations (µs)
#   messaging:PARAMS     messaging:PARAMS vs the hackbench command osbench names for it (s),
#                        e.g. messaging:groups=10,transport=pipe,mode=threads
#   table                every row of issue 17's table (messaging groups=10 in processes,
#                        threads and pipe form, groups=50, pipe, syscall) and ctx
#   spread               a spread of hackbench option combinations, both modes and transports
#   sig-install          signal:case=install vs `lat_sig install` (µs)
#   sig-catch            signal catch − send vs `lat_sig catch`, which subtracts kill(pid, 0) (µs)
#   sig-prot             signal prot − (catch − send) vs `lat_sig prot`, which subtracts its catch (µs)
#   sig-prot-raw         signal:case=prot vs lat_sig's protection faults before that subtraction:
#                        a driver that includes lat_sig.c unchanged and runs only its do_prot (µs)
#   pagefault            fault:case=file (8 MiB) vs `lat_pagefault` on an 8 MiB file (µs per page),
#                        the mean of LMBENCH_DRAWS (default 8) processes at lmbench's 50 ms
#                        interval on osbench's CPU: each reads its pages in one random order,
#                        and an order costs one of two amounts (osbench's sample averages 16)
#   pagefault:unmap      the same with unmap=timed: the unmapping lmbench's figure holds
#   lat_mmap:PAGES       mmap:case=lat_mmap,pages=PAGES vs `lat_mmap PAGES*4k` on a file of
#                        that size, as osbench maps (lmbench's script maps prefixes of 8 MiB) (µs),
#                        the mean of LAT_MMAP_DRAWS (default 24) processes at lmbench's 50 ms
#                        interval on osbench's CPU: under 2 MiB a process's mapping lands
#                        across a 2 MiB boundary or not, costs 3.5x apart, so 8 (as for
#                        pagefault) left each round's mean 17 % wide (osbench draws a place
#                        an operation)
#   vm                   the lmbench rows above, lat_mmap at 128 and 2048 pages
#   fork                 proc:case=fork vs `lat_proc fork` (LOOP_O=0 TIMING_O=0: no calibration) on
#                        the CPU osbench pins to (the last one), its child there too (µs)
#   page-fault1          fault:case=anon,pages=32768 vs will-it-scale `page_fault1_processes -t 1` (ns per page)
#   tlb-flush2           tlb:threads=1,readback=yes vs will-it-scale `tlb_flush2_threads -t 1` (ns per call)
#   wis                  both will-it-scale rows
#   wis-TEST:N           will-it-scale's TEST_processes -t N vs osbench's matching case swept to N
#                        copies (`--tasks N`, processes, spread), per-task ns per op on both sides
#                        (will-it-scale: 10^9 × N ÷ its "average" loops per second of all tasks):
#                        getppid1 (syscall:case=null), page_fault1 (fault:case=anon,pages=32768,
#                        ns per page), futex2 (futex:workload=hash,threads=1,futexes=1: a
#                        FUTEX_WAIT that fails with EAGAIN), poll1 (poll:call=poll,on=file,fds=1),
#                        context_switch1 (ipc:kind=pipe, one task's share of a round trip: half
#                        of it, as will-it-scale counts 2 per round trip). futex1 and pipe1 have
#                        no osbench case (docs/crosscheck.md)
#   wis-tasks            every wis-TEST row at 1 and at 2 tasks
#   select-file, select-tcp   poll:call=select,on=file|tcp,fds=91|90 vs `lat_select -n 100 file|tcp`,
#                        which watches 91 or 90 descriptors (µs)
#   connect              connect:kind=tcp --sample-time 50 vs `ENOUGH=50000 lat_connect localhost`
#                        (µs), placed as osbench places them (server on CPU 1, client on CPU 0),
#                        lat_connect's listen backlog of 100 raised to net.core.somaxconn by an
#                        LD_PRELOAD of listen() (a server delayed 1.5 ms overflows 100, and each
#                        dropped SYN costs a 1 s retransmission), each side started once the
#                        machine's TIME_WAIT sockets are drained (connect's port search walks
#                        them); a lat_connect run that has not ended in 120 s makes the check
#                        unavailable, its overflows counted (docs/crosscheck.md, connect)
#   fs-create-0k, fs-delete-0k, fs-create-10k, fs-delete-10k
#                        fs:phase=…,kib=… vs `ENOUGH=50000 lat_fs` (its 11 repetitions) on
#                        osbench's CPU (the last) in one scratch directory under FS_DIR
#                        (default /dev/shm when it is a tmpfs), 10^6 ÷ its files/s (µs); the
#                        row names the filesystem (on an ext4 without a journal the script warns:
#                        creates there pay for the deletes of the last 60-300 s); a suffix
#                        :files=N (fs-delete-0k:files=20000) sets osbench's files per pass
#   bw-pipe, bw-unix, bw-tcp  stream:kind=… vs bw_pipe, bw_unix, `bw_tcp localhost` (MB/s, 10^6 B)
#   bw-KIND:same, bw-KIND:spread  the same, both tools placed alike: reader and writer on
#                        CPU 0 (osbench --pin same; lmbench under taskset -c 0), or on CPUs 0
#                        and 1 (--pin spread; bw_pipe and bw_unix with LMBENCH_SCHED=UNIQUE from
#                        LMBENCH_SCHED_BIN, lmbench built with -DHAVE_SCHED_SETAFFINITY;
#                        bw_tcp's server under taskset -c 1, its client -c 0)
#   bw-file-rd           file:io=read,pages=256,chunk=16,sum=yes vs `bw_file_rd 1m io_only` (MB/s)
#   bw-file-rd:open2close  the same with open2close=yes vs `bw_file_rd 1m open2close`
#   bw-mmap-rd, bw-mmap-rd:open2close  file:io=mmap,pages=256[,open2close=yes] vs
#                        `bw_mmap_rd 1m mmap_only|open2close` (MB/s)
#   bw-mem:OP:SIZE       membw:op=OP,kib=… vs `bw_mem SIZE OP`, SIZE as lmbench writes it
#                        (256m, 64k) (MB/s of 10^6 B)
#   lat-mem-rd:KIB:STRIDE[:random]  memlat:kib=KIB,stride=STRIDE[,pattern=random] vs lmbench's
#                        lat_mem_rd at that one size (ns per load): a driver includes
#                        lat_mem_rd.c unchanged and calls its loads() for the one size, as
#                        lat_mem_rd [-t] would print that row (its own sweep of every size
#                        below takes minutes a run), on osbench's CPU (the last one).
#                        lmbench keeps the fastest of its 11 repetitions of one buffer.
#                        osbench walks up to 16 buffers, one per sample (64 MiB in all):
#                        a chain's figure depends on the pages under its buffer, so
#                        osbench's figure is its median over buffers, and the anchor's
#                        the median of LAT_MEM_RD_RUNS (default 15) processes, each a
#                        buffer, at lmbench's 50 ms interval (one process's figure
#                        spreads about 10 %, so five left each round's median 5-6 %
#                        wide); with one buffer (64 MiB and up) osbench's is its
#                        fastest sample, as lmbench's, and lmbench runs once
#                        (LAT_MEM_RD_STAT=median or min forces one)
#   mem                  every memory row: lmbench's table sizes (bw_mem at 256m, copies at
#                        128m; lat_mem_rd's L1, L2, main and random rows) and the mmap rows.
#                        The memory and mmap anchors run with LOOP_O=0 TIMING_O=0 (lat_mem_rd
#                        also at lmbench's 50 ms interval, several processes a round): lmbench's
#                        start-up calibration of its clock and loop overheads takes 40 s a run
#                        here and is noise beside passes of 0.1 ms to 30 ms
#   io                   every one of these I/O checks
#   lebench-CALL:N       poll:call=CALL,on=socket,fds=N vs LEBench's CALL test over N sockets,
#                        CALL select, poll or epoll (ns per call; LEBench's average, or its
#                        k-best with LEBENCH_STAT=kbest)
#   lebench-fresh-CALL:N the same with set=fresh, LEBench's own method (a new set per
#                        call, each call timed alone): osbench's mean against LEBench's average
#   lebench-read         file:io=read,pages=1000 vs LEBench's big read (MB/s of 4,096,000 B)
#   lebench              LEBench's multiplexing rows (10 and 1,000 sockets, kept and fresh sets) and its big read
#   futex-hash, futex-lock-pi   futex:workload=…,threads=$(nproc) --pin spread (perf's placement)
#                        vs `perf bench futex hash|lock-pi -t $(nproc)` (ns per op of one thread:
#                        10^9 ÷ perf's "Averaged N operations/sec")
#   futex-wake, futex-wake-parallel, futex-requeue   the same workloads by perf's method
#                        (method=perf) as latency distributions:
#                        osbench's mean event vs perf's summary line ("Wokeup", "Avg per-thread
#                        latency", "Requeued" … in X ms), in ns
#   futex                all five futex rows
#   rseq-inc             rseq:case=rseq vs librseq's param_test_benchmark -T i -t 1 (the
#                        kernel selftest's program upstream): ns per increment, its run of
#                        10^8 repetitions timed whole less a run of 0 (start-up)
#   fio-uring:DEPTH      uring:case=read,batch=DEPTH vs `fio --ioengine=io_uring --iodepth=DEPTH`,
#                        4 KiB random reads of a page-cached 16 MiB file (MB/s, 10^6 B)
#   fio-psync            uring:case=pread vs `fio --ioengine=psync` on the same kind of file (MB/s)
#   uring                fio-uring:1, fio-uring:32 and fio-psync
#   seccomp:N            sandbox:null+bpfN vs `osbench sandbox --seccomp N -- perf bench syscall basic`:
#                        the same allow-all filter of N instructions (2..4096) over the same getppid (ns)
#   seccomp-notify       sandbox:null+notify --pin same vs `perf bench sched seccomp-notify -l 200000`
#                        (perf 6.3 or later), both on CPU (µs); perf's caller is a forked child
#                        calling gettid, osbench's a thread calling getppid
#   uprobe               sandbox null+uprobe − null (a tracefs uprobe event on osbench's getppid function)
#                        vs perf bench uprobe's figure, usecs/op of `empty` (an empty BPF program on libc's
#                        usleep) − usecs/op of `baseline`, as its `all` reports it "to baseline", each at
#                        -l 10000 (perf's 1000 spread −8 to +17 µs: each op is a 1.09 ms usleep); perf
#                        built with BPF skeletons, else unavailable (µs); root, tracefs mounted
#   uprobe-cpu           the same osbench figure vs the CPU time of the same perf programs: perf stat's
#                        task-clock of `empty` − `baseline`, per call between -l 1000 and -l 5000 (their
#                        set-up cancels), without the sleeps' wake-ups (µs)
#   sandbox              seccomp:100, seccomp:1000, seccomp-notify, uprobe and uprobe-cpu
#   cyclictest-load[:G], cyclictest-load-p99[:G]   latency under load (issue 42): timer:count=10000
#                        (1000 µs) --load hackbench:G vs `cyclictest -t1 -a CPU -i 1000 -l 10000 -q
#                        --laptop -h 10000` on osbench's CPU with `hackbench -g G` (rt-tests; G
#                        default 2) running beside it, started 1 s before and killed after; the mean
#                        wake-up latency (cyclictest's Avg), or the p99 (cyclictest's histogram, 1-µs
#                        buckets; osbench's HDR) (µs). The two rows at one G share each round's runs.
#                        Method differences: osbench's load is its own endless hackbench-shaped
#                        messaging (20 senders and receivers a group, 100-byte messages, no loops),
#                        started before the case's set-up, stopped after its tear-down; --laptop keeps
#                        cyclictest from holding /dev/cpu_dma_latency at 0, as osbench's timer does
#                        unless dma_latency=0; both threads SCHED_OTHER with the default timer slack
#   cyclictest           cyclictest-load and cyclictest-load-p99
#   schbench-STAT[:RPS]  schbench:stat=request-p99,workers=$(nproc),runtime=2 vs the median of ANCHOR_RUNS
#                        runs of `schbench -m 1 -t $(nproc) -r 2 -n 5 -F 256 -s 100 [-R RPS]`, STAT one
#                        of wakeup-p50, wakeup-p99, request-p50, request-p99 (µs: that row of each
#                        side's schbench-format block) or rps (requests/s: each side's "average
#                        rps"); agreement at ±10 % (the issue's tolerance for percentiles). Both
#                        sides read whole µs into the same histogram; osbench's figure is the
#                        median of 11 runs of 2 s (its default warm-up run first), the anchor's the
#                        median of as many 2 s runs (no warm-up below -r 30). The rows of one RPS
#                        share each round's runs (both print every statistic): the first row of a
#                        round runs them. The rows' CVs are the percentiles' own spread
#   schbench             schbench-wakeup-p50, -wakeup-p99, -request-p50, -request-p99 and -rps,
#                        no rate; then request-p99 and rps at -R 500
#   every                every row of docs/crosscheck.md's "By machine kind" table: table,
#                        hackbench -g 5 -p -T, vm, lat_mmap:256, fork, mem, io (its stream rows
#                        placed alike, :same), wis-tasks, futex, uring, sandbox, rseq-inc,
#                        cyclictest and schbench (hours: meant for a machine kind's first day;
#                        with CROSSCHECK_RECORD and -c it goes on across sessions)
#
# CROSSCHECK_RECORD=FILE appends each check's summary to FILE as a
# tab-separated line as soon as the check ends (a header first when FILE is
# new): the date, the machine kind, kernel, osbench's version, the check, the
# anchor, the unit, the rounds, each side's median and CV, the ratio with its
# interval, the fastest-to-fastest ratio, the verdict and the check's seconds.
# docs/crosscheck-records.tsv keeps the rows recorded so far, and
# scripts/crosscheck-kinds.py sets them out with a column per machine kind.
# -c goes on with an interrupted run: it skips every check FILE already holds
# a measurement of on this machine kind (vendor and model; any build), so
# `every` (hours) can span sessions; without -c every check runs again.
# scripts/build-anchors.sh DIR builds lmbench, will-it-scale, schbench and
# librseq from their checkouts in DIR and prints the variables below for them.
# CPU (default 0) is where `pipe` and `ctx` run; OSBENCH is the binary
# (default target/release/osbench); LMBENCH the directory of lmbench's
# binaries (default /tmp/anchor-lmbench/bin: intel/lmbench built outside the
# repository, see docs/crosscheck.md); WIS the directory of will-it-scale's
# (default /tmp/anchor-wis: antonblanchard/will-it-scale built there with
# `make`, libhwloc-dev installed); LEBENCH the directory holding LEBench's
# OS_Eval.c (default /tmp/anchor-lebench/TEST_DIR), which a small driver made
# here includes unchanged to run one of its tests; SCHBENCH the schbench
# binary (default /tmp/anchor-schbench/schbench: masoncl/schbench cloned to
# /tmp/anchor-schbench and built there with `make`, gcc and libc only);
# LIBRSEQ a librseq build tree (default /tmp/anchor-librseq: compudj/librseq
# cloned there, `./bootstrap && ./configure && make`). TIME_WAIT_WAIT (90)
# bounds the seconds each side of `connect` waits for TIME_WAIT to drain.
# osbench runs with its defaults (11 samples;
# for messaging one sample is one whole hackbench run; the perf counting pass
# comes after the timed samples), and never stores its runs.
set -euo pipefail
rounds=7
anchor_runs=${ANCHOR_RUNS:-11}
lat_mem_rd_runs=${LAT_MEM_RD_RUNS:-15}
lmbench_draws=${LMBENCH_DRAWS:-8}
lat_mmap_draws=${LAT_MMAP_DRAWS:-24}
continue_run=
while getopts r:c opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    c) continue_run=yes ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
# The usage: this header from the synopsis to the first command.
[ $# -gt 0 ] || { awk 'NR >= 18 && /^set -euo/ { exit } NR >= 18' "$0" >&2; exit 2; }
lmb=${LMBENCH:-/tmp/anchor-lmbench/bin}
cpu=${CPU:-0}
bin=${OSBENCH:-target/release/osbench}
[ -x "$bin" ] || { echo "$bin not found: cargo build --release" >&2; exit 2; }
record=${CROSSCHECK_RECORD:-}
[ -z "$continue_run" ] || [ -n "$record" ] || { echo "-c goes on from CROSSCHECK_RECORD: set it to the file of the run to continue" >&2; exit 2; }
# An anchor (or a tool it needs) that is missing exits with 3, which the
# run records as the check being unavailable and goes on; 2 is a usage error.
need() { command -v "$1" >/dev/null || { echo "$1 not found: apt-get install -y $2" >&2; exit 3; }; }
# `perf bench COLLECTION BENCH` exists in the perf on PATH (its list pads the
# names to 14 columns: a longer one starts the line), or exit 3 naming the
# version wanted. grep reads the whole list: perf dies of SIGPIPE otherwise.
need_perf_bench() {
    need perf linux-perf
    perf bench "$1" 2>&1 | grep -E "^ *$2:" >/dev/null ||
        { echo "perf bench $1 $2 not found in $(perf version): put perf $3 or later first on PATH" >&2; exit 3; }
}
# The perf on PATH was built with BPF skeletons, or exit 3: without them
# `perf bench uprobe empty` attaches no program and times the baseline
# again (Debian's and bookworm-backports' perf are built so; until
# 7 December the uprobe row compared osbench with that).
need_perf_bpf_skeletons() {
    perf version --build-options 2>/dev/null | grep -E 'bpf_skeletons: +\[ on' >/dev/null ||
        { echo "$(perf version) was built without BPF skeletons: its uprobe benchmarks attach nothing; build perf with BUILD_BPF_SKEL=1 (scripts/build-anchors.sh does)" >&2; exit 3; }
}

# The spread of hackbench option combinations: groups, fds, loops, datasize,
# both transports, both modes.
spread_checks=(
    messaging:groups=1
    messaging:groups=4,fds=5,loops=500
    messaging:groups=10,datasize=1000
    messaging:groups=10,datasize=16,transport=pipe
    messaging:groups=20,transport=pipe,mode=threads
    messaging:groups=5,fds=40,mode=threads
    messaging:groups=2,loops=1000,datasize=512,transport=pipe
    messaging:groups=10,fds=10,loops=300,mode=threads
    messaging:groups=3,datasize=4096,transport=pipe,mode=threads
)
table_checks=(
    messaging:groups=10
    messaging:groups=10,mode=threads
    messaging:groups=10,transport=pipe
    messaging:groups=50
    pipe
    syscall
    ctx
)
vm_checks=(sig-install sig-catch sig-prot sig-prot-raw pagefault pagefault:unmap lat_mmap:128 lat_mmap:2048)
wis_checks=(page-fault1 tlb-flush2)
wis_tasks_checks=()
for t in getppid1 page_fault1 futex2 poll1 context_switch1; do
    wis_tasks_checks+=("wis-$t:1" "wis-$t:2")
done
# The fs rows at lat_fs's files a pass at its 50 ms interval (20,000 of 0 KiB,
# 8,000 creates and 13,000 deletes of 10 KiB on the development VM's tmpfs;
# osbench's default is 100).
io_checks=(select-file select-tcp connect fs-create-0k:files=20000 fs-delete-0k:files=20000
    fs-create-10k:files=8000 fs-delete-10k:files=13000
    bw-pipe bw-unix bw-tcp bw-file-rd bw-file-rd:open2close bw-mmap-rd bw-mmap-rd:open2close)
# The I/O rows as the machine-kind table holds them: the stream rows placed alike.
io_placed_checks=()
for c in "${io_checks[@]}"; do
    case $c in
    bw-pipe | bw-unix | bw-tcp) io_placed_checks+=("$c:same") ;;
    *) io_placed_checks+=("$c") ;;
    esac
done
mem_checks=(bw-mem:rd:256m bw-mem:wr:256m bw-mem:rdwr:256m bw-mem:frd:256m bw-mem:fwr:256m
    bw-mem:bzero:256m bw-mem:cp:128m bw-mem:fcp:128m bw-mem:bcopy:128m
    lat-mem-rd:1:128 lat-mem-rd:128:128 lat-mem-rd:262144:128 lat-mem-rd:262144:16:random)
lebench_checks=(lebench-select:10 lebench-poll:10 lebench-epoll:10
    lebench-select:1000 lebench-poll:1000 lebench-epoll:1000
    lebench-fresh-select:10 lebench-fresh-poll:10 lebench-fresh-epoll:10
    lebench-fresh-select:1000 lebench-fresh-poll:1000 lebench-fresh-epoll:1000 lebench-read)
futex_checks=(futex-hash futex-lock-pi futex-wake futex-wake-parallel futex-requeue)
uring_checks=(fio-uring:1 fio-uring:32 fio-psync)
sandbox_checks=(seccomp:100 seccomp:1000 seccomp-notify uprobe uprobe-cpu)
cyclictest_checks=(cyclictest-load cyclictest-load-p99)
schbench_checks=(schbench-wakeup-p50 schbench-wakeup-p99 schbench-request-p50 schbench-request-p99
    schbench-rps schbench-request-p99:500 schbench-rps:500)
checks=()
for c in "$@"; do
    case $c in
    table) checks+=("${table_checks[@]}") ;;
    vm) checks+=("${vm_checks[@]}") ;;
    wis) checks+=("${wis_checks[@]}") ;;
    wis-tasks) checks+=("${wis_tasks_checks[@]}") ;;
    io) checks+=("${io_checks[@]}") ;;
    mem) checks+=("${mem_checks[@]}") ;;
    lebench) checks+=("${lebench_checks[@]}") ;;
    spread) checks+=("${spread_checks[@]}") ;;
    futex) checks+=("${futex_checks[@]}") ;;
    uring) checks+=("${uring_checks[@]}") ;;
    sandbox) checks+=("${sandbox_checks[@]}") ;;
    cyclictest) checks+=("${cyclictest_checks[@]}") ;;
    schbench) checks+=("${schbench_checks[@]}") ;;
    every) checks+=("${table_checks[@]}" messaging:groups=5,transport=pipe,mode=threads "${vm_checks[@]}"
        lat_mmap:256 fork "${mem_checks[@]}" "${io_placed_checks[@]}" "${wis_tasks_checks[@]}" "${futex_checks[@]}"
        "${uring_checks[@]}" "${sandbox_checks[@]}" rseq-inc "${cyclictest_checks[@]}" "${schbench_checks[@]}") ;;
    *) checks+=("$c") ;;
    esac
done

# Waits until other tasks use under 10 % of the CPUs over one second (at most
# QUIET_TRIES tries, default 60) and prints the busy percentage of the last second.
quiet() {
    local busy=100 _ a b c d e f g h s1 i1
    for ((try = 0; try < ${QUIET_TRIES:-60}; try++)); do
        read -r _ a b c d e f g h _ </proc/stat
        s1=$((a + b + c + d + e + f + g + h)) i1=$((d + e))
        sleep 1
        read -r _ a b c d e f g h _ </proc/stat
        busy=$((100 - 100 * (d + e - i1) / (a + b + c + d + e + f + g + h - s1)))
        [ "$busy" -lt 10 ] && break
    done
    echo "$busy"
}

# memlat's figure beside lat_mem_rd's fastest run of one buffer: with one
# buffer (the document's buffers_walked) its fastest sample, with several
# its median over them; LAT_MEM_RD_STAT=min or median forces one.
memlat_of() { python3 -c 'import json, os, sys
s = next(s for s in json.load(sys.stdin)["series"] if s["bench"] == sys.argv[1])
stat = os.environ.get("LAT_MEM_RD_STAT") or ("min" if s["params"]["buffers_walked"] == 1 else "median")
print(s["summary"][stat])' "$1"; }
# Runs an osbench command with its result document (JSON) as the only output.
ours_document() { "$@" --json "$tmp/doc.json" >/dev/null && cat "$tmp/doc.json"; }
# The first field 3 of the results line of BENCH (the median).
median_of() { awk -v b="$1" '$1 == b { print $3; exit }'; }
# The mean of a latency distribution's row (bench case min p50 p90 p99 p99.9 max mean).
mean_of() { awk -v b="$1" '$1 == b { print $9; exit }'; }
# The p99 of that row.
p99_of() { awk -v b="$1" '$1 == b { print $6; exit }'; }

# cyclictest ARGS… with `hackbench -g G` running beside it (started 1 s
# before, killed with its tasks after); prints cyclictest's output.
# hackbench runs in this script's session, as osbench's loads run in
# osbench's: with sched_autogroup_enabled=1 a session is a scheduling group,
# and hackbench started by setsid (its own group) left cyclictest half the
# CPU: Avg 84–130 µs against 500 µs in one session (6 Dec, Intel).
cyclictest_under_hackbench() {
    local groups=$1 hb
    shift
    hackbench -g "$groups" -l 1000000000 >/dev/null 2>&1 &
    hb=$!
    sleep 1
    cyclictest "$@" || true
    kill -TERM "$hb" 2>/dev/null || true  # hackbench's parent takes its tasks down
    wait "$hb" 2>/dev/null || true
}
# cyclictest's Avg (µs) of its one thread: the -q summary line "T: 0 … Avg: N …",
# or, with -h, its "# Avg Latencies: N" line.
cyclictest_avg() {
    awk '/^# Avg Latencies:/ { v = $4 + 0; next } { for (i = 1; i < NF; i++) if ($i == "Avg:") v = $(i + 1) }
         END { print v }'
}
# The p99 (µs) of cyclictest's -h histogram ("LATENCY COUNT" lines; the overflows count above).
cyclictest_p99() {
    awk '/^[0-9]+[ \t]+[0-9]+[ \t]*$/ { n[$1 + 0] += $2; total += $2; if ($1 + 0 > top) top = $1 + 0 }
         /Histogram Overflows:/ { total += $NF }
         END { for (l = 0; l <= top; l++) { s += n[l]; if (s >= 0.99 * total) { print l; exit } }
               print "overflow" }'
}

# An lmbench binary, or exit naming where it was looked for.
lmbench() {
    [ -x "$lmb/$1" ] || { echo "$lmb/$1 not found: build intel/lmbench's src and set LMBENCH" >&2; exit 3; }
    echo "$lmb/$1"
}
# COMMAND… (an lmbench program) at lmbench's compiled interval, 50 ms
# (REAL_SHORT), and without its loop and timer calibration: where its timing
# test fails, as on the development VM's Intel days (`enough` prints
# 1000000), lmbench times 1 s intervals, and two rows change with the
# interval's length: lat_connect's 60,000 connections to one port outrun the
# ephemeral ports (it then reads the TIME_WAIT reuse rule, 65 µs), and
# lat_fs's 400,000 files a pass are another dcache than 50 ms's 20,000.
at_lmbench_interval() { ENOUGH=50000 LOOP_O=0 TIMING_O=0 "$@"; }
# The CPU osbench runs a one-task case on (the last): anchors compared with
# such a case run there.
osbench_cpu=$(($(nproc) - 1))
# N processes of COMMAND…, each at lmbench's interval on osbench's CPU,
# one figure a line: field FIELD of each one's last line (0 or less counts
# from the end: -1 is the next to last). For an anchor whose process draws
# one state (its buffer's pages, its order, its place), summed up by
# mean_in or median_in (`each_process N FIELD COMMAND…`).
each_process() {
    local n=$1 field=$2 i
    shift 2
    for ((i = 0; i < n; i++)); do
        at_lmbench_interval taskset -c "$osbench_cpu" "$@" 2>&1 |
            awk -v f="$field" '{ v = (f > 0) ? $f : $(NF + f) } END { print v }'
    done
}

# A will-it-scale binary, or exit naming where it was looked for.
wis() {
    local dir=${WIS:-/tmp/anchor-wis}
    [ -x "$dir/$1" ] || { echo "$dir/$1 not found: build antonblanchard/will-it-scale there (make) and set WIS" >&2; exit 3; }
    echo "$dir/$1"
}

# ns per increment of librseq's param_test_benchmark -T i, one thread: a
# run of 10^8 repetitions timed whole, less one of none (start-up, exit).
rseq_inc_ns() {
    local dir=${LIBRSEQ:-/tmp/anchor-librseq}
    local b=$dir/tests/.libs/param_test_benchmark
    [ -x "$b" ] || { echo "$b not found: git clone https://github.com/compudj/librseq $dir && (cd $dir && ./bootstrap && ./configure && make), or set LIBRSEQ" >&2; exit 3; }
    local t0 t1 t2
    t0=$(date +%s%N)
    LD_LIBRARY_PATH=$dir/src/.libs "$b" -T i -t 1 -r 0
    t1=$(date +%s%N)
    LD_LIBRARY_PATH=$dir/src/.libs "$b" -T i -t 1 -r 100000000
    t2=$(date +%s%N)
    awk -v a="$((t1 - t0))" -v b="$((t2 - t1))" 'BEGIN { printf "%.4g\n", (b - a) / 1e8 }'
}

# ns per loop of a will-it-scale run of one task: 10^9 ÷ its average loops per second.
wis_ns() { "$@" | awk -F: '/^average/ { printf "%.4g\n", 1e9 / $2 }'; }

# The schbench binary, or exit naming where it was looked for.
schbench_bin() {
    local b=${SCHBENCH:-/tmp/anchor-schbench/schbench}
    [ -x "$b" ] || { echo "$b not found: git clone https://github.com/masoncl/schbench /tmp/anchor-schbench && make -C /tmp/anchor-schbench, or set SCHBENCH" >&2; exit 3; }
    echo "$b"
}
# One figure of schbench's output (stderr): ROW (50.0th, 99.0th) of its
# SECTION (Wakeup, Request) in the last block, or `rps` ("average rps: N").
schbench_figure() {
    awk -v sec="$1" -v row="$2:" '
        /^Wakeup Latencies/ { in_sec = (sec == "Wakeup") }
        /^Request Latencies/ { in_sec = (sec == "Request") }
        /^RPS percentiles/ { in_sec = 0 }
        in_sec { for (i = 1; i < NF; i++) if ($i == row) v = $(i + 1) }
        sec == "rps" && /^average rps:/ { v = $3 }
        END { print v }'
}
# The output (stdout) of COMMAND… in round $i under KEY: the first row of
# a round that asks for KEY runs it, the others read what it printed. Rows
# whose figures come from one run (schbench's statistics at one rate,
# cyclictest's mean and p99 at one load) thus share each alternation's
# runs, as the tool's own output is one run's; each row's seconds in the
# record count only the runs it started.
shared_round() {
    local f="$tmp/round-$1.$i"
    shift
    if [ ! -s "$f" ]; then
        "$@" >"$f.part"
        mv "$f.part" "$f"
    fi
    cat "$f"
}
# Round $i's schbench run SIDE (ours, or anchor.K for the anchor's K-th) at RATE.
schbench_round() {
    if [ "$1" = ours ]; then shared_round "schbench-ours.$2" "${ours_run[@]}"; else shared_round "schbench-$1.$2" schbench_both; fi
}
schbench_both() { "$sb" "${args[@]}" 2>&1; }
# The row's figure of a side's schbench-format output (osbench's block holds
# the medians of its runs, its requests/s included).
schbench_round_figure() { schbench_figure "$sec" "$row"; }
# The median of the numbers on stdin.
median_in() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mean_in() { awk '{ s += $1 } END { printf "%.6g\n", s / NR }'; }
# Per-task ns per loop of a will-it-scale run of N tasks: 10^9 × N ÷ its
# average loops per second of all tasks together (`wis_task_ns N BINARY ARGS…`).
wis_task_ns() {
    local n=$1
    shift
    "$@" | awk -F: -v n="$n" '/^average/ { printf "%.4g\n", 1e9 * n / $2 }'
}

# The number before the last word of lmbench's output ("… 7.75 microseconds", "… 2516.82 MB/sec").
last_figure() { awk 'NF > 1 { v = $(NF - 1) } END { print v }'; }
# The kernel's count of connections dropped because a listen queue was full.
listen_overflows() {
    awk '$1 == "TcpExt:" { if (!names) { for (i = 2; i <= NF; i++) col[$i] = i; names = 1 } else print $col["ListenOverflows"] }' /proc/net/netstat
}
# Runs COMMAND… once the machine's TCP sockets in TIME_WAIT (state 06) are
# down to 100, waiting at most TIME_WAIT_WAIT seconds (90; they last 60 s):
# connect()'s search for a free port walks them, so each side of the
# connect check starts alike.
time_wait_drained() {
    local waited=0
    while [ "$(awk '$4 == "06"' /proc/net/tcp /proc/net/tcp6 2>/dev/null | wc -l)" -gt 100 ] &&
        [ $waited -lt "${TIME_WAIT_WAIT:-90}" ]; do
        sleep 2
        waited=$((waited + 2))
    done
    "$@"
}

# A library for LD_PRELOAD whose listen() asks for net.core.somaxconn's
# backlog whatever its caller asked (lat_connect's server asks for 100).
deep_listen() {
    if [ ! -f "$tmp/deep-listen/listen.so" ]; then
        mkdir -p "$tmp/deep-listen"
        cat >"$tmp/deep-listen/listen.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>
int listen(int fd, int backlog)
{
	int (*next)(int, int) = (int (*)(int, int))dlsym(RTLD_NEXT, "listen");
	(void)backlog;
	return next(fd, 1 << 30); /* the kernel caps it at net.core.somaxconn */
}
C
        gcc -O2 -shared -fPIC -o "$tmp/deep-listen/listen.so" "$tmp/deep-listen/listen.c" -ldl >&2
    fi
    echo "$tmp/deep-listen/listen.so"
}

# LEBench's tests run by a driver that includes its OS_Eval.c unchanged (its
# main renamed) and calls one_line_test on one test: `drv TEST N RUNS`.
lebench_driver() {
    local src=${LEBENCH:-/tmp/anchor-lebench/TEST_DIR}
    [ -f "$src/OS_Eval.c" ] || { echo "$src/OS_Eval.c not found: fetch LinuxPerfStudy/LEBench and set LEBENCH" >&2; exit 3; }
    if [ ! -x "$tmp/lebench/drv" ]; then
        mkdir -p "$tmp/lebench"
        cat >"$tmp/lebench/drv.c" <<'C'
#define main lebench_main
#include "OS_Eval.c"
#undef main
int main(int argc, char **argv)
{
	testInfo info = { atoi(argv[3]), argv[1] };
	void (*test)(struct timespec *) = !strcmp(argv[1], "select") ? select_test
		: !strcmp(argv[1], "poll") ? poll_test : !strcmp(argv[1], "epoll") ? epoll_test : read_test;
	isFirstIteration = true;
	if (test == read_test) {
		file_size = PAGE_SIZE * atoi(argv[2]);
		read_warmup();
	} else {
		fd_count = atoi(argv[2]);
	}
	one_line_test(stdout, NULL, test, &info);
	return 0;
}
C
        # LEBench's makefile: -pthread -O0.
        gcc -O0 -pthread -w -I"$src" -o "$tmp/lebench/drv" "$tmp/lebench/drv.c" >&2
    fi
    echo "$tmp/lebench/drv"
}
# LEBench's figure (seconds per call) of one run: its average, or LEBENCH_STAT=kbest.
lebench_figure() { awk -v want="${LEBENCH_STAT:-average}:" -F, '$1 ~ want { print $2 }'; }

# lmbench's 1 MiB file, written as osbench writes its own: in writes of
# KIB KiB (the case's chunk; a page for mapped reads). How a file was
# written sets its page cache's folio sizes: lmbench's bw_file_rd read a file
# of one 1 MiB write 5 % faster than one written by `head -c` (6 Dec, ext4).
file_as_osbench_writes() {
    dd if=/dev/zero of="$tmp/file-1m" bs="$1k" count=$((1024 / $1)) status=none
}

# lmbench's protection-fault loop alone (lat_sig prot before it subtracts
# its catch): a driver that includes lat_sig.c unchanged (its main
# renamed), runs benchmp over its do_prot on FILE and prints lmbench's line.
lat_sig_prot_driver() {
    local src=${LMBENCH_SRC:-$lmb/../src}
    [ -f "$src/lat_sig.c" ] || { echo "$src/lat_sig.c not found: set LMBENCH_SRC to intel/lmbench's src" >&2; exit 3; }
    if [ ! -x "$tmp/lsp/drv" ]; then
        mkdir -p "$tmp/lsp"
        cat >"$tmp/lsp/drv.c" <<'C'
#define main lat_sig_main
#include "lat_sig.c"
#undef main
int main(int argc, char **argv)
{
	struct _state state;
	state.fname = argv[1];
	benchmp(initialize, do_prot, NULL, 0, 1, 0, TRIES, &state);
	micro("Protection fault", get_n());
	return 0;
}
C
        gcc -O2 -w -DHAVE_uint64_t=1 -I"$src" -I/usr/include/tirpc -o "$tmp/lsp/drv" "$tmp/lsp/drv.c" \
            "$src"/lib_timing.c "$src"/lib_mem.c "$src"/lib_stats.c "$src"/lib_debug.c "$src"/getopt.c \
            "$src"/lib_sched.c -lm -ltirpc >&2
    fi
    echo "$tmp/lsp/drv"
}

# lmbench's lat_mem_rd at one size: a driver that includes lat_mem_rd.c
# unchanged (its main renamed) and calls its loads(): `drv [-t] BYTES STRIDE`.
lat_mem_rd_driver() {
    local src=${LMBENCH_SRC:-$lmb/../src}
    [ -f "$src/lat_mem_rd.c" ] || { echo "$src/lat_mem_rd.c not found: set LMBENCH_SRC to intel/lmbench's src" >&2; exit 3; }
    if [ ! -x "$tmp/lmr/drv" ]; then
        mkdir -p "$tmp/lmr"
        cat >"$tmp/lmr/drv.c" <<'C'
#define main lat_mem_rd_main
#include "lat_mem_rd.c"
#undef main
int main(int argc, char **argv)
{
	int random = argc > 3 && !strcmp(argv[1], "-t");
	size_t len = strtoull(argv[1 + random], NULL, 10);
	size_t stride = strtoull(argv[2 + random], NULL, 10);
	if (random)
		fpInit = thrash_initialize;
	loads(len, len, stride, 1, 0, TRIES);
	return 0;
}
C
        gcc -O2 -w -DHAVE_uint64_t=1 -I"$src" -I/usr/include/tirpc -o "$tmp/lmr/drv" "$tmp/lmr/drv.c" \
            "$src"/lib_timing.c "$src"/lib_mem.c "$src"/lib_stats.c "$src"/lib_debug.c "$src"/getopt.c \
            "$src"/lib_sched.c -lm -ltirpc >&2
    fi
    echo "$tmp/lmr/drv"
}

# The scratch file lat_pagefault and lat_mmap work on: PAGES pages (default
# 2048: lmbench's $FILE of $MB, 8 MiB), written as osbench writes its own
# (writes of up to 1 MiB, then fsync). osbench maps a file of the mapping's
# size; lmbench's script maps prefixes of its 8 MiB file, which is slower.
# With `fresh`, the file is written anew, as osbench writes its own at the
# start of every run (DAMON's pageout, where it runs, evicts a file's
# pages within a minute and they are read back in smaller folios:
# docs/crosscheck.md, thirteenth session).
scratch() {
    local pages=${1:-2048} f
    f="$tmp/scratch-$pages"
    [ "${2:-}" = fresh ] && rm -f "$f"
    [ -s "$f" ] || {
        local bytes=$((pages * 4096))
        local chunk=$((bytes < 1048576 ? bytes : 1048576))
        dd if=/dev/urandom of="$f" bs="$chunk" count=$((bytes / chunk)) conv=fsync status=none
    }
    echo "$f"
}
# The signal medians of one osbench run, as a results line for BENCH `signal`:
# lmbench's catch (catch − send) or prot (prot − catch + send).
signal_derived() {
    "$bin" run signal -q --no-store | awk -v want="$1" '
        $1 == "signal" && !($2 in m) { m[$2] = $3 }  # the results table, not the counters
        END { v = (want == "catch") ? m["catch"] - m["send"] : m["prot"] - m["catch"] + m["send"]
              printf "signal %s %.6g\n", want, v }'
}

# The uprobe's cost from one osbench run, as a results line for BENCH
# `sandbox`: the median of null+uprobe − the median of null, in µs.
uprobe_derived() {
    "$bin" run sandbox:null sandbox:null+uprobe -q --no-store | awk '
        $1 == "sandbox" && !($2 in m) { m[$2] = $3 }  # the results table, not the counters
        END { printf "sandbox uprobe %.6g\n", (m["null+uprobe"] - m["null"]) / 1000 }'
}
# perf bench uprobe BENCH -l LOOPS: its usecs/op.
perf_uprobe_usecs() { LC_ALL=C perf bench uprobe "$1" -l "$2" | awk '/usecs\/op/ { print $1 }'; }
# The task-clock (ms) perf stat counts over perf bench uprobe BENCH -l LOOPS.
perf_uprobe_task_ms() {
    LC_ALL=C perf stat -x, -e task-clock perf bench uprobe "$1" -l "$2" 2>&1 >/dev/null |
        awk -F, '$3 == "task-clock" { print $1 }'
}

# Sets ours/anchor (commands), unit and anchor_name for one check; `after`
# runs once the check's rounds are done (stops an anchor's server).
define() {
    after() { :; }
    case $1 in
    select-file | select-tcp)
        on=${1#select-}
        sel=$(lmbench lat_select)
        # lat_select -n 100 passes 100 as select's highest descriptor + 1,
        # and its descriptors start above its own open ones: it watches 90
        # (tcp) or 91 (file) of them (strace, docs/crosscheck.md), so osbench
        # watches as many.
        watched=90
        [ "$on" = file ] && watched=91
        ours=("$bin" run "poll:call=select,on=$on,fds=$watched" -q --no-store)
        bench=poll unit=µs scale=0.001 anchor_name="lat_select -n 100 $on (watches $watched)"
        # lat_select file makes its scratch file in the current directory.
        anchor() { (cd "$tmp" && "$sel" -n 100 "$on" 2>&1 | last_figure); } ;;
    connect)
        lc=$(lmbench lat_connect)
        # osbench's default placement: its client on the first CPU, its server on the next.
        LD_PRELOAD=$(deep_listen) taskset -c "$(($(nproc) > 1))" "$lc" -s
        after() { "$lc" -S localhost; }
        # 50 ms samples, lmbench's interval: connect()'s port search walks the
        # run's own TIME_WAIT sockets, so a figure depends on how far into its
        # run a sample is (docs/crosscheck.md, connect).
        ours=(time_wait_drained "$bin" run connect:kind=tcp --sample-time 50 -q --no-store)
        bench=connect unit=µs scale=1
        anchor_name="ENOUGH=50000 taskset -c 0 lat_connect localhost (server on CPU 1, backlog somaxconn)"
        # At lmbench's own interval (at_lmbench_interval), and bounded all
        # the same: an overflow costs a 1 s retransmission.
        anchor() {
            local before out
            time_wait_drained true
            before=$(listen_overflows)
            if ! out=$(at_lmbench_interval timeout -k 10 120 taskset -c 0 "$lc" localhost 2>&1); then
                echo "lat_connect localhost did not finish in 120 s: $(($(listen_overflows) - before))" \
                    "listen-queue overflows (docs/crosscheck.md, connect)" >&2
                return 1
            fi
            last_figure <<<"$out"
        } ;;
    fs-create-* | fs-delete-*)
        # An optional :files=N gives osbench lmbench's files per pass.
        spec=${1%%:*} extra=
        [ "$spec" = "$1" ] || extra=,${1#*:}
        phase=${spec:3:6} kib=${spec##*-}
        kib=${kib%k}
        lf=$(lmbench lat_fs)
        mkdir -p "$fs_dir"
        ours=(env TMPDIR="$fs_dir" "$bin" run "fs:phase=$phase,kib=$kib$extra" -q --no-store)
        bench=fs unit=µs scale=1
        # lat_fs prints SIZE, files, creates/s, deletes/s; -s 0 means every size.
        column=3
        [ "$phase" = delete ] && column=4
        fs_type=$(stat -f -c %T "$fs_dir")
        # osbench's create op says when its directory is on an ext4 without a journal (fs.rs).
        if TMPDIR=$fs_dir "$bin" list fs 2>/dev/null | grep -q "ext4 without a journal"; then
            echo "warning: $fs_dir is on an ext4 without a journal, which skips inodes deleted in the last 60-300 s:" \
                "each side's creates pay for the other's deletes; set FS_DIR to a tmpfs or a journaled filesystem" >&2
            fs_type="ext4 without a journal"
        fi
        # On osbench's CPU: unpinned, the kernel's RCU frees of the unlinked
        # inodes run partly elsewhere and a delete reads some 10 % faster
        # (docs/crosscheck.md, fs). At lmbench's 11 repetitions (-N 1 times a
        # pass after a smaller one, whose deferred frees left less for it:
        # 10 KiB creates 0.9 x of -N 11's).
        lat_fs() { mkdir -p "$fs_dir/lat_fs" && at_lmbench_interval taskset -c "$osbench_cpu" "$lf" "$@" "$fs_dir/lat_fs" 2>&1; }
        if [ "$kib" = 0 ]; then
            anchor_name="ENOUGH=50000 taskset -c $osbench_cpu lat_fs DIR (0k line), DIR on $fs_type"
            anchor() { lat_fs | awk -v c=$column '$1 == "0k" { printf "%.4g\n", 1e6 / $c }'; }
        else
            anchor_name="ENOUGH=50000 taskset -c $osbench_cpu lat_fs -s ${kib}k DIR, DIR on $fs_type"
            anchor() { lat_fs -s "${kib}k" | awk -v c=$column 'NF >= 4 { printf "%.4g\n", 1e6 / $c }'; }
        fi ;;
    bw-pipe:same | bw-unix:same)
        kind=${1#bw-} kind=${kind%:*}
        bw=$(lmbench "bw_$kind")
        ours=("$bin" run "stream:kind=$kind" --pin same -q --no-store)
        bench=stream unit=MB/s scale=1 anchor_name="taskset -c 0 bw_$kind"
        anchor() { taskset -c 0 "$bw" 2>&1 | last_figure; } ;;
    bw-pipe:spread | bw-unix:spread)
        kind=${1#bw-} kind=${kind%:*}
        bw=${LMBENCH_SCHED_BIN:-/tmp/anchor-lmbench/bin-sched}/bw_$kind
        [ -x "$bw" ] || { echo "$bw not found: build lmbench's bw_$kind with -D_GNU_SOURCE -DHAVE_SCHED_SETAFFINITY=1 and set LMBENCH_SCHED_BIN" >&2; exit 3; }
        ours=("$bin" run "stream:kind=$kind" --pin spread -q --no-store)
        bench=stream unit=MB/s scale=1 anchor_name="LMBENCH_SCHED=UNIQUE bw_$kind"
        anchor() { LMBENCH_SCHED=UNIQUE "$bw" 2>&1 | last_figure; } ;;
    bw-pipe | bw-unix)
        kind=${1#bw-}
        bw=$(lmbench "bw_$kind")
        ours=("$bin" run "stream:kind=$kind" -q --no-store)
        bench=stream unit=MB/s scale=1 anchor_name="bw_$kind"
        anchor() { "$bw" 2>&1 | last_figure; } ;;
    bw-tcp | bw-tcp:same | bw-tcp:spread)
        bt=$(lmbench bw_tcp)
        place=${1#bw-tcp} place=${place#:}
        server=() client=() pin=()
        case $place in
        same) server=(taskset -c 0) client=(taskset -c 0) pin=(--pin same) ;;
        spread) server=(taskset -c 1) client=(taskset -c 0) pin=(--pin spread) ;;
        esac
        "${server[@]}" "$bt" -s
        after() { "$bt" -S localhost; }
        ours=("$bin" run stream:kind=tcp "${pin[@]}" -q --no-store)
        bench=stream unit=MB/s scale=1 anchor_name="${client[*]}${client:+ }bw_tcp localhost${place:+ (server ${server[*]})}"
        anchor() { "${client[@]}" "$bt" localhost 2>&1 | last_figure; } ;;
    bw-file-rd)
        br=$(lmbench bw_file_rd)
        file_as_osbench_writes 64
        ours=("$bin" run file:io=read,pages=256,chunk=16,sum=yes -q --no-store)
        bench=file unit=MB/s scale=1 anchor_name="bw_file_rd 1m io_only"
        anchor() { "$br" 1m io_only "$tmp/file-1m" 2>&1 | awk '{ v = $NF } END { print v }'; } ;;
    bw-file-rd:open2close)
        br=$(lmbench bw_file_rd)
        file_as_osbench_writes 64
        ours=("$bin" run file:io=read,pages=256,chunk=16,sum=yes,open2close=yes -q --no-store)
        bench=file unit=MB/s scale=1 anchor_name="bw_file_rd 1m open2close"
        anchor() { "$br" 1m open2close "$tmp/file-1m" 2>&1 | awk '{ v = $NF } END { print v }'; } ;;
    bw-mmap-rd | bw-mmap-rd:open2close)
        how=mmap_only extra=
        [ "$1" = bw-mmap-rd ] || how=open2close extra=,open2close=yes
        bm=$(lmbench bw_mmap_rd)
        file_as_osbench_writes 4
        ours=("$bin" run "file:io=mmap,pages=256$extra" -q --no-store)
        bench=file unit=MB/s scale=1 anchor_name="bw_mmap_rd 1m $how"
        anchor() { LOOP_O=0 TIMING_O=0 "$bm" 1m "$how" "$tmp/file-1m" 2>&1 | awk '{ v = $NF } END { print v }'; } ;;
    bw-mem:*)
        op=${1#bw-mem:} size=${op#*:} op=${op%%:*}
        kib=$(awk -v s="$size" 'BEGIN { n = s + 0; u = substr(s, length(s)); print (u == "m") ? n * 1024 : (u == "k") ? n : n / 1024 }')
        bw=$(lmbench bw_mem)
        ours=("$bin" run "membw:op=$op,kib=$kib" -q --no-store)
        bench=membw unit=MB/s scale=1 anchor_name="bw_mem $size $op"
        anchor() { LOOP_O=0 TIMING_O=0 "$bw" "$size" "$op" 2>&1 | awk '{ v = $NF } END { print v }'; } ;;
    lat-mem-rd:*)
        spec=${1#lat-mem-rd:} kib=${spec%%:*} rest=${spec#*:}
        stride=${rest%%:*} t=() pattern=stride
        [ "${rest#*:}" = random ] && t=(-t) pattern=random
        drv=$(lat_mem_rd_driver)
        ours=(ours_document "$bin" run "memlat:kib=$kib,stride=$stride,pattern=$pattern" -q --no-store)
        figure=memlat_of
        # One process is one draw of the pages under its buffer (at 128 KiB
        # on Intel 1.6-2.2 ns from process to process): where osbench walks
        # several buffers (below 64 MiB, memlat's BUFFERS_MAX_BYTES: its
        # document's buffers_walked, which memlat_of reads, comes only after
        # the first round's anchor), the median of lat_mem_rd_runs
        # processes, else one (a random walk of 256 MiB takes 30 s a
        # process); each at lmbench's compiled 50 ms interval (at the 1 s it
        # falls back to here, a process takes 18 s at 128 KiB).
        processes=$lat_mem_rd_runs
        [ "$kib" -lt 65536 ] || processes=1
        bench=memlat unit=ns scale=1
        anchor_name="lat_mem_rd ${t[*]}${t:+ }at $kib KiB, stride $stride (its loads())"
        [ "$processes" = 1 ] || anchor_name+=", the median of $processes processes"
        anchor() { each_process "$processes" 2 "$drv" "${t[@]}" $((kib * 1024)) "$stride" | median_in; } ;;
    lebench-select:* | lebench-poll:* | lebench-epoll:* | lebench-fresh-*)
        call=${1#lebench-} fds=${1##*:}
        call=${call%:*}
        set=kept
        if [ "${call#fresh-}" != "$call" ]; then
            call=${call#fresh-} set=fresh figure=mean_of
        fi
        drv=$(lebench_driver)
        # LEBench runs 100,000 calls over 10 sockets and 10,000 over 1,000; a tenth here.
        runs=$((fds > 100 ? 1000 : 10000))
        ocall=$call
        [ "$call" = epoll ] && ocall=epoll_wait
        ours=("$bin" run "poll:call=$ocall,on=socket,fds=$fds,set=$set" -q --no-store)
        bench=poll unit=ns scale=1 anchor_name="LEBench $call ($fds sockets, ${LEBENCH_STAT:-average} of $runs)"
        anchor() { "$drv" "$call" "$fds" "$runs" | lebench_figure | awk '{ printf "%.4g\n", $1 * 1e9 }'; } ;;
    lebench-read)
        drv=$(lebench_driver)
        ours=("$bin" run file:io=read,pages=1000 -q --no-store)
        bench=file unit=MB/s scale=1 anchor_name="LEBench big read (1,000 pages, ${LEBENCH_STAT:-average} of 1000)"
        # read_warmup writes test_file.txt in the current directory.
        anchor() { (cd "$tmp" && "$drv" read 1000 1000 | lebench_figure | awk '{ printf "%.5g\n", 4.096 / $1 }'); } ;;
    seccomp:*)
        need perf linux-perf
        insns=${1#seccomp:}
        ours=("$bin" run "sandbox:null+bpf$insns" -q --no-store)
        bench=sandbox unit=ns scale=1 anchor_name="osbench sandbox --seccomp $insns -- perf bench syscall basic"
        anchor() { "$bin" sandbox --seccomp "$insns" -- perf bench syscall basic | awk '/usecs\/op/ { printf "%.2f\n", $1 * 1000 }'; } ;;
    seccomp-notify)
        need_perf_bench sched seccomp-notify 6.3
        # Both sides on one CPU: unpinned, each flips between a caller and
        # supervisor sharing a CPU (2 µs) and a round trip across CPUs (8-60 µs).
        ours=(taskset -c "$cpu" "$bin" run sandbox:null+notify --pin same -q --no-store)
        bench=sandbox unit=µs scale=0.001 anchor_name="taskset -c $cpu perf bench sched seccomp-notify -l 200000"
        anchor() { taskset -c "$cpu" perf bench sched seccomp-notify -l 200000 | awk '/usecs\/op/ { print $1 }'; } ;;
    uprobe | uprobe-cpu)
        need_perf_bench uprobe empty 6.7
        need_perf_bpf_skeletons
        ours=(uprobe_derived)
        bench=sandbox unit=µs scale=1
        if [ "$1" = uprobe ]; then
            anchor_name="perf bench uprobe empty − baseline, -l 10000 (usecs/op)"
            # Baseline first, as perf's `all` runs them.
            anchor() {
                local baseline
                baseline=$(perf_uprobe_usecs baseline 10000)
                awk -v e="$(perf_uprobe_usecs empty 10000)" -v b="$baseline" 'BEGIN { printf "%.6g\n", e - b }'
            }
        else
            anchor_name="perf stat task-clock of perf bench uprobe empty − baseline, per call from -l 1000 to 5000"
            # Per call between two loop counts: each program's set-up cancels.
            anchor() {
                local few=1000 many=5000 b1 b2 e1 e2
                b1=$(perf_uprobe_task_ms baseline $few) b2=$(perf_uprobe_task_ms baseline $many)
                e1=$(perf_uprobe_task_ms empty $few) e2=$(perf_uprobe_task_ms empty $many)
                awk -v b="$((many - few))" -v b1="$b1" -v b2="$b2" -v e1="$e1" -v e2="$e2" \
                    'BEGIN { printf "%.6g\n", ((e2 - e1) - (b2 - b1)) * 1000 / b }'
            }
        fi ;;
    syscall)
        need perf linux-perf
        ours=("$bin" run syscall:case=null -q --no-store)
        bench=syscall unit=ns anchor_name="perf bench syscall basic"
        anchor() { perf bench syscall basic | awk '/usecs\/op/ { printf "%.2f\n", $1 * 1000 }'; }
        scale=1 ;;
    pipe)
        need perf linux-perf
        ours=(taskset -c "$cpu" "$bin" run ipc:kind=pipe --pin same -q --no-store)
        bench=ipc unit=µs anchor_name="taskset -c $cpu perf bench sched pipe"
        anchor() { taskset -c "$cpu" perf bench sched pipe | awk '/usecs\/op/ { print $1 }'; }
        scale=1 ;;
    ctx)
        ours=(taskset -c "$cpu" "$bin" run ctx:procs=2,size=0 --pin same -q --no-store)
        bench=ctx unit=µs anchor_name="" scale=1
        anchor() { :; } ;;
    messaging:*)
        need hackbench rt-tests
        ours=("$bin" run "$1" -q --no-store)
        bench=messaging unit=s scale=1
        # osbench prints the equivalent hackbench command in front of its Time: line.
        anchor_name=$("$bin" run "$1" -q --no-store --no-perf --samples 1 --warmup 0 |
            sed -n 's/ *Time:.*//p')
        [ -n "$anchor_name" ] || { echo "no hackbench line for $1" >&2; exit 2; }
        # The median of anchor_runs hackbench runs (Time: S.mmm each).
        anchor() {
            for ((k = 0; k < anchor_runs; k++)); do $anchor_name; done |
                awk '/^Time:/ { print $2 }' | sort -g |
                awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
        }
        ;;
    sig-install)
        ours=("$bin" run signal:case=install -q --no-store)
        bench=signal unit=µs scale=1 anchor_name="lat_sig install"
        anchor() { "$(lmbench lat_sig)" install 2>&1 | awk '{ print $(NF - 1) }'; } ;;
    sig-catch)
        ours=(signal_derived catch)
        bench=signal unit=µs scale=1 anchor_name="lat_sig catch"
        anchor() { "$(lmbench lat_sig)" catch 2>&1 | awk '{ print $(NF - 1) }'; } ;;
    sig-prot)
        ours=(signal_derived prot)
        bench=signal unit=µs scale=1 anchor_name="lat_sig prot lat_sig"
        anchor() { "$(lmbench lat_sig)" prot "$(lmbench lat_sig)" 2>&1 | awk '{ print $(NF - 1) }'; } ;;
    sig-prot-raw)
        ours=("$bin" run signal:case=prot -q --no-store)
        bench=signal unit=µs scale=1 anchor_name="lat_sig.c's do_prot alone (a driver)"
        anchor() { "$(lat_sig_prot_driver)" "$(lmbench lat_sig)" 2>&1 | awk '{ print $(NF - 1) }'; } ;;
    pagefault | pagefault:unmap)
        unmap=untimed
        [ "$1" = pagefault:unmap ] && unmap=timed
        ours=("$bin" run "fault:case=file,pages=2048,unmap=$unmap" -q --no-store)
        bench=fault unit=µs scale=1
        anchor_name="ENOUGH=50000 taskset -c $osbench_cpu lat_pagefault FILE (8 MiB, written anew a round), the mean of $lmbench_draws processes"
        # Each process reads its pages in one random order, and on Linux
        # 6.18 an order costs one of two amounts (docs/crosscheck.md): the
        # mean of several processes, as osbench's sample averages its orders.
        anchor() { each_process "$lmbench_draws" -1 "$(lmbench lat_pagefault)" "$(scratch 2048 fresh)" | mean_in; } ;;
    lat_mmap:*)
        pages=${1#lat_mmap:}
        ours=("$bin" run "mmap:case=lat_mmap,pages=$pages" -q --no-store)
        bench=mmap unit=µs scale=1
        anchor_name="ENOUGH=50000 taskset -c $osbench_cpu lat_mmap $((pages * 4))k FILE (written anew a round), the mean of $lat_mmap_draws processes"
        # Under 2 MiB each process's mapping lands across a 2 MiB boundary
        # or inside one block, one of two costs (docs/crosscheck.md).
        anchor() { each_process "$lat_mmap_draws" 2 "$(lmbench lat_mmap)" "$((pages * 4))k" "$(scratch "$pages" fresh)" | mean_in; } ;;
    fork)
        # lmbench links lat_proc with libm alone. One linked with libtirpc
        # (its RPC library on today's glibc) maps krb5's libraries too, and
        # its forks took 182 µs against 100 (7 Dec, Intel): not lmbench's figure.
        if ldd "$(lmbench lat_proc)" | grep -q libtirpc; then
            echo "$(lmbench lat_proc) links libtirpc: rebuild it as lmbench does, its library an archive, -Wl,--as-needed (docs/crosscheck.md)" >&2
            exit 3
        fi
        ours=("$bin" run proc:case=fork -q --no-store)
        bench=proc unit=µs scale=1 anchor_name="lat_proc fork"
        # osbench's default placement: the last allowed CPU, for the forked child too.
        anchor() { LOOP_O=0 TIMING_O=0 taskset -c "$osbench_cpu" "$(lmbench lat_proc)" fork 2>&1 | last_figure; } ;;
    page-fault1)
        ours=("$bin" run fault:case=anon,pages=32768 -q --no-store)
        bench=fault unit=ns scale=1000 anchor_name="page_fault1_processes -t 1 -s 3"
        anchor() { wis_ns "$(wis page_fault1_processes)" -t 1 -s 3; } ;;
    tlb-flush2)
        ours=("$bin" run tlb:threads=1,readback=yes -q --no-store)
        bench=tlb unit=ns scale=1 anchor_name="tlb_flush2_threads -t 1 -s 3"
        anchor() { wis_ns "$(wis tlb_flush2_threads)" -t 1 -s 3; } ;;
    wis-*:*)
        t=${1#wis-} t=${t%%:*} tasks=${1##*:}
        case $t in
        getppid1) sel=syscall:case=null bench=syscall scale=1 ;;
        page_fault1) sel=fault:case=anon,pages=32768 bench=fault scale=1000 ;;
        futex2) sel=futex:workload=hash,threads=1,futexes=1,shared=shared bench=futex scale=1 ;;
        poll1) sel=poll:call=poll,on=file,fds=1 bench=poll scale=1 ;;
        # osbench's op is a round trip (µs); will-it-scale counts two loops per round trip.
        context_switch1) sel=ipc:kind=pipe bench=ipc scale=500 ;;
        *) echo "no osbench case matches will-it-scale's $t" >&2; exit 2 ;;
        esac
        ours=("$bin" run "$sel" --tasks "$tasks" --tasks-mode processes -q --no-store)
        unit=ns anchor_name="${t}_processes -t $tasks -s 3"
        anchor() { wis_task_ns "$tasks" "$(wis "${t}_processes")" -t "$tasks" -s 3; } ;;
    futex-hash | futex-lock-pi)
        need perf linux-perf
        w=${1#futex-} t=$(nproc)
        ours=("$bin" run "futex:workload=$w,threads=$t" --pin spread -q --no-store)
        bench=futex unit=ns scale=1 anchor_name="perf bench futex $w -t $t"
        anchor() { perf bench futex "$w" -t "$t" | awk '/^Averaged/ { printf "%.4g\n", 1e9 / $2 }'; } ;;
    rseq-inc)
        ours=("$bin" run rseq:case=rseq -q --no-store)
        bench=rseq unit=ns scale=1 anchor_name="param_test_benchmark -T i -t 1 -r 100000000 (librseq)"
        anchor() { rseq_inc_ns; } ;;
    futex-wake | futex-wake-parallel | futex-requeue)
        need perf linux-perf
        w=${1#futex-} t=$(nproc)
        ours=("$bin" run "futex:workload=$w,threads=$t,method=perf" -q --no-store)
        bench=futex unit=ns scale=1 figure=mean_of anchor_name="perf bench futex $w -t $t"
        # The summary line (not the "[Run N]:" ones): X ms, the field after "in".
        anchor() {
            perf bench futex "$w" -t "$t" |
                awk '$1 ~ /^(Wokeup|Requeued|Avg)$/ { for (i = 1; i < NF; i++) if ($i == "in") v = $(i + 1) }
                     END { printf "%.4g\n", v * 1e6 }'
        } ;;
    fio-uring:* | fio-psync)
        need fio fio
        # Written in 1 MiB writes, as osbench writes its file: a file of
        # `head -c` writes read 0.78 as fast through fio (small folios).
        [ -s "$tmp/fio-16m" ] || { dd if=/dev/urandom of="$tmp/fio-16m" bs=1M count=16 status=none && cat "$tmp/fio-16m" >/dev/null; }
        if [ "$1" = fio-psync ]; then
            ours=("$bin" run uring:case=pread -q --no-store)
            engine=(--ioengine=psync --iodepth=1)
        else
            depth=${1#fio-uring:}
            ours=("$bin" run "uring:case=read,batch=$depth" -q --no-store)
            engine=(--ioengine=io_uring "--iodepth=$depth" "--iodepth_batch_submit=$depth" "--iodepth_batch_complete_min=$depth")
        fi
        bench=uring unit=MB/s scale=1 anchor_name="fio ${engine[*]} --rw=randread --bs=4k (16 MiB, page-cached)"
        # Terse output: field 8 is the read IOPS.
        anchor() {
            fio --name=crosscheck --filename="$tmp/fio-16m" --size=16m --invalidate=0 --rw=randread --bs=4k \
                "${engine[@]}" --time_based --runtime=5 --output-format=terse |
                awk -F';' '{ printf "%.4g\n", $8 * 4096 / 1e6 }'
        } ;;
    cyclictest-load | cyclictest-load:* | cyclictest-load-p99 | cyclictest-load-p99:*)
        need hackbench rt-tests
        need cyclictest rt-tests
        g=2
        [[ $1 == *:* ]] && g=${1##*:}
        # 10,000 wake-ups a run: at 2,000 each side's p99 spread 13-16 % over
        # ten rounds, at 10,000 7-10.5 % (Intel, 7 Dec; docs/crosscheck.md).
        wakeups=10000
        # One run a side a round serves both rows at G (shared_round): the
        # mean and the p99 of the same wake-ups, as each tool prints them.
        # cyclictest on osbench's CPU, placed alike: osbench pins its timing
        # thread (its default for one task).
        ours=(shared_round "timer-ours.$g" "$bin" run "timer:count=$wakeups" -q --no-store --load "hackbench:$g")
        cyclictest_args=(-t1 -a "$osbench_cpu" -i 1000 -l "$wakeups" -q --laptop -h 10000)
        bench=timer unit=µs scale=1
        anchor_name="cyclictest ${cyclictest_args[*]} beside hackbench -g $g"
        if [[ $1 == cyclictest-load-p99* ]]; then
            figure=p99_of anchor_figure=cyclictest_p99 anchor_name+=" (p99 of its histogram)"
        else
            figure=mean_of anchor_figure=cyclictest_avg anchor_name+=" (Avg)"
        fi
        anchor() { shared_round "cyclictest.$g" cyclictest_under_hackbench "$g" "${cyclictest_args[@]}" | "$anchor_figure"; } ;;
    schbench-*)
        spec=${1#schbench-} rate=0
        [ "${spec%%:*}" = "$spec" ] || rate=${spec#*:}
        stat=${spec%%:*} t=$(nproc) sb=$(schbench_bin)
        args=(-m 1 -t "$t" -r 2 -n 5 -F 256 -s 100)
        [ "$rate" = 0 ] || args+=(-R "$rate")
        # One osbench run and anchor_runs schbench runs a round serve every
        # statistic at a rate: both print them all (schbench_round).
        ours_run=("$bin" run "schbench:stat=request-p99,workers=$t,runtime=2,rps=$rate" -q --no-store)
        ours=(schbench_round ours "$rate")
        bench=schbench scale=1 tol=10 anchor_name="schbench ${args[*]}"
        case $stat in
        wakeup-p50 | wakeup-p99 | request-p50 | request-p99)
            unit=µs sec=Wakeup
            [ "${stat%%-*}" = request ] && sec=Request
            row=${stat#*-p}.0th ;;
        rps) unit=requests/s sec=rps row= ;;
        *) echo "unknown schbench statistic '$stat': wakeup-p50, wakeup-p99, request-p50, request-p99, rps" >&2; exit 2 ;;
        esac
        figure=schbench_round_figure
        anchor() {
            for ((k = 0; k < anchor_runs; k++)); do schbench_round "anchor.$k" "$rate" | schbench_round_figure; done | median_in
        } ;;
    *) echo "unknown check '$1': syscall, pipe, ctx, messaging:PARAMS, table, spread, vm, io, mem, wis, lebench, futex, uring, schbench, schbench-STAT[:RPS], bw-mem:OP:SIZE, lat-mem-rd:KIB:STRIDE[:random], rseq-inc, seccomp:N, seccomp-notify, uprobe, uprobe-cpu, sandbox, cyclictest-load[:G], cyclictest-load-p99[:G], cyclictest or one of ${vm_checks[*]} fork ${wis_checks[*]} wis-tasks wis-TEST:N ${io_checks[*]} ${lebench_checks[*]} ${futex_checks[*]} ${uring_checks[*]}" >&2; exit 2 ;;
    esac
}

tmp=$(mktemp -d)
# The fs rows' directory, both sides': under FS_DIR, by default /dev/shm when
# it is a tmpfs (the VFS alone, alike on every machine; the development VM's
# root is an ext4 without a journal, docs/crosscheck.md), else under $tmp.
fs_root=${FS_DIR:-}
if [ -z "$fs_root" ]; then
    fs_root=$tmp
    [ "$(stat -f -c %T /dev/shm 2>/dev/null)" != tmpfs ] || fs_root=/dev/shm
fi
fs_dir=$fs_root/crosscheck-fs.$$
# Stopped (SIGINT, SIGTERM) or ended, the run stops the current check's
# anchor server (lat_connect -s, bw_tcp -s) and removes its files; the
# checks it finished are in the record already.
after() { :; }
trap 'after >/dev/null 2>&1 || true; rm -rf "$tmp" "$fs_dir"' EXIT
# The rounds run in a subshell in the background (below), which a stop
# ends with every process under it, at once: not after the current run.
# Each of those processes carries this mark in its environment, so a stop
# finds them all, also those whose parent died first and left them to init
# (Ctrl-C signals every process of the terminal's group at once: the
# rounds' subshells die, lmbench's programs go on).
rounds_pid= rounds_mark=CROSSCHECK_ROUNDS_OF=$$.$RANDOM
marked() { grep -lzxF "$rounds_mark" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true; }
# lmbench's timing harness takes SIGTERM as a flag to end its current run
# (lat_fs went on for a minute after one, then started another): what is
# left after 3 s is killed, and what it started meanwhile.
stop_rounds() {
    [ -n "$rounds_pid" ] || return 0
    local pids try
    pids=$(marked)
    [ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
    for ((try = 0; try < 40; try++)); do
        pids=$(marked)
        [ -n "$pids" ] || return 0
        ((try < 30)) || kill -KILL $pids 2>/dev/null || true
        sleep 0.1
    done
}
trap 'stop_rounds; exit 130' INT TERM
echo "# crosscheck $(date -u '+%Y-%m-%d %H:%M UTC'), $rounds rounds per check, $anchor_runs hackbench runs per anchor figure"
# The machine kind every row is measured on: vendor, model, microcode.
machine="$(grep -m1 'vendor_id' /proc/cpuinfo | sed 's/.*: //') $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), microcode $(grep -m1 microcode /proc/cpuinfo | sed 's/.*: //')"
osbench_version=$("$bin" --version) started=$(date -u '+%Y-%m-%d %H:%M UTC')
export machine osbench_version started
echo "# $machine, $(nproc) CPUs, kernel $(uname -r)"
echo "# $osbench_version; hackbench: rt-tests $(dpkg-query -W -f '${Version}' rt-tests 2>/dev/null || echo '?');" \
    "$(perf version 2>/dev/null || echo 'perf: absent')"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# The interval lmbench's own calibration chooses here (its `enough`, which
# build-anchors.sh builds), said once when a check runs an lmbench program:
# the anchors not given ENOUGH time intervals of it, and where no interval
# times to 0.25 % it is lmbench's fallback of 1 s (1000000), as on the
# development VM's Intel days (docs/crosscheck.md, "lmbench's interval").
lmbench_interval() {
    local c
    for c in "${checks[@]}"; do
        case $c in
        sig-* | pagefault* | lat_mmap:* | fork | select-* | connect | fs-* | bw-* | lat-mem-rd:*)
            if [ -x "$lmb/enough" ]; then
                echo "# lmbench's calibrated interval (enough): $("$lmb/enough" 2>/dev/null || echo '?') µs"
            else
                echo "# lmbench's calibrated interval: unknown ($lmb/enough not built)"
            fi
            return ;;
        esac
    done
}
lmbench_interval
# Whether CHECK has a measured row in the record already on this machine
# kind (the machine field without its microcode), by any build.
# The fields are found by the record's header.
recorded() {
    [ -s "$record" ] && awk -F'\t' -v m="${machine%%, microcode*}" -v c="$1" '
        NR == 1 { for (i = 1; i <= NF; i++) at[$i] = i; next }
        index($at["machine"], m) == 1 && $at["check"] == c && $at["verdict"] !~ /^unavailable/ { found = 1 }
        END { exit !found }' "$record"
}
# Why a check could not run, from its stderr in FILE: the line naming what
# is missing, else the last line.
reason_in() { grep -m1 'not found' "$1" || grep -v '^\s*$' "$1" | tail -1 || true; }
# The summary of check number $check_no (CHECK ANCHOR_NAME UNIT SECONDS
# [UNAVAILABLE], the last a reason when the check could not run): printed now, its Markdown row kept for the end, and its record line
# appended at once, so an interrupted run keeps every check it finished
# (-c then goes on from the next).
summarise() {
    python3 - "$tmp" "$check_no" "$tol" "$@" <<'PY'
import math, os, statistics as st, sys
tmp, n, tol, check, anchor_name, unit, seconds, *why = sys.argv[1:]
unavailable = why[0] if why else ""
tol = float(tol) / 100
read = lambda side: [float(x) for x in open(f"{tmp}/{side}.{n}")] if os.path.exists(f"{tmp}/{side}.{n}") else []
ours, anchor = read("ours"), read("anchor")
cv = lambda v: st.stdev(v) / st.mean(v) * 100 if len(v) > 1 else float("nan")
def median_ci(values):
    """Distribution-free 95 % interval of a median: the order statistics
    (k, n+1-k) with the largest k whose binomial coverage is still >= 95 %;
    None when there are too few values (n < 6)."""
    v, m = sorted(values), len(values)
    below = lambda k: sum(math.comb(m, i) for i in range(k)) / 2**m
    k = max((k for k in range(1, m // 2 + 1) if 1 - 2 * below(k) >= 0.95), default=None)
    return (v[k - 1], v[m - k]) if k else None
machine = os.environ["machine"]
if unavailable:
    print(unavailable)
    named = f"`{anchor_name}`" if anchor_name else "—"
    row = f"| `{check}` | {machine} | {named} | {unit or '—'} | — | — | — | {unavailable} |"
    fields, ok, ours = [""] * 6, unavailable, []
else:
    o = f"{st.median(ours):.4g} ({cv(ours):.1f} %)"
    print(f"osbench: median {st.median(ours):.4g} {unit}, CV across invocations {cv(ours):.1f}%")
if anchor and not unavailable:
    ratios = [a / b for a, b in zip(ours, anchor)]
    r, ci = st.median(ratios), median_ci(ratios)
    # A row with modes (a figure per fresh file or process) is compared fastest to fastest too.
    fastest = (max if unit.endswith("/s") else min)
    print(f"anchor:  median {st.median(anchor):.4g} {unit}, CV across invocations {cv(anchor):.1f}%")
    print(f"ratio osbench / anchor, median of the rounds' ratios: {r:.3f}")
    print(f"ratio of each side's fastest round: {fastest(ours) / fastest(anchor):.3f}")
    a = f"{st.median(anchor):.4g} ({cv(anchor):.1f} %)"
    if ci and 1 - tol <= ci[0] and ci[1] <= 1 + tol:
        ok = "yes"
    elif abs(r - 1) <= tol:
        ok = "ratio yes, interval wider"
    else:
        ok = "**no**"
    interval = f"[{ci[0]:.3f} – {ci[1]:.3f}]" if ci else "(too few rounds)"
    row = f"| `{check}` | {machine} | `{anchor_name}` | {unit} | {o} | {a} | {r:.3f} {interval} | {ok} |"
    fields = [st.median(anchor), cv(anchor), r, *(ci or ("", "")), fastest(ours) / fastest(anchor)]
elif not unavailable:
    ok = "yes" if cv(ours) <= 3 else "**no**"
    row = f"| `{check}` | {machine} | — | {unit} | {o} | — | — | CV ≤ 3 %: {ok} |"
    fields = [""] * 6
open(f"{tmp}/row.{n}", "w").write(row + "\n")
record = os.environ.get("CROSSCHECK_RECORD")
if record:
    header = ("started\tmachine\tkernel\tosbench\tcheck\tanchor\tunit\trounds\tosbench_median\tosbench_cv_pct"
              "\tanchor_median\tanchor_cv_pct\tratio\tratio_ci_low\tratio_ci_high\tfastest_ratio\tverdict\tseconds\n")
    measured = [st.median(ours), cv(ours)] if ours else ["", ""]
    line = [os.environ["started"], machine, os.uname().release, os.environ["osbench_version"], check,
            anchor_name, unit, len(ours), *measured, *fields, ok.replace("**", ""), seconds]
    fmt = lambda x: f"{x:.6g}" if isinstance(x, float) else str(x)
    with open(record, "a") as f:
        if f.tell() == 0:
            f.write(header)
        f.write("\t".join(map(fmt, line)) + "\n")
PY
}
# Every check is defined once before any runs (in a subshell: an anchor's
# server started is stopped again), so a misspelt check stops the run at
# once and a missing anchor is known before hours of others.
declare -A missing_anchor=()
# (A subshell tested by `if` would ignore set -e: hence set +e around it.)
for check in "${checks[@]}"; do
    set +e
    (
        set -e
        define "$check"
        after
    ) >/dev/null 2>"$tmp/probe"
    status=$?
    set -e
    case $status in
    0) ;;
    3) missing_anchor[$check]=$(reason_in "$tmp/probe") ;;
    *) cat "$tmp/probe" >&2 && exit 2 ;;
    esac
done
# The check's number names its files; `define` must not set it (a check
# once did, and the summary read another check's files).
check_no=0
for check in "${checks[@]}"; do
    check_no=$((check_no + 1))
    figure=median_of tol=5 anchor_name= unit=
    echo
    if [ -n "$continue_run" ] && recorded "$check"; then
        echo "## $check: recorded already in $record for this machine kind, skipped (-c)"
        continue
    fi
    if [ -n "${missing_anchor[$check]:-}" ]; then
        echo "## $check"
        summarise "$check" "" "" 0 "unavailable: ${missing_anchor[$check]}"
        continue
    fi
    define "$check"
    echo "## $check${anchor_name:+ vs $anchor_name}"
    check_started=$SECONDS
    : >"$tmp/ours.$check_no"
    : >"$tmp/anchor.$check_no"
    # The rounds run in a subshell: a missing anchor or a failing command
    # ends this check (its stderr kept as the reason), not the run. It runs
    # in the background so that a stop is seen at once (`wait` returns).
    set +e
    (
        export "$rounds_mark"
        set -e
        for ((i = 1; i <= rounds; i++)); do
            busy=$(quiet)
            if ((i % 2)); then
                a=$(anchor)
                o=$("${ours[@]}" | "$figure" "$bench")
            else
                o=$("${ours[@]}" | "$figure" "$bench")
                a=$(anchor)
            fi
            o=$(awk -v o="$o" -v s="$scale" 'BEGIN { printf "%.6g\n", o * s }')
            echo "round $i (others busy ${busy}%, load $(cut -d' ' -f1 /proc/loadavg)):" \
                "${anchor_name:+anchor $a $unit   }osbench $o $unit"
            [ -z "$a" ] || echo "$a" >>"$tmp/anchor.$check_no"
            echo "$o" >>"$tmp/ours.$check_no"
        done
    ) 2>"$tmp/err.$check_no" &
    rounds_pid=$!
    wait "$rounds_pid"
    status=$?
    rounds_pid=
    set -e
    cat "$tmp/err.$check_no" >&2
    after
    if [ "$status" -eq 0 ]; then
        summarise "$check" "$anchor_name" "$unit" $((SECONDS - check_started))
    else
        summarise "$check" "$anchor_name" "$unit" $((SECONDS - check_started)) "unavailable: $(reason_in "$tmp/err.$check_no")"
    fi
done

echo
echo "## Summary"
echo
echo "| check | machine | anchor | unit | osbench median (CV) | anchor median (CV) | ratio [95 % CI] | within ±5 % (schbench: ±10 %) |"
echo "|---|---|---|---|---|---|---|---|"
for ((n = 1; n <= check_no; n++)); do
    [ ! -f "$tmp/row.$n" ] || cat "$tmp/row.$n"
done

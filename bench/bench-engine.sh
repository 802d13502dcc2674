#!/bin/sh
# bench-engine.sh - fsprism's job engine against fio, on the same jobs, on
# the same RAM-backed loop device, alternating the two tools round by round
# so that drift (thermal, other load) hits both alike.
#
# Jobs: 4 KiB random read QD1 and QD32, 128 KiB sequential read and write
# QD1 and QD32, 4 KiB random write QD1 and QD32, 50/50 mixed sequential
# 128 KiB QD1 and mixed random 4 KiB QD32, each against fio as people run it
# (the writing jobs and the QD32 128 KiB ones are not in the default set;
# the writes overwrite the RAM disk only). The whole placement matrix of
# sizes, depths and directions:
#   --jobs "randread-4k-qd1 randread-4k-qd32 randwrite-4k-qd1 randwrite-4k-qd32
#           seqread-128k-qd1 seqread-128k-qd32 seqwrite-128k-qd1 seqwrite-128k-qd32
#           mixseq-128k-qd1 mixrand-4k-qd32" --pin "none same split"
# Two kinds of variant compare against fio told to do what fsprism does:
# QD32-batch (up to two IOs per io_submit, as fsprism submits; fio's default
# is one IO per call) and the -huge jobs (fio's buffers in 2 MiB pages, --mem=mmaphuge,
# as fsprism's are; fio's default is malloc'd 4 KiB pages, and the kernel
# pins every page of a buffer for each O_DIRECT IO). The -huge jobs reserve
# hugetlb pages for fio while they run (vm.nr_hugepages, restored after).
# Per job and round: IOPS, p50 latency (fio: `lat`, submission to
# completion, like fsprism's), CPU time per IO (user+system of the process
# doing the IO; fio: usr_cpu+sys_cpu of the job), and the gap: queue depth /
# IOPS - mean latency, the time per IO a queue slot sat empty, i.e. the
# tool's own work between a completion and the next submission. Prints
# every round, then the median ratios fsprism/fio and each tool's median
# gap. Targets: IOPS >= 1.0, p50 within 5%, CPU per IO <= 1.0.
#
# Both tools ramp up for RAMP before measuring (fio --ramp_time, fsprism
# --ramp): a freshly started job runs far above its steady rate for its
# first 100-300 ms here (fio's 100 ms IOPS log: 55-63k, then 33k, at 4 KiB
# QD1), which alone skewed 1 s comparisons by 8%.
#
# usage: sudo bench/bench-engine.sh [options] [FSPRISM]   (default ./fsprism)
#   --pin LIST         the placements, space- or comma-separated (default none):
#                        none   unpinned: the scheduler places the tool and the loop device's workers
#                        same   the tool and the loop device's workers on one CPU (CPU 1)
#                        split  the tool on CPU 0, the loop device's workers on CPU 1
#                      The loop device's IO runs in kernel workers of unbound workqueues; their CPUs
#                      are set with /sys/devices/virtual/workqueue/cpumask (restored after), the
#                      tool's with taskset. Every cell is a job at a placement; the summary names
#                      the cells below 1.0.
#   --jobs LIST        the jobs, space- or comma-separated, of: randread-4k-qd1 randread-4k-qd32
#                      randread-4k-qd32-batch randwrite-4k-qd1 randwrite-4k-qd32 seqread-128k-qd1
#                      seqread-128k-qd32 seqwrite-128k-qd1 seqwrite-128k-qd32 mixseq-128k-qd1
#                      mixrand-4k-qd32, each also with -huge (fio's buffers in hugetlb pages)
#                      (default: randread-4k-qd1 randread-4k-qd32 randread-4k-qd32-batch
#                      seqread-128k-qd1 mixseq-128k-qd1 and the three QD1 ones with -huge)
#   --rounds N         alternating rounds (4; keep it even, see the last columns)
#   --secs N           measured seconds per run (5)
#   --ramp DURATION    unmeasured ramp before each run (1s)
#   --size SIZE        the RAM disk (1G)
#   --base PATH        another fsprism build where fio was: the same jobs, rounds and alternation,
#                      two builds side by side (ratios FSPRISM/base; the columns keep fio's names)
#   --fsprism-args A   arguments added to FSPRISM's runs only (e.g. --no-trace, for a build that
#                      traces the block layer by default; --poll=0 for an engine that sleeps in
#                      io_getevents at once, as fio does, instead of polling the completion ring
#                      first: docs/profiles.md)
# Each option may also come from the environment, as PINS, JOBS, ROUNDS, SECS, RAMP, SIZE,
# FSPRISM_BASE and FSPRISM_ARGS; an option given on the command line wins.
set -eu
. "$(dirname "$0")/lib.sh"

ROUNDS=${ROUNDS:-4}
SECS=${SECS:-5}
RAMP=${RAMP:-1s}
SIZE=${SIZE:-1G}
JOBS=${JOBS:-"randread-4k-qd1 randread-4k-qd32 randread-4k-qd32-batch seqread-128k-qd1 mixseq-128k-qd1
randread-4k-qd1-huge seqread-128k-qd1-huge mixseq-128k-qd1-huge"}
BASE=${FSPRISM_BASE:-}
FSPRISM_ARGS=${FSPRISM_ARGS:-}
PINS=${PINS:-none}
bad() { echo "bench-engine.sh: $*" >&2; exit 2; }
FSPRISM=""
# the options, and one word among them: the binary
while :; do
	bench_options bench-engine.sh "--pin=PINS --jobs=JOBS --rounds=ROUNDS --secs=SECS --ramp=RAMP
		--size=SIZE --base=BASE --fsprism-args=FSPRISM_ARGS WORD" "$@"
	shift "$BENCH_SHIFT"
	[ $# -gt 0 ] || break
	[ -z "$FSPRISM" ] || bad "one FSPRISM binary, not '$FSPRISM' and '$1'"
	FSPRISM=$1
	shift
done
FSPRISM=${FSPRISM:-./fsprism}
PINS=$(echo "$PINS" | tr ',' ' ')
JOBS=$(echo "$JOBS" | tr ',' ' ')
case $ROUNDS in '' | *[!0-9]* | 0) bad "--rounds: '$ROUNDS' is not a whole number of rounds >= 1" ;; esac
case $SECS in '' | *[!0-9]* | 0) bad "--secs: '$SECS' is not a whole number of seconds >= 1" ;; esac
[ -n "$(echo $PINS)" ] || bad "--pin: no placement given (none, same, split)"
[ -n "$(echo $JOBS)" ] || bad "--jobs: no job given"
# the queue depth a job name carries (qd1, qd32)
job_qd() { echo "$1" | sed 's/.*-qd\([0-9]*\).*/\1/'; }

# job_args NAME fio|fsprism: the arguments the job gives that tool, nothing
# for a name that is no job. A job at QD1 and at QD32 differs only in the
# depth its name carries. A -huge job is its base job, with fio's buffers
# in hugetlb pages; the -batch one is its base job with fio submitting like
# fsprism does, up to two IOs per io_submit. fio scrambles each write
# buffer by default (scramble_buffers=1, inside its latency); fsprism
# stamps its buffers outside the clock: neither touches the data here (fio
# scramble_buffers=0, fsprism --pattern=random,fixed).
job_args() {
	qd=$(job_qd "$1")
	case ${1%-huge} in
	randread-4k-qd1 | randread-4k-qd32 | randread-4k-qd32-batch)
		fio="--rw=randread --bs=4k --iodepth=$qd --norandommap"
		fsp="sustained-randread --qd=$qd" ;;
	seqread-128k-qd1 | seqread-128k-qd32)
		fio="--rw=read --bs=128k --iodepth=$qd"
		fsp="sustained-seqread --qd=$qd" ;;
	seqwrite-128k-qd1 | seqwrite-128k-qd32)
		fio="--rw=write --bs=128k --iodepth=$qd --scramble_buffers=0"
		fsp="sustained-seqwrite --qd=$qd --pattern=random,fixed" ;;
	randwrite-4k-qd1 | randwrite-4k-qd32)
		fio="--rw=randwrite --bs=4k --iodepth=$qd --norandommap --scramble_buffers=0"
		fsp="sustained-randwrite --qd=$qd --pattern=random,fixed" ;;
	# fio's randrw draws each IO's direction at random
	mixrand-4k-qd32)
		fio="--rw=randrw --rwmixread=50 --bs=4k --iodepth=32 --norandommap --scramble_buffers=0"
		fsp="mixed-random --mix=50 --qd=32 --duty=100 --interleave=random --pattern=random,fixed" ;;
	# fio's rw=rw: reads and writes each advance their own offset, and each
	# IO's direction is drawn at random (see docs/profiles.md)
	mixseq-128k-qd1)
		fio="--rw=rw --rwmixread=50 --bs=128k --iodepth=1 --scramble_buffers=0"
		fsp="mixed-seq --mix=50 --duty=100 --offsets=per-direction --interleave=random"
		fsp="$fsp --pattern=random,fixed" ;;
	*) return 0 ;;
	esac
	case $2 in
	fio) case $1 in *-batch*) fio="$fio --iodepth_batch_submit=2 --iodepth_batch_complete_max=32" ;; esac
		case $1 in *-huge) fio="--mem=mmaphuge $fio" ;; esac
		echo "$fio" ;;
	fsprism) echo "$fsp" ;;
	esac
}

for pin in $PINS; do
	case $pin in none | same | split) ;;
	*) bad "--pin: '$pin' is not none, same or split" ;;
	esac
done
for job in $JOBS; do
	[ -n "$(job_args "$job" fio)" ] ||
		bad "--jobs: '$job' is not a job (the names are in the usage: --help)"
done

bench_need bench-engine.sh fio jq
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "bench-engine.sh: --base $BASE is not executable" >&2; exit 1; }
WQ_MASK=/sys/devices/virtual/workqueue/cpumask
WQ_BEFORE=""
for pin in $PINS; do
	[ "$pin" = none ] || [ "$(nproc)" -ge 2 ] ||
		bad "--pin $pin needs two CPUs"
	[ "$pin" = none ] || [ -w "$WQ_MASK" ] ||
		bad "--pin $pin needs a writable $WQ_MASK"
done

W=$(mktemp -d /tmp/bench-engine.XXXXXX)
IMG=$(mktemp /dev/shm/bench-engine.XXXXXX)
DEV=""
HUGE_BEFORE=""
cleanup() {
	[ -n "$DEV" ] && losetup -d "$DEV" 2>/dev/null
	[ -n "$HUGE_BEFORE" ] && echo "$HUGE_BEFORE" >/proc/sys/vm/nr_hugepages
	[ -n "$WQ_BEFORE" ] && echo "$WQ_BEFORE" >"$WQ_MASK"
	rm -f "$IMG"
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# place PIN: the loop workers' CPUs now, and TASKSET, the tool's
TASKSET=""
place() {
	[ -n "$WQ_BEFORE" ] || WQ_BEFORE=$(cat "$WQ_MASK" 2>/dev/null || true)
	case $1 in
	none) TASKSET=""; [ -z "$WQ_BEFORE" ] || echo "$WQ_BEFORE" >"$WQ_MASK" ;;
	same) TASKSET="taskset -c 1"; echo 2 >"$WQ_MASK" ;;
	split) TASKSET="taskset -c 0"; echo 2 >"$WQ_MASK" ;;
	esac
}

# Prints: iops p50_read_us p50_write_us cpu_ns_per_io gap_us, where gap_us
# is the time a queue slot sits empty per IO, the tool's own time between
# a completion and the next submission: qd / IOPS - mean latency.
run_fio() {
	# shellcheck disable=SC2046
	$TASKSET fio --name=job --filename="$DEV" --ioengine=libaio --direct=1 \
		$(job_args "$1" fio) --size="$BYTES" --ramp_time="$RAMP" --runtime="$SECS" --time_based \
		--lat_percentiles=1 --output-format=json >"$W/fio.json" 2>"$W/fio.err" ||
		{ cat "$W/fio.err" >&2; exit 1; }
	jq -r '.jobs[0] | [ (.read.total_ios + .write.total_ios),
		.job_runtime,
		(.read.lat_ns.percentile["50.000000"] // 0),
		(.write.lat_ns.percentile["50.000000"] // 0),
		.usr_cpu, .sys_cpu,
		(.read.lat_ns.mean * .read.total_ios + .write.lat_ns.mean * .write.total_ios) ] | @tsv' \
		"$W/fio.json" |
	awk -v qd="$(job_qd "$1")" '{ ios = $1; ms = $2;
		cpu_ns = ($5 + $6) / 100 * ms * 1e6;
		printf "%.0f %.2f %.2f %.0f %.2f\n", ios / (ms / 1000), $3 / 1000, $4 / 1000,
			cpu_ns / ios, (qd * ms * 1e6 / ios - $7 / ios) / 1000 }'
}

# run_fsp JOB [BINARY EXTRA_ARGS]: each binary its own database (builds of
# different schema versions must not share one)
run_fsp() {
	bin=${2:-$FSPRISM}
	db=$W/$(echo "$bin" | md5sum | cut -c1-8).db
	# shellcheck disable=SC2046,SC2086
	out=$($TASKSET "$bin" run $(job_args "$1" fsprism) "$DEV" --db "$db" \
		--span="$BYTES" --ramp="$RAMP" --time="${SECS}s" --bytes=0 --idle=0 --quiet ${3:-}) ||
		{ echo "$out" >&2; exit 1; }
	run=$(echo "$out" | sed -n 's/.*run \([0-9]*\) stored.*/\1/p')
	"$bin" stats "$db" --run "$run" --format csv >"$W/stats.csv"
	p50r=$(awk -F, '$3 == "read" && $4 == "total" { print $10 }' "$W/stats.csv" | head -n 1)
	p50w=$(awk -F, '$3 == "write" && $4 == "total" { print $10 }' "$W/stats.csv" | head -n 1)
	sqlite3 -separator ' ' "$db" "SELECT read_ios + write_ios, busy_ns,
		cpu_user_ns + cpu_sys_ns, (SELECT sum(sum_ns) FROM hist
		WHERE run=$run AND step=0 AND layer=0) FROM steps WHERE run=$run AND step=0" |
	awk -v r="${p50r:-0}" -v w="${p50w:-0}" -v qd="$(job_qd "$1")" '{
		printf "%.0f %.2f %.2f %.0f %.2f\n", $1 / ($2 / 1e9), r, w, $3 / $1,
			(qd * $2 / $1 - $4 / $1) / 1000 }'
}

# A RAM-backed device, written once so that reads return real pages.
truncate -s "$SIZE" "$IMG"
dd if=/dev/urandom of="$IMG" bs=1M count=$(($(stat -c %s "$IMG") >> 20)) \
	conv=notrunc status=none
DEV=$(losetup --find --show "$IMG")
BYTES=$(blockdev --getsize64 "$DEV")

# fio's -huge jobs map their buffers from hugetlb pages: reserve a few
case $JOBS in *-huge*)
	HUGE_BEFORE=$(cat /proc/sys/vm/nr_hugepages)
	echo $((HUGE_BEFORE + 8)) 2>/dev/null >/proc/sys/vm/nr_hugepages || true
	free_pages=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
	[ "$free_pages" -ge 8 ] || { echo "bench-engine.sh: could not reserve 8 hugetlb pages" \
		"for the -huge jobs (HugePages_Free: $free_pages)" >&2; exit 1; }
esac

echo "# bench-engine: fio vs fsprism run on $DEV (RAM-backed, $SIZE), $ROUNDS rounds of ${SECS}s after a $RAMP ramp"
echo "# $(uname -r), $(nproc) CPUs, $(fio --version), $("$FSPRISM" version)${FSPRISM_ARGS:+ with $FSPRISM_ARGS}, placements: $PINS"
[ -z "$BASE" ] || echo "# --base: the 'fio' columns are $BASE ($("$BASE" version)), not fio"
printf "%-30s %5s %-8s %10s %10s %10s %10s %8s\n" job round tool IOPS p50r_us p50w_us cpu_ns/io gap_us
: >"$W/results"
CELLS=""
for pin in $PINS; do for job in $JOBS; do
	CELLS="$CELLS $job@$pin"
done; done
for round in $(seq 1 "$ROUNDS"); do
	for cell in $CELLS; do
		job=${cell%@*}
		place "${cell#*@}"
		# alternate which tool goes first
		if [ $((round % 2)) -eq 1 ]; then order="fio fsprism"; else order="fsprism fio"; fi
		for tool in $order; do
			if [ "$tool" = fio ] && [ -n "$BASE" ]; then r=$(run_fsp "$job" "$BASE" "")
			elif [ "$tool" = fio ]; then r=$(run_fio "$job")
			else r=$(run_fsp "$job" "$FSPRISM" "$FSPRISM_ARGS"); fi
			echo "$cell $round $tool $r" >>"$W/results"
			# shellcheck disable=SC2086
			printf "%-30s %5s %-8s %10s %10s %10s %10s %8s\n" "$cell" "$round" "$tool" $r
		done
	done
done

# Ratios fsprism/fio per round, then their median over rounds.
echo
echo "# ratios fsprism/fio (median over rounds; target IOPS >= 1.00, p50 within 0.95..1.05, CPU/IO <= 1.00)"
echo "# then the IOPS ratio over the rounds where fio ran first (odd) and where fsprism did (even):"
echo "# the tool that runs second in a round can be favoured or penalised; use an even ROUNDS"
echo "# last, each tool's median gap (us per IO a queue slot sat empty: the tool's own time)"
printf "%-30s %8s %8s %8s %10s %10s %10s %8s %8s\n" job IOPS p50r p50w cpu/io fio-1st fsp-1st \
	gap-fio gap-fsp
place none
for job in $CELLS; do
	awk -v job="$job" '
	$1 == job { k = $2; if ($3 == "fio") { fi[k] = $4; fr[k] = $5; fw[k] = $6; fc[k] = $7; fg[k] = $8 }
		    else { si[k] = $4; sr[k] = $5; sw[k] = $6; sc[k] = $7; sg[k] = $8 } }
	function median(a, n,   i, j, t) {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	END {
		n = 0; no = 0; ne = 0
		for (k in fi) { n++; ri[n] = si[k] / fi[k];
			if (k % 2) ro[++no] = ri[n]; else re[++ne] = ri[n];
			rr[n] = fr[k] > 0 ? sr[k] / fr[k] : 0;
			rw[n] = fw[k] > 0 ? sw[k] / fw[k] : 0;
			rc[n] = fc[k] > 0 ? sc[k] / fc[k] : 0;
			gf[n] = fg[k]; gs[n] = sg[k] }
		mr = median(rr, n); mw = median(rw, n)
		printf "%-30s %8.3f %8s %8s %10.3f %10s %10s %8.2f %8.2f\n", job, median(ri, n),
			(mr > 0 ? sprintf("%.3f", mr) : "-"), (mw > 0 ? sprintf("%.3f", mw) : "-"),
			median(rc, n), (no ? sprintf("%.3f", median(ro, no)) : "-"),
			(ne ? sprintf("%.3f", median(re, ne)) : "-"), median(gf, n), median(gs, n) }' \
		"$W/results"
done | tee "$W/summary"
below=$(awk '$1 !~ /^#/ && $1 != "job" && $2 + 0 < 1.0 { printf "%s%s (%s)", sep, $1, $2; sep = ", " }' "$W/summary")
echo "# cells with IOPS below 1.00 of fio: ${below:-none}"

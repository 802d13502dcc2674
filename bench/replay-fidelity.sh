#!/bin/bash
# bench/replay-fidelity.sh - how closely `fsprism replay` keeps a trace's
# times, beside fio's own replay of the same iolog (fio --read_iolog),
# in alternating rounds (fio first in odd rounds, fsprism first in even
# ones), so that machine drift hits both alike.
#
# The trace: one fio job (4 KiB random reads and writes, psync, O_DIRECT,
# --rate_iops=IOPS, IOS IOs) written as an iolog (v3: each IO's time in
# microseconds) on a loop device over a file in /dev/shm; both tools replay
# it onto a second such device, one IO at a time, at the log's times (fio:
# --replay_redirect, psync, O_DIRECT; fsprism: --keep-idle, as fio keeps
# every gap). Each IO's lag is its actual issue time less its intended one,
# both counted from the replay's first IO: fsprism's are the ones it stores
# (replay.lag_*); fio's are taken at the pread/pwrite call by a small
# LD_PRELOAD library this script compiles (one clock read per IO, kept in
# memory, written at exit). Prints per round and tool: p50, p99 and max
# lag, IOs late by more than 1 ms, and the span error (last IO's issue less
# the trace's span); for fsprism also its lag's own part (from when the IO
# before it was seen done: its replay loop's share, replay.self_lag_*);
# then per tool the medians over the rounds.
#
# usage: bench/replay-fidelity.sh [--rounds N] [--ios N] [--iops N]
#   FSPRISM=path/to/fsprism overrides the binary (default ./build/fsprism).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROUNDS=6
IOS=4000
IOPS=2000
bench_options replay-fidelity "--rounds=ROUNDS --ios=IOS --iops=IOPS" "$@"
bench_need replay-fidelity fio cc python3 sqlite3
for v in "$ROUNDS" "$IOS" "$IOPS"; do
	case $v in '' | *[!0-9]* | 0) echo "replay-fidelity: --rounds, --ios and --iops take whole numbers above 0" >&2; exit 2 ;; esac
done

W=$(mktemp -d /dev/shm/fsprism-replay-fidelity.XXXXXX)
REC= DST=
cleanup() {
	[ -z "$REC" ] || losetup -d "$REC"
	[ -z "$DST" ] || losetup -d "$DST"
	rm -rf "$W"
}
trap cleanup EXIT

# the issue-time stamp for fio: every pread/pwrite's CLOCK_MONOTONIC at entry
cat >"$W/stamp.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>
#define MAX (1 << 22)
static unsigned long long *ts;
static size_t n;
static void stamp(void)
{
	struct timespec t;
	if (!ts)
		ts = malloc(MAX * sizeof *ts);
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (ts && n < MAX)
		ts[n++] = (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}
#define WRAP(name, ret, buft)                                                       \
	ret name(int fd, buft buf, size_t len, off_t off)                           \
	{                                                                           \
		static ret (*real)(int, buft, size_t, off_t);                       \
		if (!real)                                                          \
			real = (ret (*)(int, buft, size_t, off_t))dlsym(RTLD_NEXT, #name); \
		stamp();                                                            \
		return real(fd, buf, len, off);                                     \
	}
WRAP(pread, ssize_t, void *)
WRAP(pread64, ssize_t, void *)
WRAP(pwrite, ssize_t, const void *)
WRAP(pwrite64, ssize_t, const void *)
__attribute__((destructor)) static void dump(void)
{
	const char *p = getenv("STAMP_OUT");
	FILE *f = p ? fopen(p, "a") : NULL;
	for (size_t i = 0; f && i < n; i++)
		fprintf(f, "%llu\n", ts[i]);
	if (f)
		fclose(f);
}
C
cc -O2 -shared -fPIC -o "$W/stamp.so" "$W/stamp.c" -ldl

mkdev() {
	truncate -s 256M "$W/$1.img"
	dd if=/dev/zero of="$W/$1.img" bs=1M count=256 conv=notrunc status=none # no holes
	losetup --find --show "$W/$1.img"
}
REC=$(mkdev rec)
DST=$(mkdev dst)
fio --name=trace --filename="$REC" --rw=randrw --bs=4k --size=128M --io_size=$((IOS * 4))k \
	--ioengine=psync --direct=1 --rate_iops="$IOPS" --write_iolog="$W/trace.iolog" \
	--output=/dev/null
DB=$W/r.db
echo "$("$FSPRISM" version), $(fio --version), kernel $(uname -r), $(nproc) CPUs"
echo "trace: $IOS IOs (4 KiB random read/write, QD1) at $IOPS IOPS, fio iolog v3;" \
	"replayed on $DST over /dev/shm, $ROUNDS rounds"

# lags FILE-OF-ACTUAL-NS: "p50 p99 max late span_err" (microseconds) against the trace
lags() {
	python3 - "$W/trace.iolog" "$1" <<'PY'
import sys
want = [int(l.split()[0]) * 1000 for l in open(sys.argv[1])
        if len(l.split()) == 5 and l.split()[2] in ("read", "write")]
got = [int(l) for l in open(sys.argv[2])]
if len(got) != len(want):
    sys.exit("%d IOs issued, the trace has %d" % (len(got), len(want)))
lag = sorted((g - got[0]) - (w - want[0]) for g, w in zip(got, want))
n = len(lag)
q = lambda p: lag[max(0, -(-int(p * n * 1000) // 1000) - 1)]
span = ((got[-1] - got[0]) - (want[-1] - want[0])) / 1e3
print("%.1f %.1f %.1f %d %.1f - -" % (q(0.5) / 1e3, q(0.99) / 1e3, lag[-1] / 1e3,
                                      sum(1 for x in lag if x > 1000000), span))
PY
}

run_fio() {
	rm -f "$W/fio.ns"
	STAMP_OUT=$W/fio.ns LD_PRELOAD=$W/stamp.so fio --name=replay --read_iolog="$W/trace.iolog" \
		--replay_redirect="$DST" --ioengine=psync --direct=1 --thread --output=/dev/null
	lags "$W/fio.ns"
}

run_fsprism() {
	"$FSPRISM" replay "$W/trace.iolog" "$DST" --keep-idle --db "$DB" >/dev/null
	local run
	run=$(sqlite3 "$DB" "SELECT max(id) FROM runs")
	a() { sqlite3 "$DB" "SELECT value FROM run_attrs WHERE run=$run AND key='$1'"; }
	local last
	last=$(a replay.intended_ns)
	# the span error: the last IO's lag is the max only if it is the latest;
	# fsprism stores p50/p99/max/late, and its wall time less the schedule
	awk -v p50="$(a replay.lag_p50_ns)" -v p99="$(a replay.lag_p99_ns)" -v mx="$(a replay.lag_max_ns)" \
		-v late="$(a replay.late)" -v wall="$(a replay.wall_ns)" -v sched="$last" \
		-v self="$(a replay.self_lag_p99_ns)" -v lself="$(a replay.late_self)" \
		'BEGIN { printf "%.1f %.1f %.1f %d %.1f %.1f %d\n", p50 / 1e3, p99 / 1e3, mx / 1e3, late,
			(wall - sched) / 1e3, self / 1e3, lself }'
}

: >"$W/fio.rows"
: >"$W/fsprism.rows"
printf '%-6s %-8s %10s %10s %10s %8s %12s %12s %10s\n' round tool "p50(us)" "p99(us)" "max(us)" ">1ms" \
	"span err(us)" "own p99(us)" "own >1ms"
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then order="fio fsprism"; else order="fsprism fio"; fi
	for tool in $order; do
		row=$(run_$tool)
		echo "$row" >>"$W/$tool.rows"
		# shellcheck disable=SC2086
		printf '%-6s %-8s %10s %10s %10s %8s %12s %12s %10s\n' "$r" "$tool" $row
	done
done
echo "(span err: fio: the last IO's issue less the trace's span; fsprism: its wall time, to the last completion, less the schedule's length;"
echo " own: fsprism's lag from when the IO before it was seen done, its replay loop's part, which fio does not report)"
for tool in fio fsprism; do
	python3 - "$tool" "$W/$tool.rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[2])]
col = lambda i: statistics.median(float(r[i]) for r in rows)
own = "" if rows[0][5] == "-" else "; own part p99 %.1f us, late by it alone %.0f IOs" % (col(5), col(6))
print("%-8s median over %d rounds: lag p50 %.1f us, p99 %.1f us, max %.1f us; late > 1 ms %.0f IOs; span err %.1f us%s"
      % (sys.argv[1], len(rows), col(0), col(1), col(2), col(3), col(4), own))
PY
done

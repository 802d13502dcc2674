#!/bin/bash
# bench/trace-cost.sh - what the eBPF block-layer trace costs `fsprism run`:
# IOPS with the trace on and off (--no-trace), in paired rounds whose order
# alternates (on,off then off,on), so that machine drift hits both alike.
#
# The target is a RAM-backed loop device (losetup over a file in /dev/shm),
# the highest request rate here, where a per-request cost shows most. Each
# run is `fsprism run sustained-randread` at one queue depth for RUNTIME
# seconds (--bytes=0: the profile's 1 GiB would end a QD32 run in under
# one); IOPS = read_ios / busy time of its step. Prints every pair, then
# per queue depth the median IOPS on and off and the median of the per-pair
# ratios on/off, and the drops of the traced runs. Needs root.
#
# With --pin, each queue depth runs at each placement of the tool and the
# loop device's workers (as bench/bench-engine.sh places them): none (the
# scheduler's choice), same (both on CPU 1), split (tool on CPU 0, workers
# on CPU 1). On a small virtual machine the placement alone moves QD1 IOPS
# by 4x (a wake-up across vCPUs costs tens of microseconds), so unpinned
# pairs measure the placement as much as the trace; pinned ones do not.
#
# Each run first ramps for RAMP (1s) unmeasured (fsprism run --ramp): a
# freshly started job runs far above its steady rate for its first 100-300
# ms here, and without a ramp that start-up moved single on/off pairs of
# 2 s runs by up to 30% (docs/results/tracing.md).
#
# usage: bench/trace-cost.sh [--rounds N] [--runtime S] [--ramp D] [--qd "1 32"] [--bs BS]
#                            [--pin "none same split"]
#   FSPRISM=path/to/fsprism overrides the binary (default ./build/fsprism).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROUNDS=6
RUNTIME=3
RAMP=1s
QDS="1 32"
BS=4k
PINS=none
bench_options trace-cost "--rounds=ROUNDS --runtime=RUNTIME --ramp=RAMP --qd=QDS --bs=BS --pin=PINS" "$@"
bench_need trace-cost

for pin in $PINS; do
	case $pin in none | same | split) ;;
	*) echo "trace-cost: unknown placement $pin (none, same, split)" >&2; exit 2 ;;
	esac
done

W=$(mktemp -d /dev/shm/fsprism-trace-cost.XXXXXX)
LOOP=
WQ_MASK=/sys/devices/virtual/workqueue/cpumask
WQ_BEFORE=$(cat "$WQ_MASK" 2>/dev/null || true)
TASKSET=()
# place PIN: the loop workers' CPUs (unbound workqueues) and the tool's
place() {
	case $1 in
	none) TASKSET=(); [ -z "$WQ_BEFORE" ] || echo "$WQ_BEFORE" >"$WQ_MASK" ;;
	same) TASKSET=(taskset -c 1); echo 2 >"$WQ_MASK" ;;
	split) TASKSET=(taskset -c 0); echo 2 >"$WQ_MASK" ;;
	esac
}
cleanup() {
	[ -z "$WQ_BEFORE" ] || echo "$WQ_BEFORE" >"$WQ_MASK"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	rm -rf "$W"
}
trap cleanup EXIT
truncate -s 1G "$W/img"
dd if=/dev/zero of="$W/img" bs=1M count=1024 conv=notrunc status=none # no holes
LOOP=$(losetup --find --show --direct-io=off "$W/img")
DB=$W/cost.db

# one_run QD on|off: prints "IOPS DROPPED"
one_run() {
	local trace=()
	[ "$2" = off ] && trace=(--no-trace)
	local out run
	out=$("${TASKSET[@]}" "$FSPRISM" run sustained-randread "$LOOP" --qd="$1" --bs="$BS" --time="${RUNTIME}s" \
		--bytes=0 --span=1G --ramp="$RAMP" --idle=0 --db "$DB" --quiet "${trace[@]}")
	run=$(sed -n 's/^run \([0-9]*\) stored in .*/\1/p' <<<"$out")
	sqlite3 "$DB" "SELECT printf('%.0f', read_ios * 1e9 / busy_ns),
		coalesce((SELECT value FROM run_attrs WHERE run=$run AND key='block.dropped'), '-')
		FROM steps WHERE run=$run AND step=0" | tr '|' ' '
}

echo "$("$FSPRISM" version 2>/dev/null | head -n 1), kernel $(uname -r), $(nproc) CPUs"
echo "target $LOOP over $W/img (tmpfs), 4 KiB-aligned random reads, bs $BS, ${RUNTIME}s per run after a $RAMP ramp"
CELLS=""
for pin in $PINS; do for qd in $QDS; do CELLS="$CELLS $qd@$pin"; : >"$W/pairs.$qd@$pin"; done; done
# rounds outside, cells inside: drift falls on every cell alike
for r in $(seq 1 "$ROUNDS"); do
	for cell in $CELLS; do
		qd=${cell%@*}
		place "${cell#*@}"
		if [ $((r % 2)) = 1 ]; then
			read -r on drop <<<"$(one_run "$qd" on)"
			read -r off _ <<<"$(one_run "$qd" off)"
		else
			read -r off _ <<<"$(one_run "$qd" off)"
			read -r on drop <<<"$(one_run "$qd" on)"
		fi
		echo "$on $off $drop" >>"$W/pairs.$cell"
		printf 'QD%-10s round %d: on %8d  off %8d  on/off %.3f  dropped %s\n' "$cell" "$r" \
			"$on" "$off" "$(awk "BEGIN{print $on / $off}")" "$drop"
	done
done
place none
for cell in $CELLS; do
	python3 - "$cell" "$W/pairs.$cell" <<'PY'
import statistics, sys
cell, path = sys.argv[1], sys.argv[2]
rows = [l.split() for l in open(path)]
on = [float(r[0]) for r in rows]; off = [float(r[1]) for r in rows]
ratios = [a / b for a, b in zip(on, off)]
drops = sum(int(r[2]) for r in rows if r[2].isdigit())
print(f"QD{cell}: median IOPS on {statistics.median(on):.0f}, off {statistics.median(off):.0f}; "
      f"median on/off {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}); "
      f"dropped in the traced runs: {drops}")
PY
done

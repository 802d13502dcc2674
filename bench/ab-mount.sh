#!/bin/bash
# bench/ab-mount.sh - two sets of fsprism mount options, A and B, side by side.
#
# One ext4 file system on a RAM-backed loop device (losetup over a file in
# /dev/shm), one 1 GiB data file, and two fsprism mounts of it at once: one
# with options A, one with B. fio (libaio) runs the job at each queue depth
# on A and on B in turn, the order swapped every round, so that machine drift
# hits both alike. Prints every run, then per queue depth the median IOPS of
# A and B and the median of the per-round ratios B/A. Needs root.
#
# usage: bench/ab-mount.sh [--rounds N] [--runtime S] [--qd "1 32"] [--rw RW]
#                          [--bs BS] [--direct 0|1] -- "A OPTIONS" "B OPTIONS"
#   e.g. bench/ab-mount.sh --qd "1 32" -- "--threads 2" "--threads 4"
#   FSPRISM=path/to/fsprism overrides the binary (default ./build/fsprism);
#   FSPRISM_B=path/to/other/fsprism mounts B with another build (two builds
#   side by side: give the same options twice, e.g. -- "" "").
#   Both mounts get --record=full unless the options say otherwise.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROUNDS=4
RUNTIME=4
QDS="1 32"
RW=randread
BS=4k
DIRECT=1
bench_options ab-mount "--rounds=ROUNDS --runtime=RUNTIME --qd=QDS --rw=RW --bs=BS --direct=DIRECT --" "$@"
shift "$BENCH_SHIFT"
[ $# -eq 2 ] || { echo "ab-mount: give the two option sets after --, e.g. -- \"--threads 2\" \"--threads 4\"" >&2; exit 2; }
OPTS_A=$1
OPTS_B=$2
bench_need ab-mount fio
FSPRISM_B=${FSPRISM_B:-$FSPRISM}
[ -x "$FSPRISM_B" ] || { echo "ab-mount: no fsprism binary at $FSPRISM_B (FSPRISM_B=)" >&2; exit 1; }

cleanup() {
	mountpoint -q "$T/mnt-a" && "$FSPRISM" umount "$T/mnt-a" >/dev/null 2>&1
	mountpoint -q "$T/mnt-b" && "$FSPRISM_B" umount "$T/mnt-b" >/dev/null 2>&1
	bench_ram_ext4_cleanup
}
bench_ram_ext4 ab cleanup
mkdir "$T/mnt-a" "$T/mnt-b"
# shellcheck disable=SC2086
"$FSPRISM" mount --record=full $OPTS_A --log "$T/a.db" "$T/ext4/data" "$T/mnt-a"
# shellcheck disable=SC2086
"$FSPRISM_B" mount --record=full $OPTS_B --log "$T/b.db" "$T/ext4/data" "$T/mnt-b"

echo "A: $FSPRISM $OPTS_A"
echo "B: $FSPRISM_B $OPTS_B"
echo "job: fio --rw=$RW --bs=$BS --direct=$DIRECT, ${RUNTIME} s, $ROUNDS rounds"
: >"$T/results"
for r in $(seq "$ROUNDS"); do
	for qd in $QDS; do
		order="a b"
		[ $((r % 2)) = 0 ] && order="b a"
		for m in $order; do
			[ "$DIRECT" = 0 ] && cat "$T/ext4/data/f" >/dev/null
			iops=$(fio --name=ab --filename="$T/mnt-$m/f" --size=1024M --ioengine=libaio \
				--time_based --runtime="$RUNTIME" --rw="$RW" --bs="$BS" --iodepth="$qd" \
				--direct="$DIRECT" --output-format=terse --terse-version=3 |
				awk -F';' '{ printf "%.0f", $8 + $49 }')
			echo "round $r qd $qd $m $iops" | tee -a "$T/results"
		done
	done
done

python3 - "$T/results" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    _, r, _, qd, m, iops = line.split()
    runs[(int(qd), int(r), m)] = float(iops)
for qd in sorted({k[0] for k in runs}):
    rounds = sorted({k[1] for k in runs if k[0] == qd})
    a = [runs[(qd, r, "a")] for r in rounds]
    b = [runs[(qd, r, "b")] for r in rounds]
    ratio = statistics.median(y / x for x, y in zip(a, b))
    print(f"QD{qd}: A median {statistics.median(a):.0f} IOPS, B median {statistics.median(b):.0f} IOPS, "
          f"B/A paired {ratio:.3f}")
EOF

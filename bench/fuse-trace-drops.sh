#!/bin/bash
# bench/fuse-trace-drops.sh - does the FUSE-transport trace of a plain
# `fsprism mount` keep every request at the highest rate here? ext4 on a
# RAM-backed loop device (losetup over a file in /dev/shm), one fsprism
# mount of it (traced: the default), fio 4 KiB random O_DIRECT reads at
# QD32 for RUNTIME seconds (libaio), unmount; prints fio's IOPS, the traced
# requests, the FUSE trace's losses (fuse.trace_missed and its parts) and
# the block trace's (block.dropped), and how many daemon read rows found
# their traced request. Target: 0 missed. Needs root.
#
# usage: bench/fuse-trace-drops.sh [--runtime S] [--qd N] [--rounds N]
#   FSPRISM=path/to/fsprism overrides the binary (default ./build/fsprism).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RUNTIME=10
QD=32
ROUNDS=1
bench_options fuse-trace-drops "--runtime=RUNTIME --qd=QD --rounds=ROUNDS" "$@"
bench_need fuse-trace-drops fio

cleanup() {
	mountpoint -q "$T/mnt" && "$FSPRISM" umount "$T/mnt" >/dev/null 2>&1
	bench_ram_ext4_cleanup
}
bench_ram_ext4 ftd cleanup
mkdir "$T/mnt"
echo "fsprism: $FSPRISM; fio 4k randread QD$QD ${RUNTIME}s on ext4 on $LOOP (RAM)"
printf '%-6s %9s %10s %7s %10s %9s %10s %13s\n' round iops traced missed ring_full map_full \
	blk_drop reads_joined
for r in $(seq "$ROUNDS"); do
	"$FSPRISM" mount --log "$T/d.db" "$T/ext4/data" "$T/mnt"
	fio --name=r --filename="$T/mnt/f" --rw=randread --bs=4k --iodepth="$QD" \
		--ioengine=libaio --direct=1 --runtime="$RUNTIME" --time_based \
		--output-format=json --output="$T/r.json" >/dev/null
	"$FSPRISM" umount "$T/mnt"
	run=$(sqlite3 "$T/d.db" "SELECT max(id) FROM runs")
	a() { sqlite3 "$T/d.db" "SELECT value FROM run_attrs WHERE run=$run AND key='$1'"; }
	iops=$(python3 -c "import json,sys; print(int(json.load(open(sys.argv[1]))['jobs'][0]['read']['iops']))" "$T/r.json")
	# the join as stats makes it (sorted by unique: no index needed)
	joined=$("$FSPRISM" stats "$T/d.db" --run "$run" --format json | python3 -c "
import json,sys; t=json.load(sys.stdin)['fuse_transport']
r=[o for o in t['ops'] if o['op']=='read'][0]; print('%d/%d' % (r['joined'], r['joined'] + r['unjoined']))")
	printf '%-6s %9s %10s %7s %10s %9s %10s %13s\n' "$r" "$iops" "$(a fuse.trace_requests)" \
		"$(a fuse.trace_missed)" "$(a fuse.trace_ring_full)" "$(a fuse.trace_map_full)" \
		"$(a block.dropped)" "$joined"
done

#!/bin/bash
# bench/bench-fuse.sh - how much does fsprism's FUSE layer cost, and what does
# its logging add?
#
# On a RAM-backed loop device (losetup over a file in /dev/shm) with ext4, in
# one run, alternating variant by variant within each round (the order turned
# and reversed from round to round; the buffered write starts with the file
# cached) so that machine noise hits all of them alike:
#   native          fio directly on the ext4 mount
#   passthrough_ll  libfuse's example, built here from the installed
#                   libfuse3-dev examples (its defaults: xattrs off)
#   passthrough_ll-xattr  the same with -o xattr (not in the default set): like
#                   fsprism it then serves the getxattr the kernel sends
#                   before every write
#   fsprism-off     fsprism mount --record=off
#   fsprism-full    fsprism mount --record=full
#   fsprism-sync    (not in the default set) --record=full --backing-io=sync:
#                   backing IO in the workers, 32 of them (the design before
#                   asynchronous backing IO)
# Jobs (fio, libaio): 4 KiB random read O_DIRECT QD1 and QD32, 128 KiB
# sequential read O_DIRECT QD1, 128 KiB sequential write O_DIRECT QD1, and
# 128 KiB sequential write buffered (passthrough_ll cannot do O_DIRECT writes).
# Prints per-variant median IOPS and the ratios the targets are stated in,
# plus fsprism's dropped-record count. Needs root.
#
# usage: bench/bench-fuse.sh [--rounds N] [--runtime SECONDS] [--size MiB]
#        (FSPRISM=path/to/fsprism overrides the binary; default ./build/fsprism;
#         FSPRISM_MOUNT_OPTS="--threads 8" adds mount options to the fsprism variants;
#         BENCH_JOBS="randread-4k-qd32" and BENCH_VARIANTS="fsprism-off fsprism-hist
#         fsprism-full" narrow a run; fsprism-hist is --record=hist and
#         passthrough_ll-xattr as above, neither in the default set)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROUNDS=3
RUNTIME=5
SIZE_MB=1024
bench_options bench-fuse "--rounds=ROUNDS --runtime=RUNTIME --size=SIZE_MB" "$@"
bench_need bench-fuse fio
EXAMPLES=/usr/share/doc/libfuse3-dev/examples
[ -f $EXAMPLES/passthrough_ll.c ] || { echo "bench-fuse: $EXAMPLES/passthrough_ll.c missing (libfuse3-dev)" >&2; exit 1; }

# job name -> fio arguments
job_args() {
	case "$1" in
	randread-4k-qd1)  echo "--rw=randread --bs=4k --iodepth=1 --direct=1" ;;
	randread-4k-qd32) echo "--rw=randread --bs=4k --iodepth=32 --direct=1" ;;
	seqread-128k-qd1) echo "--rw=read --bs=128k --iodepth=1 --direct=1" ;;
	seqwrite-128k-direct) echo "--rw=write --bs=128k --iodepth=1 --direct=1" ;;
	seqwrite-128k-buffered) echo "--rw=write --bs=128k --iodepth=1 --direct=0 --end_fsync=1" ;;
	esac
}
JOBS=${BENCH_JOBS:-"randread-4k-qd1 randread-4k-qd32 seqread-128k-qd1 seqwrite-128k-direct seqwrite-128k-buffered"}
VARIANTS=${BENCH_VARIANTS:-"native passthrough_ll fsprism-off fsprism-full"}
for job in $JOBS; do
	[ -n "$(job_args "$job")" ] || { echo "bench-fuse: unknown job '$job' in BENCH_JOBS" >&2; exit 2; }
done
for v in $VARIANTS; do
	case $v in
	native | passthrough_ll | passthrough_ll-xattr | fsprism-off | fsprism-hist | fsprism-full | \
	fsprism-sync) ;;
	*) echo "bench-fuse: unknown variant '$v' in BENCH_VARIANTS" >&2; exit 2 ;;
	esac
done

T=$(mktemp -d /tmp/fsprism-bench.XXXXXX)
SHM=$(mktemp -d /dev/shm/fsprism-bench.XXXXXX)
LOOP=""
cleanup() {
	set +e
	for m in "$T/mnt-ll" "$T/mnt-fsp"; do
		mountpoint -q "$m" 2>/dev/null && { "$FSPRISM" umount "$m" 2>/dev/null || fusermount3 -u "$m"; }
	done
	mountpoint -q "$T/ext4" 2>/dev/null && umount "$T/ext4"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	rm -rf "$SHM" "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# shellcheck disable=SC2046 # pkg-config's flags are meant to be split
gcc -O2 -Wall $(pkg-config fuse3 --cflags) "$EXAMPLES/passthrough_ll.c" \
	-o "$T/passthrough_ll" $(pkg-config fuse3 --libs)

truncate -s $((SIZE_MB + 512))M "$SHM/disk.img"
LOOP=$(losetup --find --show "$SHM/disk.img")
mkfs.ext4 -q -F "$LOOP"
mkdir -p "$T/ext4" "$T/mnt-ll" "$T/mnt-fsp" "$T/out"
mount "$LOOP" "$T/ext4"
mkdir "$T/ext4/data"
# one data file shared by every variant, fully written (not sparse)
dd if=/dev/urandom of="$T/ext4/data/bench.dat" bs=1M count="$SIZE_MB" status=none conv=fsync

DB="$T/bench.db"   # on the root disk, not on the device under test

mount_variant() {
	case "$1" in
	native) DIR="$T/ext4/data" ;;
	passthrough_ll)
		"$T/passthrough_ll" -o source="$T/ext4/data" "$T/mnt-ll"
		DIR="$T/mnt-ll" ;;
	passthrough_ll-xattr)
		"$T/passthrough_ll" -o source="$T/ext4/data" -o xattr "$T/mnt-ll"
		DIR="$T/mnt-ll" ;;
	fsprism-off)
		"$FSPRISM" mount --record=off ${FSPRISM_MOUNT_OPTS:-} --log "$DB" "$T/ext4/data" "$T/mnt-fsp"
		DIR="$T/mnt-fsp" ;;
	fsprism-hist)
		"$FSPRISM" mount --record=hist ${FSPRISM_MOUNT_OPTS:-} --log "$DB" "$T/ext4/data" "$T/mnt-fsp"
		DIR="$T/mnt-fsp" ;;
	fsprism-full)
		"$FSPRISM" mount --record=full ${FSPRISM_MOUNT_OPTS:-} --log "$DB" "$T/ext4/data" "$T/mnt-fsp"
		DIR="$T/mnt-fsp" ;;
	fsprism-sync)
		"$FSPRISM" mount --record=full --backing-io=sync ${FSPRISM_MOUNT_OPTS:-} --log "$DB" \
			"$T/ext4/data" "$T/mnt-fsp"
		DIR="$T/mnt-fsp" ;;
	esac
}

# CPU time (user+sys, in clock ticks) the variant's FUSE daemon has used so far.
daemon_ticks() {
	local pid
	case "$1" in
	passthrough_ll*) pid=$(pgrep -f "passthrough_ll -o source=$T/ext4/data" | head -1) ;;
	fsprism-*) pid=$(pgrep -f "mount --record=.*$T/ext4/data $T/mnt-fsp" | head -1) ;;
	*) echo 0; return ;;
	esac
	[ -n "$pid" ] && awk '{print $14 + $15}' "/proc/$pid/stat" || echo 0
}

umount_variant() {
	case "$1" in
	native) ;;
	passthrough_ll*) fusermount3 -u "$T/mnt-ll" ;;
	fsprism-*) "$FSPRISM" umount "$T/mnt-fsp" ;;
	esac
}


# order_variants R: the variant order of round R (0-based): the list turned by
# R/2 places, and reversed in odd rounds, so that over 2 x (number of
# variants) rounds each variant runs in each position and every pair runs in
# both orders (the second run after another's writes can be favoured or not).
order_variants() {
	local -a v o=()
	read -ra v <<<"$VARIANTS"
	local n=${#v[@]} i
	for ((i = 0; i < n; i++)); do o+=("${v[$(( (i + $1 / 2) % n ))]}"); done
	if (($1 % 2)); then
		for ((i = n - 1; i >= 0; i--)); do printf '%s ' "${o[$i]}"; done
	else
		printf '%s ' "${o[@]}"
	fi
}

for round in $(seq 1 "$ROUNDS"); do
	for job in $JOBS; do
		for v in $(order_variants $((round - 1))); do
			# the same start for every run: nothing dirty, and for a
			# buffered job the file's pages in ext4's page cache. A direct
			# write invalidates them, and on this guest memory the kernel
			# frees goes back to the host (virtio-balloon free page
			# reporting), so the first buffered run after a direct one paid
			# host page faults: its backing pwrite took 217-283 us against
			# 17-38 us (docs/results/performance.md).
			sync
			case " $(job_args "$job") " in
			*" --direct=0 "*) cat "$T/ext4/data/bench.dat" >/dev/null ;;
			esac
			mount_variant "$v"
			out="$T/out/$round.$job.$v.json"
			ticks0=$(daemon_ticks "$v")
			# shellcheck disable=SC2046
			if ! fio --name="$job" --filename="$DIR/bench.dat" --size="${SIZE_MB}M" \
				--ioengine=libaio --time_based --runtime="$RUNTIME" \
				--output-format=json --output="$out" $(job_args "$job") \
				>"$T/out/fio.err" 2>&1; then
				echo "{\"failed\": true}" >"$out"
			fi
			echo $(( $(daemon_ticks "$v") - ticks0 )) >"$out.ticks"
			umount_variant "$v"
			echo "round $round $job $v done" >&2
		done
	done
done

# Per-variant medians and ratios.
python3 - "$T/out" "$ROUNDS" "$JOBS" "$VARIANTS" <<'EOF'
import json, os, statistics, sys
out, rounds, jobs, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
def load(r, j, v):
    d = json.load(open(os.path.join(out, f"{r}.{j}.{v}.json")))
    if d.get("failed") or d["jobs"][0]["error"]:
        return None
    jb = d["jobs"][0]
    side = jb["write"] if jb["write"]["io_bytes"] > jb["read"]["io_bytes"] else jb["read"]
    ticks = int(open(os.path.join(out, f"{r}.{j}.{v}.json.ticks")).read())
    ios = side["total_ios"]
    cpu_us = ticks * 1e6 / os.sysconf("SC_CLK_TCK") / ios if ios else 0.0
    return side["iops"], side["lat_ns"]["mean"] / 1000.0, cpu_us
print(f"{'job':24} {'variant':20} {'IOPS':>10} {'lat us':>8} {'daemon CPU us/IO':>17}   per-round IOPS")
ratios = {}
cpus = {}
for j in jobs:
    med = {}
    for v in variants:
        vals = [load(r, j, v) for r in range(1, rounds + 1)]
        if any(x is None for x in vals):
            print(f"{j:24} {v:20} {'FAILED':>10}")
            continue
        iops = [x[0] for x in vals]
        med[v] = statistics.median(iops)
        lat = statistics.median(x[1] for x in vals)
        cpu = statistics.median(x[2] for x in vals)
        cpus.setdefault(j, {})[v] = cpu
        cpu_s = f"{cpu:17.2f}" if v != "native" else f"{'-':>17}"
        print(f"{j:24} {v:20} {med[v]:10.0f} {lat:8.1f} {cpu_s}   " + " ".join(f"{x:.0f}" for x in iops))
    ratios[j] = med
print()
print(f"{'job':24} {'full/passthrough_ll':>20} {'full/ll-xattr':>14} {'full/off':>9} {'off/native':>11} {'full/native':>12}")
for j in jobs:
    m = ratios[j]
    def r(a, b):
        return f"{m[a] / m[b]:.3f}" if a in m and b in m else "n/a"
    print(f"{j:24} {r('fsprism-full','passthrough_ll'):>20} {r('fsprism-full','passthrough_ll-xattr'):>14} "
          f"{r('fsprism-full','fsprism-off'):>9} {r('fsprism-off','native'):>11} {r('fsprism-full','native'):>12}")
print()
print("per-round paired ratios (median over rounds): IOPS, daemon CPU per IO")
for j in jobs:
    for v, base in (("fsprism-hist", "fsprism-off"), ("fsprism-full", "fsprism-off"),
                    ("fsprism-full", "fsprism-sync")):
        if v not in variants or base not in variants:
            continue
        pairs = [(load(r, j, v), load(r, j, base)) for r in range(1, rounds + 1)]
        if any(a is None or b is None for a, b in pairs):
            continue
        iops = statistics.median(a[0] / b[0] for a, b in pairs)
        cpu = statistics.median(a[2] / b[2] for a, b in pairs if b[2])
        name = v.removeprefix("fsprism-") + "/" + base.removeprefix("fsprism-")
        print(f"{j:24} {name:18} IOPS {iops:.3f}   CPU/IO {cpu:.3f}")
EOF
echo
echo "fsprism-full runs: recorded and dropped op rows"
sqlite3 "$DB" "SELECT id, record_mode, recorded, dropped FROM runs WHERE kind='mount' AND record_mode='full' ORDER BY id;"

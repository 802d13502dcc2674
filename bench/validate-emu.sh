#!/bin/bash
# bench/validate-emu.sh - check fsprism's copy-on-write / journaling emulation
# against real kernel file systems, on one RAM-backed loop device.
#
# One loop device (losetup --direct-io=on over a file in /dev/shm) is used by
# every target in turn: ext4 (data=ordered), xfs and btrfs made on it, the
# raw device, and fsprism mounts whose store is the device itself
# (`fsprism mount --store /dev/loopN`, backing directory on /tmp), so the
# device sees exactly what the emulation writes. Device-side numbers are
# deltas of /sys/block/loopN/stat (no blktrace).
#
#   1. Fragmentation: a file written sequentially (1 MiB O_DIRECT writes),
#      then random 4 KiB O_DIRECT overwrites (fio, fixed seed, every block at
#      most once); extents before and after (filefrag; fsprism: `fsprism
#      stats --format json` after unmount) and a 128 KiB QD1 O_DIRECT
#      sequential read before and after (best of 5 rounds); then the file
#      and an untouched twin read alternately (5 rounds: the paired ratio,
#      free of drift), for fsprism also from its own log (time in its
#      handlers, without the FUSE transport); btrfs -o nodatasum as an extra
#      reference. The cost per extent of a 128 KiB read is measured on btrfs
#      and on fsprism with a file of one extent per 4 KiB block; their
#      difference (the kernel's per-extent work) is then modelled with
#      --extent-cost in a second --cow=always run.
#      Targets: fsprism --cow=always within 15% of btrfs's extent count and
#      its paired read ratio (with --extent-cost, inside its handlers: the
#      FUSE transport left out) within 25% of btrfs's;
#      --cow=off adds no extents, as ext4.
#   2. Mixed sequential 128 KiB QD1, read mixes 100/70/50/30/0 (`fsprism run
#      mixed-seq`, one run per mix): MB/s of raw, ext4, xfs, btrfs, fsprism
#      --cow=always and --cow=off, device requests and bytes per mix, and
#      fsprism's device-level sequential share and stream count (each mix is
#      its own mount, so `fsprism stats` covers exactly that mix).
#   3. Small fsync-heavy writes: fio 4 KiB random writes, fsync after each,
#      into a preallocated file: device bytes written per user byte and
#      flushes per fsync for ext4, xfs, btrfs and three fsprism modes; for
#      fsprism also its own accounting over the same window, which must
#      agree with the device.
#
# Prints a table per test and the pass/fail of each target. Exit status:
# 0 all targets met, 3 the run completed but a target was missed, 1 error.
# Cleans up (mounts, loop device, /dev/shm file, temp dir) on every exit,
# Ctrl-C included. Needs root, fio, jq, sqlite3, python3, e2fsprogs,
# btrfs-progs (xfsprogs optional).
#
# usage: sudo bench/validate-emu.sh [--quick] [--tests 1,2,3] [--db FILE]
#   --quick     small sizes and short steps (a smoke run of the script itself)
#   --tests     run only these tests
#   --db FILE   keep the results database (default: a temp file, removed)
#   FSPRISM=path/to/fsprism overrides the binary (default ./build/fsprism,
#   then ./fsprism)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

QUICK=0
TESTS="1,2,3"
KEEP_DB=""
bench_options validate-emu "--quick=QUICK=1 --tests=TESTS --db=KEEP_DB" "$@"
[ -n "${FSPRISM:-}" ] || [ -x build/fsprism ] || FSPRISM=$(pwd)/fsprism
bench_need validate-emu fio jq sqlite3 python3 filefrag losetup wipefs mkfs.ext4 mkfs.btrfs fusermount3
FSPRISM=$(readlink -f "$FSPRISM")
HAVE_XFS=1
command -v mkfs.xfs >/dev/null || HAVE_XFS=0

# Sizes. The overwrite count keeps the same share of the file (1/8) at
# both scales, so extents per MiB are comparable.
DEV_SIZE=2G
if [ $QUICK = 1 ]; then
	T1_FILE_MB=32; T1_OVERWRITES=1024; T1_READ_TIME=300ms; T1_COMB_MB=8
	T2_SPAN=96M; T2_TIME=300ms
	T3_FILE_MB=16; T3_WRITES=256
else
	T1_FILE_MB=256; T1_OVERWRITES=8192; T1_READ_TIME=2s; T1_COMB_MB=32
	T2_SPAN=512M; T2_TIME=2s
	T3_FILE_MB=64; T3_WRITES=4096
fi
T2_MIXES="100 70 50 30 0"
SEED=4242

T=$(mktemp -d /tmp/fsprism-validate.XXXXXX)
SHM=$(mktemp -d /dev/shm/fsprism-validate.XXXXXX)
LOOP=""
MNT=$T/mnt       # real file systems
FUSE=$T/fuse     # fsprism mounts
BACKING=$T/backing
DB=${KEEP_DB:-$T/validate.db}
[ -n "$KEEP_DB" ] && DB=$(readlink -f "$KEEP_DB")
RES=$T/results   # "test target key value" lines, read by the report below
mkdir -p "$MNT" "$FUSE" "$BACKING"
: >"$RES"
FSPRISM_DAEMON_LOG=$T/daemon.log; export FSPRISM_DAEMON_LOG

cleanup() {
	local rc=$?
	set +e
	trap - INT TERM
	if mountpoint -q "$FUSE" 2>/dev/null; then
		timeout 60 "$FSPRISM" umount "$FUSE" 2>/dev/null || fusermount3 -u "$FUSE" 2>/dev/null ||
			umount -l "$FUSE"
	fi
	if mountpoint -q "$MNT" 2>/dev/null; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT"
	fi
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	if [ $rc -ne 0 ] && [ $rc -ne 3 ] && [ -s "$T/daemon.log" ]; then
		echo "validate-emu: fsprism daemon stderr:" >&2; tail -20 "$T/daemon.log" >&2
	fi
	rm -rf "$SHM" "$T"
	exit $rc
}
trap cleanup EXIT
trap 'echo "validate-emu: interrupted; cleaning up" >&2; exit 130' INT TERM

say() { echo "validate-emu: $*" >&2; }
put() { echo "$*" >>"$RES"; }   # put TEST TARGET KEY VALUE
got() { awk -v t="$1" -v x="$2" -v k="$3" '$1 == t && $2 == x && $3 == k { print $4 }' "$RES"; }   # got TEST TARGET KEY: its VALUE
die() { say "$*"; exit 1; }

# --- the device and its counters ---------------------------------------------

truncate -s $DEV_SIZE "$SHM/disk.img"
LOOP=$(losetup --find --show --direct-io=on "$SHM/disk.img")
LN=${LOOP#/dev/}
[ "$(cat /sys/block/$LN/loop/dio 2>/dev/null)" = 1 ] || say "warning: $LOOP is not in direct-IO mode"

snap() { cat /sys/block/$LN/stat; }
# delta BEFORE AFTER -> "read_reqs read_bytes write_reqs write_bytes flushes
# queue_depth" (fields 1, 3, 5, 7 and 16 of the stat file; flushes "-" on
# kernels without them; this kernel counts an empty flush request among the
# write requests; queue depth = time_in_queue / io_ticks, fields 11 and 10:
# the mean number of requests in flight while the device was busy)
delta() {
	echo "$1 $2" | awk '{ n = NF / 2; busy = $(n+10) - $10;
		printf "%.0f %.0f %.0f %.0f %s %s\n", $(n+1) - $1, ($(n+3) - $3) * 512, $(n+5) - $5,
			($(n+7) - $7) * 512, (n >= 17 ? $(n+16) - $16 : "-"),
			(busy > 0 ? sprintf("%.2f", ($(n+11) - $11) / busy) : "-") }'
}
# put_delta TEST TARGET PREFIX BEFORE AFTER
put_delta() {
	local d; read -r -a d <<<"$(delta "$4" "$5")"
	put "$1" "$2" "$3.rd_reqs" "${d[0]}"; put "$1" "$2" "$3.rd_bytes" "${d[1]}"
	put "$1" "$2" "$3.wr_reqs" "${d[2]}"; put "$1" "$2" "$3.wr_bytes" "${d[3]}"
	put "$1" "$2" "$3.flushes" "${d[4]}"; put "$1" "$2" "$3.qdepth" "${d[5]}"
}

# How many device flushes one write with O_DSYNC|O_DIRECT costs here (the
# emulation's FUA write): on a device without FUA the block layer adds a
# post-flush, and the kernel's O_DSYNC handling may add its own.
probe_fua_flushes() {
	local a b
	a=$(snap)
	dd if=/dev/zero of="$LOOP" bs=4k count=1 seek=1000 oflag=direct,dsync status=none
	b=$(snap)
	delta "$a" "$b" | awk '{print $5}'
}
FUA_FLUSHES=$(probe_fua_flushes)
put all device fua_flushes "$FUA_FLUSHES"
put all device fua_capable "$(cat /sys/block/$LN/queue/fua 2>/dev/null || echo '?')"

# --- targets -----------------------------------------------------------------

# fs_up FS: make FS on the device and mount it on $MNT.
fs_up() {
	case $1 in
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$LOOP"
	      mount -o data=ordered "$LOOP" "$MNT" ;;
	xfs) mkfs.xfs -q -f "$LOOP" && mount "$LOOP" "$MNT" ;;
	btrfs) mkfs.btrfs -q -f "$LOOP" >/dev/null && mount "$LOOP" "$MNT" ;;
	# copy-on-write kept, data checksums off (new files get NODATASUM)
	btrfs-nosum) mkfs.btrfs -q -f "$LOOP" >/dev/null && mount -o nodatasum "$LOOP" "$MNT" ;;
	esac
}
fs_down() { umount "$MNT"; }

# fsp_up COW JOURNAL [--format]: fsprism mount with the device as store.
# --format starts from a new store and an empty backing directory.
# FSP_EXTRA: more mount options (word-split), e.g. --extent-cost.
FSP_EXTRA=""
fsp_up() {
	local cow=$1 journal=$2 fmt=${3:-}
	if [ "$fmt" = --format ]; then
		rm -rf "$BACKING"; mkdir "$BACKING"
		# shellcheck disable=SC2086
		"$FSPRISM" mount --cow="$cow" --journal="$journal" --store "$LOOP" --format --destroy-data \
			$FSP_EXTRA --log "$DB" "$BACKING" "$FUSE" ||
			die "fsprism mount --cow=$cow --journal=$journal $FSP_EXTRA --format failed"
	else
		# shellcheck disable=SC2086
		"$FSPRISM" mount --cow="$cow" --journal="$journal" --store "$LOOP" \
			$FSP_EXTRA --log "$DB" "$BACKING" "$FUSE" ||
			die "fsprism mount --cow=$cow --journal=$journal $FSP_EXTRA failed"
	fi
}
# fsp_down: unmount (waits until the daemon stored everything); prints the
# mount's run id.
fsp_down() {
	timeout 300 "$FSPRISM" umount "$FUSE" || die "fsprism umount failed"
	sqlite3 "$DB" "SELECT max(id) FROM runs WHERE kind='mount' AND backing_path='$BACKING'"
}
# fsp_json RUN: the emulation part of `fsprism stats`.
fsp_json() {
	"$FSPRISM" stats "$DB" --run "$1" --format json >"$T/stats.json" || die "fsprism stats --run $1 failed"
	jq -e '.emulation' "$T/stats.json" >/dev/null || die "fsprism stats --run $1: no \"emulation\" in the JSON"
}
# fsp_extents RUN FILE: extent count of FILE from `fsprism stats` (and the
# emu_files table; the two must agree).
fsp_extents() {
	local a b
	fsp_json "$1"
	a=$(jq -r --arg p "$2" '[.emulation.files[] | select(.path == $p) | .extents][0] // "none"' "$T/stats.json")
	b=$(sqlite3 "$DB" "SELECT extents FROM emu_files WHERE run=$1 AND path='$2'")
	[ "$a" = "$b" ] || say "warning: run $1 $2: stats JSON says $a extents, emu_files says $b"
	echo "$a"
}
# filefrag's count ("F: N extents found").
ff_extents() { filefrag "$1" | sed -n 's/.*: \([0-9]*\) extents\{0,1\} found/\1/p'; }

# run_fio NAME ARGS...: fio with JSON output to $T/NAME.json.
run_fio() {
	local name=$1; shift
	fio --name="$name" --output-format=json --output="$T/$name.json" "$@" >"$T/fio.err" 2>&1 ||
		{ cat "$T/fio.err" "$T/$name.json" >&2 2>/dev/null; die "fio $name failed"; }
	# fio writes its warnings into the JSON file too; keep the JSON
	sed -i -n '/^{/,$p' "$T/$name.json"
}
fio_get() { jq -r ".jobs[0].$2" "$T/$1.json"; }

# write_file NAME FILE MiB: a file written sequentially in 1 MiB direct writes,
# not preallocated, so that each target lays it out its own way.
write_file() {
	run_fio "$1" --filename="$2" --rw=write --bs=1M --iodepth=1 --direct=1 --ioengine=libaio \
		--size="${3}M" --fallocate=none --end_fsync=1
}

# --- report (tables and targets) ---------------------------------------------

report() {
	python3 - "$RES" "$1" "$QUICK" <<'EOF'
import sys
res, which, quick = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
R = {}
for line in open(res):
    f = line.split()
    if len(f) >= 4:
        R[(f[0], f[1], f[2])] = " ".join(f[3:])
def g(t, tgt, k, default=None):
    v = R.get((t, tgt, k))
    if v is None or v in ("-", "none", "null", ""):
        return default
    try:
        return float(v)
    except ValueError:
        return v
def fmt(x, spec="{:.2f}", width=10):
    s = "-" if x is None else spec.format(x)
    return s.rjust(width)
verdicts = open(res, "a")
def verdict(name, ok, detail):
    word = "PASS" if ok else ("FAIL" if ok is not None else "N/A ")
    print(f"  [{word}] {name}: {detail}")
    verdicts.write(f"verdict {'pass' if ok else ('fail' if ok is not None else 'na')} {name.replace(' ', '_')} 1\n")

LABEL = {"raw": "raw device", "ext4": "ext4", "xfs": "xfs", "btrfs": "btrfs",
         "btrfs-nosum": "btrfs -o nodatasum",
         "fsp-cow": "fsprism cow=always", "fsp-off": "fsprism cow=off journal=ordered",
         "fsp-cow-x": "fsprism cow=always extent-cost",
         "fsp-cow-jo": "fsprism cow=always journal=ordered",
         "fsp-cow-j0": "fsprism cow=always journal=off",
         "fsp-off-jo": "fsprism cow=off journal=ordered"}
def present(t, tgts):
    return [x for x in tgts if any(k[0] == t and k[1] == x for k in R)]

if which == "1":
    tg = present("t1", ["ext4", "xfs", "btrfs", "btrfs-nosum", "fsp-cow", "fsp-cow-x", "fsp-off"])
    print("\nTest 1: fragmentation (%d MiB file, %d random 4 KiB O_DIRECT overwrites; "
          "read = 128 KiB QD1 O_DIRECT sequential)" % (g("t1", "all", "file_mb"), g("t1", "all", "overwrites")))
    print(f"{'target':34} {'extents':>8} {'after':>8} {'new':>7}   {'read MB/s':>9} {'after':>8} {'ratio':>6}"
          f"   {'dev reqs/read':>13} {'after':>6}   {'dev QD':>6} {'after':>6}   {'overwrite WA':>12}")
    for x in tg:
        eb, ea = g("t1", x, "extents_before"), g("t1", x, "extents_after")
        rb, ra = g("t1", x, "read_before_mbs"), g("t1", x, "read_after_mbs")
        def per(p):
            n = g("t1", x, p + "_ios")
            r = g("t1", x, p + ".rd_reqs")
            return r / n if n and r is not None else None
        ub = g("t1", x, "overwrite_user_bytes")
        wb = g("t1", x, "ow.wr_bytes")
        print(f"{LABEL[x]:34} {fmt(eb,'{:.0f}',8)} {fmt(ea,'{:.0f}',8)} "
              f"{fmt(ea - eb if ea is not None and eb is not None else None,'{:+.0f}',7)}   "
              f"{fmt(rb,'{:.0f}',9)} {fmt(ra,'{:.0f}',8)} {fmt(ra / rb if ra and rb else None,'{:.3f}',6)}   "
              f"{fmt(per('rb'),'{:.2f}',13)} {fmt(per('ra'),'{:.2f}',6)}   "
              f"{fmt(g('t1', x, 'rb.qdepth'),'{:.2f}',6)} {fmt(g('t1', x, 'ra.qdepth'),'{:.2f}',6)}   "
              f"{fmt(wb / ub if wb is not None and ub else None,'{:.2f}',12)}")
    print("  (read MB/s: best of 5 rounds; dev reqs/read: device read requests per 128 KiB user read;"
          " dev QD: mean requests\n   in flight while the device was busy (time_in_queue / io_ticks);"
          " overwrite WA: device bytes written\n   during the overwrite / user bytes; device numbers"
          " from /sys/block deltas)")
    for x in tg:
        print(f"  {LABEL[x]:32} rounds before {R.get(('t1', x, 'read_before_all'), '-')}"
              f"  after {R.get(('t1', x, 'read_after_all'), '-')}")
    print("Paired read ratio: the fragmented file / its untouched twin, read alternately, 5 rounds"
          " (median; per round):")
    for x in tg:
        print(f"  {LABEL[x]:32} {fmt(g('t1', x, 'paired_ratio'), '{:.3f}', 6)}"
              f"   {R.get(('t1', x, 'paired_all'), '-')}")
    fsp = [x for x in tg if g("t1", x, "handler_paired") is not None]
    if fsp:
        print("Inside fsprism's handlers (its own log; emulation and device, no FUSE transport):")
        for x in fsp:
            print(f"  {LABEL[x]:32} us per 128 KiB read before {fmt(g('t1', x, 'handler_before_us'), '{:.1f}', 6)}"
                  f" after {fmt(g('t1', x, 'handler_after_us'), '{:.1f}', 6)}"
                  f"  ratio {fmt(g('t1', x, 'handler_ratio'), '{:.3f}', 6)}"
                  f"  paired {fmt(g('t1', x, 'handler_paired'), '{:.3f}', 6)}"
                  f"   {R.get(('t1', x, 'handler_paired_all'), '-')}")
    cal = [x for x in tg if g("t1", x, "comb_extent_ns") is not None]
    if cal:
        print("Per-extent cost of a 128 KiB read: a %d MiB file whose 4 KiB blocks are each their own"
              " extent (32 per read)\nagainst a sequential one, read alternately, 5 rounds:" % g("t1", "all", "comb_mb"))
        for x in cal:
            print(f"  {LABEL[x]:32} extents {fmt(g('t1', x, 'comb_extents'), '{:.0f}', 6)}"
                  f"  us per read {fmt(g('t1', x, 'twin_read_us'), '{:.1f}', 6)} ->"
                  f" {fmt(g('t1', x, 'comb_read_us'), '{:.1f}', 6)}"
                  f"  ns per extent {fmt(g('t1', x, 'comb_extent_ns'), '{:.0f}', 6)}"
                  f"   {R.get(('t1', x, 'comb_all'), '-')}")
        c = g("t1", "all", "extent_cost_ns")
        if c is not None:
            print(f"  --extent-cost for 'fsprism cow=always extent-cost': btrfs minus fsprism = {c:.0f} ns")
    print("Targets:")
    ef, eb_ = g("t1", "fsp-cow", "extents_after"), g("t1", "btrfs", "extents_after")
    if ef is not None and eb_:
        d = ef / eb_ - 1
        verdict("t1 extents", abs(d) <= 0.15,
                f"fsprism cow=always {ef:.0f} vs btrfs {eb_:.0f} extents: {d:+.1%} (target within 15%)")
    else:
        verdict("t1 extents", None, "missing a count")
    def ratio(x):
        a, b = g("t1", x, "read_after_mbs"), g("t1", x, "read_before_mbs")
        return a / b if a and b else None
    # The verdict uses paired ratios (drift cancels within a pair). It
    # judges the emulated file system: fsprism's time inside its handlers
    # (emulation and device; the FUSE transport, a fixed cost per read that
    # a kernel file system does not have, left out), with the kernel's
    # per-extent work modelled by --extent-cost measured above on another
    # file. The end-to-end and unmodelled figures are printed beside it.
    rb_ = g("t1", "btrfs", "paired_ratio")
    ab = ratio("btrfs")
    hx = g("t1", "fsp-cow-x", "handler_paired")
    if hx and rb_:
        d = hx / rb_ - 1
        verdict("t1 read ratio", abs(d) <= 0.25,
                f"read fragmented/twin (paired): fsprism cow=always with --extent-cost, inside its handlers,"
                f" {hx:.3f} vs btrfs {rb_:.3f}: {d:+.1%} (target within 25%)")
    else:
        verdict("t1 read ratio", None, "missing a read measurement")
    for x, key, how in (("fsp-cow-x", "paired_ratio", "end to end"),
                        ("fsp-cow", "handler_paired", "inside its handlers"),
                        ("fsp-cow", "paired_ratio", "end to end")):
        rf = g("t1", x, key)
        if rf and rb_:
            af = ratio(x) if key == "paired_ratio" else g("t1", x, "handler_ratio")
            unpaired = f"; after/before {af:.3f} vs {ab:.3f}: {af / ab - 1:+.1%}" if af and ab else ""
            print(f"  (not a target) {LABEL[x]}, {how}: paired {rf:.3f} vs btrfs {rb_:.3f}:"
                  f" {rf / rb_ - 1:+.1%}{unpaired}")
    rf = g("t1", "fsp-cow", "paired_ratio")
    rn = g("t1", "btrfs-nosum", "paired_ratio")
    if rf and rn:
        print(f"  (not a target) btrfs without data checksums: paired ratio {rn:.3f}; "
              f"fsprism cow=always {rf / rn - 1:+.1%} from it, btrfs {rb_ / rn - 1:+.1%}")
    def new(x):
        a, b = g("t1", x, "extents_after"), g("t1", x, "extents_before")
        return a - b if a is not None and b is not None else None
    no, ne = new("fsp-off"), new("ext4")
    if no is not None and ne is not None:
        verdict("t1 cow=off like ext4", no == 0 and ne == 0,
                f"new extents: fsprism cow=off {no:+.0f}, ext4 {ne:+.0f} (target: none for both)")
    else:
        verdict("t1 cow=off like ext4", None, "missing a count")

elif which == "2":
    tg = present("t2", ["raw", "ext4", "xfs", "btrfs", "fsp-cow", "fsp-off"])
    mixes = [int(m) for m in R[("t2", "all", "mixes")].split(",")]
    print("\nTest 2: mixed sequential 128 KiB QD1 (one shared offset), %s per mix, span %s" %
          (R[("t2", "all", "time")], R[("t2", "all", "span")]))
    short = {"raw": "raw", "ext4": "ext4", "xfs": "xfs", "btrfs": "btrfs", "fsp-cow": "fsp cow",
             "fsp-off": "fsp off"}
    def row(title, fn, spec, width=9):
        print(f"{title:10}" + "".join(fmt(fn(x, m), spec, width) for x in tg))
    def head(what):
        print(f"\n{what}")
        print(f"{'mix r/w':10}" + "".join(f"{short[x]:>9}" for x in tg))
    head("MB/s (reads + writes over busy time)")
    for m in mixes:
        row(f"{m}/{100-m}", lambda x, m=m: g("t2", x, f"m{m}.mbs"), "{:.0f}")
    print(f"{'mean':10}" + "".join(fmt(
        sum(g("t2", x, f"m{m}.mbs") or 0 for m in mixes) / len(mixes), "{:.0f}", 9) for x in tg))
    print("  (fsp cow = fsprism --cow=always --journal=off; fsp off = --cow=off --journal=ordered)")
    def reqs_per_io(x, m):
        n = g("t2", x, f"m{m}.ios"); r = g("t2", x, f"m{m}.dev.rd_reqs"); w = g("t2", x, f"m{m}.dev.wr_reqs")
        f = g("t2", x, f"m{m}.dev.flushes") or 0
        return (r + w - f) / n if n and r is not None and w is not None else None
    head("device requests per user IO (reads + writes, flushes not counted)")
    for m in mixes:
        row(f"{m}/{100-m}", lambda x, m=m: reqs_per_io(x, m), "{:.2f}")
    def wa(x, m):
        u = g("t2", x, f"m{m}.user_wr_bytes"); d = g("t2", x, f"m{m}.dev.wr_bytes")
        return d / u if u and d is not None else None
    head("device bytes written / user bytes written")
    for m in mixes[1:]:
        row(f"{m}/{100-m}", lambda x, m=m: wa(x, m), "{:.3f}")
    head("device flushes")
    for m in mixes:
        row(f"{m}/{100-m}", lambda x, m=m: g("t2", x, f"m{m}.dev.flushes"), "{:.0f}")
    fs = [x for x in tg if x.startswith("fsp")]
    if fs:
        print("\nfsprism's own device-level view (fsprism stats, each mix its own mount):")
        print(f"{'mix r/w':10}" + "".join(f"{short[x] + ' seq':>13}{'streams':>9}{'dev IOs':>9}" for x in fs))
        for m in mixes:
            print(f"{m}/{100-m:<6}" + "".join(
                fmt(g("t2", x, f"m{m}.seq_share"), "{:.1%}", 13) + fmt(g("t2", x, f"m{m}.streams"), "{:.2f}", 9) +
                fmt(g("t2", x, f"m{m}.dev_ios"), "{:.0f}", 9) for x in fs))
        print("  (seq: share of device IOs starting where an earlier IO of the same stream ended;"
              " streams: mean distinct streams per 16 device IOs, 1 = purely sequential)")
    print("Targets: none numeric (the issue asks for the curve and its explanation; see docs/results/validation.md)")

elif which == "3":
    tg = present("t3", ["ext4", "xfs", "btrfs", "fsp-cow-jo", "fsp-cow-j0", "fsp-off-jo"])
    n = g("t3", "all", "writes")
    print("\nTest 3: %d random 4 KiB writes, fsync after each, into a %d MiB file (device side: "
          "/sys/block deltas over the fio run)" % (n, g("t3", "all", "file_mb")))
    print(f"{'target':36} {'us/write':>9} {'dev MiB wr':>10} {'WA':>7} {'wr reqs':>8} {'flushes':>8} {'flush/fsync':>11}")
    for x in tg:
        ub = g("t3", x, "user_bytes"); wb = g("t3", x, "io.wr_bytes")
        fl = g("t3", x, "io.flushes"); fsy = g("t3", x, "fsyncs")
        print(f"{LABEL[x]:36} {fmt(g('t3', x, 'us_per_write'),'{:.0f}',9)} "
              f"{fmt(wb / 2**20 if wb is not None else None,'{:.1f}',10)} "
              f"{fmt(wb / ub if wb is not None and ub else None,'{:.2f}',7)} "
              f"{fmt(g('t3', x, 'io.wr_reqs'),'{:.0f}',8)} {fmt(fl,'{:.0f}',8)} "
              f"{fmt(fl / fsy if fl is not None and fsy else None,'{:.2f}',11)}")
    print("  (WA = device bytes written / user bytes written; wr reqs include empty flush requests,"
          " as this kernel counts them)")
    fs = [x for x in tg if x.startswith("fsp")]
    if fs:
        print("\nfsprism's own accounting (fsprism stats) against the device, mount to unmount:")
        print(f"{'target':36} {'WA data':>8} {'journal':>8} {'meta':>8} {'ckpt':>8} {'total':>8}"
              f" {'flushes':>8} {'fsyncs':>7} {'commits':>8}")
        for x in fs:
            print(f"{LABEL[x]:36}" + "".join(fmt(g("t3", x, "wa." + k), "{:.3f}", 9 if k == "data" else 9)
                                             for k in ("data", "journal", "metadata", "checkpoint", "total"))
                  + fmt(g("t3", x, "own.flushes"), "{:.0f}", 9) + fmt(g("t3", x, "own.fsyncs"), "{:.0f}", 8)
                  + fmt(g("t3", x, "own.commits"), "{:.0f}", 9))
        k = g("all", "device", "fua_flushes")
        print(f"  (for reference: one O_DSYNC write costs {k:.0f} device flushes here, device fua="
              f"{R.get(('all', 'device', 'fua_capable'), '?')}; the emulation sends a FUA write as"
              f" the write and one flush)")
        print(f"{'target':36} {'dev bytes wr':>13} {'own':>13} {'dev bytes rd':>13} {'own':>13}"
              f" {'dev flushes':>12} {'own':>6} {'own FUA':>8}")
        for x in fs:
            dw, ow = g("t3", x, "mnt.wr_bytes"), g("t3", x, "own.wr_bytes")
            dr, orr = g("t3", x, "mnt.rd_bytes"), g("t3", x, "own.rd_bytes")
            df, of_ = g("t3", x, "mnt.flushes"), g("t3", x, "own.flushes")
            fua = g("t3", x, "own.fua_writes")
            print(f"{LABEL[x]:36} {fmt(dw,'{:.0f}',13)} {fmt(ow,'{:.0f}',13)} {fmt(dr,'{:.0f}',13)}"
                  f" {fmt(orr,'{:.0f}',13)} {fmt(df,'{:.0f}',12)} {fmt(of_,'{:.0f}',6)} {fmt(fua,'{:.0f}',8)}")
        print("Targets:")
        for x in fs:
            dw, ow = g("t3", x, "mnt.wr_bytes"), g("t3", x, "own.wr_bytes")
            dr, orr = g("t3", x, "mnt.rd_bytes"), g("t3", x, "own.rd_bytes")
            if dw is not None and ow is not None:
                verdict(f"t3 bytes {x}", dw == ow,
                        f"{LABEL[x]}: device wrote {dw:.0f} B, fsprism counted {ow:.0f} B (target: equal);"
                        f" reads {dr:.0f} vs {orr:.0f} B: the device also served {dr - orr:.0f} B read"
                        f" by the safety probes before the store opens")
            else:
                verdict(f"t3 bytes {x}", None, "missing a count")
            df, of_, fua = g("t3", x, "mnt.flushes"), g("t3", x, "own.flushes"), g("t3", x, "own.fua_writes")
            if df is None or of_ is None:
                verdict(f"t3 flushes {x}", None, "no flush counters")
            else:
                # a FUA write of the emulation is sent as the write and a
                # flush, both recorded: the counts must be equal
                verdict(f"t3 flushes {x}", df == of_,
                        f"device {df:.0f} flushes, fsprism recorded {of_:.0f}"
                        f" (of which {fua or 0:.0f} follow FUA writes); target: equal")

elif which == "summary":
    v = [(k[1], k[2]) for k in R if k[0] == "verdict"]
    p = sum(1 for s, _ in v if s == "pass"); f = sum(1 for s, _ in v if s == "fail")
    na = sum(1 for s, _ in v if s == "na")
    print(f"\nSummary: {p} targets met, {f} missed, {na} not decidable"
          + (" (--quick: sizes below the issue's; not the validation itself)" if quick else ""))
    for s, name in sorted(v):
        if s != "pass":
            print(f"  {s}: {name.replace('_', ' ')}")
    sys.exit(3 if f else 0)
EOF
}

# --- test 1: fragmentation ---------------------------------------------------

mono_ns() { python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))'; }
# window TARGET LABEL ROUND T0 T1: a read phase's time span (CLOCK_MONOTONIC,
# the clock of ops.start_ns), so fsprism's own log can be cut to it.
window() { echo "$2 $3 $4 $5" >>"$T/win.$1"; }

# t1_read TARGET WHEN FILE: 128 KiB QD1 O_DIRECT sequential read, time-based,
# five times; MB/s is the best of the five (other load on the machine only
# ever slows a round down), IO counts are over all five.
t1_read() {
	local a b mbs="" ios=0 w0
	a=$(snap)
	w0=$(mono_ns)
	for _ in 1 2 3 4 5; do
		run_fio "t1-read" --filename="$3" --rw=read --bs=128k --iodepth=1 --direct=1 \
			--ioengine=libaio --size="${T1_FILE_MB}M" --time_based --runtime="$T1_READ_TIME"
		mbs="$mbs $(fio_get t1-read 'read.bw_bytes / 1e6 | round')"
		ios=$((ios + $(fio_get t1-read read.total_ios)))
	done
	window "$1" "$2" 0 "$w0" "$(mono_ns)"
	b=$(snap)
	put t1 "$1" "read_${2}_mbs" "$(echo $mbs | tr ' ' '\n' | sort -g | tail -n 1)"
	put t1 "$1" "read_${2}_all" "$(echo $mbs | tr ' ' ,)"
	put t1 "$1" "r${2:0:1}_ios" "$ios"
	put_delta t1 "$1" "r${2:0:1}" "$a" "$b"
}
# t1_pair TARGET FRAG TWIN: the fragmented file against its twin, written
# sequentially at the same time and never overwritten, read alternately
# (the order flips each round), five rounds; the ratio is the median of
# the five per-round ratios. Before and after are minutes apart and this
# machine drifts by up to 25% over minutes; a pair is seconds apart.
t1_pair() {
	local i f t r x w0 ratios="" first
	for i in 1 2 3 4 5; do
		if [ $((i % 2)) = 1 ]; then first="$2 $3"; else first="$3 $2"; fi
		for x in $first; do
			w0=$(mono_ns)
			run_fio "t1-pair" --filename="$x" --rw=read --bs=128k --iodepth=1 --direct=1 \
				--ioengine=libaio --size="${T1_FILE_MB}M" --time_based --runtime="$T1_READ_TIME"
			if [ "$x" = "$2" ]; then
				f=$(fio_get t1-pair read.bw_bytes); window "$1" frag "$i" "$w0" "$(mono_ns)"
			else
				t=$(fio_get t1-pair read.bw_bytes); window "$1" twin "$i" "$w0" "$(mono_ns)"
			fi
		done
		r=$(awk -v f="$f" -v t="$t" 'BEGIN { printf "%.4f", f / t }')
		ratios="$ratios $r"
	done
	put t1 "$1" paired_ratio "$(echo $ratios | tr ' ' '\n' | sort -g | sed -n 3p)"
	put t1 "$1" paired_all "$(echo $ratios | tr ' ' ,)"
}
# t1_comb TARGET DIR: the per-extent cost of a 128 KiB read. DIR/comb.dat
# is written with O_DIRECT, odd 4 KiB blocks first, then even ones, so no
# two logically adjacent blocks are physically adjacent: every 128 KiB read
# crosses 32 extents. It and the first T1_COMB_MB of DIR/twin.dat (one
# extent per read) are read alternately, 5 rounds; per round, the time per
# read difference over the 31 extra extents is the cost per extent (device
# requests included: both files are read through the same device). The
# median goes to comb_extent_ns.
t1_comb() {
	local i x first c t slopes=""
	python3 - "$2/comb.dat" "$T1_COMB_MB" <<'PY' || die "writing $2/comb.dat failed"
import mmap, os, sys
path, mb = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT needs
n = mb * 256
for parity in (1, 0):
    for b in range(parity, n, 2):
        buf[:8] = b.to_bytes(8, "little")
        if os.pwritev(fd, [buf], b * 4096) != 4096:
            sys.exit("short write")
os.fsync(fd)
os.close(fd)
PY
	for i in 1 2 3 4 5; do
		if [ $((i % 2)) = 1 ]; then first="comb twin"; else first="twin comb"; fi
		for x in $first; do
			run_fio "t1-comb" --filename="$2/$x.dat" --rw=read --bs=128k --iodepth=1 --direct=1 \
				--ioengine=libaio --size="${T1_COMB_MB}M" --time_based --runtime="$T1_READ_TIME"
			if [ $x = comb ]; then c=$(fio_get t1-comb read.bw_bytes); else t=$(fio_get t1-comb read.bw_bytes); fi
		done
		slopes="$slopes $(awk -v c="$c" -v t="$t" 'BEGIN { printf "%.0f", (131072 / c - 131072 / t) * 1e9 / 31 }')"
	done
	put t1 "$1" comb_extent_ns "$(echo $slopes | tr ' ' '\n' | sort -g | sed -n 3p)"
	put t1 "$1" comb_all "$(echo $slopes | tr ' ' ,)"
	put t1 "$1" comb_read_us "$(awk -v c="$c" 'BEGIN { printf "%.1f", 131072 / c * 1e6 }')"
	put t1 "$1" twin_read_us "$(awk -v t="$t" 'BEGIN { printf "%.1f", 131072 / t * 1e6 }')"
}

# The same blocks, in the same order, on every target: fio's random map
# (each block at most once) with a fixed seed over the same file size.
t1_overwrite() {
	local a b
	a=$(snap)
	run_fio t1-ow --filename="$2" --rw=randwrite --bs=4k --iodepth=1 --direct=1 --ioengine=libaio \
		--size="${T1_FILE_MB}M" --io_size=$((T1_OVERWRITES * 4))k --randrepeat=1 --randseed=$SEED \
		--random_generator=tausworthe64 --fallocate=none --end_fsync=1
	b=$(snap)
	put t1 "$1" overwrite_user_bytes "$(fio_get t1-ow write.io_bytes)"
	put_delta t1 "$1" ow "$a" "$b"
}

t1_fs() {
	local fs=$1 f=$MNT/frag.dat n
	say "test 1: $fs"
	fs_up "$fs"
	write_file t1-write "$f" "$T1_FILE_MB"
	write_file t1-twin "$MNT/twin.dat" "$T1_FILE_MB"
	if [ "$fs" = btrfs ]; then
		t1_comb "$fs" "$MNT"
		put t1 "$fs" comb_extents "$(ff_extents "$MNT/comb.dat")"
		rm "$MNT/comb.dat"
	fi
	n=$(ff_extents "$f"); put t1 "$fs" extents_before "$n"
	t1_read "$fs" before "$f"
	t1_overwrite "$fs" "$f"
	sync -f "$f"
	n=$(ff_extents "$f"); put t1 "$fs" extents_after "$n"
	t1_read "$fs" after "$f"
	t1_pair "$fs" "$f" "$MNT/twin.dat"
	fs_down
}

# t1_handler TARGET RUN: the same read ratios from fsprism's own log of the
# reads (--record=full), as time inside fsprism's handlers per byte read:
# the emulation and the device, without the FUSE transport that a kernel
# file system does not have (docs/results/validation.md).
t1_handler() {
	local what round a b nsb ratios=""
	declare -A ns
	while read -r what round a b; do
		nsb=$(sqlite3 "$DB" "SELECT 1.0 * sum(total_ns) / sum(bytes) FROM ops WHERE run=$2
			AND op=(SELECT op FROM op_names WHERE name='read') AND bytes > 0
			AND start_ns BETWEEN $a AND $b")
		[ -n "$nsb" ] || die "no read rows for $1 $what $round in run $2"
		ns[$what.$round]=$nsb
	done <"$T/win.$1"
	put t1 "$1" handler_ratio "$(awk -v b="${ns[before.0]}" -v a="${ns[after.0]}" 'BEGIN { printf "%.4f", b / a }')"
	for round in 1 2 3 4 5; do
		ratios="$ratios $(awk -v t="${ns[twin.$round]}" -v f="${ns[frag.$round]}" 'BEGIN { printf "%.4f", t / f }')"
	done
	put t1 "$1" handler_paired "$(echo $ratios | tr ' ' '\n' | sort -g | sed -n 3p)"
	put t1 "$1" handler_paired_all "$(echo $ratios | tr ' ' ,)"
	put t1 "$1" handler_before_us "$(awk -v n="${ns[before.0]}" 'BEGIN { printf "%.1f", n * 131072 / 1000 }')"
	put t1 "$1" handler_after_us "$(awk -v n="${ns[after.0]}" 'BEGIN { printf "%.1f", n * 131072 / 1000 }')"
}

# fsprism: extents come from the database, which gets them at unmount, so
# the mount is taken down after the write and after the overwrite.
# t1_fsp NAME COW JOURNAL [comb]: comb also measures the per-extent cost.
t1_fsp() {
	local name=$1 cow=$2 journal=$3 comb=${4:-} f=$FUSE/frag.dat run n
	say "test 1: fsprism --cow=$cow --journal=$journal $FSP_EXTRA"
	fsp_up "$cow" "$journal" --format
	write_file t1-write "$f" "$T1_FILE_MB"
	write_file t1-twin "$FUSE/twin.dat" "$T1_FILE_MB"
	[ "$comb" = comb ] && t1_comb "$name" "$FUSE"
	run=$(fsp_down)
	n=$(fsp_extents "$run" frag.dat); put t1 "$name" extents_before "$n"
	if [ "$comb" = comb ]; then
		put t1 "$name" comb_extents "$(fsp_extents "$run" comb.dat)"
		fsp_up "$cow" "$journal"; rm "$FUSE/comb.dat"; fsp_down >/dev/null
	fi
	fsp_up "$cow" "$journal" # --record=full is the default: t1_handler reads the rows
	t1_read "$name" before "$f"
	t1_overwrite "$name" "$f"
	t1_read "$name" after "$f"
	t1_pair "$name" "$f" "$FUSE/twin.dat"
	run=$(fsp_down)
	n=$(fsp_extents "$run" frag.dat); put t1 "$name" extents_after "$n"
	put t1 "$name" mount_run "$run"
	t1_handler "$name" "$run"
}

test1() {
	put t1 all file_mb $T1_FILE_MB
	put t1 all overwrites $T1_OVERWRITES
	put t1 all comb_mb $T1_COMB_MB
	t1_fs ext4
	[ $HAVE_XFS = 1 ] && t1_fs xfs
	t1_fs btrfs
	t1_fs btrfs-nosum
	t1_fsp fsp-cow always off comb
	# The kernel's per-extent work that the emulation does not do itself,
	# measured here (btrfs's cost per extent minus the emulation's), then
	# modelled with --extent-cost: a prediction for the 8192-overwrite
	# file, whose reads cross about 8 extents, from a file whose reads
	# cross 32.
	local xb xf cost
	xb=$(got t1 btrfs comb_extent_ns)
	xf=$(got t1 fsp-cow comb_extent_ns)
	cost=$(awk -v b="$xb" -v f="$xf" 'BEGIN { d = b - f; printf "%.0f", (d > 0 ? d : 0) }')
	put t1 all extent_cost_ns "$cost"
	FSP_EXTRA="--extent-cost ${cost}ns"
	t1_fsp fsp-cow-x always off comb
	FSP_EXTRA=""
	t1_fsp fsp-off off ordered
	report 1
}

# --- test 2: mixed sequential ------------------------------------------------

# t2_mix TARGET MIX PATH [--destroy-data]: one `fsprism run mixed-seq` step.
t2_mix() {
	local out run
	out=$("$FSPRISM" run mixed-seq "$3" ${4:-} --mix="$2" --span="$T2_SPAN" --time="$T2_TIME" \
		--bytes=0 --duty=100 --idle=0 --db "$DB" --label "t2-$1-$2" --quiet) ||
		die "fsprism run mixed-seq on $1 failed: $out"
	run=$(echo "$out" | sed -n 's/.*run \([0-9]*\) stored.*/\1/p')
	sqlite3 -separator ' ' "$DB" "SELECT read_bytes + write_bytes, busy_ns, read_ios + write_ios,
		write_bytes FROM steps WHERE run=$run AND step=0" >"$T/step"
	read -r bytes busy ios wbytes <"$T/step"
	put t2 "$1" "m$2.mbs" "$(awk -v b="$bytes" -v n="$busy" 'BEGIN { printf "%.1f", b / (n / 1e9) / 1e6 }')"
	put t2 "$1" "m$2.ios" "$ios"
	put t2 "$1" "m$2.user_wr_bytes" "$wbytes"
	put t2 "$1" "m$2.run" "$run"
}
# Write the span once, so every read hits written blocks and no run
# prepares a file inside a measured step.
t2_fill() {
	run_fio t2-fill --filename="$1" --rw=write --bs=1M --iodepth=4 --direct=1 --ioengine=libaio \
		--size="$T2_SPAN" --fallocate=none --end_fsync=1
}

# For a file system the window ends with a sync, so that metadata the file
# system defers (btrfs commits every 30 s) is counted, as the fsprism
# mixes count the commit of their unmount.
t2_dev_mixes() {   # t2_dev_mixes TARGET PATH [--destroy-data]
	local m a b
	for m in $T2_MIXES; do
		a=$(snap)
		t2_mix "$1" "$m" "$2" ${3:-}
		[ -f "$2" ] && sync -f "$2"
		b=$(snap)
		put_delta t2 "$1" "m$m.dev" "$a" "$b"
	done
}

t2_fsp() {
	local name=$1 cow=$2 journal=$3 m a b run
	say "test 2: fsprism --cow=$cow --journal=$journal"
	fsp_up "$cow" "$journal" --format
	t2_fill "$FUSE/mix.dat"
	fsp_down >/dev/null
	for m in $T2_MIXES; do
		a=$(snap)
		fsp_up "$cow" "$journal"
		t2_mix "$name" "$m" "$FUSE/mix.dat"
		run=$(fsp_down)
		b=$(snap)
		put_delta t2 "$name" "m$m.dev" "$a" "$b"
		fsp_json "$run"
		put t2 "$name" "m$m.seq_share" "$(jq -r '.emulation.device.seq_share' "$T/stats.json")"
		put t2 "$name" "m$m.streams" "$(jq -r '.emulation.device.streams' "$T/stats.json")"
		put t2 "$name" "m$m.dev_ios" "$(jq -r '.emulation.device.ios' "$T/stats.json")"
	done
}

test2() {
	put t2 all mixes "$(echo $T2_MIXES | tr ' ' ,)"
	put t2 all time "$T2_TIME"
	put t2 all span "$T2_SPAN"
	say "test 2: raw device"
	wipefs -a -q "$LOOP"
	t2_fill "$LOOP"
	t2_dev_mixes raw "$LOOP" --destroy-data
	for fs in ext4 xfs btrfs; do
		[ $fs = xfs ] && [ $HAVE_XFS = 0 ] && continue
		say "test 2: $fs"
		fs_up $fs
		t2_fill "$MNT/mix.dat"
		t2_dev_mixes $fs "$MNT/mix.dat"
		fs_down
	done
	t2_fsp fsp-cow always off
	t2_fsp fsp-off off ordered
	report 2
}

# --- test 3: small fsync-heavy writes ----------------------------------------

# t3_writes TARGET FILE: the measured job, with the device delta around it.
t3_writes() {
	local a b
	a=$(snap)
	run_fio t3-sync --filename="$2" --rw=randwrite --bs=4k --ioengine=psync --direct=0 --fsync=1 \
		--size="${T3_FILE_MB}M" --io_size=$((T3_WRITES * 4))k --randrepeat=1 --randseed=$SEED \
		--fallocate=none
	b=$(snap)
	put_delta t3 "$1" io "$a" "$b"
	put t3 "$1" user_bytes "$(fio_get t3-sync write.io_bytes)"
	put t3 "$1" fsyncs "$(fio_get t3-sync sync.total_ios)"
	put t3 "$1" us_per_write "$(jq -r '.jobs[0] | .job_runtime * 1000 / .write.total_ios' "$T/t3-sync.json")"
}

t3_fs() {
	say "test 3: $1"
	fs_up "$1"
	write_file t3-fill "$MNT/sync.dat" "$T3_FILE_MB"
	sync -f "$MNT/sync.dat"
	t3_writes "$1" "$MNT/sync.dat"
	fs_down
}

# fsprism: fill in one mount, measure in a second one, so that the mount's
# own accounting covers the measured writes only (plus mount and unmount),
# and compare it with the device over the same window.
t3_fsp() {
	local name=$1 cow=$2 journal=$3 a b run
	say "test 3: fsprism --cow=$cow --journal=$journal"
	fsp_up "$cow" "$journal" --format
	write_file t3-fill "$FUSE/sync.dat" "$T3_FILE_MB"
	fsp_down >/dev/null
	a=$(snap)
	fsp_up "$cow" "$journal"
	t3_writes "$name" "$FUSE/sync.dat"
	run=$(fsp_down)
	b=$(snap)
	put_delta t3 "$name" mnt "$a" "$b"
	fsp_json "$run"
	local j=$T/stats.json
	for k in data journal metadata checkpoint total; do
		put t3 "$name" "wa.$k" "$(jq -r ".emulation.write_amplification.$k" "$j")"
	done
	put t3 "$name" own.wr_bytes "$(jq -r '[.emulation.device_bytes | .data, .journal, .metadata, .checkpoint] | add' "$j")"
	put t3 "$name" own.rd_bytes "$(jq -r '.emulation.device_bytes.read' "$j")"
	put t3 "$name" own.flushes "$(jq -r '.emulation.flushes' "$j")"
	put t3 "$name" own.fsyncs "$(jq -r '.emulation.fsyncs' "$j")"
	put t3 "$name" own.commits "$(jq -r '.emulation.attributes["dev.commits"] // "-"' "$j")"
	put t3 "$name" own.fua_writes "$(jq -r '.emulation.attributes["dev.fua_writes"] // "-"' "$j")"
	put t3 "$name" mount_run "$run"
}

test3() {
	put t3 all writes $T3_WRITES
	put t3 all file_mb $T3_FILE_MB
	t3_fs ext4
	[ $HAVE_XFS = 1 ] && t3_fs xfs
	t3_fs btrfs
	t3_fsp fsp-cow-jo always ordered
	t3_fsp fsp-cow-j0 always off
	t3_fsp fsp-off-jo off ordered
	report 3
}

# --- main ---------------------------------------------------------------------

START=$(date +%s)
echo "# validate-emu: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(uname -r), $(nproc) CPUs," \
	"$(awk '/MemTotal/ { printf "%.0f GiB RAM", $2 / 2^20 }' /proc/meminfo), $(fio --version)"
echo "# $("$FSPRISM" version 2>/dev/null || echo fsprism) at $FSPRISM; device $LOOP over $SHM/disk.img" \
	"($DEV_SIZE, /dev/shm, loop direct IO); xfs $([ $HAVE_XFS = 1 ] && echo yes || echo 'not installed')" \
	"$([ $QUICK = 1 ] && echo '; --quick')"
case ",$TESTS," in *,1,*) test1 ;; esac
case ",$TESTS," in *,2,*) test2 ;; esac
case ",$TESTS," in *,3,*) test3 ;; esac
echo
echo "# wall time $(( $(date +%s) - START )) s"
set +e
report summary
exit $?

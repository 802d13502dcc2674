#!/bin/sh
# it_trace_replay.sh - fsprism replay, each source kind on each target kind
# (docs/replay.md):
# - a round trip: on an fsprism mount with --record=full over ext4 on a
#   loop device, a tar extraction (a few MB of /usr/share/doc) and a small
#   sqlite3 workload; the mount run replayed onto a directory of xfs on
#   another loop device: every read, write and fsync replayed, the bytes,
#   every file the trace wrote recreated with its size, the largest one
#   holding the replay's pattern byte for byte, the written data
#   the replay's, the depth never above the recorded one, the fidelity
#   stored; again with the idle gaps kept and at time scale 0;
# - the mount run also onto a raw device and onto one file;
# - a fio iolog (v3 as fio writes it, and the same as v2) on a raw loop
#   device, its reads and writes and bytes, issued close to their times;
#   onto a directory of an fsprism mount with --record=full, whose own log
#   is the replay seen from outside: the iolog's reads and writes in its
#   order, offsets and sizes, none before its time, the last within the
#   replay's stated largest lag;
# - timing everywhere: the machine may be busy, so lags are reported, not
#   bounded; the fidelity must be consistent (p50 <= p99 <= max, never
#   early, late by its own part <= late) and the replay loop's own part
#   small (median within 1 ms);
# - a blktrace capture on a raw loop device (blktrace(8) itself when the
#   kernel lets it open its debugfs files, else one written by
#   tests/blktrace_write.py), and a block-level trace onto a directory;
# - the raw-write safety rule: a device carrying a file system is refused
#   and left as it was, unless --destroy-data; a mounted one always;
# - bad input: one line, exit 2, nothing left behind.
. "$TESTS_SRCDIR/lib.sh"

fsp_tmpdir_tmpfs 1200M
S=$T/scratch # where the bad-input cases must leave nothing
mkdir -p "$S"
q() { sqlite3 "$1" "$2"; }
# attr DB RUN KEY
attr() { q "$1" "SELECT value FROM run_attrs WHERE run=$2 AND key='$3'"; }
le() { [ -n "$1" ] && [ -n "$2" ] && [ "$1" -le "$2" ]; }
gt0() { [ -n "$1" ] && [ "$1" -gt 0 ]; }

# ---- the round trip: a mount run onto xfs -----------------------------------
fsp_ext4_new 256M "$T/back"
src_dev=$dev
dst_dev=$(fsp_loop_new 400M "$T/tmp") || { not_ok "loop device"; fsp_done; exit 1; }
fsp_track_loop "$dst_dev"
mkfs.xfs -q "$dst_dev"
mkdir "$T/dst"
mount "$dst_dev" "$T/dst" && fsp_track_mount "$T/dst"
mkdir "$T/mnt"
db=$T/m.db
fsp_mount "$T/back" "$T/mnt" --log "$db" --record=full --no-trace
tar cf "$T/w.tar" -C /usr/share/doc git fio sqlite3 2>/dev/null
check "round trip: the tar is a few MB ($(du -k "$T/w.tar" | cut -f1) KiB)" \
	test "$(du -k "$T/w.tar" | cut -f1)" -ge 1000
tar xf "$T/w.tar" -C "$T/mnt"
{
	echo "PRAGMA journal_mode=DELETE; CREATE TABLE t(a INTEGER, b BLOB);"
	i=0
	while [ $i -lt 60 ]; do
		echo "INSERT INTO t VALUES($i, randomblob(2000));"
		i=$((i + 1))
	done
	echo "SELECT count(*) FROM t WHERE a % 7 = 0;"
} | sqlite3 "$T/mnt/work.db" >/dev/null
fsp_umount "$T/mnt"
mrun=$(q "$db" "SELECT id FROM runs WHERE kind='mount'")
reads=$(q "$db" "SELECT count(*) FROM ops WHERE run=$mrun AND op=13 AND result=0 AND bytes>0")
writes=$(q "$db" "SELECT count(*) FROM ops WHERE run=$mrun AND op=14 AND result=0 AND length>0")
wbytes=$(q "$db" "SELECT sum(length) FROM ops WHERE run=$mrun AND op=14 AND result=0")
rbytes=$(q "$db" "SELECT sum(bytes) FROM ops WHERE run=$mrun AND op=13 AND result=0")
fsyncs=$(q "$db" "SELECT count(*) FROM ops WHERE run=$mrun AND op=17 AND result=0")
echo "# mount run $mrun: $reads reads, $writes writes ($wbytes bytes), $fsyncs fsyncs"
check "round trip: the mount recorded writes and fsyncs" sh -c "[ $writes -gt 500 ] && [ $fsyncs -gt 0 ]"

"$FSPRISM" replay "$db" "$T/dst" >"$T/rt.out" 2>"$T/rt.err"
expect_eq "round trip: replay onto xfs exits 0" 0 $?
sed 's/^/# /' "$T/rt.out"
cat "$T/rt.err"
rrun=$(q "$db" "SELECT max(id) FROM runs WHERE label='replay'")
expect_eq "round trip: the replay run is of the mount run" "$mrun" "$(attr "$db" "$rrun" replay.of)"
expect_eq "round trip: every read replayed" "$reads" "$(attr "$db" "$rrun" replay.reads)"
expect_eq "round trip: every write replayed" "$writes" "$(attr "$db" "$rrun" replay.writes)"
expect_eq "round trip: every fsync replayed" "$fsyncs" "$(attr "$db" "$rrun" replay.syncs)"
expect_eq "round trip: the bytes written" "$wbytes" "$(attr "$db" "$rrun" replay.write_bytes)"
expect_eq "round trip: the bytes read" "${rbytes:-0}" "$(attr "$db" "$rrun" replay.read_bytes)"
expect_eq "round trip: the step row has them" "$reads/$writes" \
	"$(q "$db" "SELECT read_ios || '/' || write_ios FROM steps WHERE run=$rrun")"
# every non-empty file of the extraction and the database, by its inode
# number, recreated with its size
total=0 same=0
find "$T/back" -type f -size +0 ! -path '*/lost+found/*' -printf '%i %s\n' >"$T/sizes"
while read -r ino size; do
	total=$((total + 1))
	[ "$(stat -c %s "$T/dst/ino$ino" 2>/dev/null)" = "$size" ] && same=$((same + 1))
done <"$T/sizes"
check "round trip: files to compare ($total)" test "$total" -gt 100
expect_eq "round trip: every written file recreated with its size" "$total" "$same"
# contents: the largest extracted file, written in whole pages, holds the
# replay's pattern from its first byte to its last
big=$(find "$T/back/git" -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
bino=$(stat -c %i "$big")
check "round trip: the largest file ($(stat -c %s "$big") bytes) holds the replay's writes, byte for byte" \
	python3 -c "import sys; d = open(sys.argv[1], 'rb').read(); p = b'fsprism replay  ';
sys.exit(d != (p * (len(d) // 16 + 1))[:len(d)])" "$T/dst/ino$bino"
ino=$(stat -c %i "$T/back/work.db")
check "round trip: the database's file carries the replay's writes" \
	sh -c "head -c 16 '$T/dst/ino$ino' | grep -q 'fsprism replay'"
check "round trip: depth kept (replayed $(attr "$db" "$rrun" replay.qd_max) <= recorded $(attr "$db" "$rrun" replay.recorded_qd_max))" \
	le "$(attr "$db" "$rrun" replay.qd_max)" "$(attr "$db" "$rrun" replay.recorded_qd_max)"
p50=$(attr "$db" "$rrun" replay.lag_p50_ns)
late=$(attr "$db" "$rrun" replay.late)
n=$((reads + writes + fsyncs))
echo "# round trip fidelity: lag p50 $p50 ns, p99 $(attr "$db" "$rrun" replay.lag_p99_ns) ns," \
	"max $(attr "$db" "$rrun" replay.lag_max_ns) ns, $late of $n late (> 1 ms)," \
	"busy $(attr "$db" "$rrun" replay.busy_pct)%"
# timing: the machine may be busy, so the lag itself is reported, not bounded;
# what must hold is the fidelity's own consistency and the replay loop's part
fidelity_ok() { # DB RUN NAME
	f_p50=$(attr "$1" "$2" replay.lag_p50_ns) f_p99=$(attr "$1" "$2" replay.lag_p99_ns)
	f_max=$(attr "$1" "$2" replay.lag_max_ns) f_own=$(attr "$1" "$2" replay.self_lag_p50_ns)
	check "$3: lags ordered (p50 $f_p50 <= p99 $f_p99 <= max $f_max ns)" \
		sh -c "[ $f_p50 -le $f_p99 ] && [ $f_p99 -le $f_max ]"
	check "$3: the replay loop's own part: median within 1 ms ($f_own ns)" le "$f_own" 1000000
	check "$3: never early: the wall time covers the schedule" \
		le "$(attr "$1" "$2" replay.intended_ns)" "$(attr "$1" "$2" replay.wall_ns)"
	check "$3: late by its own part no more than late" \
		le "$(attr "$1" "$2" replay.late_self)" "$(attr "$1" "$2" replay.late)"
}
fidelity_ok "$db" "$rrun" "round trip"
check "round trip: late IOs counted ($late of $n)" le "$late" "$n"
check "round trip: busy share is a percentage" \
	awk -v b="$(attr "$db" "$rrun" replay.busy_pct)" 'BEGIN { exit !(b > 0 && b <= 100) }'
check "round trip: the default clips idle gaps at 25 ms" \
	test "$(attr "$db" "$rrun" replay.max_idle_ns)" = 25000000
check "round trip: stats shows the fidelity" \
	sh -c "'$FSPRISM' stats '$db' --run $rrun | grep -q 'fidelity: issue lag p50'"
check "round trip: stats' JSON has the replay" \
	sh -c "'$FSPRISM' stats '$db' --run $rrun --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"replay\"][\"writes\"] == $writes'"

# the trace as text: one io line per IO replayed
"$FSPRISM" replay "$db:$mrun" --dump >"$T/dump.txt"
expect_eq "--dump: exits 0" 0 $?
expect_eq "--dump: one io line per read, write and fsync" "$n" "$(grep -c '^io ' "$T/dump.txt")"
expect_eq "--dump: every file of the trace" "$(attr "$db" "$rrun" replay.files)" \
	"$(grep -c '^file ' "$T/dump.txt")"

# the same trace at time scale 0 (as fast as the order allows) and with idle kept
mkdir "$T/dst/fast" "$T/dst/keep"
"$FSPRISM" replay "$db:$mrun" "$T/dst/fast" --time-scale 0 >"$T/fast.out" 2>&1
expect_eq "time scale 0: exits 0" 0 $?
frun=$(q "$db" "SELECT max(id) FROM runs WHERE label='replay'")
expect_eq "time scale 0: nothing to wait for" 0 "$(attr "$db" "$frun" replay.intended_ns)"
expect_eq "time scale 0: every write" "$writes" "$(attr "$db" "$frun" replay.writes)"
"$FSPRISM" replay "$db:$mrun" "$T/dst/keep" --keep-idle >"$T/keep.out" 2>&1
expect_eq "--keep-idle: exits 0" 0 $?
krun=$(q "$db" "SELECT max(id) FROM runs WHERE label='replay'")
span=$(q "$db" "SELECT max(start_ns) - min(start_ns) FROM ops WHERE run=$mrun
	AND ((op=13 AND bytes>0) OR (op=14 AND length>0) OR op=17) AND result=0")
expect_eq "--keep-idle: the schedule is the recording's span" "$span" \
	"$(attr "$db" "$krun" replay.intended_ns)"
expect_eq "--keep-idle: nothing clipped" 0 "$(attr "$db" "$krun" replay.clipped_ns)"
check "--keep-idle: the wall time covers the span" \
	le "$span" "$(attr "$db" "$krun" replay.wall_ns)"

# the mount run onto a raw device (its files one after another) and onto a file
mraw=$(fsp_loop_new 64M "$T/tmp") && fsp_track_loop "$mraw"
"$FSPRISM" replay "$db:$mrun" "$mraw" >"$T/mraw.out" 2>&1
expect_eq "mount run on a raw device: exits 0" 0 $?
mdb_run=$(q "$db" "SELECT max(id) FROM runs WHERE label='replay'")
expect_eq "mount run on a raw device: every write" "$writes" "$(attr "$db" "$mdb_run" replay.writes)"
expect_eq "mount run on a raw device: the target kind" "raw device" "$(attr "$db" "$mdb_run" replay.target)"
truncate -s 1M "$T/tmp/one.file"
"$FSPRISM" replay "$db:$mrun" "$T/tmp/one.file" >"$T/mfile.out" 2>&1
expect_eq "mount run onto one file: exits 0" 0 $?
check "  ... the file extended to hold the trace's files" \
	test "$(stat -c %s "$T/tmp/one.file")" -ge "$wbytes"
rm -f "$T/tmp/one.file"

# ---- a fio iolog on a raw loop device ----------------------------------------
rec_dev=$(fsp_loop_new 128M "$T/tmp") && fsp_track_loop "$rec_dev"
raw=$(fsp_loop_new 128M "$T/tmp") && fsp_track_loop "$raw"
fio --name=cap --filename="$rec_dev" --rw=randrw --bs=4k --size=64M --io_size=2M \
	--ioengine=psync --direct=1 --rate_iops=2000 --write_iolog="$T/cap.iolog" \
	--output=/dev/null
rdb=$T/r.db
lr=$(grep -c ' read ' "$T/cap.iolog")
lw=$(grep -c ' write ' "$T/cap.iolog")
"$FSPRISM" replay "$T/cap.iolog" "$raw" --db "$rdb" >"$T/io.out" 2>&1
expect_eq "iolog v3 on a raw device: exits 0" 0 $?
sed 's/^/# /' "$T/io.out"
expect_eq "iolog v3: every read and write ($lr/$lw)" "$lr/$lw" \
	"$(attr "$rdb" 1 replay.reads)/$(attr "$rdb" 1 replay.writes)"
expect_eq "iolog v3: the bytes" "$((lw * 4096))" "$(attr "$rdb" 1 replay.write_bytes)"
expect_eq "iolog v3: the source" "iolog v3" "$(attr "$rdb" 1 replay.source)"
expect_eq "iolog v3: one IO in flight (--qd 1)" 1 "$(attr "$rdb" 1 replay.qd_max)"
expect_eq "iolog v3: all through O_DIRECT" 0 "$(attr "$rdb" 1 replay.buffered)"
fidelity_ok "$rdb" 1 "iolog v3"
# the same log as version 2: no times, so as fast as one at a time allows
{
	echo "fio version 2 iolog"
	tail -n +2 "$T/cap.iolog" | cut -d' ' -f2-
} >"$T/cap2.iolog"
"$FSPRISM" replay "$T/cap2.iolog" "$raw" --db "$rdb" --qd 4 >"$T/io2.out" 2>&1
expect_eq "iolog v2 on a raw device: exits 0" 0 $?
expect_eq "iolog v2: every read and write" "$lr/$lw" \
	"$(attr "$rdb" 2 replay.reads)/$(attr "$rdb" 2 replay.writes)"
check "iolog v2: at most --qd 4 in flight" le "$(attr "$rdb" 2 replay.qd_max)" 4

# the iolog onto a directory of an fsprism mount (replayed through FUSE)
mkdir "$T/back/fu" "$T/fmnt"
fsp_mount "$T/back/fu" "$T/fmnt" --log "$T/fu.db" --record=full --no-trace
"$FSPRISM" replay "$T/cap.iolog" "$T/fmnt" --db "$rdb" >"$T/io-fuse.out" 2>&1
expect_eq "iolog onto an fsprism mount: exits 0" 0 $?
irun=$(q "$rdb" "SELECT max(id) FROM runs")
expect_eq "iolog onto an fsprism mount: every read and write" "$lr/$lw" \
	"$(attr "$rdb" "$irun" replay.reads)/$(attr "$rdb" "$irun" replay.writes)"
fname=$(echo "$rec_dev" | sed 's|^/||; s|/|_|g')
check "iolog onto an fsprism mount: the file recreated as $fname" test -s "$T/fmnt/$fname"
fsp_umount "$T/fmnt"
expect_eq "  ... all through O_DIRECT (so each IO reached the mount as it was issued)" 0 \
	"$(attr "$rdb" "$irun" replay.buffered)"
# order: the mount's log of the replay is the iolog's reads and writes, in order
grep -E ' (read|write) ' "$T/cap.iolog" | awk '{ print $3, $4, $5 }' >"$T/order.want"
# (after the fill: the replay writes the file as far as the trace reads it first, made stable)
replayed="op IN (13, 14) AND start_ns >= (SELECT min(start_ns) FROM ops WHERE op IN (13, 14) AND length=4096)"
q "$T/fu.db" "SELECT CASE op WHEN 13 THEN 'read' ELSE 'write' END, offset, length FROM ops
	WHERE $replayed ORDER BY start_ns" | tr '|' ' ' >"$T/order.got"
check "  ... the mount saw the iolog's reads and writes in its order, offsets and sizes ($(wc -l <"$T/order.want") IOs)" \
	cmp -s "$T/order.want" "$T/order.got"
# timing: each request reached the mount no earlier than its time in the
# replay's schedule (the schedule's 0 is the replay step's start, its times
# those --dump prints; 0.2 ms of slack for the clocks' reads), and the last
# one no later than the replay's stated largest lag allows (+ 50 ms). (Timed
# from the first IO instead, a first IO held up on a busy machine made the
# ones after it look early.)
"$FSPRISM" replay "$T/cap.iolog" --dump | awk '$1 == "io" && ($6 == "read" || $6 == "write") { print $4 }' >"$T/times.want"
origin=$(q "$rdb" "SELECT started_ns FROM steps WHERE run=$irun")
q "$T/fu.db" "SELECT start_ns FROM ops WHERE $replayed ORDER BY start_ns" >"$T/times.got"
early=$(paste "$T/times.want" "$T/times.got" | awk -v o="$origin" '
	{ if ($2 - (o + $1) < -200000) n++ } END { print n + 0 }')
expect_eq "  ... none reaching the mount before its time" 0 "$early"
last=$(paste "$T/times.want" "$T/times.got" | awk -v o="$origin" '{ d = $2 - (o + $1) } END { printf "%.0f", d }')
check "  ... the last within the stated fidelity (lag $last ns, max stated $(attr "$rdb" "$irun" replay.lag_max_ns))" \
	awk -v d="$last" -v m="$(attr "$rdb" "$irun" replay.lag_max_ns)" 'BEGIN { exit !(d <= m + 50000000) }'

# ---- a blktrace capture on a raw device, and onto a directory ----------------
cap=$T/blk/cap
mkdir "$T/blk"
real=0
if command -v blktrace >/dev/null; then
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
	(cd "$T/blk" && blktrace -d "$rec_dev" -o cap -w 3 >"$T/bt.out" 2>&1) &
	btpid=$!
	sleep 1
	dd if=/dev/zero of="$rec_dev" bs=64k count=64 oflag=direct 2>/dev/null
	dd if="$rec_dev" of=/dev/null bs=4k count=256 iflag=direct 2>/dev/null
	wait $btpid
	[ -s "$cap.blktrace.0" ] || [ -s "$cap.blktrace.1" ] && real=1
fi
if [ $real = 1 ]; then
	ok "blktrace: a real capture of dd on $rec_dev"
	want_w=64 want_r=256
else
	skipped "blktrace: a real capture" "blktrace cannot trace here: $(head -1 "$T/bt.out" 2>/dev/null)"
	rm -f "$T"/blk/cap.blktrace.*
	# the same workload, as blktrace would have written it: 64 writes of
	# 64 KiB, 256 reads of 4 KiB, one at a time, 100 us apart, on two CPUs
	awk 'BEGIN { t = 1000000
		for (i = 0; i < 64; i++) { c = i % 2
			printf "%d %d Q WS %d 65536 42\n%d %d D WS %d 65536 42\n%d %d C WS %d 65536 42\n",
				c, t, i * 128, c, t + 1000, i * 128, c, t + 60000, i * 128; t += 100000 }
		for (i = 0; i < 256; i++) { c = i % 2
			printf "%d %d Q R %d 4096 42\n%d %d D R %d 4096 42\n%d %d C R %d 4096 42\n",
				c, t, i * 8, c, t + 1000, i * 8, c, t + 20000, i * 8; t += 50000 } }' |
		python3 "$TESTS_SRCDIR/blktrace_write.py" "$cap"
	want_w=64 want_r=256
fi
"$FSPRISM" replay "$cap" "$raw" --db "$rdb" >"$T/bt-replay.out" 2>&1
expect_eq "blktrace on a raw device: exits 0" 0 $?
sed 's/^/# /' "$T/bt-replay.out"
brun=$(q "$rdb" "SELECT max(id) FROM runs")
check "blktrace: the writes ($(attr "$rdb" "$brun" replay.writes) >= $want_w)" \
	le "$want_w" "$(attr "$rdb" "$brun" replay.writes)"
check "blktrace: the reads ($(attr "$rdb" "$brun" replay.reads) >= $want_r)" \
	le "$want_r" "$(attr "$rdb" "$brun" replay.reads)"
check "blktrace: never deeper than recorded" \
	le "$(attr "$rdb" "$brun" replay.qd_max)" "$(attr "$rdb" "$brun" replay.recorded_qd_max)"
mkdir "$T/dst/blk"
"$FSPRISM" replay "$cap" "$T/dst/blk" --db "$rdb" >/dev/null 2>&1
expect_eq "blktrace onto a directory: exits 0" 0 $?
check "blktrace onto a directory: the device as one file" test -s "$T/dst/blk/device"

# ---- every source kind on the targets not yet above: one file, and a
# directory of an fsprism mount (the mount run's writes, the iolog's, the
# blktrace capture's, as many as each one's first replay) ----
mkdir "$T/back/fu2" "$T/fmnt2"
fsp_mount "$T/back/fu2" "$T/fmnt2" --log "$T/fu2.db" --no-trace
k=0
for src in "$db:$mrun" "$T/cap.iolog" "$cap"; do
	k=$((k + 1))
	case $k in
	1) kind="mount run" want=$writes ;;
	2) kind="fio iolog" want=$lw ;;
	3) kind="blktrace capture" want=$(attr "$rdb" "$brun" replay.writes) ;;
	esac
	truncate -s 1M "$T/tmp/t$k.file"
	"$FSPRISM" replay "$src" "$T/tmp/t$k.file" --db "$rdb" >"$T/x$k.out" 2>&1
	expect_eq "$kind onto one file: exits 0" 0 $?
	xr=$(q "$rdb" "SELECT max(id) FROM runs")
	expect_eq "$kind onto one file: every write ($want)" "$want" "$(attr "$rdb" "$xr" replay.writes)"
	expect_eq "$kind onto one file: the target kind" "file" "$(attr "$rdb" "$xr" replay.target)"
	rm -f "$T/tmp/t$k.file"
	mkdir "$T/fmnt2/d$k"
	"$FSPRISM" replay "$src" "$T/fmnt2/d$k" --db "$rdb" >"$T/y$k.out" 2>&1
	expect_eq "$kind onto an fsprism mount: exits 0" 0 $?
	xr=$(q "$rdb" "SELECT max(id) FROM runs")
	expect_eq "$kind onto an fsprism mount: every write ($want)" "$want" \
		"$(attr "$rdb" "$xr" replay.writes)"
	check "$kind onto an fsprism mount: its files made there" \
		test -n "$(ls -A "$T/fmnt2/d$k")"
done
fsp_umount "$T/fmnt2"

# ---- the raw-write rule -------------------------------------------------------
"$FSPRISM" replay "$T/cap.iolog" "$dst_dev" >/dev/null 2>"$T/safe1.err"
expect_eq "a mounted device is refused: exit 2" 2 $?
check "  ... saying it is mounted" grep -q "mounted" "$T/safe1.err"
umount "$T/dst"
sum_before=$(head -c 4M "$dst_dev" | md5sum)
"$FSPRISM" replay "$T/cap.iolog" "$dst_dev" >/dev/null 2>"$T/safe2.err"
expect_eq "a device with a file system is refused: exit 2" 2 $?
check "  ... naming --destroy-data" grep -q "destroy-data" "$T/safe2.err"
expect_eq "  ... and left as it was" "$sum_before" "$(head -c 4M "$dst_dev" | md5sum)"
"$FSPRISM" replay "$T/cap.iolog" "$dst_dev" --destroy-data >/dev/null 2>&1
expect_eq "  ... with --destroy-data it is replayed" 0 $?
small=$(fsp_loop_new 1M "$T/tmp") && fsp_track_loop "$small"
"$FSPRISM" replay "$T/cap.iolog" "$small" >/dev/null 2>"$T/small.err"
expect_eq "a trace beyond the device's end: exit 2" 2 $?
check "  ... saying so" grep -q "beyond the end of $small" "$T/small.err"

# ---- bad input ----------------------------------------------------------------
bad() { # DESCRIPTION WANT-IN-STDERR ARGS...
	desc=$1 want=$2
	shift 2
	"$FSPRISM" replay "$@" >"$T/bad.out" 2>"$T/bad.err"
	rc=$?
	expect_eq "$desc: exit 2" 2 "$rc"
	lines=$(wc -l <"$T/bad.err")
	if [ "$lines" = 1 ] && grep -qF -- "$want" "$T/bad.err"; then
		ok "$desc: one line: $(cat "$T/bad.err")"
	else
		not_ok "$desc: wanted one line with '$want', got: $(cat "$T/bad.err")"
	fi
}
F=$TESTS_SRCDIR/fixtures
bad "no such source" "$T/nothing: No such file or directory" "$T/nothing" "$S"
bad "a corrupt iolog" "bad-action.log:5: unknown action 'frobnicate'" "$F/iolog/bad-action.log" "$S"
bad "a truncated blktrace file" "byte 96: truncated event" "$F/blktrace/truncated.blktrace.0" "$S"
bad "a blktrace file with a bad magic" "byte 48: bad magic" "$F/blktrace/badmagic.blktrace.0" "$S"
bad "not a trace" "is not a results database, a fio iolog or a blktrace capture" "$T/w.tar" "$S"
bad "no target" "needs a SOURCE and a TARGET" "$T/cap.iolog"
bad "an unknown option" "unknown option '--max-idel'" "$T/cap.iolog" "$S" --max-idel 1ms
bad "a bad duration" "--max-idle needs a duration" "$T/cap.iolog" "$S" --max-idle=soon
bad "a bad time scale" "--time-scale needs a number" "$T/cap.iolog" "$S" --time-scale -1
bad "contradicting options" "contradict" "$T/cap.iolog" "$S" --keep-idle --max-idle 1ms
bad "--dump with a target" "--dump takes a SOURCE and no TARGET" "$T/cap.iolog" "$S" --dump
bad "a run that is not there" "has no run 99" "$db:99" "$S"
bad "a replay run is no mount run" "not a mount run" "$db:$rrun" "$S"
bad "a target that is not there" "target $T/none" "$T/cap.iolog" "$T/none" --db "$S/new.db"
touch "$S/ino$ino"
bad "a directory holding a file of the trace" "$S/ino$ino exists" "$db:$mrun" "$S"
rm "$S/ino$ino"
# a mount recorded without the requests
mkdir "$T/back/h" "$T/hmnt"
fsp_mount "$T/back/h" "$T/hmnt" --log "$db" --record=hist --no-trace
echo x >"$T/hmnt/f"
fsp_umount "$T/hmnt"
hrun=$(q "$db" "SELECT max(id) FROM runs WHERE kind='mount'")
bad "a mount run without its requests" "only --record=full keeps every request" "$db:$hrun" "$S"
fsp_nothing_left "$S" "bad input"

fsp_done

#!/bin/sh
# it_model.sh - the model drive (`--device-model`) on real FUSE mounts of a
# tmpfs directory, and under every target of `fsprism compare`.
#
# A stream-switch penalty makes two interleaved sequential read streams
# slower by the penalty per IO while one stream is not: exactly in what the
# model charged (model_ns, model.*), and end to end (the daemon's read p50)
# within a share of the penalty that this loaded machine's noise allows; a
# read-after-write penalty hits only the reads of data
# written less than AGE ago; the model's time is each row's model_ns and
# its counts the run's model.* attributes. compare --device-model on the
# embedded default runs with the image on a model mount (raw's IO reaches
# the model), and leaves nothing mounted or attached: after success, after
# SIGINT with the model mount up, and after bad input.
. "$TESTS_SRCDIR/lib.sh"

fsp_capture_daemon_reports

mkdir "$T/shm" "$T/m" "$T/tmp"
mount -t tmpfs -o size=256M tmpfs "$T/shm" && fsp_track_mount "$T/shm"
B=$T/shm/data
mkdir "$B"
head -c 64M /dev/urandom >"$B/f"

# python3 - PATTERN FILE N: N 128 KiB O_DIRECT reads, "one" stream from 0 or
# "two" interleaved streams (0 and 32 MiB).
reads() {
	python3 - "$@" <<'EOF'
import mmap, os, sys
pat, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 128 << 10)
for i in range(n):
    if pat == "one":
        off = i * (128 << 10)
    else:
        off = (i // 2) * (128 << 10) + (i % 2) * (32 << 20)
    os.preadv(fd, [buf], off)
EOF
}

# p50 of COLUMN of the reads in DB that satisfy WHERE.
p50_where() {
	sqlite3 "$1" "WITH r AS (SELECT $3 AS v FROM ops WHERE op=(SELECT op FROM op_names
		WHERE name='read') AND ($2))
		SELECT v FROM r ORDER BY v LIMIT 1 OFFSET (SELECT count(*)/2 FROM r)"
}

# --- the stream-switch penalty: one stream and two interleaved, each on a
# plain mount and on a model mount of the same directory, in rounds ---
cp "$B/f" "$B/two"
one_ino=$(stat -c %i "$B/f")
two_ino=$(stat -c %i "$B/two")
mkdir "$T/p"
# a spinning worker preempted by another process waits longer than asked:
# on a loaded machine this is taken up to 3 times, each printed, and the
# first inside the bounds counts
switch_side_by_side() {
	rm -f "$T"/plain.db* "$T"/switch.db*
	fsp_mount "$B" "$T/p" --log "$T/plain.db" --threads 1 || not_ok "plain mount"
	fsp_mount "$B" "$T/m" --log "$T/switch.db" --threads 1 --device-model "switch=200us" ||
		not_ok "model mount"
	for round in 1 2 3 4; do
		for m in p m; do
			reads one "$T/$m/f" 100
			reads two "$T/$m/two" 100
		done
	done
	fsp_umount "$T/p"
	fsp_umount "$T/m"
	one_p=$(p50_where "$T/plain.db" "node=$one_ino" total_ns)
	two_p=$(p50_where "$T/plain.db" "node=$two_ino" total_ns)
	one_m=$(p50_where "$T/switch.db" "node=$one_ino" total_ns)
	two_m=$(p50_where "$T/switch.db" "node=$two_ino" total_ns)
	echo "# attempt $1: read p50 plain / model: one stream $one_p / $one_m ns, two interleaved $two_p / $two_m ns"
}
# End to end, the interleaved reads' p50 rises by the penalty and one
# stream's does not move; both judged against the penalty, not in absolute
# microseconds of a loaded machine. Measured on this 2-core machine at load
# 4.6-8 (20 attempts): two streams +199.7..+231.8 us, one stream -12.6..+11.9
# us (a p50 of 400 reads jumps by ~10 us when the worker changes CPU).
# Preemption only adds to a spin: -5%..+20% of the penalty for two streams,
# and one stream within a tenth of the penalty (20 us), the first attempt
# of three where both hold.
PENALTY=200000
two_ok() { [ $((two_m - two_p)) -ge $((PENALTY * 95 / 100)) ] &&
	[ $((two_m - two_p)) -le $((PENALTY * 120 / 100)) ]; }
one_ok() { [ $((one_m - one_p)) -le $((PENALTY / 10)) ] &&
	[ $((one_p - one_m)) -le $((PENALTY / 10)) ]; }
for attempt in 1 2 3; do
	switch_side_by_side $attempt
	two_ok && one_ok && break
done
DB=$T/switch.db
check "two interleaved streams: read p50 +200 us -5%..+20% ($two_p -> $two_m ns)" two_ok
check "one stream: read p50 within a tenth of the penalty ($one_p -> $one_m ns)" one_ok
# exact: what the model charged, not what the machine let the spin take
expect_eq "the run's model.switch_ns: 403 switches x 200 us" 80600000 "$(sqlite3 "$DB" \
	"SELECT value FROM run_attrs WHERE key='model.switch_ns'")"
expect_eq "one stream is not charged: model_ns only on the jump to 0 of rounds 2-4" \
	3 "$(sqlite3 "$DB" "SELECT count(*) FROM ops WHERE op=13 AND model_ns > 0 AND node=$one_ino")"
expect_eq "every interleaved read is charged" 400 "$(sqlite3 "$DB" \
	"SELECT count(*) FROM ops WHERE op=13 AND model_ns >= 200000 AND node=$two_ino")"
m50=$(p50_where "$DB" "node=$two_ino" model_ns)
check "their model_ns p50: 200 us +-5% ($m50 ns)" test "$m50" -ge 190000 -a "$m50" -le 210000
expect_eq "the run's model.switches: 4 x 100 + 3 jumps to the other file" 403 "$(sqlite3 "$DB" \
	"SELECT value FROM run_attrs WHERE key='model.switches'")"
expect_eq "the spec is fuse.device_model" "switch=200us,streams=8,seed=1" "$(sqlite3 "$DB" \
	"SELECT value FROM run_attrs WHERE key='fuse.device_model'")"

# --- the read-after-write penalty ---
DB=$T/raw.db
# the first 4 MiB written 3 s before the reads, the next 4 MiB just before;
# one attempt is 32 reads of each, so one preemption can move a p50: taken
# up to 3 times (each printed), the first inside the bounds counts, and the
# exact checks below read the last attempt's database
raw_attempt() {
	rm -f "$T"/raw.db*
	fsp_mount "$B" "$T/m" --log "$DB" --threads 1 --device-model "raw=300us@2s" ||
		not_ok "model mount (raw)"
	dd if=/dev/zero of="$T/m/f" bs=128k count=32 oflag=direct conv=notrunc status=none
	sleep 3
	dd if=/dev/zero of="$T/m/f" bs=128k count=32 seek=32 oflag=direct conv=notrunc status=none
	dd if="$T/m/f" of=/dev/null bs=128k count=32 skip=32 iflag=direct status=none
	dd if="$T/m/f" of=/dev/null bs=128k count=32 iflag=direct status=none
	fsp_umount "$T/m"
	recent=$(p50_where "$DB" "offset >= 4194304 AND offset < 8388608" total_ns)
	old=$(p50_where "$DB" "offset < 4194304" total_ns)
	echo "# attempt $1: read p50: data written just before $recent ns, written 3 s before $old ns"
}
# -17%..+20% of the penalty (a spin ends late, never early; the old reads'
# p50 can be the one a preemption raised)
raw_ok() { [ $((recent - old)) -ge 250000 ] && [ $((recent - old)) -le 360000 ]; }
for attempt in 1 2 3; do
	raw_attempt $attempt
	raw_ok && break
done
check "recent reads are slower by about the penalty ($old -> $recent ns)" raw_ok
m50=$(p50_where "$DB" "offset >= 4194304 AND offset < 8388608" model_ns)
check "their model_ns p50: the 300 us penalty +-5% ($m50 ns)" \
	test "$m50" -ge 285000 -a "$m50" -le 315000
expect_eq "model_ns on the 32 recent reads only" 32 "$(sqlite3 "$DB" \
	"SELECT count(*) FROM ops WHERE op=13 AND model_ns >= 300000")"
expect_eq "no model_ns on the old reads" 0 "$(sqlite3 "$DB" \
	"SELECT count(*) FROM ops WHERE op=13 AND model_ns > 0 AND offset < 4194304")"
expect_eq "model.raw_hits" 32 "$(sqlite3 "$DB" "SELECT value FROM run_attrs WHERE key='model.raw_hits'")"

# --- bad specs: exit 2, one line, nothing mounted ---
"$FSPRISM" mount --log "$T/bad.db" --device-model "swtich=1us" "$B" "$T/m" 2>"$T/err"
expect_eq "mount: bad spec exits 2" 2 "$?"
check "mount: the message names the bad knob" grep -q "unknown knob 'swtich'" "$T/err"
check "mount: nothing mounted" sh -c "! mountpoint -q '$T/m'"

# --- compare --device-model on the embedded default ---
TMPDIR="$T/tmp"
export TMPDIR
nothing_left() { fsp_nothing_left "$T/tmp" "$1"; }
"$FSPRISM" compare --db "$T/c.db" --size=256M --time=300ms --span=32M --details \
	--targets raw,fs --device-model "switch=100us,flush=1ms" >"$T/out" 2>"$T/cerr"
rc=$?
expect_eq "compare --device-model exits 0" 0 "$rc"
[ "$rc" = 0 ] || sed 's/^/# /' "$T/cerr" | tail -5
q() { sqlite3 "$T/c.db" "$1"; }
cmp=$(q "SELECT id FROM runs WHERE kind='compare'")
mrun=$(q "SELECT value FROM run_attrs WHERE run=$cmp AND key='model_run'")
expect_eq "the model mount's run belongs to the compare" "mount|model-fuse|$cmp" \
	"$(q "SELECT kind, label, parent FROM runs WHERE id=${mrun:-0}")"
expect_eq "the compare records the spec" "switch=100us,flush=1ms" \
	"$(q "SELECT value FROM run_attrs WHERE run=$cmp AND key='device_model'")"
raw_ios=$(q "SELECT read_ios + write_ios FROM steps s JOIN runs r ON r.id=s.run
	WHERE r.parent=$cmp AND r.label='raw'" | awk '{n += $1} END {print n + 0}')
model_ios=$(q "SELECT value FROM run_attrs WHERE run=${mrun:-0} AND key='model.ios'")
echo "# raw target IOs $raw_ios; IOs the model saw (all targets, prefill, mkfs) ${model_ios:-0}"
check "the model saw the raw target's IO (${model_ios:-0} >= $raw_ios)" \
	test "${model_ios:-0}" -ge "$raw_ios" -a "$raw_ios" -gt 0
check "the model charged stream switches" test "$(q "SELECT value FROM run_attrs
	WHERE run=${mrun:-0} AND key='model.switches'")" -gt 0
check "the model charged flushes (the file system's)" test "$(q "SELECT value FROM run_attrs
	WHERE run=${mrun:-0} AND key='model.flushes'")" -gt 0
nothing_left "after compare --device-model"

# SIGINT with the model mount up and a target running
"$FSPRISM" compare --db "$T/i.db" --size=256M --time=3s --span=32M --targets raw,fs \
	--device-model "switch=100us" >/dev/null 2>"$T/ierr" &
pid=$!
i=0
while ! losetup -a | grep -qF "$T/tmp" && [ $i -lt 300 ] && kill -0 $pid 2>/dev/null; do
	sleep 0.1; i=$((i + 1))
done
sleep 1
kill -INT $pid
wait $pid
rc=$?
check "SIGINT: exit status 130 ($rc)" test "$rc" = 130
nothing_left "SIGINT with the model mount up"

# bad input: refused before anything is set up
"$FSPRISM" compare --db "$T/b.db" --device-model "switch=1xs" >/dev/null 2>"$T/berr"
expect_eq "compare: bad spec exits 2" 2 "$?"
check "compare: the message names it" grep -q "invalid --device-model 'switch=1xs'" "$T/berr"
"$FSPRISM" compare --db "$T/b.db" --device /dev/null --device-model "switch=1us" >/dev/null 2>"$T/berr"
expect_eq "compare: --device-model with --device exits 2" 2 "$?"
nothing_left "after bad input"

no_sanitizer_reports
fsp_done

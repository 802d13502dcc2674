#!/bin/sh
# it_devpat.sh - the device-level access pattern of `fsprism stats`
# (src/prism/pattern.c) on block requests traced on loop devices made here,
# with answers known in advance:
# - one sequential stream: every request but the first sequential, 1.00
#   streams; reads and writes interleaved from two offsets (mixed-seq,
#   offsets=per-direction): one stream per direction, two together; one
#   sequence shared by both directions: no direction sequential alone, one
#   stream together; 4 MiB reads split at the device's max_sectors_kb: the
#   application's 4 IOs beside the block layer's 16 requests of two sizes;
# - read-after-write recency of a scripted pattern (tests/devpat_pattern.py,
#   O_DIRECT on the raw loop device: reads at once, 3 ms, 30 ms, 300 ms and
#   1.5 s after their writes, never-written reads, a partial overwrite),
#   traced by a slow `fsprism run` of the same device: every bucket exact;
#   the fsync's flush;
# - an emulated mount (--cow=always --journal=ordered) with its store on a
#   loop device, O_DIRECT IO through the mount: the block requests of the
#   store device that the daemon queued agree with the emulation's own
#   dev_* rows in bytes and, each emulation IO counted as the requests the
#   device's max_sectors_kb (set to 64 KiB) splits it into, in requests per
#   direction (within 1%; exact here), and the flush requests with its
#   flushes.
# The block rows of the recency and emulation parts come from a `fsprism
# run` on the same device (its own reads are counted and told apart by
# their tgid), since a mount does not trace its store's device itself; a
# traced run in which the kernel missed a completion (block.missed) is done
# again, up to three times.
. "$TESTS_SRCDIR/lib.sh"

command -v python3 >/dev/null || fsp_skip "python3 not installed"
command -v fio >/dev/null || fsp_skip "fio not installed"
fsp_capture_daemon_reports
DB=$T/devpat.db
q() { sqlite3 "$DB" "$1"; }
attr() { q "SELECT value FROM run_attrs WHERE run=$RUN AND key='$1'"; }
# pat PYTHON-EXPR: a value of the stats JSON of run $RUN (p: the pattern
# of step 0)
pat() {
	"$FSPRISM" stats "$DB" --run "$RUN" --format json >"$T/stats.json" &&
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
p = d["block"]["pattern"][0]
v = eval(sys.argv[2])
print(" ".join(str(x) for x in v) if isinstance(v, tuple) else v)' "$T/stats.json" "$1"
}

# run_fg DESC ARGS...: fsprism run ARGS, sets RUN.
run_fg() {
	desc=$1; shift
	"$FSPRISM" run "$@" --db "$DB" --quiet >"$T/out" 2>"$T/err"
	rc=$?
	RUN=$(sed -n 's/^run \([0-9]*\) stored in .*/\1/p' "$T/out")
	if [ "$rc" -eq 0 ] && [ -n "$RUN" ]; then ok "$desc"; else
		not_ok "$desc: exit $rc ($(cat "$T/err"))"; RUN=0; fi
}

# tracer_start DEV OFFSET BUSY: a slow traced `fsprism run` of DEV, reading
# 4 KiB at OFFSET.. in bursts of one IO at 1% duty for BUSY of busy time (so
# 100 x BUSY, however fast the IO), in the background; returns once its BPF
# links are attached and its step has begun. tracer_wait sets RUN.
tracer_start() {
	"$FSPRISM" run sustained-randread "$1" --qd=1 --bs=4k --burst=4k --duty=1 --time="$3" --bytes=1G \
		--offset="$2" --span=16M --ramp=0 --db "$DB" --quiet >"$T/tracer.out" 2>"$T/tracer.err" &
	TRACER=$!
	n=0
	while [ "$(grep -l '^link_type:' /proc/$TRACER/fdinfo/* 2>/dev/null | wc -l)" -lt 4 ] &&
	      [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
	sleep 0.2
}
tracer_wait() {
	wait "$TRACER"
	rc=$?
	RUN=$(sed -n 's/^run \([0-9]*\) stored in .*/\1/p' "$T/tracer.out")
	if [ "$rc" -eq 0 ] && [ -n "$RUN" ]; then ok "$1: the tracing run"; else
		not_ok "$1: the tracing run: exit $rc ($(cat "$T/tracer.err"))"; RUN=0; fi
}

# set_limit DEV KB: the request size limit of a loop device made here, put
# back at the end (a loop device keeps it after it is detached).
limits=""
set_limit() {
	f=/sys/block/${1#/dev/}/queue/max_sectors_kb
	limits="$limits $f=$(cat "$f")"
	echo "$2" >"$f"
}
trap 'for l in $limits; do echo "${l#*=}" >"${l%%=*}"; done; fsp_cleanup' EXIT

LOOP=$(fsp_loop_new 256M) || { not_ok "make a loop device"; fsp_done; exit 1; }
fsp_track_loop "$LOOP"
# the device's own limit (another test may have left a smaller one)
set_limit "$LOOP" "$(cat "/sys/block/${LOOP#/dev/}/queue/max_hw_sectors_kb")"
LIMIT_KB=$(cat "/sys/block/${LOOP#/dev/}/queue/max_sectors_kb")

run_fg "probe run" sustained-seqread "$LOOP" --qd=1 --bs=4k --bytes=1M --span=16M --ramp=0
[ "$(attr block.traced)" = 1 ] || fsp_skip "block layer not traced here: $(cat "$T/err")"

# ---- sequential share and streams -----------------------------------------------
N=$((256 - $(attr block.missed)))
expect_eq "one stream: $N reads, all sequential but the first, 1 stream per window" \
	"$N $((N - 1)) 1.0 0" \
	"$(pat 'p["sequential"]["read"]["ios"], p["sequential"]["read"]["seq_ios"], p["sequential"]["read"]["streams"], p["sequential"]["write"]["ios"]')"
expect_eq "one stream: the table says 99.6% and 1.00" "0 read 256 99.6% 1.00" \
	"$("$FSPRISM" stats "$DB" --run "$RUN" | awk '/^Access pattern/ {on = 1} on && $1 == "0" && $2 == "read" {print; exit}' | tr -s ' ')"
expect_eq "one stream: the application's 4 KiB IOs, the block layer's 4 KiB requests" \
	"256 4096 {'4096': $N}" \
	"$(pat 'p["sizes"]["read"]["application"]["count"], p["sizes"]["read"]["application"]["mean_bytes"].__int__(), p["sizes"]["read"]["block"]["bins"]')"
expect_eq "one stream: no writes, so every read never written" "$N 0" \
	"$(pat 'p["recency"]["never"], sum(p["recency"].values()) - p["recency"]["never"]')"

run_fg "two streams: 4 KiB reads and writes alternating, offsets per direction" mixed-seq "$LOOP" \
	--mix=50 --offsets=per-direction --interleave=exact --qd=1 --bs=4k --bytes=1M --span=16M \
	--ramp=0 --duty=100
if [ "$(attr block.missed)" = 0 ]; then
	expect_eq "two streams: reads 128, 127 sequential, 1 stream; writes the same; together 2 streams" \
		"128 127 1.0 128 127 1.0 256 254 2.0" \
		"$(pat 'p["sequential"]["read"]["ios"], p["sequential"]["read"]["seq_ios"], p["sequential"]["read"]["streams"], p["sequential"]["write"]["ios"], p["sequential"]["write"]["seq_ios"], p["sequential"]["write"]["streams"], p["sequential"]["both"]["ios"], p["sequential"]["both"]["seq_ios"], p["sequential"]["both"]["streams"]')"
	# both directions walk the same offsets: every read comes either just
	# after the write of its block or before it (then never written)
	expect_eq "two streams: the reads all in the recency, all written or all never" "128 True" \
		"$(pat 'sum(p["recency"].values()), p["recency"]["never"] in (0, 128)')"
else
	not_ok "two streams: $(attr block.missed) completions missed, the counts are not exact"
fi

run_fg "one sequence shared by reads and writes" mixed-seq "$LOOP" --mix=50 --offsets=shared \
	--interleave=exact --qd=1 --bs=4k --bytes=1M --span=16M --ramp=0 --duty=100
if [ "$(attr block.missed)" = 0 ]; then
	expect_eq "shared sequence: no direction sequential alone (16 streams per window), one together" \
		"0 16.0 0 255 1.0" \
		"$(pat 'p["sequential"]["read"]["seq_ios"], p["sequential"]["read"]["streams"], p["sequential"]["write"]["seq_ios"], p["sequential"]["both"]["seq_ios"], p["sequential"]["both"]["streams"]')"
else
	not_ok "shared sequence: $(attr block.missed) completions missed, the counts are not exact"
fi

run_fg "4 MiB reads, split at ${LIMIT_KB} KiB" sustained-seqread "$LOOP" --qd=1 --bs=4M --bytes=16M \
	--span=64M --ramp=0
PIECES=$(( (4096 + LIMIT_KB - 1) / LIMIT_KB ))
expect_eq "split: 4 application IOs of 4 MiB, $((4 * PIECES)) block requests, the same bytes" \
	"4 4194304 $((4 * PIECES - $(attr block.missed))) $((16777216 - $(attr block.missed) * LIMIT_KB * 1024))" \
	"$(pat 'p["sizes"]["read"]["application"]["count"], int(p["sizes"]["read"]["application"]["mean_bytes"]), p["sizes"]["read"]["block"]["count"], p["sizes"]["read"]["block"]["bytes"]')"
expect_eq "split: the table shows both layers" "2" \
	"$("$FSPRISM" stats "$DB" --run "$RUN" | grep -cE '^0 +read +(application|block) ')"

# ---- the FUSE layer: a compare's mount run beside its engine run --------------
# The probe run made the engine run of a compare by hand, with a mount run
# whose read and write rows (FUSE requests) are known: those that started in
# the engine step's window are its FUSE layer; the mount run itself, given the
# same block rows, takes all of its own.
FDB=$T/fuse.db
cp "$DB" "$FDB"
S0=$(sqlite3 "$FDB" "SELECT started_ns FROM steps WHERE run=1 AND step=0")
S1=$(sqlite3 "$FDB" "SELECT ended_ns FROM steps WHERE run=1 AND step=0")
sqlite3 "$FDB" "UPDATE runs SET parent=99, label='fsprism' WHERE id=1;
	INSERT INTO runs(id, kind, record_mode) VALUES(99, 'compare', NULL);
	INSERT INTO runs(id, kind, parent, label, record_mode) VALUES(100, 'mount', 99, 'fsprism-fuse', 'full');
	INSERT INTO ops(run, step, op, length, start_ns) VALUES
	  (100, 0, 13, 131072, $S0), (100, 0, 13, 131072, $S1), (100, 0, 13, 4096, $S0 + 1),
	  (100, 0, 13, 4096, $S0 + 2), (100, 0, 13, 4096, $S0 + 3), (100, 0, 14, 8192, $S0 + 4),
	  (100, 0, 13, 65536, $S1 + 1000000000);
	INSERT INTO block_ios(run, step, dev, sector, bytes, op, flags, tgid, queue_ns, insert_ns,
	  issue_ns, complete_ns, error) SELECT 100, step, dev, sector, bytes, op, flags, tgid,
	  queue_ns, insert_ns, issue_ns, complete_ns, error FROM block_ios WHERE run=1;
	INSERT INTO run_attrs(run, key, value) VALUES(100, 'block.traced', '1');
	INSERT INTO block_ios(run, step, dev, sector, bytes, op, flags, issue_ns, complete_ns, error)
	  VALUES (100, 0, '7:0', 0, 0, 'flush', 1, $S0, $S0 + 9, 0),
	  (100, 0, '7:0', 0, 0, 'flush', 1, $S0, $S0 + 9, 0), (100, 0, '7:0', 0, 0, 'flush', 9, $S0, $S0 + 9, 0),
	  (100, 0, '7:0', 0, 0, 'flush', 1, $S0, $S0 + 9, 0), (100, 0, '7:0', 0, 0, 'flush', 1, $S0, $S0 + 9, 0),
	  (100, 0, '7:0', 0, 0, 'flush', 1, $S0, $S0 + 9, 5),
	  (100, 0, '7:0', 9000, 4096, 'write', 12, $S0, $S0 + 9, 0),
	  (100, 0, '7:0', 9008, 4096, 'write', 13, $S0, $S0 + 9, 0),
	  (100, 0, '7:0', 9016, 4096, 'write', 5, $S0, $S0 + 9, 0);
	INSERT INTO hist(run, step, op, layer, count, sum_ns, min_ns, max_ns, bytes, errors)
	  VALUES (100, 0, 17, 0, 4, 4000, 1000, 1000, 0, 0)"
fuse_sizes() {
	"$FSPRISM" stats "$FDB" --run "$1" --format json | python3 -c 'import json,sys
s = json.load(sys.stdin)["block"]["pattern"][0]["sizes"]
f = lambda x: x and (x["count"], x["bins"])
print(f(s["read"]["fuse"]), f(s["write"]["fuse"]), f(s["read"]["application"]) and "app")'
}
expect_eq "fuse layer: a compare's engine run takes its mount's requests in the step's window" \
	"(5, {'4096': 3, '131072': 2}) (1, {'8192': 1}) app" "$(fuse_sizes 1)"
expect_eq "fuse layer: a mount run takes its own, and has no application layer" \
	"(6, {'4096': 3, '65536': 1, '131072': 2}) (1, {'8192': 1}) None" "$(fuse_sizes 100)"
# and its flushes: 5 flush requests (a sixth failed), 2 writes with a
# preflush, 3 FUA writes, against its 4 fsyncs
expect_eq "flushes: a mount run's flushes, preflushes, FUA writes, fsyncs, per fsync, errors" \
	"0 5 2 3 4 1.75 1" \
	"$("$FSPRISM" stats "$FDB" --run 100 | awk '/^Flushes/ {on = 1} on && $1 == "0" {print; exit}' | tr -s ' ')"
expect_eq "flushes: the same in JSON" "5 2 3 4 1.75 1" \
	"$("$FSPRISM" stats "$FDB" --run 100 --format json | python3 -c 'import json,sys
p = json.load(sys.stdin)["block"]["pattern"][0]
print(p["flushes"], p["preflushes"], p["fua_writes"], p["fsyncs"], p["flushes_per_fsync"], p["errors"])')"
expect_eq "flushes: an engine run has no fsyncs" "None None" \
	"$("$FSPRISM" stats "$FDB" --run 1 --format json | python3 -c 'import json,sys
p = json.load(sys.stdin)["block"]["pattern"][0]
print(p["fsyncs"], p["flushes_per_fsync"])')"

# ---- read-after-write recency, scripted ------------------------------------------
# at a real-time priority, so that no busy CPU delays a read between the
# script's check of its age and its submission (where chrt can)
RT=""
chrt -f 10 true 2>/dev/null && RT="chrt -f 10"
# The kernel now and then does not run the trace's completion program for a
# request (counted in block.missed, docs/tracing.md); a missed read would
# change the buckets, so a traced run that missed one is done again (each
# run is its own trace: what the last one wrote is not in the next).
for attempt in 1 2 3; do
	tracer_start "$LOOP" 64M 50ms
	$RT python3 "$TESTS_SRCDIR/devpat_pattern.py" "$LOOP" >"$T/py.out" 2>&1
	PYRC=$?
	tracer_wait "recency (attempt $attempt)"
	[ "$(attr block.missed)" = 0 ] && break
	echo "# recency: $(attr block.missed) completions missed by the kernel in run $RUN, again" >&9
done
expect_eq "recency: the scripted pattern ran ($(cat "$T/py.out"))" 0 "$PYRC"
# the writes it made (36 of 4 KiB and 2 of 64 KiB, more when it had to retry)
W4=$(sed -n 's/.*4096:\([0-9]*\).*/\1/p' "$T/py.out")
W64=$(sed -n 's/.*65536:\([0-9]*\).*/\1/p' "$T/py.out")
PYTGID=$(q "SELECT tgid FROM block_ios WHERE run=$RUN AND op='write' GROUP BY tgid
	ORDER BY count(*) DESC LIMIT 1")
TRACER_READS=$(q "SELECT count(*) FROM block_ios WHERE run=$RUN AND step=0 AND tgid=$TRACER")
expect_eq "recency: all of the script's requests inside the traced step" \
	"0|$((W4 + W64))|50" \
	"$(q "SELECT sum(step IS NULL), sum(op='write'), sum(op='read') FROM block_ios
	      WHERE run=$RUN AND tgid=${PYTGID:-0}")"
expect_eq "recency: nothing missed" 0 "$(attr block.missed)"
# lt_1ms: 16 + 2, lt_10ms: 8, lt_100ms: 4, lt_1s: 2 + 1, ge_1s: 6, never:
# 10 + 1 and the tracer's own reads (devpat_pattern.py says which is which)
expect_eq "recency: <1ms 18, <10ms 8, <100ms 4, <1s 3, >=1s 6, never 11 + the tracer's $TRACER_READS" \
	"18 8 4 3 6 $((11 + TRACER_READS))" \
	"$(pat '" ".join(str(p["recency"][k]) for k in ("lt_1ms", "lt_10ms", "lt_100ms", "lt_1s", "ge_1s", "never"))')"
expect_eq "recency: the table's row" "0 $((50 + TRACER_READS)) 18 8 4 3 6 $((11 + TRACER_READS))" \
	"$("$FSPRISM" stats "$DB" --run "$RUN" | awk '/^Reads after writes/ {on = 1} on && $1 == "0" {print; exit}' | tr -s ' ')"
expect_eq "recency: csv rows" "18 8 4 3 6 $((11 + TRACER_READS))" \
	"$("$FSPRISM" stats "$DB" --run "$RUN" --format csv | awk -F, '$3 == "pattern_read" && $4 ~ /^recency_/ {printf "%s%s", n++ ? " " : "", $5}')"
expect_eq "recency: the script's fsync is one flush request" "1 0" \
	"$(pat 'p["flushes"], p["fua_writes"]')"
expect_eq "recency: the writes' sizes: $W4 of 4 KiB, $W64 of 64 KiB" "{'4096': $W4, '65536': $W64}" \
	"$(pat 'p["sizes"]["write"]["block"]["bins"]')"

# ---- the emulated mount: the block view and the emulation's own ------------------
truncate -s 256M "$T/store.img"
STORE=$(losetup --find --show --direct-io=on "$T/store.img") || {
	not_ok "losetup --direct-io=on"; fsp_done; exit 1; }
fsp_track_loop "$STORE"
# requests of at most 64 KiB: the emulation's 128 KiB IOs are split in two
set_limit "$STORE" 64
mkdir "$T/back" "$T/mnt"
MDB=$T/mount.db
if fsp_mount "$T/back" "$T/mnt" --store "$STORE" --format --cow=always --journal=ordered \
	--record=full --log "$MDB" 2>"$T/mount.err"; then
	DPID=$(fsp_daemon_pid "$T/mnt")
	mono() { python3 -c 'import time; print(time.monotonic_ns())'; }
	for attempt in 1 2 3; do # again when the kernel missed a completion (as above)
		tracer_start "$STORE" 200M 120ms
		T0=$(mono)
		fio --name=seqw --filename="$T/mnt/f" --size=8M --bs=128k --rw=write --direct=1 \
			--ioengine=psync --fsync_on_close=1 --output="$T/fio1" &&
		fio --name=seqr --filename="$T/mnt/f" --size=8M --bs=128k --rw=read --direct=1 \
			--ioengine=psync --output="$T/fio2" &&
		fio --name=randw --filename="$T/mnt/f" --size=8M --bs=4k --rw=randwrite --direct=1 \
			--ioengine=psync --io_size=1M --fsync=16 --randrepeat=1 --output="$T/fio3"
		FIORC=$?
		sleep 0.3 # the last IO done (the commit timer's next commit comes seconds later)
		T1=$(mono)
		tracer_wait "emu (attempt $attempt)"
		MISSED=$(attr block.missed)
		[ "$MISSED" = 0 ] && break
		echo "# emu: $MISSED completions missed by the kernel in run $RUN, again" >&9
	done
	expect_eq "emu: fio through the mount" 0 "$FIORC"
	fsp_umount "$T/mnt"
	# the IO of the fio jobs, and the tracer's step around them
	W="$T0 AND $T1"
	expect_eq "emu: the fio jobs ran inside the traced step" 1 \
		"$(q "SELECT started_ns <= $T0 AND $T1 <= ended_ns FROM steps WHERE run=$RUN AND step=0")"
	# the daemon's requests on the store device in the step; the
	# emulation's store IO (dev_* rows) that started in it, each counted as
	# the requests the block layer makes of it: one per max_sectors_kb
	# (loop devices keep a limit someone set, 64 KiB on some here)
	SLIM=$(( $(cat "/sys/block/${STORE#/dev/}/queue/max_sectors_kb") * 1024 ))
	blk() { q "SELECT count(*) || ' ' || coalesce(sum(bytes), 0) FROM block_ios
		   WHERE run=$RUN AND tgid=${DPID:-0} AND op='$1'
		   AND coalesce(queue_ns, insert_ns, issue_ns) BETWEEN $W"; }
	emu() { sqlite3 "$MDB" "SELECT coalesce(sum((length + $SLIM - 1) / $SLIM), 0) || ' ' ||
		   coalesce(sum(length), 0) FROM ops WHERE op $1 AND start_ns BETWEEN $W"; }
	emu_ios() { sqlite3 "$MDB" "SELECT count(*) FROM ops WHERE op $1 AND start_ns BETWEEN $W"; }
	BR=$(blk read); ER=$(emu "= 36")
	BW=$(blk write); EW=$(emu "BETWEEN 37 AND 40")
	echo "# emu: max_sectors_kb $((SLIM / 1024)); reads: block $BR, emulation $ER" \
		"($(emu_ios "= 36") IOs); writes: block $BW, emulation $EW ($(emu_ios "BETWEEN 37 AND 40") IOs)" >&9
	# within DESC "N BYTES" "N BYTES": the block view within 1% of the
	# emulation's, less at most the requests the trace missed ($MISSED, of at
	# most $SLIM bytes each), and not empty
	within() {
		python3 -c 'import sys
a = [int(x) for x in sys.argv[1].split()]; b = [int(x) for x in sys.argv[2].split()]
m, lim = int(sys.argv[3]), int(sys.argv[4])
ok = b[0] > 0 and a[0] <= 1.01 * b[0] and a[1] <= 1.01 * b[1] and \
	b[0] - a[0] <= 0.01 * b[0] + m and b[1] - a[1] <= 0.01 * b[1] + m * lim
sys.exit(0 if ok else 1)' "$2" "$3" "$MISSED" "$SLIM" &&
		ok "$1: block $2, emulation $3" || not_ok "$1: block $2, emulation $3 ($MISSED missed)"
	}
	within "emu: device reads agree in requests and bytes within 1%" "$BR" "$ER"
	within "emu: device writes agree in requests and bytes within 1%" "$BW" "$EW"
	if [ "$MISSED" = 0 ]; then
		expect_eq "emu: the same, exactly (O_DIRECT, one IO at a time: nothing merged)" \
			"$BR|$BW" "$ER|$EW"
	else
		echo "# emu: $MISSED completions missed in every attempt: not compared exactly" >&9
	fi
	expect_eq "emu: the 8 MiB of 128 KiB reads are 64 IOs of the emulation, 128 requests" \
		"64 128" "$(emu_ios "= 36" ) $(( ${BR% *} + MISSED > 128 ? 128 : ${BR% *} + MISSED ))"
	# flush requests are queued by the kernel's flush machinery (a kworker), not the daemon
	expect_eq "emu: flush requests on the store device = the emulation's flushes" \
		"$(sqlite3 "$MDB" "SELECT count(*) FROM ops WHERE op = 41 AND start_ns BETWEEN $W")" \
		"$(q "SELECT count(*) FROM block_ios WHERE run=$RUN AND (op='flush' OR flags & 8)
		      AND coalesce(queue_ns, insert_ns, issue_ns) BETWEEN $W")"
	expect_eq "emu: the stats pattern counts them too" \
		"$(q "SELECT count(*) FROM block_ios WHERE run=$RUN AND step=0 AND op='flush'")" \
		"$(pat 'p["flushes"]')"
else
	not_ok "emu: mount with the store on $STORE ($(cat "$T/mount.err"))"
fi

no_sanitizer_reports
fsp_done

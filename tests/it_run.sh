#!/bin/sh
# it_run.sh - `fsprism run` end to end: every profile at a tiny scale on a
# raw loop device and on a file on ext4, what lands in the database, the
# data actually written, the raw-write refusal, and bad input.
. "$TESTS_SRCDIR/lib.sh"

DB=$T/run.db
TINY="--time=200ms --span=64M --idle=0 --quiet"

q() { sqlite3 "$DB" "$1"; }

# run_ok DESC ARGS...: fsprism run ARGS, expects success; sets RUN to the run id.
run_ok() {
	desc=$1; shift
	if "$FSPRISM" run "$@" --db "$DB" >"$T/out" 2>"$T/err"; then
		RUN=$(sed -n 's/^run \([0-9]*\) stored in .*/\1/p' "$T/out")
		if [ -n "$RUN" ]; then ok "$desc"; return 0; fi
		not_ok "$desc: no 'run N stored' line: $(cat "$T/out")"
	else
		not_ok "$desc: exit $? ($(cat "$T/err"))"
	fi
	RUN=
	return 1
}

# check_run PROFILE EXPECTED_STEPS: the stored run is complete and consistent.
check_run() {
	name=$1; want=$2
	expect_eq "$name: steps" "$want" "$(q "SELECT count(*) FROM steps WHERE run=$RUN")"
	expect_eq "$name: every step did IO" 0 \
		"$(q "SELECT count(*) FROM steps WHERE run=$RUN AND read_ios+write_ios=0")"
	expect_eq "$name: histograms for every step" "$want" \
		"$(q "SELECT count(DISTINCT step) FROM hist WHERE run=$RUN AND layer=0")"
	# bytes in steps == histogram counts x block size, per step
	expect_eq "$name: step bytes = hist count x bs" 0 "$(q "
		SELECT count(*) FROM steps s WHERE run=$RUN AND s.read_bytes + s.write_bytes !=
		  s.block_size * (SELECT sum(count) FROM hist h
		                  WHERE h.run=s.run AND h.step=s.step AND h.layer=0)")"
	expect_eq "$name: read/write ios match hist per op" 0 "$(q "
		SELECT count(*) FROM steps s WHERE run=$RUN AND (
		  s.read_ios != coalesce((SELECT count FROM hist h WHERE h.run=s.run AND
		     h.step=s.step AND h.layer=0 AND h.op=13), 0) OR
		  s.write_ios != coalesce((SELECT count FROM hist h WHERE h.run=s.run AND
		     h.step=s.step AND h.layer=0 AND h.op=14), 0))")"
	expect_eq "$name: profile recorded" "$name" \
		"$(q "SELECT value FROM run_attrs WHERE run=$RUN AND key='profile'")"
	expect_eq "$name: kind" run "$(q "SELECT kind FROM runs WHERE id=$RUN")"
	score=$(q "SELECT value FROM run_attrs WHERE run=$RUN AND key='score'")
	if [ -n "$score" ] && awk "BEGIN{exit !($score > 0)}"; then
		ok "$name: score $score"
	else
		not_ok "$name: no positive score ('$score')"
	fi
	# the IO buffers: in huge pages unless the kernel has them off
	huge=$(q "SELECT value FROM run_attrs WHERE run=$RUN AND key='engine.huge_buffer_pct'")
	case $THP in
	*"[never]"*) expect_eq "$name: no huge buffers (THP never)" 0.000 "$huge" ;;
	*) if [ -n "$huge" ] && awk "BEGIN{exit !($huge > 0 && $huge <= 100)}"; then
		ok "$name: huge buffers $huge%"
	   else
		not_ok "$name: engine.huge_buffer_pct '$huge' with THP '$THP'"
	   fi ;;
	esac
}
THP=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo "[never]")

steps_of() {
	case $1 in
	sustained-*) echo 6 ;;
	mixed-*) echo 11 ;;
	*) echo 1 ;;
	esac
}

PROFILES="burst-randread sustained-randread burst-randwrite sustained-randwrite
mixed-random burst-seqread sustained-seqread burst-seqwrite sustained-seqwrite
mixed-seq fill"

# ---- a raw loop device --------------------------------------------------
RAW=$(fsp_loop_new 256M) || { not_ok "losetup"; fsp_done; exit 1; }
fsp_track_loop "$RAW"

for p in $PROFILES; do
	extra=
	[ "$p" = fill ] && extra="--segment=16M --tail=32M --time=0"
	if run_ok "raw: $p" "$p" "$RAW" --destroy-data $TINY $extra; then
		check_run "$p" "$(steps_of "$p")"
	fi
done
# the fill wrote the whole 64M span in 16M segments
expect_eq "raw: fill segments" 4 "$(q "SELECT count(*) FROM segments WHERE run=$RUN")"
expect_eq "raw: fill segment bytes" $((64 << 20)) \
	"$(q "SELECT sum(bytes) FROM segments WHERE run=$RUN")"
expect_eq "raw: fill wrote the span" $((64 << 20)) \
	"$(q "SELECT write_bytes FROM steps WHERE run=$RUN")"
# how the engine waited: with the default poll a QD1 step's waits poll;
# with --poll=0 none does, and nothing is set aside
attr_of() { q "SELECT value FROM run_attrs WHERE run=$RUN AND key='$1'"; }
if run_ok "raw: QD1 reads, default poll" sustained-randread "$RAW" --qd=1 $TINY; then
	w=$(attr_of engine.poll_waits) b=$(attr_of engine.poll_backoffs)
	check "default poll: waits that polled ($w), set aside $b times" \
		sh -c "[ '${w:-0}' -gt 0 ] && [ -n '$b' ]"
fi
if run_ok "raw: QD1 reads, --poll=0" sustained-randread "$RAW" --qd=1 --poll=0 $TINY; then
	expect_eq "--poll=0: no wait polled, none set aside" "0 0" \
		"$(attr_of engine.poll_waits) $(attr_of engine.poll_backoffs)"
fi

# ---- where it ran: the placement is stored with the run ---------------------
if [ "$(nproc)" -ge 2 ] && taskset -c 1 "$FSPRISM" run sustained-randread "$RAW" --qd=1 $TINY \
	--db "$DB" >"$T/out" 2>"$T/err"; then
	RUN=$(sed -n 's/^run \([0-9]*\) stored in .*/\1/p' "$T/out")
	expect_eq "the engine's CPUs are stored (taskset -c 1)" 1 \
		"$(q "SELECT value FROM run_attrs WHERE run=$RUN AND key='engine.cpus'")"
	expect_eq "the unbound workqueues' CPUs are stored" \
		"$(cat /sys/devices/virtual/workqueue/cpumask)" \
		"$(q "SELECT value FROM run_attrs WHERE run=$RUN AND key='sys.workqueue_cpumask'")"
else
	echo "# one CPU, or taskset failed: the placement check does not run"
fi

# ---- how it submits: at most two IOs per io_submit ------------------------
# (bench/engine/engine.c, FSP_SUBMIT_MAX: the kernel plugs a larger call and
# holds its requests back until it returns)
# (LeakSanitizer cannot run under ptrace: no leak check for this run)
if ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -qq -e trace=io_submit -o "$T/strace" "$FSPRISM" run sustained-randread "$RAW" \
	--qd=32 $TINY --db "$DB" >"$T/out" 2>"$T/err"; then
	sed -n 's/.*io_submit([^,]*, \([0-9]*\),.*/\1/p' "$T/strace" | sort -n | uniq -c >"$T/nr"
	expect_eq "QD32: no io_submit of more than two IOs" "" \
		"$(awk '$2 > 2 { printf "%s calls of %s IOs ", $1, $2 }' "$T/nr")"
	check "QD32: io_submit calls of two IOs (the queue is refilled in pairs)" \
		awk '$2 == 2 { found = 1 } END { exit !found }' "$T/nr"
else
	not_ok "QD32 run under strace: $(tail -n 3 "$T/err")"
fi

# ---- what was written -----------------------------------------------------
# A fresh sparse loop device reads as zeros; after a sequential random-data
# write the region is non-zero and incompressible; compress:50 halves.
DATA=$(fsp_loop_new 64M) || not_ok "losetup (data)"
fsp_track_loop "$DATA"
run_ok "raw: seq write, random pattern" sustained-seqwrite "$DATA" --destroy-data \
	--qd=4 --bytes=8M --span=8M --pattern=random --quiet
if cmp -s -n 8388608 "$DATA" /dev/zero; then
	not_ok "written region is still zeros"
else
	ok "written region is not zeros"
fi
gz=$(head -c 8388608 "$DATA" | gzip -c | wc -c)
if [ "$gz" -gt 8300000 ]; then ok "random data is incompressible ($gz bytes gzipped)"
else not_ok "random data compressed to $gz bytes"; fi
run_ok "raw: seq write, compress:50" sustained-seqwrite "$DATA" --destroy-data \
	--qd=4 --bytes=8M --span=8M --pattern=compress:50 --quiet
gz=$(head -c 8388608 "$DATA" | gzip -c | wc -c)
if [ "$gz" -gt 3500000 ] && [ "$gz" -lt 5500000 ]; then
	ok "compress:50 data gzips to about half ($gz bytes)"
else
	not_ok "compress:50 data gzipped to $gz bytes"
fi
expect_eq "pattern recorded" compress:50 \
	"$(q "SELECT pattern FROM steps WHERE run=$RUN")"
# A mixed run writes its own pattern, never what its reads returned: zeros
# in 50/50 over the compress:50 data, fio-style offsets (reads and writes
# each from the span start). Writes cover the first ~2 MiB; the last 2 MiB
# are only ever read. (No ramp here: a ramp's IO count depends on the
# machine's speed, and its writes would move the written region.)
run_ok "raw: mixed, zeros, per-direction offsets" mixed-seq "$DATA" --destroy-data \
	--mix=50 --bytes=4M --span=8M --pattern=zeros --offsets=per-direction \
	--interleave=random --quiet
if cmp -s -n 1048576 "$DATA" /dev/zero; then
	ok "mixed run wrote zeros, not the data it read"
else
	not_ok "mixed run with pattern zeros wrote non-zero data"
fi
if tail -c +6291457 "$DATA" | head -c 2097152 | cmp -s - /dev/zero -n 2097152; then
	not_ok "the read-only end of the span was overwritten"
else
	ok "the read-only end of the span kept its data"
fi
expect_eq "mixed: parameters recorded" "per-direction|random|zeros" "$(q "
	SELECT (SELECT value FROM run_attrs WHERE run=$RUN AND key='param.offsets') || '|' ||
	       (SELECT value FROM run_attrs WHERE run=$RUN AND key='param.interleave') || '|' ||
	       (SELECT pattern FROM steps WHERE run=$RUN)")"
run_ok "raw: ramp" sustained-seqread "$DATA" --bytes=1M --span=8M --ramp=2ms --quiet
expect_eq "ramp recorded" 2ms \
	"$(q "SELECT value FROM run_attrs WHERE run=$RUN AND key='param.ramp'")"
expect_eq "ramp IO not measured (each step read exactly --bytes)" "1048576|1048576" \
	"$(q "SELECT min(read_bytes) || '|' || max(read_bytes) FROM steps WHERE run=$RUN")"
run_ok "raw: random,fixed pattern" sustained-seqwrite "$DATA" --destroy-data \
	--qd=2 --bytes=1M --span=8M --pattern=random,fixed --quiet
expect_eq "fixed pattern recorded" random,fixed \
	"$(q "SELECT pattern FROM steps WHERE run=$RUN")"

# ---- every IO recorded with --record=full, parent and label stored ----------
run_ok "raw: record=full" sustained-randread "$RAW" --qd=2 --time=200ms --span=16M \
	--record=full --parent 1 --label raw --quiet
expect_eq "full: one op row per IO" "$(q "SELECT sum(read_ios) FROM steps WHERE run=$RUN")" \
	"$(q "SELECT count(*) FROM ops WHERE run=$RUN AND op=13")"
expect_eq "full: backing_ns = total_ns" 0 \
	"$(q "SELECT count(*) FROM ops WHERE run=$RUN AND backing_ns != total_ns")"
expect_eq "full: parent and label" "1|raw" \
	"$(q "SELECT parent, label FROM runs WHERE id=$RUN")"

# ---- a file on ext4 -----------------------------------------------------------
FSDEV=$(fsp_loop_new 1G) || not_ok "losetup (ext4)"
fsp_track_loop "$FSDEV"
mkfs.ext4 -q -F "$FSDEV" >/dev/null 2>&1
mkdir -p "$T/mnt"
fsp_track_mount "$T/mnt"
mount "$FSDEV" "$T/mnt" || not_ok "mount ext4"
for p in $PROFILES; do
	extra=
	[ "$p" = fill ] && extra="--segment=16M --tail=32M --time=0"
	if run_ok "ext4 file: $p" "$p" "$T/mnt/target" $TINY $extra; then
		check_run "$p" "$(steps_of "$p")"
	fi
done
expect_eq "ext4 file: target kind" file \
	"$(q "SELECT value FROM run_attrs WHERE run=$RUN AND key='target_kind'")"
size=$(stat -c %s "$T/mnt/target")
expect_eq "ext4 file: allocated to the span" $((64 << 20)) "$size"

# a job file
cat >"$T/job.ini" <<'EOF'
# 70/30 mixed sequential, 64 KiB, QD2
profile = mixed-seq
bs = 64k
qd = 2
mix = 70
time = 200ms
span = 32M
EOF
if run_ok "job file" "$T/job.ini" "$T/mnt/target" --quiet; then
	expect_eq "job file: one step qd=2 70/30" "1|2|70|65536" \
		"$(q "SELECT count(*), qd, read_pct, block_size FROM steps WHERE run=$RUN")"
	r=$(q "SELECT read_ios * 10 / (read_ios + write_ios) FROM steps WHERE run=$RUN")
	expect_eq "job file: 70% reads" 7 "$r"
fi
# existing files: data is never overwritten by the preparation, and a file
# keeps its size unless --span asks for more
printf precious >"$T/mnt/user"
run_ok "read job on a file with data" sustained-seqread "$T/mnt/user" --qd=1 \
	--time=100ms --span=8M --quiet
expect_eq "existing data kept" precious "$(head -c 8 "$T/mnt/user")"
truncate -s 16M "$T/mnt/small"
run_ok "default span on a 16M file" sustained-randread "$T/mnt/small" --qd=1 \
	--time=100ms --quiet
expect_eq "span capped to the file" $((16 << 20)) \
	"$(q "SELECT value FROM run_attrs WHERE run=$RUN AND key='span_bytes'")"
expect_eq "file keeps its size" $((16 << 20)) "$(stat -c %s "$T/mnt/small")"

# ---- a file on an fsprism mount of that ext4 -----------------------------------------
mkdir -p "$T/mnt/back" "$T/fuse"
if fsp_mount "$T/mnt/back" "$T/fuse" --log "$T/fuse.db" --record hist; then
	for p in sustained-randread mixed-seq; do
		if run_ok "fsprism mount: $p" "$p" "$T/fuse/target" --qd=1,4 $TINY; then
			n=2 # qd 1 and 4
			[ "$p" = mixed-seq ] && n=22 # x 11 mixes
			check_run "$p" "$n"
		fi
	done
	fsp_umount "$T/fuse" || not_ok "fsprism umount"
	n=$(sqlite3 "$T/fuse.db" "SELECT sum(count) FROM hist WHERE layer=0 AND op=14")
	if [ "${n:-0}" -gt 0 ]; then ok "the mount saw the run's writes ($n)"
	else not_ok "the mount logged no writes"; fi
else
	not_ok "fsprism mount"
fi
umount "$T/mnt"

# ---- refusals and bad input -----------------------------------------------------
# expect_fail DESC SUBSTRING ARGS...: fsprism run fails, message has SUBSTRING.
expect_fail() {
	desc=$1; want=$2; shift 2
	"$FSPRISM" run "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -ne 0 ] && grep -qF -- "$want" "$T/err"; then
		ok "$desc (exit $rc)"
	else
		not_ok "$desc: exit $rc, stderr '$(cat "$T/err")', wanted '$want'"
	fi
}

# the ext4 loop device is unmounted but carries a signature: refused
expect_fail "ext4 signature refused" "ext4" sustained-seqwrite "$FSDEV" --db "$DB" $TINY
expect_eq "ext4 signature intact" ext4 "$(blkid -o value -s TYPE "$FSDEV")"
# reading it is harmless and allowed
run_ok "reading a device with a signature" sustained-seqread "$FSDEV" --qd=1 $TINY

runs_before=$(q "SELECT count(*) FROM runs")
expect_fail "unknown profile" "fsprism run: unknown profile 'nope'" nope "$RAW" --db "$DB"
expect_fail "unknown parameter" "fsprism run: unknown option '--frob'" \
	mixed-seq "$RAW" --frob=1 --db "$DB"
expect_fail "qd 0" "fsprism run: qd: '0' is not a queue depth" \
	sustained-randread "$RAW" --qd=0 --db "$DB"
expect_fail "bs not a multiple of 512" \
	"fsprism run: bs: 1000 is not a multiple of the logical block size (512) of $RAW" \
	sustained-randread "$RAW" --bs=1000 --db "$DB"
expect_fail "span beyond the device" "fsprism run: span: 1G at offset 0 is beyond the end of $RAW" \
	sustained-randread "$RAW" --span=1G --db "$DB"
expect_fail "missing device" "fsprism run: /dev/fsprism-nonesuch: no such device" \
	sustained-randread /dev/fsprism-nonesuch --db "$DB"
expect_fail "missing target argument" "fsprism run: missing TARGET" sustained-randread
expect_fail "bad size" "fsprism run: span: 'big' is not a size" \
	sustained-randread "$RAW" --span=big --db "$DB"
expect_fail "bad scale" "fsprism run: scale: 'huge'" \
	sustained-randread "$RAW" --scale=huge --db "$DB"
expect_fail "bad offsets" "fsprism run: offsets: 'fio' is not shared or per-direction" \
	mixed-seq "$RAW" --offsets=fio --db "$DB"
expect_fail "ramp with bursts" "fsprism run: ramp: not with bursts" \
	burst-seqread "$RAW" --ramp=1s --db "$DB"
printf 'profile = fill\nqd 4\n' >"$T/bad.ini"
expect_fail "bad job file" "$T/bad.ini:2: missing '='" "$T/bad.ini" "$RAW" --db "$DB"
expect_fail "span beyond a file's free space" "fsprism run: span: 100T" \
	sustained-randread "$T/newfile" --span=100T --db "$DB"
if [ -e "$T/newfile" ]; then not_ok "refused run left $T/newfile"; else ok "refused run left no file"; fi
expect_eq "refused runs stored nothing" "$runs_before" "$(q "SELECT count(*) FROM runs")"

# ---- Ctrl-C: the step stops, what was measured is stored, exit 130 ----------------
"$FSPRISM" run mixed-seq "$RAW" --destroy-data --span=32M --time=2s --db "$DB" \
	>"$T/out" 2>"$T/err" &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid
expect_eq "interrupted run exits 130" 130 "$?"
RUN=$(sed -n 's/.*run \([0-9]*\) stored in .*/\1/p' "$T/out")
expect_eq "interrupted run marked" 1 \
	"$(q "SELECT value FROM run_attrs WHERE run=$RUN AND key='interrupted'")"
n=$(q "SELECT count(*) FROM steps WHERE run=$RUN AND read_ios+write_ios > 0")
if [ "$n" -ge 1 ] && [ "$n" -lt 11 ]; then ok "interrupted run kept $n measured step(s)"
else not_ok "interrupted run has $n steps"; fi

# ---- SIGTERM: the loop stops within a second, what was measured is stored, exit 143 --
# a long, byte-unlimited step with a fine timeline: nothing but the signal ends it
"$FSPRISM" run sustained-seqwrite "$RAW" --destroy-data --qd=1 --span=32M --time=10m \
	--bytes=0 --timeline=10ms --db "$DB" >"$T/out" 2>"$T/err" &
fsp_term_after 1 $!
expect_eq "SIGTERM: exit 143 ($(cat "$T/err"))" 143 "$rc"
check "SIGTERM: stopped and stored within 1.5 s (took $ms ms)" [ "$ms" -lt 1500 ]
RUN=$(sed -n 's/^interrupted: run \([0-9]*\) stored in .*/\1/p' "$T/out")
if [ -n "$RUN" ]; then
	expect_eq "SIGTERM: run marked interrupted" 1 \
		"$(q "SELECT value FROM run_attrs WHERE run=$RUN AND key='interrupted'")"
	expect_eq "SIGTERM: the run has its end time" 1 \
		"$(q "SELECT ended_at IS NOT NULL FROM runs WHERE id=$RUN")"
	n=$(q "SELECT write_ios FROM steps WHERE run=$RUN")
	check "SIGTERM: the measured step is stored ($n writes)" [ "${n:-0}" -gt 0 ]
	tl=$(q "SELECT count(*) FROM timeline WHERE run=$RUN")
	check "SIGTERM: its timeline is stored, about 1 s of 10 ms buckets ($tl)" \
		[ "$tl" -ge 50 -a "$tl" -le 200 ]
else
	not_ok "SIGTERM: no 'interrupted: run N stored' line: $(cat "$T/out")"
fi

# ---- nothing left behind ---------------------------------------------------------
losetup -d "$RAW" "$DATA" "$FSDEV"
# (only ours: other tests may attach and detach their own meanwhile)
expect_eq "no loop devices left" 0 "$(losetup -a | grep -c "$T/")"

fsp_done

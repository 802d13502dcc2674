#!/bin/sh
# it_trace.sh - the eBPF block-layer trace of `fsprism run` (src/trace/), on
# loop devices made here: a known number of engine IOs gives exactly that
# many block rows of the right size and direction, in the right step, from
# the engine's own process, with queue <= insert <= issue <= complete and a
# device time; IOs larger than the device's limit are split into rows that
# add up; a file on ext4 on a loop device is traced on the loop device (not
# on the device of the loop's backing file), a file on an fsprism mount over
# it on the same device (the daemon's backing IO); --no-trace stores nothing;
# ring-buffer drops are 0 at a low rate and counted when the ring buffer is
# made tiny (FSPRISM_TRACE_RING_BYTES, a test knob: the ring buffer's size
# in bytes, a power of two of at least a page); no BPF program stays
# attached after a run, after Ctrl-C (SIGINT) or after kill -9; and without
# a block device or without privilege the run works and says why in one
# line. Without eBPF in the build only the last part runs.
. "$TESTS_SRCDIR/lib.sh"

DB=$T/trace.db
q() { sqlite3 "$DB" "$1"; }
attr() { q "SELECT value FROM run_attrs WHERE run=$RUN AND key='$1'"; }

# expected N QD: sets EXP, the rows a run of N single IOs at queue depth QD
# must have. This kernel now and then does not run the completion program
# for a request (about 1 in 65536 at QD1; a queue depth's worth at once in
# some runs at a higher depth); the trace counts each such request in
# block.missed (docs/tracing.md), so the rows are exactly N less those, and
# the misses must stay rare: at most 1% of N, or one queue depth's worth.
# A check of its own, in this shell (not in a $(...), whose count is lost).
expected() {
	M=$(attr block.missed)
	M=${M:-0}
	lim=$(($1 / 100 > $2 ? $1 / 100 : $2))
	if [ "$M" -gt "$lim" ]; then
		not_ok "run $RUN: $M of $1 completions missed: more than $lim"
	else
		ok "run $RUN: $M of $1 completions missed by the kernel (at most $lim), counted in block.missed"
	fi
	EXP=$(($1 - M))
}

# run_bg DESC ARGS...: fsprism run ARGS in the background (so that its pid is
# known: block rows carry the queueing process), waits; sets RUN, PID, RC.
run_bg() {
	desc=$1; shift
	"$FSPRISM" run "$@" --db "$DB" --quiet >"$T/out" 2>"$T/err" &
	PID=$!
	wait "$PID"
	RC=$?
	RUN=$(sed -n 's/^.*run \([0-9]*\) stored in .*/\1/p' "$T/out")
	if [ "$RC" -eq 0 ] && [ -n "$RUN" ]; then
		ok "$desc"
	else
		not_ok "$desc: exit $RC ($(cat "$T/err"))"
		RUN=0
	fi
}

LOOP=$(fsp_loop_new 256M) || { not_ok "make a loop device"; fsp_done; exit 1; }
fsp_track_loop "$LOOP"
DEVNO=$(lsblk -dno MAJ:MIN "$LOOP" | tr -d ' ')
LIMIT_KB=$(cat "/sys/block/${LOOP#/dev/}/queue/max_sectors_kb")

# ---- is tracing possible here? ---------------------------------------------------
run_bg "probe run" sustained-randread "$LOOP" --qd=1 --bytes=64k --span=16M --ramp=0
if grep -q 'built without eBPF' "$T/err"; then
	TRACED=0
	expect_eq "built without eBPF: block.traced" 0 "$(attr block.traced)"
else
	TRACED=1
	command -v bpftool >/dev/null || fsp_skip "bpftool is missing"
fi

if [ "$TRACED" = 1 ]; then
	expect_eq "no 'not traced' line when tracing works" "" "$(cat "$T/err")"

	# ---- raw loop device, QD1: one row per engine IO --------------------------------
	run_bg "raw 4 KiB reads, QD1, 4 MiB" sustained-randread "$LOOP" --qd=1 --bs=4k \
		--bytes=4M --span=64M --ramp=0
	expect_eq "reads: block.traced" 1 "$(attr block.traced)"
	expect_eq "reads: block.devices is the loop device" "$DEVNO" "$(attr block.devices)"
	expected 1024 1
	N=$EXP
	expect_eq "reads: 1024 rows from this process, step 0" "$N" \
		"$(q "SELECT count(*) FROM block_ios WHERE run=$RUN AND tgid=$PID AND step=0")"
	expect_eq "reads: all of them 4096-byte reads on the loop device" "$N|read|4096|4096|$DEVNO" \
		"$(q "SELECT count(*), op, min(bytes), max(bytes), dev FROM block_ios
		      WHERE run=$RUN AND tgid=$PID GROUP BY op, dev")"
	expect_eq "reads: block.requests counts the rows" \
		"$(q "SELECT count(*) FROM block_ios WHERE run=$RUN")" "$(attr block.requests)"
	expect_eq "reads: no ring-buffer drops at a low rate" 0 "$(attr block.dropped_ring)"
	expect_eq "reads: block.missed is the sum of its four causes" "$(attr block.missed)" \
		"$(q "SELECT sum(value) FROM run_attrs WHERE run=$RUN AND key IN ('block.missed_nested',
		      'block.missed_tags', 'block.missed_reissued', 'block.missed_open')
		      HAVING count(*) = 4")"
	expect_eq "reads: queue <= issue <= complete, device time > 0" 0 \
		"$(q "SELECT count(*) FROM block_ios WHERE run=$RUN AND NOT (
		      queue_ns IS NOT NULL AND queue_ns <= issue_ns AND issue_ns < complete_ns
		      AND (insert_ns IS NULL OR (queue_ns <= insert_ns AND insert_ns <= issue_ns)))")"
	expect_eq "reads: inside the step's window" 0 \
		"$(q "SELECT count(*) FROM block_ios b JOIN steps s ON s.run=b.run AND s.step=b.step
		      WHERE b.run=$RUN AND (b.queue_ns < s.started_ns OR b.complete_ns > s.ended_ns)")"
	expect_eq "reads: sectors inside the span" 0 \
		"$(q "SELECT count(*) FROM block_ios WHERE run=$RUN AND (sector*512 + bytes > 64*1048576)")"

	# stats: per step and direction, from these rows
	"$FSPRISM" stats "$DB" --run "$RUN" >"$T/stats" 2>&1
	expect_eq "stats: the block section names the device and the count" \
		"Block layer: device $DEVNO, $N requests, $(attr block.dropped) dropped" \
		"$(grep '^Block layer' "$T/stats")"
	expect_eq "stats: one row for step 0 reads, 1024 requests of 4.0 KiB" "0 read $N 4.0" \
		"$(awk '$1 == "0" && $2 == "read" {print $1, $2, $3, $4; exit}' "$T/stats")"
	p50=$(q "WITH d AS (SELECT complete_ns - issue_ns AS ns FROM block_ios WHERE run=$RUN
	           AND step=0 ORDER BY ns) SELECT ns FROM d LIMIT 1 OFFSET ($N + 1) / 2 - 1")
	shown=$(awk '$1 == "0" && $2 == "read" {print $8; exit}' "$T/stats")
	if awk "BEGIN{d = $shown - $p50 / 1000; exit !(d < 0.06 && d > -0.06)}"; then
		ok "stats: device p50 ($shown us) is the middle of the sorted device times"
	else
		not_ok "stats: device p50 $shown us, the middle of the sorted device times is $p50 ns"
	fi
	"$FSPRISM" stats "$DB" --run "$RUN" --format json >"$T/stats.json"
	expect_eq "stats json: block.steps[0]" "True 0 read $N 4096.0" \
		"$(python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["block"]; s=b["steps"][0]
print(b["traced"], s["step"], s["op"], s["requests"], s["mean_bytes"])' "$T/stats.json")"
	"$FSPRISM" stats "$DB" --run "$RUN" --format csv >"$T/stats.csv"
	expect_eq "stats csv: queue and device rows" "block_read,queue,$N block_read,device,$N" \
		"$(awk -F, '$3 ~ /^block_/ {printf "%s%s,%s,%s", n++ ? " " : "", $3, $4, $5}' "$T/stats.csv")"

	run_bg "raw 4 KiB writes, QD1, 2 MiB" sustained-randwrite "$LOOP" --qd=1 --bs=4k \
		--bytes=2M --span=64M --ramp=0 --destroy-data
	expected 512 1
	expect_eq "writes: 512 4096-byte writes from this process" "$EXP|write|4096|4096" \
		"$(q "SELECT count(*), op, min(bytes), max(bytes) FROM block_ios
		      WHERE run=$RUN AND tgid=$PID AND step=0 GROUP BY op")"

	# ---- QD32: still one row per IO ------------------------------------------------
	run_bg "raw 4 KiB reads, QD32, 8 MiB" sustained-randread "$LOOP" --qd=32 --bs=4k \
		--bytes=8M --span=64M --ramp=0
	# exact in bytes; the kernel may merge two adjacent random reads into one
	expected 2048 32
	expect_eq "QD32: the read rows hold 2048 x 4096 bytes, in whole IOs" "$((EXP * 4096))|0" \
		"$(q "SELECT sum(bytes), sum(bytes % 4096) FROM block_ios
		      WHERE run=$RUN AND tgid=$PID AND step=0 AND op='read'")"
	expect_eq "QD32: nearly all single IOs (merges are rare)" 1 \
		"$(q "SELECT count(*) >= 2000 FROM block_ios
		      WHERE run=$RUN AND tgid=$PID AND step=0 AND bytes=4096")"
	expect_eq "QD32: no ring-buffer drops" 0 "$(attr block.dropped_ring)"

	# ---- an IO above the device's limit is split: the rows add up ------------------
	run_bg "raw 4 MiB reads (limit ${LIMIT_KB} KiB), 16 MiB" sustained-seqread "$LOOP" \
		--qd=1 --bs=4M --bytes=16M --span=64M --ramp=0
	expect_eq "split: the rows' bytes add up to the engine's" \
		"$(( 16777216 - $(attr block.missed) * LIMIT_KB * 1024 ))" \
		"$(q "SELECT sum(bytes) FROM block_ios WHERE run=$RUN AND tgid=$PID AND step=0")"
	expect_eq "split: no row above the device's limit" 0 \
		"$(q "SELECT count(*) FROM block_ios WHERE run=$RUN AND bytes > $LIMIT_KB*1024")"
	expect_eq "split: every part has the moment it was made" 0 \
		"$(q "SELECT count(*) FROM block_ios WHERE run=$RUN AND queue_ns IS NULL")"

	# ---- a scheduler: requests are inserted before they are issued -----------------
	SCHED=/sys/block/${LOOP#/dev/}/queue/scheduler
	if grep -q mq-deadline "$SCHED" && echo mq-deadline >"$SCHED" 2>/dev/null; then
		run_bg "raw reads, QD8, through mq-deadline" sustained-randread "$LOOP" --qd=8 \
			--bs=4k --bytes=2M --span=64M --ramp=0
		echo none >"$SCHED"
		expected 512 8
		N=$EXP
		expect_eq "mq-deadline: 512 rows, all inserted" "$N|$N" \
			"$(q "SELECT count(*), count(insert_ns) FROM block_ios
			      WHERE run=$RUN AND tgid=$PID AND step=0")"
		expect_eq "mq-deadline: queue <= insert <= issue <= complete" 0 \
			"$(q "SELECT count(*) FROM block_ios WHERE run=$RUN AND NOT (
			      queue_ns <= insert_ns AND insert_ns <= issue_ns AND issue_ns < complete_ns)")"
	fi

	# ---- a partition: its range of the disk, where the kernel reports it -------------
	PIMG=$T/parted.img
	truncate -s 128M "$PIMG"
	printf 'label: dos\nstart=2048, size=100000, type=83\n' | sfdisk -q "$PIMG"
	PLOOP=$(losetup --find --show "$PIMG")
	fsp_track_loop "$PLOOP"
	if partx -a "$PLOOP" 2>/dev/null && [ -b "${PLOOP}p1" ]; then
		PDEV=$(lsblk -dno MAJ:MIN "$PLOOP" | tr -d ' ')
		# direct reads of the same disk beyond the partition, at the same time
		( while :; do dd if="$PLOOP" of=/dev/null iflag=direct bs=4k skip=30000 count=256 \
			status=none 2>/dev/null; done ) &
		DD=$!
		run_bg "partition: 4 KiB reads, QD1, 1 s" sustained-randread "${PLOOP}p1" --qd=1 \
			--bs=4k --time=1s --span=16M --ramp=0
		kill "$DD"; wait "$DD" 2>/dev/null
		expect_eq "partition: block.devices is its disk and range" "$PDEV[2048,+100000]" \
			"$(attr block.devices)"
		expected "$(q "SELECT read_ios FROM steps WHERE run=$RUN")" 1
		expect_eq "partition: every row inside its range, none of the reads beyond it" \
			"0|$EXP" \
			"$(q "SELECT sum(sector < 2048 OR sector + bytes / 512 > 102048), count(*) FROM block_ios
			      WHERE run=$RUN")"
		partx -d "$PLOOP" 2>/dev/null
	else
		not_ok "partition: partx -a made no ${PLOOP}p1"
	fi

	# ---- a file on ext4 on a loop device: the loop device's requests ----------------
	LOOP2=$(fsp_loop_new 256M) || { not_ok "make a second loop device"; fsp_done; exit 1; }
	fsp_track_loop "$LOOP2"
	DEVNO2=$(lsblk -dno MAJ:MIN "$LOOP2" | tr -d ' ')
	mkfs.ext4 -q -F "$LOOP2" && mkdir "$T/mnt" && mount "$LOOP2" "$T/mnt"
	fsp_track_umount() { :; }
	fsp_mounts="$T/mnt $fsp_mounts" # umount -l in cleanup, before the loop goes
	run_bg "file on ext4: 4 KiB reads, QD1, 4 MiB" sustained-randread "$T/mnt/f" --qd=1 \
		--bs=4k --bytes=4M --span=32M --ramp=0
	expect_eq "file: block.devices is the ext4's loop device" "$DEVNO2" "$(attr block.devices)"
	expected 1024 1
	expect_eq "file: 1024 read rows of 4096 bytes from this process" "$EXP|4096|4096" \
		"$(q "SELECT count(*), min(bytes), max(bytes) FROM block_ios
		      WHERE run=$RUN AND tgid=$PID AND step=0 AND op='read'")"
	expect_eq "file: every row on the loop device" "$DEVNO2" \
		"$(q "SELECT group_concat(DISTINCT dev) FROM block_ios WHERE run=$RUN")"
	run_bg "file on ext4: 4 KiB writes, QD1, 1 MiB" sustained-randwrite "$T/mnt/f" --qd=1 \
		--bs=4k --bytes=1M --span=32M --ramp=0
	expect_eq "file: at least 256 data writes of 4096 bytes from this process" 1 \
		"$(q "SELECT count(*) >= 256 FROM block_ios
		      WHERE run=$RUN AND tgid=$PID AND step=0 AND op='write' AND bytes=4096")"

	# ---- a file on an fsprism mount over that ext4: the backing IO's requests -------
	mkdir "$T/mnt/back" "$T/fmnt"
	if fsp_mount "$T/mnt/back" "$T/fmnt" --log "$T/mount.db"; then
		DPID=$(fsp_daemon_pid "$T/fmnt")
		run_bg "fsprism mount: 4 KiB O_DIRECT reads, QD1, 2 MiB" sustained-randread \
			"$T/fmnt/f" --qd=1 --bs=4k --bytes=2M --span=16M --ramp=0
		expect_eq "fsprism mount: block.devices is the backing ext4's loop device" "$DEVNO2" \
			"$(attr block.devices)"
		expected 512 1
		expect_eq "fsprism mount: 512 reads of 4096 bytes, queued by the daemon" \
			"$EXP|4096|4096" \
			"$(q "SELECT count(*), min(bytes), max(bytes) FROM block_ios
			      WHERE run=$RUN AND tgid=${DPID:-0} AND step=0 AND op='read'")"
		fsp_umount "$T/fmnt"
	else
		not_ok "fsprism mount over the ext4"
	fi
	umount "$T/mnt"

	# ---- --no-trace ---------------------------------------------------------------
	run_bg "--no-trace" sustained-randread "$LOOP" --qd=1 --bytes=1M --span=64M --ramp=0 --no-trace
	expect_eq "--no-trace: no rows" 0 "$(q "SELECT count(*) FROM block_ios WHERE run=$RUN")"
	expect_eq "--no-trace: block.traced=0, the reason" "0|--no-trace" \
		"$(attr block.traced)|$(attr block.untraced_reason)"
	expect_eq "--no-trace: nothing said" "" "$(cat "$T/err")"
	expect_eq "--no-trace: stats says so" "block layer: not traced (--no-trace)" \
		"$("$FSPRISM" stats "$DB" --run "$RUN" | grep '^block layer')"

	# ---- a tiny ring buffer: drops are counted, not silent ---------------------------
	FSPRISM_TRACE_RING_BYTES=4096; export FSPRISM_TRACE_RING_BYTES
	run_bg "ring buffer of 4 KiB, QD32 reads for 1 s" sustained-randread "$LOOP" --qd=32 \
		--bs=4k --time=1s --span=64M --ramp=0
	unset FSPRISM_TRACE_RING_BYTES
	ios=$(q "SELECT read_ios FROM steps WHERE run=$RUN AND step=0")
	dropped=$(attr block.dropped)
	rows=$(q "SELECT count(*) FROM block_ios WHERE run=$RUN AND tgid=$PID")
	if [ "${dropped:-0}" -gt 0 ] && [ "$rows" -lt "$ios" ]; then
		ok "tiny ring buffer: $dropped dropped, $rows rows of $ios IOs"
	else
		not_ok "tiny ring buffer: dropped '$dropped', rows $rows of $ios IOs"
	fi
	# each request is one IO or (merged) more: rows + drops <= IOs, and
	# nothing else is lost
	expect_eq "tiny ring buffer: rows + drops account for the IOs" 1 \
		"$(q "SELECT $rows + $dropped <= $ios AND $rows + $dropped >= 0.99 * $ios")"

	# ---- nothing stays attached -------------------------------------------------------
	# Scoped to our own runs (other tests may trace at the same time): the
	# BPF links a run holds, from its /proc/PID/fdinfo, and afterwards
	# whether those programs still exist.
	links_of() { grep -l '^link_type:' /proc/"$1"/fdinfo/* 2>/dev/null | wc -l; }
	progs_of() { grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u; }
	loaded() { n=0; for id in $1; do bpftool prog show id "$id" >/dev/null 2>&1 && n=$((n + 1)); done; echo $n; }
	# the kernel frees a program shortly after its last reference (RCU):
	# wait up to 2 s for that, then say how many are still there
	still_loaded() {
		k=0
		while [ "$(loaded "$1")" -gt 0 ] && [ $k -lt 40 ]; do sleep 0.05; k=$((k + 1)); done
		loaded "$1"
	}
	NPROGS=4 # block.bpf.c: insert, issue, requeue, complete
	# traced_run_until HOW: a 20 s traced run, ended by HOW (wait, INT, KILL)
	# once its links are up; sets IDS (its programs) and RC.
	traced_run_until() {
		time=20s; [ "$1" = wait ] && time=2s
		"$FSPRISM" run sustained-randread "$LOOP" --qd=1 --time=$time --span=64M --ramp=0 \
			--db "$DB" --quiet >"$T/out" 2>"$T/err" &
		PID=$!
		n=0
		while [ "$(links_of $PID)" -lt $NPROGS ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
		expect_eq "$1: while it runs, its links are attached" $NPROGS "$(links_of $PID)"
		IDS=$(progs_of $PID)
		expect_eq "$1: while it runs, its programs are loaded" $NPROGS "$(loaded "$IDS")"
		sleep 0.3
		[ "$1" = wait ] || kill -"$1" "$PID"
		wait "$PID" 2>/dev/null # (no "Killed" from the shell)
		RC=$?
		RUN=$(sed -n 's/^.*run \([0-9]*\) stored in .*/\1/p' "$T/out")
	}
	traced_run_until wait
	expect_eq "a run that ends: exit 0" 0 "$RC"
	expect_eq "a run that ends: its programs are gone" 0 "$(still_loaded "$IDS")"
	traced_run_until INT
	expect_eq "Ctrl-C: exit 130" 130 "$RC"
	expect_eq "Ctrl-C: its programs are gone" 0 "$(still_loaded "$IDS")"
	expect_eq "Ctrl-C: the rows so far are stored" 1 \
		"$(q "SELECT count(*) > 0 FROM block_ios WHERE run=${RUN:-0}")"
	traced_run_until KILL
	expect_eq "kill -9: its programs are gone" 0 "$(still_loaded "$IDS")"
	# the next open of the database stores what the killed run left
	"$FSPRISM" stats "$DB" >/dev/null 2>"$T/rec"
	check "kill -9: the next open says the killed run is recovered" \
		grep -q "had not ended (its process died)" "$T/rec"
fi

# ---- without support: run works and says why in one line ----------------------------
mkdir -p /dev/shm/fsprism-trace.$$
run_bg "a file on tmpfs" sustained-randread /dev/shm/fsprism-trace.$$/f --qd=1 --bytes=256k --span=4M
rm -rf /dev/shm/fsprism-trace.$$
if [ "$TRACED" = 1 ]; then
	expect_eq "tmpfs: one line says why" \
		"fsprism run: block layer not traced: the file system of /dev/shm/fsprism-trace.$$/f (tmpfs) is not on a block device" \
		"$(cat "$T/err")"
fi
expect_eq "tmpfs: block.traced=0, no rows" "0|0" \
	"$(attr block.traced)|$(q "SELECT count(*) FROM block_ios WHERE run=$RUN")"
expect_eq "tmpfs: the reason stored" 1 "$(q "SELECT count(*) FROM run_attrs WHERE run=$RUN
	AND key='block.untraced_reason' AND value != ''")"

if [ "$TRACED" = 1 ] && id nobody >/dev/null 2>&1; then
	mkdir "$T/nobody" && chown nobody "$T/nobody" && chmod 755 "$T"
	su nobody -s /bin/sh -c "'$FSPRISM' run sustained-randread '$T/nobody/f' --qd=1 \
		--bytes=256k --span=4M --db '$T/nobody/n.db' --quiet" >"$T/out" 2>"$T/err"
	expect_eq "unprivileged: the run works" 0 "$?"
	expect_eq "unprivileged: one line says why" \
		"fsprism run: block layer not traced: no privilege to load BPF programs (needs root, or CAP_BPF and CAP_PERFMON)" \
		"$(cat "$T/err")"
	expect_eq "unprivileged: block.traced=0" 0 \
		"$(sqlite3 "$T/nobody/n.db" "SELECT value FROM run_attrs WHERE key='block.traced'")"
fi

fsp_done

#!/bin/sh
# it_replay.sh - compare --replay keeps the recording's order and queue
# depth: on the embedded default, the fs target at QD8 (a read step and a
# write step) is replayed on the raw device with its IOs overlapping, at a
# depth of at least 2 and never above the recorded one, every recorded read
# and write replayed, step by step, and none skipped; at QD1 the emu
# target's device IO (one at a time; --journal=data brings flushes into
# the steps) replays at depth exactly 1 with every read, write and flush,
# and the fs target's never deeper than recorded.
. "$TESTS_SRCDIR/lib.sh"

fsp_tmpdir_tmpfs 1G
SIZES="--size=512M --time=300ms --span=64M"

q() { sqlite3 "$1" "$2"; }

# attr DB LABEL KEY: the run attribute KEY of DB's run labelled LABEL
attr() {
	q "$1" "SELECT a.value FROM runs r JOIN run_attrs a ON a.run=r.id AND a.key='$3'
	    WHERE r.label='$2' ORDER BY r.id DESC LIMIT 1"
}

# ge A B: A >= B, both integers (an empty A is not)
ge() { [ -n "$1" ] && [ "$1" -ge "$2" ]; }

# compare_case NAME DB ARGS...: run it, check it ran and left nothing
compare_case() {
	name=$1 db=$2
	shift 2
	# shellcheck disable=SC2086
	fsp_compare "$name" "$db" $SIZES --quiet --details "$@"
	fsp_nothing_left "$TMPDIR" "$name"
}

# ---- QD8: the fs target's requests overlap, and so does their replay ----
db=$T/qd8.db
compare_case qd8 "$db" --targets fs --profile sustained-randread --qd=8 --mix=100,0 --replay
rec_max=$(attr "$db" replay-fs replay.recorded_qd_max)
rep_max=$(attr "$db" replay-fs replay.qd_max)
echo "# qd8: recorded depth max $rec_max mean $(attr "$db" replay-fs replay.recorded_qd_mean)," \
	"replayed max $rep_max mean $(attr "$db" replay-fs replay.qd_mean)"
check "qd8: the recording overlaps (depth max $rec_max >= 2)" ge "$rec_max" 2
check "qd8: so does the replay (depth max $rep_max >= 2)" ge "$rep_max" 2
check "qd8: the replay never deeper than the recording ($rep_max <= $rec_max)" \
	ge "$rec_max" "${rep_max:-999999}"
check "qd8: the depth means are numbers" sh -c "[ -n '$(attr "$db" replay-fs replay.qd_mean)' ] &&
	[ -n '$(attr "$db" replay-fs replay.recorded_qd_mean)' ]"
fs_run=$(q "$db" "SELECT id FROM runs WHERE label='fs' AND kind='run'")
blocks=$(q "$db" "SELECT count(*) FROM block_ios WHERE run=$fs_run AND op IN ('read', 'write')
	AND step IS NOT NULL")
expect_eq "qd8: every recorded read and write replayed ($blocks)" "$blocks" \
	"$(attr "$db" replay-fs replay.ios)"
expect_eq "qd8: none skipped" 0 "$(attr "$db" replay-fs replay.skipped)"
expect_eq "qd8: the replay of the fs run" "$fs_run" "$(attr "$db" replay-fs replay.of)"
# per step: the replay's reads and writes are the recording's, its depth
# (steps.qd) never above the recording's
expect_eq "qd8: per step, the replay's reads and writes are the recorded ones" \
	"$(q "$db" "SELECT group_concat(n, ' ') FROM (SELECT step, sum(op='read') || '/' || sum(op='write') AS n
	   FROM block_ios WHERE run=$fs_run AND step IS NOT NULL GROUP BY step ORDER BY step)")" \
	"$(q "$db" "SELECT group_concat(n, ' ') FROM (SELECT s.step, s.read_ios || '/' || s.write_ios
	   AS n FROM steps s JOIN runs r ON r.id=s.run WHERE r.label='replay-fs' ORDER BY s.step)")"
expect_eq "qd8: every replay step's depth within the run's" 0 \
	"$(q "$db" "SELECT count(*) FROM steps s JOIN runs r ON r.id=s.run WHERE r.label='replay-fs'
	   AND (s.qd < 1 OR s.qd > ${rep_max:-0})")"
flushes=$(q "$db" "SELECT sum(op='flush') || ' flushes, ' || sum(op='write' AND flags & 4) || ' FUA writes'
	FROM block_ios WHERE run=$fs_run AND step IS NOT NULL")
echo "# qd8: the recording has $flushes"

# ---- QD1: the emulation's device IO, one at a time, replays at QD1 ----
db=$T/qd1.db
# (32 MiB a step, twice the store's journal, so that the write step commits
# and flushes however fast the machine lets it write: at 300 ms, a loaded
# run wrote too little to commit)
compare_case qd1 "$db" --targets fs,emu --journal=data --profile sustained-randread --qd=1 \
	--mix=100,0 --replay --bytes=32M --time=10s
expect_eq "qd1: the emu recording at depth 1" 1 "$(attr "$db" replay-emu replay.recorded_qd_max)"
expect_eq "qd1: its replay at depth exactly 1" "1 1.00" \
	"$(attr "$db" replay-emu replay.qd_max) $(attr "$db" replay-emu replay.qd_mean)"
emu_run=$(q "$db" "SELECT id FROM runs WHERE label='emu' AND kind='run'")
mount_run=$(q "$db" "SELECT id FROM runs WHERE label='emu-fuse'")
# the store's device rows in the steps' windows (36 dev_read .. 41 dev_flush)
devrows() {
	q "$db" "SELECT count(*) FROM ops o JOIN steps s ON s.run=$emu_run AND o.start_ns
	    BETWEEN s.started_ns AND s.ended_ns WHERE o.run=$mount_run AND $1"
}
dev_ios=$(devrows "o.op BETWEEN 36 AND 40")
dev_flushes=$(devrows "o.op = 41")
echo "# qd1: the emu recording has $dev_ios device reads and writes, $dev_flushes flushes"
expect_eq "qd1: every recorded device read and write of emu replayed" "$dev_ios" \
	"$(attr "$db" replay-emu replay.ios)"
check "qd1: the emu recording has flushes ($dev_flushes)" ge "$dev_flushes" 1
expect_eq "qd1: every recorded flush replayed" "$dev_flushes" \
	"$(attr "$db" replay-emu replay.flushes)"
rec_max=$(attr "$db" replay-fs replay.recorded_qd_max)
rep_max=$(attr "$db" replay-fs replay.qd_max)
echo "# qd1: the fs recording's depth max $rec_max, its replay's $rep_max"
check "qd1: the fs replay never deeper than its recording ($rep_max <= $rec_max)" \
	sh -c "[ -n '$rep_max' ] && [ '$rep_max' -ge 1 ] && [ '$rep_max' -le '${rec_max:-0}' ]"

check "qd1: diagnose reads the replays" "$FSPRISM" diagnose "$db" --wide

# ---- diagnose says the depth the replay ran at ----
# The seed's finding in small (it_diagnose.sh has it whole): on a drive
# that charges a stream switch, copy-on-write's relocation is judged by
# its replay on raw, and the evidence names the depth the replay reached:
# the emulation's device IO at QD1 replays at QD1.
db=$T/model.db
SIZES="--size=512M --time=500ms --span=64M"
# The verdict needs the rounds' spread to leave the difference clear of
# noise, which a loaded machine may not: taken up to twice, each attempt's
# diagnosis printed.
for attempt in 1 2; do
	rm -f "$db"*
	compare_case model "$db" --targets raw,emu --cow=always --profile mixed-seq --mix=50,30 \
		--rounds 3 --replay --device-model switch=300us --wide
	sed -n "/^diagnosis of/,\$s/^/# attempt $attempt: /p" "$T/model.out"
	lines=$(grep -o "replayed on raw [^(]*" "$T/model.out" || true)
	[ -n "$lines" ] && break
done
echo "$lines" | sed 's/^/# /'
check "model: a verdict judged by its replay" [ -n "$lines" ]
expect_eq "model: each says the replay's depth, QD1 as stored" "" \
	"$(echo "$lines" | grep -v "MB/s at QD up to 1 \$" || true)"
expect_eq "model: the replays' steps at depth 1" 1 \
	"$(q "$db" "SELECT max(s.qd) FROM steps s JOIN runs r ON r.id=s.run WHERE r.label='replay-emu'")"

fsp_done

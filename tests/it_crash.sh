#!/bin/sh
# it_crash.sh - records survive a killed daemon, and a remount waits.
#
# 1. A plain mount with --record=full over a tmpfs directory; fio writes for
#    about 2 s; the daemon is killed with SIGKILL. The next `fsprism stats`
#    must recover the rows from the spill file beside the database, say that
#    the run crashed and how many records were lost (a number or "unknown",
#    never a silent 0), and a second stats must not add rows again.
# 2. Five times: write records, `umount MNT` (the kernel's umount, not
#    fsprism umount), and at once `fsprism mount` the same mount point: every
#    mount must succeed, and every run must end with all its rows stored.
. "$TESTS_SRCDIR/lib.sh"

fsp_capture_daemon_reports

command -v fio >/dev/null || { echo "SKIP: fio not installed" >&2; exit 77; }
DB=$T/crash.db

mkdir "$T/tmpfs" "$T/mnt"
mount -t tmpfs -o size=512m tmpfs "$T/tmpfs" && fsp_track_mount "$T/tmpfs"
B=$T/tmpfs/data
M=$T/mnt
mkdir "$B"

# --- 1. kill -9 while recording ---
if ! fsp_mount "$B" "$M" --log "$DB" --record=full; then
	not_ok "fsprism mount"; fsp_done; exit 1
fi
run=$(sqlite3 "$DB" "select max(id) from runs")
pid=$(fsp_daemon_pid "$M")
check "daemon pid known" test -n "$pid"
fio --name=w --filename="$M/f" --rw=randwrite --bs=4k --size=32M --time_based \
	--runtime=30 --ioengine=psync >"$T/fio.out" 2>&1 &
fio_pid=$!
sleep 2.5
kill -9 "$pid"
# the connection is dead: fio fails at once; clean the mount up
umount -l "$M" 2>/dev/null || fusermount3 -u "$M" 2>/dev/null
wait "$fio_pid" 2>/dev/null
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done

ls "$T" | grep -q 'crash.db-fsprism-spill' && ok "a spill file is left beside the database" ||
	not_ok "a spill file is left beside the database (ls: $(ls "$T" | tr '\n' ' '))"

"$FSPRISM" stats "$DB" --run "$run" >"$T/stats1.out" 2>"$T/stats1.err"
check "fsprism stats after the crash succeeds" test $? -eq 0
rows=$(sqlite3 "$DB" "select count(*) from ops where run=$run")
echo "# run $run: $rows rows after recovery"
check "the crashed run has rows ($rows)" test "$rows" -gt 1000
expect_eq "the run is marked crashed" crashed \
	"$(sqlite3 "$DB" "select value from run_attrs where run=$run and key='run.end'")"
lost=$(sqlite3 "$DB" "select value from run_attrs where run=$run and key='records.lost'")
case $lost in
unknown | [1-9]*) ok "the loss is counted ($lost)" ;;
*) not_ok "the loss is counted: records.lost is '$lost'" ;;
esac
check "the run has an end time" test -n "$(sqlite3 "$DB" "select ended_at from runs where id=$run")"
check "stats says the run crashed" grep -q 'crashed' "$T/stats1.out"
check "stats says how many records were lost" grep -Eq 'lost|unknown' "$T/stats1.out"
wcount=$(sqlite3 "$DB" "select coalesce(sum(count),0) from hist h join op_names n on h.op=n.op where run=$run and n.name='write' and layer=0")
check "the write histogram has the recovered writes ($wcount)" test "$wcount" -gt 1000
if ls "$T" | grep -q 'fsprism-spill'; then not_ok "the spill file is removed after recovery"
else ok "the spill file is removed after recovery"; fi

"$FSPRISM" stats "$DB" --run "$run" >"$T/stats2.out" 2>&1
expect_eq "a second stats adds no rows" "$rows" \
	"$(sqlite3 "$DB" "select count(*) from ops where run=$run")"
check "the second stats prints the same" cmp -s "$T/stats1.out" "$T/stats2.out"
expect_eq "the database is intact" ok "$(sqlite3 "$DB" "pragma integrity_check")"

# --- 2. umount, then mount the same point at once, five times ---
DB2=$T/remount.db
i=0
mounted=0
while [ $i -lt 5 ]; do
	i=$((i + 1))
	if ! fsp_mount "$B" "$M" --log "$DB2" --record=full 2>"$T/remount.err"; then
		not_ok "remount $i: $(cat "$T/remount.err")"
		continue
	fi
	mounted=$((mounted + 1))
	# 60000 writes of 512 bytes: 60000 rows for the daemon to store
	dd if=/dev/zero of="$M/r$i" bs=512 count=60000 status=none
	umount "$M"
done
expect_eq "every mount right after a plain umount succeeded" 5 "$mounted"
"$FSPRISM" umount "$M" 2>/dev/null
# let the last daemon finish (a plain umount does not wait)
n=0
while [ "$(sqlite3 -cmd ".timeout 10000" "$DB2" "select count(*) from runs where ended_at is null")" != 0 ] &&
	[ $n -lt 200 ]; do sleep 0.1; n=$((n + 1)); done
expect_eq "every run ended" 0 "$(sqlite3 -cmd ".timeout 10000" "$DB2" "select count(*) from runs where ended_at is null")"
expect_eq "every run stored all its write rows, none dropped" "5" \
	"$(sqlite3 -cmd ".timeout 10000" "$DB2" "select count(*) from runs r where dropped=0 and
		(select count(*) from ops o join op_names n on o.op=n.op
		 where o.run=r.id and n.name='write') >= 60000")"

# --- 3. the checkpoint's name is durable: its directory is synced ---
# (a file renamed into place is only found after a power cut once its
# directory is synced; src/db/oplog.c, checkpoint)
mkdir "$T/ckdir"
truncate -s 64M "$T/ckdir/target"
# (LeakSanitizer cannot run under ptrace: no leak check for this run)
if ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -qq -e trace=openat,fsync -o "$T/ck.strace" "$FSPRISM" run sustained-randwrite \
	"$T/ckdir/target" --qd=1 --time=2500ms --span=32M --idle=0 --record=full --quiet \
	--db "$T/ckdir/ck.db" >"$T/ck.out" 2>&1; then
	# the fds opened on the directory, then whether one of them was fsynced
	fds=$(sed -n "s|.*openat(AT_FDCWD, \"$T/ckdir\", O_RDONLY[^)]*O_DIRECTORY[^)]*) = \([0-9]*\)$|\1|p" \
		"$T/ck.strace" | sort -u | tr '\n' ' ')
	synced=0
	for fd in $fds; do grep -q "fsync($fd) *= 0" "$T/ck.strace" && synced=1; done
	expect_eq "checkpoint: the database's directory is opened and fsynced" 1 "$synced"
else
	not_ok "run under strace: $(tail -n 3 "$T/ck.out")"
fi

no_sanitizer_reports
fsp_done

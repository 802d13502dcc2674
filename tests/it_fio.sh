#!/bin/sh
# it_fio.sh - fio through an fsprism mount: O_DIRECT at QD1 and QD32, 128 KiB
# sequential and mixed, buffered with fsync; data checked against the
# backing file, and the database must hold exactly one read row per direct
# read fio issued, with the same byte total.
. "$TESTS_SRCDIR/lib.sh"

fsp_capture_daemon_reports

command -v fio >/dev/null || fsp_skip "fio not installed"
DB=$T/fio.db

fsp_ext4_new 1G "$T/ext4"
mkdir "$T/mnt"
B=$T/ext4/data
M=$T/mnt
mkdir "$B"

# jq may be missing; python3 reads fio's JSON.
fio_field() { # FILE EXPR  (EXPR over j = jobs[0])
	python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['jobs'][0]; print($2)" "$1"
}
last_run() { sqlite3 "$DB" "select max(id) from runs"; }
op_rows() { # RUN OP -> "count bytes"
	sqlite3 -separator ' ' "$DB" "select count(*), coalesce(sum(o.bytes),0) from ops o join op_names n on o.op=n.op where o.run=$1 and n.name='$2'"
}

# run_job NAME FIO_ARGS...: mount (with $MOUNT_OPTS), run fio on $M/NAME,
# unmount; one run per job.
run_job() {
	name=$1; shift
	# shellcheck disable=SC2086
	fsp_mount "$B" "$M" --log "$DB" --count-inflight ${MOUNT_OPTS:-} ||
		{ not_ok "$name: mount"; return 1; }
	fio --name="$name" --filename="$M/$name.dat" --output-format=json --verify_state_save=0 \
		--output="$T/$name.json" "$@" >"$T/$name.fio.err" 2>&1
	rc=$?
	fsp_umount "$M" || not_ok "$name: umount"
	if [ $rc -ne 0 ]; then
		not_ok "$name: fio failed: $(tail -3 "$T/$name.fio.err")"; return 1
	fi
	errs=$(fio_field "$T/$name.json" "j['error']")
	expect_eq "$name: fio finished without errors" 0 "$errs"
}

# check_reads NAME: DB read rows == fio read ios, bytes == fio read bytes
check_reads() {
	name=$1
	run=$(last_run)
	fio_ios=$(fio_field "$T/$name.json" "j['read']['total_ios']")
	fio_bytes=$(fio_field "$T/$name.json" "j['read']['io_bytes']")
	set -- $(op_rows "$run" read)
	expect_eq "$name: one read row per direct read fio issued ($fio_ios)" "$fio_ios" "$1"
	expect_eq "$name: read bytes in the database equal fio's ($fio_bytes)" "$fio_bytes" "$2"
}

check_writes() {
	name=$1
	run=$(last_run)
	fio_bytes=$(fio_field "$T/$name.json" "j['write']['io_bytes']")
	set -- $(op_rows "$run" write)
	expect_eq "$name: write bytes in the database equal fio's ($fio_bytes)" "$fio_bytes" "$2"
}

# the data through a fresh mount equals the backing file
check_data() {
	name=$1
	fsp_mount "$B" "$M" --log "$T/verify.db" || { not_ok "$name: verify mount"; return; }
	check "$name: bytes through the mount equal the backing file" cmp "$M/$name.dat" "$B/$name.dat"
	fsp_umount "$M"
}

COMMON="--ioengine=libaio --direct=1 --randrepeat=1 --norandommap --group_reporting"

# Files for the read jobs are laid out on the backing fs directly, so that
# the measured runs hold nothing but fio's own requests.
for f in randread_qd32 randrw_qd1 seq128k mixed128k; do
	dd if=/dev/urandom of="$B/$f.dat" bs=1M count=64 status=none
done

# 4 KiB random read/write, QD1
run_job randrw_qd1 $COMMON --rw=randrw --bs=4k --iodepth=1 --size=64M --io_size=16M &&
	{ check_reads randrw_qd1; check_writes randrw_qd1; check_data randrw_qd1; }

# 4 KiB random read, QD32: the queue depth must reach the backing file
run_job randread_qd32 $COMMON --rw=randread --bs=4k --iodepth=32 --size=64M --io_size=32M &&
	check_reads randread_qd32
inflight=$(sqlite3 "$DB" "select value from run_attrs where run=$(last_run) and key='max_inflight_io'")
check "randread_qd32: several reads in flight at the backing file at once (max $inflight)" \
	test "${inflight:-0}" -gt 1
attr() { sqlite3 "$DB" "select value from run_attrs where run=$(last_run) and key='$1'"; }
expect_eq "randread_qd32: default mount has asynchronous backing IO and 2 workers" \
	"aio 2" "$(attr fuse.backing_io) $(attr fuse.threads)"
# 2 workers serve 32 reads in flight only because the reads are asynchronous:
# more in flight than workers
check "randread_qd32: more reads in flight than worker threads (max $inflight)" \
	test "${inflight:-0}" -gt 2
# the slots' buffers: in huge pages unless the kernel has them off
huge=$(attr fuse.huge_buffer_pct)
case $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo "[never]") in
*"[never]"*) expect_eq "randread_qd32: no huge buffers (THP never)" 0.000 "$huge" ;;
*) check "randread_qd32: slot buffers in huge pages ($huge%)" \
	awk -v h="$huge" 'BEGIN { exit !(h != "" && h + 0 > 0 && h + 0 <= 100) }' ;;
esac

# the same with the IO done in the workers
cp "$B/randread_qd32.dat" "$B/randread_sync.dat"
MOUNT_OPTS="--backing-io=sync" run_job randread_sync $COMMON --rw=randread --bs=4k \
	--iodepth=32 --size=64M --io_size=32M && check_reads randread_sync
expect_eq "randread_sync: --backing-io=sync has 32 workers" "sync 32" \
	"$(attr fuse.backing_io) $(attr fuse.threads)"
inflight=$(attr max_inflight_io)
check "randread_sync: several reads in flight at the backing file at once (max $inflight)" \
	test "${inflight:-0}" -gt 1

# 128 KiB sequential write with crc32c verify (fio reads everything back)
run_job seqwrite128k $COMMON --rw=write --bs=128k --iodepth=1 --size=64M \
	--verify=crc32c --do_verify=1 &&
	{ check_writes seqwrite128k; check_data seqwrite128k; }
# 128 KiB sequential read
run_job seq128k $COMMON --rw=read --bs=128k --iodepth=1 --size=64M &&
	check_reads seq128k

# 128 KiB mixed sequential read/write, 50/50
run_job mixed128k $COMMON --rw=rw --rwmixread=50 --bs=128k --iodepth=4 --size=64M &&
	{ check_reads mixed128k; check_writes mixed128k; check_data mixed128k; }

# buffered IO with fsync after every write, verified
run_job buffered_fsync --ioengine=psync --direct=0 --rw=randwrite --bs=4k --size=8M \
	--fsync=1 --verify=crc32c --do_verify=1 --randrepeat=1 &&
	{ check_writes buffered_fsync; check_data buffered_fsync; }
run=$(last_run)
set -- $(op_rows "$run" fsync)
fio_syncs=$(fio_field "$T/buffered_fsync.json" "j['sync']['total_ios']")
expect_eq "buffered_fsync: one fsync row per fsync fio issued ($fio_syncs)" "$fio_syncs" "$1"

# every performance option keeps the data right: O_DIRECT and buffered,
# verified by fio and compared with the backing file
for opts in "--splice" "--clone-fd" "--writeback-cache" "--threads 1 --max-background 1" \
	    "--threads 1" "--backing-io=sync" "--backing-io=sync --splice" \
	    "--max-write 4k" "--record=sample:10" "--record=hist" "--record=off"; do
	# shellcheck disable=SC2086
	if ! fsp_mount "$B" "$M" --log "$T/opts.db" $opts; then
		not_ok "mount $opts"; continue
	fi
	fio --name=o --verify_state_save=0 --filename="$M/opt.dat" --size=16M --rw=randwrite --bs=128k --iodepth=8 \
		--ioengine=libaio --direct=1 --verify=crc32c --do_verify=1 >"$T/opt.out" 2>&1
	r1=$?
	fio --name=o --verify_state_save=0 --filename="$M/optb.dat" --size=4M --rw=randwrite --bs=4k --ioengine=psync \
		--verify=crc32c --do_verify=1 >>"$T/opt.out" 2>&1
	r2=$?
	cmp -s "$M/opt.dat" "$B/opt.dat"
	r3=$?
	fsp_umount "$M"
	expect_eq "$opts: O_DIRECT verify, buffered verify, cmp with the backing file" "0 0 0" "$r1 $r2 $r3"
done

dropped=$(sqlite3 "$DB" "select coalesce(sum(dropped),0) from runs")
expect_eq "no records dropped in any run" 0 "$dropped"
"$FSPRISM" stats "$DB" >"$T/stats.out" 2>&1
check "fsprism stats runs" test $? -eq 0
check "fsprism stats shows dropped 0" grep -q "dropped 0" "$T/stats.out"
no_sanitizer_reports
fsp_done

#!/bin/sh
# it_fusetx.sh - the FUSE transport of a plain `fsprism mount`, traced with
# eBPF from mount to unmount (src/trace/fuse.c), on a mount made here over
# ext4 on a loop device: a scripted number of O_DIRECT writes (dd) and
# reads (fio, libaio at QD8: the daemon answers them from its aio reaper
# thread) gives exactly that many daemon rows, each with its kernel unique
# and a joined fuse_reqs row of the same opcode; the queue part (kernel
# send to a worker's read) and the reply part (reply to the kernel's end)
# are >= 0 and below the application's latency; nothing missed at this
# rate; the backing loop device's block requests are stored with the mount
# run; `stats` shows the transport per op in table, JSON and CSV. With the
# ring buffer made tiny (FSPRISM_FUSE_TRACE_RING_BYTES, a test knob) the
# losses are counted, and so are requests sent onto a slot still open with
# one slot (FSPRISM_FUSE_TRACE_INFLIGHT); --no-trace stores nothing; without privilege to load
# BPF programs (a mount in a user namespace) the mount works, ONE line says
# why and no fuse_reqs rows are stored. No program stays loaded after an
# unmount or a SIGTERM, nothing stays mounted. Without eBPF in the build only the last
# parts run.
. "$TESTS_SRCDIR/lib.sh"

command -v fio >/dev/null || fsp_skip "fio not installed"
fsp_capture_daemon_reports
DB=$T/fusetx.db
q() { sqlite3 "$DB" "$1"; }
attr() { q "SELECT value FROM run_attrs WHERE run=$RUN AND key='$1'"; }
last_run() { q "SELECT max(id) FROM runs"; }
fio_field() { # FILE EXPR  (EXPR over j = jobs[0])
	python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['jobs'][0]; print($2)" "$1"
}
# the ids of the FUSE-transport programs process $1 holds (from its fds)
progs_of() {
	for id in $(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u); do
		bpftool prog show id "$id" 2>/dev/null | grep -q 'name fsp_fuse_' && echo "$id"
	done
}
# which of the program ids $* are still loaded
still_loaded() {
	for id in "$@"; do bpftool prog show id "$id" >/dev/null 2>&1 && echo "$id"; done
}

LOOP=$(fsp_loop_new 512M) || { not_ok "make a loop device"; fsp_done; exit 1; }
fsp_track_loop "$LOOP"
DEVNO=$(lsblk -dno MAJ:MIN "$LOOP" | tr -d ' ')
mkfs.ext4 -q "$LOOP"
mkdir "$T/ext4" "$T/mnt"
mount "$LOOP" "$T/ext4" && fsp_track_mount "$T/ext4"
B=$T/ext4/data
M=$T/mnt
mkdir "$B"

# ---- a traced mount: writes with dd, reads with fio ------------------------------
fsp_mount "$B" "$M" --log "$DB" 2>"$T/mount1.err"
expect_eq "mount" 0 "$?"
if grep -q 'built without eBPF' "$T/mount1.err"; then
	TRACED=0
else
	TRACED=1
	command -v bpftool >/dev/null || fsp_skip "bpftool is missing"
fi
DPID=$(fsp_daemon_pid "$M")
if [ "$TRACED" = 1 ]; then
	expect_eq "no 'not traced' line when tracing works" "" "$(cat "$T/mount1.err")"
	PROGS=$(progs_of "$DPID")
	expect_eq "the daemon holds the two FUSE-transport programs" 2 "$(echo $PROGS | wc -w)"
fi
dd if=/dev/urandom of="$M/f" bs=4k count=256 oflag=direct conv=fsync 2>"$T/dd.err"
expect_eq "256 direct 4 KiB writes" 0 "$?"
fio --name=r --filename="$M/f" --rw=randread --bs=4k --iodepth=8 --ioengine=libaio \
	--direct=1 --size=1M --io_size=2M --output-format=json \
	--output="$T/r.json" >"$T/fio.err" 2>&1
expect_eq "fio: 512 random 4 KiB reads at QD8" 0 "$?"
fsp_umount "$M"
expect_eq "umount" 0 "$?"
check "nothing left mounted" sh -c "! mountpoint -q '$M'"
[ "$TRACED" = 1 ] &&
	expect_eq "no FUSE-transport program left loaded" "" "$(still_loaded $PROGS)"
RUN=$(last_run)
FIO_IOS=$(fio_field "$T/r.json" "j['read']['total_ios']")
expect_eq "fio read 512" 512 "$FIO_IOS"

if [ "$TRACED" = 1 ]; then
	expect_eq "fuse.traced" 1 "$(attr fuse.traced)"
	expect_eq "nothing missed at a low rate" 0 "$(attr fuse.trace_missed)"
	expect_eq "daemon rows: 512 reads, 256 writes" "512|256" \
		"$(q "SELECT sum(op=13), sum(op=14) FROM ops WHERE run=$RUN")"
	expect_eq "every read and write row has its kernel unique and receive time" 0 \
		"$(q "SELECT count(*) FROM ops WHERE run=$RUN AND op IN (13,14)
			AND (coalesce(fuse_unique,0)=0 OR coalesce(recv_ns,0)=0)")"
	J="FROM ops o JOIN fuse_reqs f ON f.run=o.run AND f.fuse_unique=o.fuse_unique
		WHERE o.run=$RUN AND o.op IN (13,14)"
	expect_eq "each has one joined fuse_reqs row of its opcode (READ 15, WRITE 16)" \
		"768|768" "$(q "SELECT count(*), sum(f.opcode = o.op + 2) $J")"
	expect_eq "traced READ requests = fio's reads, WRITE = dd's writes" "512|256" \
		"$(q "SELECT sum(opcode=15), sum(opcode=16) FROM fuse_reqs WHERE run=$RUN")"
	expect_eq "the connection is the mount's" "$(attr fuse.conn)" \
		"$(q "SELECT DISTINCT conn FROM fuse_reqs WHERE run=$RUN")"
	expect_eq "queue and reply parts >= 0, handler inside send..end" 0 \
		"$(q "SELECT count(*) $J AND (o.recv_ns < f.send_ns
			OR f.end_ns < o.start_ns + o.total_ns OR o.start_ns < o.recv_ns)")"
	# the parts against the application's latency: each below fio's largest
	# read completion latency, their mean below its mean
	CLAT_MAX=$(fio_field "$T/r.json" "int(j['read']['clat_ns']['max'])")
	CLAT_MEAN=$(fio_field "$T/r.json" "int(j['read']['clat_ns']['mean'])")
	expect_eq "every read's queue and reply below fio's max latency ($CLAT_MAX ns)" 0 \
		"$(q "SELECT count(*) $J AND o.op=13 AND (o.recv_ns - f.send_ns >= $CLAT_MAX
			OR f.end_ns - o.start_ns - o.total_ns >= $CLAT_MAX)")"
	expect_eq "mean queue + handler + reply of reads below fio's mean ($CLAT_MEAN ns)" 1 \
		"$(q "SELECT avg(f.end_ns - f.send_ns) < $CLAT_MEAN $J AND o.op=13")"
	expect_eq "block layer of the backing device traced with the mount run" \
		"1|$DEVNO" "$(attr block.traced)|$(attr block.devices)"
	check "the daemon's backing reads are block rows of the mount run" test \
		"$(q "SELECT count(*) FROM block_ios WHERE run=$RUN AND tgid=$DPID AND op='read'")" -gt 0
	"$FSPRISM" stats "$DB" --run "$RUN" >"$T/stats" 2>&1
	check "stats: a FUSE transport section" grep -q "^FUSE transport: connection" "$T/stats"
	check "stats: reads 512 joined, 0 unjoined" grep -Eq "^read +512 +0 " "$T/stats"
	expect_eq "stats: the FUSE transport section fits 100 columns" "" \
		"$(sed -n '/^FUSE transport/,/^$/p' "$T/stats" | awk 'length($0) > 100')"
	"$FSPRISM" stats "$DB" --run "$RUN" --format json >"$T/stats.json"
	expect_eq "stats json: fuse_transport reads joined" "512 0" "$(python3 -c "
import json,sys; t=json.load(open(sys.argv[1]))['fuse_transport']
r=[o for o in t['ops'] if o['op']=='read'][0]; print(r['joined'], r['unjoined'])" "$T/stats.json")"
	"$FSPRISM" stats "$DB" --run "$RUN" --format csv >"$T/stats.csv"
	expect_eq "stats csv: read fuse_queue and fuse_reply rows of 512" "512|512" \
		"$(awk -F, '$3=="read" && $4=="fuse_queue" {q=$5} $3=="read" && $4=="fuse_reply" {r=$5}
			END {print q "|" r}' "$T/stats.csv")"

	# knob_run VAR=VALUE QD BYTES: a mount with the test knob set in the daemon's
	# environment, fio random 4 KiB reads of BYTES at QD, unmount; sets RUN
	knob_run() {
		env "$1" "$FSPRISM" mount --log "$DB" "$B" "$M"
		fio --name=k --filename="$M/f" --rw=randread --bs=4k --iodepth="$2" \
			--ioengine=libaio --direct=1 --size=1M --io_size="$3" \
			--output-format=json --output="$T/k.json" >"$T/fio.err" 2>&1
		fsp_umount "$M"
		RUN=$(last_run)
	}

	# ---- a tiny ring buffer: the losses are counted -------------------------------
	knob_run FSPRISM_FUSE_TRACE_RING_BYTES=4096 32 80M
	MISSED=$(attr fuse.trace_missed)
	check "tiny ring buffer: requests missed are counted ($MISSED)" test "${MISSED:-0}" -gt 0
	expect_eq "tiny ring buffer: missed = ring full + map full + open" "$MISSED" \
		"$(($(attr fuse.trace_ring_full) + $(attr fuse.trace_map_full) + $(attr fuse.trace_open)))"
	READS=$(q "SELECT count(*) FROM ops WHERE run=$RUN AND op=13")
	TR=$(q "SELECT count(*) FROM fuse_reqs WHERE run=$RUN AND opcode=15")
	check "tiny ring buffer: traced reads + missed >= daemon reads ($TR + $MISSED >= $READS)" \
		test $((TR + MISSED)) -ge "$READS"
	"$FSPRISM" stats "$DB" --run "$RUN" >"$T/stats"
	check "stats prints the missed count" grep -q "requests traced, $MISSED missed" "$T/stats"

	# ---- one slot for the requests in flight: taken-over slots are counted ----------
	knob_run FSPRISM_FUSE_TRACE_INFLIGHT=1 16 8M
	check "one slot: requests sent onto an open slot are counted ($(attr fuse.trace_map_full))" \
		test "$(attr fuse.trace_map_full)" -gt 0
	expect_eq "one slot: no row joins a wrong daemon row (opcode and order)" 0 \
		"$(q "SELECT count(*) FROM ops o JOIN fuse_reqs f ON f.run=o.run
			AND f.fuse_unique=o.fuse_unique WHERE o.run=$RUN AND o.op=13
			AND (f.opcode != 15 OR o.recv_ns < f.send_ns OR f.end_ns < o.start_ns + o.total_ns)")"
fi

# ---- SIGTERM: the daemon unmounts, stores the trace, leaves nothing loaded -----------
if [ "$TRACED" = 1 ]; then
	fsp_mount "$B" "$M" --log "$DB"
	DPID=$(fsp_daemon_pid "$M")
	PROGS=$(progs_of "$DPID")
	dd if="$M/f" of=/dev/null bs=4k count=64 iflag=direct 2>/dev/null
	kill -TERM "$DPID"
	for _ in $(seq 100); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
	check "SIGTERM: the daemon exits" sh -c "! kill -0 $DPID 2>/dev/null"
	check "SIGTERM: unmounted" sh -c "! mountpoint -q '$M'"
	expect_eq "SIGTERM: no FUSE-transport program left loaded" "" "$(still_loaded $PROGS)"
	RUN=$(last_run)
	expect_eq "SIGTERM: the 64 reads joined to their traced requests" 64 \
		"$(q "SELECT count(*) FROM ops o JOIN fuse_reqs f ON f.run=o.run
			AND f.fuse_unique=o.fuse_unique WHERE o.run=$RUN AND o.op=13")"
fi

# ---- without tracefs: the programs attach through BTF ------------------------------
# A freshly booted machine may have no tracefs mounted; the mount's trace must
# not need it. In a mount namespace of its own, tracefs is unmounted and the
# mount made, read and unmounted there.
if [ "$TRACED" = 1 ]; then
	N=$T/notracefs
	mkdir -p "$N/m"
	unshare -m --propagation private sh -c '
		for d in /sys/kernel/debug/tracing /sys/kernel/tracing; do
			while umount "$d" 2>/dev/null; do :; done
		done
		[ -e /sys/kernel/tracing/trace ] && { echo "tracefs still mounted" >"$5"; exit 1; }
		"$1" mount --log "$4" "$2" "$3" 2>"$5" || exit 1
		dd if="$3/f" of=/dev/null bs=4k count=32 iflag=direct 2>/dev/null
		# the mount lives in this namespace only: the outer clean-up cannot
		# see it, so it is taken down here whatever happens
		"$1" umount "$3" || { umount -l "$3"; exit 1; }' sh "$FSPRISM" "$B" "$N/m" "$N/n.db" "$N/err"
	expect_eq "no tracefs: the mount works" 0 "$?"
	expect_eq "no tracefs: no 'not traced' line" "" "$(cat "$N/err")"
	expect_eq "no tracefs: the 32 reads joined to their traced requests" 32 \
		"$(sqlite3 "$N/n.db" "SELECT count(*) FROM ops o JOIN fuse_reqs f ON f.run=o.run
			AND f.fuse_unique=o.fuse_unique WHERE o.op=13")"
fi

# ---- --no-trace ---------------------------------------------------------------------
fsp_mount "$B" "$M" --log "$DB" --no-trace 2>"$T/mount.err"
cat "$M/f" >/dev/null
fsp_umount "$M"
RUN=$(last_run)
expect_eq "--no-trace: no line" "" "$(cat "$T/mount.err")"
expect_eq "--no-trace: fuse.traced=0, block.traced=0, reason, no rows" "0|0|--no-trace|0|0" \
	"$(attr fuse.traced)|$(attr block.traced)|$(attr fuse.untraced_reason)|$(q "SELECT count(*)
	FROM fuse_reqs WHERE run=$RUN")|$(q "SELECT count(*) FROM block_ios WHERE run=$RUN")"

# ---- without privilege: a mount in a user namespace ---------------------------------
if [ "$TRACED" = 1 ] && unshare -Urm true 2>/dev/null; then
	U=$T/userns
	mkdir -p "$U/b" "$U/m"
	unshare -Urm sh -c "'$FSPRISM' mount --log '$U/u.db' '$U/b' '$U/m' 2>'$U/err' &&
		echo data >'$U/m/x' && cat '$U/m/x' >'$U/out' && '$FSPRISM' umount '$U/m'"
	expect_eq "unprivileged: the mount works" "0|data" "$?|$(cat "$U/out")"
	expect_eq "unprivileged: ONE line says why" \
		"fsprism mount: kernel-side layers not traced: no privilege to load BPF programs (needs root, or CAP_BPF and CAP_PERFMON)" \
		"$(cat "$U/err")"
	expect_eq "unprivileged: fuse.traced=0, block.traced=0, no fuse_reqs rows" "0|0|0" \
		"$(sqlite3 "$U/u.db" "SELECT (SELECT value FROM run_attrs WHERE key='fuse.traced'),
			(SELECT value FROM run_attrs WHERE key='block.traced'),
			(SELECT count(*) FROM fuse_reqs)")"
	expect_eq "unprivileged: the daemon's rows are there" 1 \
		"$(sqlite3 "$U/u.db" "SELECT count(*) > 0 FROM ops WHERE op=14")"
elif [ "$TRACED" = 0 ]; then
	expect_eq "built without eBPF: one line says why" \
		"fsprism mount: kernel-side layers not traced: this fsprism was built without eBPF (configure --disable-bpf, or libbpf, clang, bpftool or the kernel's BTF were missing)" \
		"$(cat "$T/mount1.err")"
	expect_eq "built without eBPF: fuse.traced=0, no fuse_reqs rows" "0|0" \
		"$(q "SELECT value FROM run_attrs WHERE run=1 AND key='fuse.traced'")|$(q "SELECT
		count(*) FROM fuse_reqs")"
fi

no_sanitizer_reports
fsp_done

#!/bin/sh
# it_badinput.sh - every bad input to mount/umount gets a one-line message
# naming the problem, a non-zero exit status, nothing left mounted, no stray
# daemon and no half-written database; and an unmount right after a burst
# of small-file work loses no records. Also `fsprism run` with a parameter
# out of its range: refused with the range in the message, nothing created.
FSP_ROOT_LATER=1 # the argument checks before fsp_need_root need no root
. "$TESTS_SRCDIR/lib.sh"

fsp_capture_daemon_reports

chmod 755 "$T"
mkdir -p "$T/b" "$T/m" "$T/cwd" "$T/busy" "$T/ro"
B=$T/b
M=$T/m
echo data >"$T/file"
fsp_track_mount "$M"

no_daemon() { ! pgrep -f -- "$FSPRISM mount.* $M\$" >/dev/null 2>&1; }

# expect_fail DESC STATUS SUBSTRING CMD...: exit status, message, no mount, no daemon.
expect_fail() {
	desc=$1; want_rc=$2; want_msg=$3; shift 3
	(cd "$T/cwd" && "$@") >"$T/out" 2>"$T/err"
	rc=$?
	msg=$(cat "$T/err")
	lines=$(wc -l <"$T/err")
	if [ "$rc" -eq "$want_rc" ] && [ "$lines" -eq 1 ] &&
	   printf '%s' "$msg" | grep -qF -- "$want_msg"; then
		ok "$desc: exit $rc, '$msg'"
	else
		not_ok "$desc: expected exit $want_rc and one line containing '$want_msg', got exit $rc, $lines line(s): '$msg'"
	fi
	if mountpoint -q "$M"; then
		not_ok "$desc: something is mounted on $M"; fusermount3 -u "$M"
	fi
	no_daemon || not_ok "$desc: a daemon is still running"
}

F=$FSPRISM
DB=$T/load.db # written by the load test (needs root); the checks before it only name it
# ---- refused before anything is mounted: no root needed ----
expect_fail "missing backing dir" 1 "backing directory $T/nope: does not exist" \
	"$F" mount "$T/nope" "$M"
expect_fail "backing dir is a file" 1 "backing directory $T/file is not a directory" \
	"$F" mount "$T/file" "$M"
expect_fail "missing mountpoint" 1 "mountpoint $T/nomnt: does not exist" \
	"$F" mount "$B" "$T/nomnt"
expect_fail "mountpoint is a file" 1 "mountpoint $T/file is not a directory" \
	"$F" mount "$B" "$T/file"
mkdir "$B/inner"
expect_fail "mountpoint inside the backing dir" 1 "mountpoint $B/inner is inside the backing directory $B" \
	"$F" mount "$B" "$B/inner"
rmdir "$B/inner"
expect_fail "unknown option" 2 "unknown option '--bogus'" "$F" mount --bogus "$B" "$M"
expect_fail "unknown short option" 2 "unknown option '-z'" "$F" mount -z "$B" "$M"
expect_fail "bad --record" 2 "invalid --record 'sometimes'" "$F" mount --record=sometimes "$B" "$M"
expect_fail "bad --threads" 2 "invalid --threads '0'" "$F" mount --threads 0 "$B" "$M"
expect_fail "bad --backing-io" 2 "invalid --backing-io 'uring' (aio or sync)" "$F" mount --backing-io uring "$B" "$M"
expect_fail "bad --max-write" 2 "invalid --max-write '3M'" "$F" mount --max-write 3M "$B" "$M"
expect_fail "missing arguments" 2 "expected BACKING_DIR and MOUNTPOINT" "$F" mount "$B"

# umount of things that are not fsprism mounts
expect_fail "umount of a missing path" 1 "fsprism umount: $T/nope: does not exist" "$F" umount "$T/nope"
expect_fail "umount of a plain directory" 1 "fsprism umount: $B is not mounted" "$F" umount "$B"
expect_fail "umount without arguments" 2 "fsprism umount: expected one MOUNTPOINT (see 'fsprism umount --help')" "$F" umount

# --- the copy-on-write / journaling emulation's options and store safety ---
expect_fail "bad --cow" 2 "invalid --cow 'sometimes' (off, shared or always)" \
	"$F" mount --cow=sometimes "$B" "$M"
expect_fail "bad --journal" 2 "invalid --journal 'full'" \
	"$F" mount --journal=full "$B" "$M"
expect_fail "bad --block-size" 2 "invalid --block-size '3k' (a power of two, 4k..64k)" \
	"$F" mount --cow=always --block-size 3k "$B" "$M"
expect_fail "bad --tree-depth" 2 "invalid --tree-depth '0' (1..16)" \
	"$F" mount --cow=always --tree-depth 0 "$B" "$M"
expect_fail "bad --extent-cost" 2 "invalid --extent-cost '2ms' (a duration up to 1ms, e.g. 5us)" \
	"$F" mount --cow=always --extent-cost 2ms "$B" "$M"
expect_fail "--extent-cost without the emulation" 2 "--extent-cost needs the emulation" \
	"$F" mount --extent-cost 5us "$B" "$M"
expect_fail "a store option without the emulation" 2 "--store-size needs the emulation (--store, --cow or --journal)" \
	"$F" mount --store-size 64M "$B" "$M"
head -c 1048576 /dev/urandom >"$T/notastore"
sum0=$(md5sum <"$T/notastore")
expect_fail "a store file holding other data" 1 "is not an fsprism store (use --format --destroy-data to overwrite it)" \
	"$F" mount --cow=always --store "$T/notastore" "$B" "$M"
expect_eq "that file is unchanged" "$sum0" "$(md5sum <"$T/notastore")"

# --- one command line for every command (src/cli/opt.c) ---
# same_outcome DESC RC SUBSTRING "ARGS A" "ARGS B": fsprism with either
# argument list (split by the shell: no spaces in $T) exits RC, says the same
# on stdout and stderr, and its stderr (or, if empty, stdout) holds SUBSTRING.
same_outcome() {
	desc=$1 want_rc=$2 want=$3
	(cd "$T/cwd" && eval "\"\$F\" $4") >"$T/o1" 2>"$T/e1"
	rc1=$?
	(cd "$T/cwd" && eval "\"\$F\" $5") >"$T/o2" 2>"$T/e2"
	rc2=$?
	said=$T/e1
	[ -s "$said" ] || said=$T/o1
	if [ "$rc1" -eq "$want_rc" ] && [ "$rc2" -eq "$want_rc" ] && cmp -s "$T/o1" "$T/o2" &&
	   cmp -s "$T/e1" "$T/e2" && grep -qF -- "$want" "$said"; then
		ok "$desc: both exit $rc1, '$(head -n 1 "$said")'"
	else
		not_ok "$desc: expected exit $want_rc and '$want' from both, got $rc1: '$(cat "$T/e1")' / $rc2: '$(cat "$T/e2")'"
	fi
}
same_outcome "mount --record=X / --record X" 2 "invalid --record 'sometimes'" \
	"mount --record=sometimes $B $M" "mount --record sometimes $B $M"
same_outcome "mount --threads=N / --threads N, positionals first" 2 "invalid --threads '0'" \
	"mount $B $M --threads=0" "mount --threads 0 $B $M"
same_outcome "umount -- PATH / umount PATH" 1 "fsprism umount: $B is not mounted" \
	"umount -- $B" "umount $B"
same_outcome "run --time=X / --time X (a parameter)" 2 "fsprism run: time: '1ms' is out of range" \
	"run sustained-seqwrite $T/rt --db $T/rt.db --time=1ms" "run sustained-seqwrite --time 1ms $T/rt --db=$T/rt.db"
same_outcome "run --scale=X / --scale X" 2 "fsprism run: scale: 'huge' is not default or full" \
	"run sustained-seqwrite $T/rt --scale=huge" "run --scale huge sustained-seqwrite $T/rt"
same_outcome "run --norepeat / --norepeat=yes (a flag)" 2 "fsprism run: time: '1ms' is out of range" \
	"run sustained-seqwrite $T/rt --norepeat --time=1ms" "run sustained-seqwrite $T/rt --norepeat=yes --time=1ms"
check "run: nothing created by the refused runs" sh -c "[ ! -e '$T/rt' ] && [ ! -e '$T/rt.db' ]"
same_outcome "compare --fs=X / --fs X" 2 "fsprism compare: unsupported --fs 'zfs'" \
	"compare --fs=zfs" "compare --fs zfs"
same_outcome "compare --qd=X / --qd X (a parameter)" 2 "fsprism compare: qd: '0' is not a queue depth" \
	"compare --qd=0" "compare --qd 0"
same_outcome "stats --format=X / --format X" 2 "fsprism stats: unknown format 'xml'" \
	"stats $DB --format=xml" "stats --format xml $DB"
same_outcome "stats -- DB / stats DB" 1 "fsprism stats: no database at $T/none.db" \
	"stats -- $T/none.db" "stats $T/none.db"
# an unknown option names the closest valid one; a profile parameter too
expect_fail "did you mean an option" 2 \
	"fsprism compare: unknown option '--profil' (did you mean --profile?)" "$F" compare --profil x
expect_fail "did you mean a profile parameter" 2 \
	"fsprism run: unknown option '--tme' (did you mean --time?)" \
	"$F" run sustained-seqwrite "$T/rt" --tme=1s
expect_fail "did you mean a mount option" 2 \
	"fsprism mount: unknown option '--threds' (did you mean --threads?)" "$F" mount --threds 4 "$B" "$M"
expect_fail "an abbreviation is refused, the full name suggested" 2 \
	"fsprism stats: unknown option '--form' (did you mean --format?)" "$F" stats "$DB" --form csv
expect_fail "nothing close: the command's help named" 2 \
	"fsprism run: unknown option '--frobnicate' (see 'fsprism run --help')" \
	"$F" run sustained-seqwrite "$T/rt" --frobnicate
expect_fail "a missing value" 2 "fsprism run: --time needs a value (see 'fsprism run --help')" \
	"$F" run sustained-seqwrite "$T/rt" --time
expect_fail "a flag given a value" 2 "fsprism compare: --quiet takes no value (see 'fsprism compare --help')" \
	"$F" compare --quiet=yes
expect_fail "an extra argument" 2 "fsprism profiles: unexpected argument 'x' (see 'fsprism profiles --help')" \
	"$F" profiles x
# --help and -h: the command's help on stdout, exit 0; fsprism help CMD the same
for cmd in mount umount run profiles compare stats; do
	"$F" "$cmd" --help >"$T/h1" 2>"$T/he"
	rc=$?
	"$F" "$cmd" -h >"$T/h2" 2>>"$T/he"
	rc2=$?
	"$F" help "$cmd" >"$T/h3" 2>>"$T/he"
	rc3=$?
	if [ "$rc$rc2$rc3" = 000 ] && [ ! -s "$T/he" ] && grep -q "^usage: fsprism $cmd" "$T/h1" &&
	   cmp -s "$T/h1" "$T/h2" && cmp -s "$T/h1" "$T/h3"; then
		ok "$cmd --help, -h and fsprism help $cmd: the same help on stdout, exit 0"
	else
		not_ok "$cmd --help / -h / help $cmd: exit $rc $rc2 $rc3, stderr '$(cat "$T/he")', stdout '$(head -n 1 "$T/h3")'"
	fi
done
expect_fail "help of an unknown command" 2 "fsprism: unknown command 'nope'" "$F" help nope
version=$("$F" version)
"$F" -V >"$T/v1" 2>&1
rc=$?
"$F" --version >"$T/v2" 2>&1
rc2=$?
expect_eq "-V and --version print the version, as version does, and exit 0" \
	"$version 0 $version 0" "$(cat "$T/v1") $rc $(cat "$T/v2") $rc2"

# --- fsprism run: every parameter has a range, the message names it ---
# (a typo such as timeline = 1ns once grew a run to 12 GB of RAM and 300
# million timeline rows). Exit 2, nothing created, nothing stored.
RT=$T/run-target
RDB=$T/run.db
run_refused() {
	desc=$1 want=$2; shift 2
	expect_fail "run: $desc" 2 "$want" "$F" run "$@" "$RT" --db "$RDB"
	[ ! -e "$RT" ] || { not_ok "run: $desc: created $RT"; rm -f "$RT"; }
	[ ! -e "$RDB" ] || { not_ok "run: $desc: created $RDB"; rm -f "$RDB"; }
}
printf 'profile = sustained-seqwrite\nspan = 8M\ntimeline = 1ns\n' >"$T/cwd/typo.ini"
run_refused "job file timeline = 1ns" \
	"typo.ini:3: timeline: '1ns' is out of range (10ms..60s, or 0 for none)" typo.ini
run_refused "timeline 1ns" "fsprism run: timeline: '1ns' is out of range (10ms..60s, or 0 for none)" \
	sustained-seqwrite --timeline=1ns
run_refused "timeline 2m" "timeline: '2m' is out of range (10ms..60s" sustained-seqwrite --timeline=2m
run_refused "time 1ms" "time: '1ms' is out of range (10ms..24h, or 0 for no limit)" \
	sustained-seqwrite --time=1ms
run_refused "time 2d" "time: '48h' is out of range (10ms..24h" sustained-seqwrite --time=48h
run_refused "ramp 1h" "ramp: '1h' is out of range (1ms..10m, or 0 for none)" sustained-seqwrite --ramp=1h
run_refused "idle 2h" "idle: '2h' is out of range (0..1h)" sustained-seqwrite --idle=2h
run_refused "span 2P" "span: '2P' is out of range (512..1P, or 0 for the whole target)" \
	sustained-seqwrite --span=2P
run_refused "bytes 1" "bytes: '1' is out of range (512..1P, or 0 for no limit)" \
	sustained-seqwrite --bytes=1
run_refused "burst 1" "burst: '1' is out of range (512..64G, or 0 for no bursts)" \
	burst-seqwrite --burst=1
run_refused "segment 4k" "segment: '4k' is out of range (64k..1T)" fill --segment=4k
run_refused "tail 2P" "tail: '2P' is out of range (0..1P)" fill --tail=2P
run_refused "qd 257" "qd: '257' is not a queue depth (1..256)" sustained-seqwrite --qd=1,257
run_refused "bs 32M" "bs: '32M' is not a block size (512 to 16M)" sustained-seqwrite --bs=32M
run_refused "mix 101" "mix: '101' is not a read percentage (0..100)" mixed-seq --mix=101
run_refused "duty 0" "duty: '0' is not a duty cycle (1..100 percent busy)" mixed-seq --duty=0
# counts that each pass alone, together past what a run may hold in memory
run_refused "qd x bs in flight" "qd: 256 x bs 16M is 4G in flight, more than 512M" \
	sustained-seqwrite --qd=256 --bs=16M
run_refused "timeline buckets of a run" "timeline: 10ms over 6 step(s) of 24h is" \
	sustained-seqwrite --time=24h --timeline=10ms
run_refused "bursts of a run" "more than 1048576 (use larger bursts)" \
	burst-seqwrite --burst=4k --bs=4k --bytes=1T

# ---- what needs root: /dev/fuse, other users, mounts, devices, the load test ----
fsp_need_root
mkdir -m 700 "$T/secret"
expect_fail "unreadable backing dir (as uid 1000)" 1 "cannot read backing directory $T/secret: Permission denied" \
	setpriv --reuid=1000 --regid=1000 --clear-groups "$F" mount --log "$T/u.db" "$T/secret" "$M"
mount -t tmpfs fsp-busy "$T/busy" && fsp_track_mount "$T/busy"
expect_fail "mountpoint already a mount point" 1 "mountpoint $T/busy is already a mount point (tmpfs)" \
	"$F" mount "$B" "$T/busy"
check "the tmpfs is still mounted, untouched" mountpoint -q "$T/busy"
mount -t tmpfs -o ro fsp-ro "$T/ro" && fsp_track_mount "$T/ro"
expect_fail "database on a read-only file system" 1 "cannot create database $T/ro/x.db: Read-only file system" \
	"$F" mount --log "$T/ro/x.db" "$B" "$M"
# (the database is opened once /dev/fuse is: a user without it never gets here)
expect_fail "database in a missing directory" 1 "cannot create database $T/nodir/x.db: directory $T/nodir does not exist" \
	"$F" mount --log "$T/nodir/x.db" "$B" "$M"
sqlite3 "$T/v99.db" "pragma user_version=99; create table keep(x); insert into keep values(1);"
expect_fail "database of unknown schema version" 1 "$T/v99.db has schema version 99" \
	"$F" mount --log "$T/v99.db" "$B" "$M"
expect_eq "the foreign database is left as it was" "99 1 keep " \
	"$(sqlite3 "$T/v99.db" 'pragma user_version; select count(*) from keep; select name from sqlite_master' | tr '\n' ' ')"
expect_fail "unknown -o option" 1 "invalid -o options 'nosuchopt'" \
	"$F" mount --log "$T/o.db" -o nosuchopt "$B" "$M"
check "no database written for a bad -o option" test ! -e "$T/o.db"
check "no database written in the cwd by any failed mount" test ! -e "$T/cwd/fsprism.db"

# /dev/fuse missing, not the device, or not permitted (private mount namespaces)
: >"$T/notdev"
expect_fail "no /dev/fuse" 1 "no /dev/fuse" \
	unshare -m sh -c "mount -t tmpfs none /dev && exec '$F' mount --log '$T/d.db' '$B' '$M'"
expect_fail "/dev/fuse is not the device" 1 "/dev/fuse is not the FUSE device" \
	unshare -m sh -c "mount --bind '$T/notdev' /dev/fuse && exec '$F' mount --log '$T/d.db' '$B' '$M'"
mknod -m 600 "$T/fusedev" c 10 229
expect_fail "no permission on /dev/fuse (uid 1000)" 1 "/dev/fuse: Permission denied; /dev/fuse needs read and write access" \
	unshare -m sh -c "mount --bind '$T/fusedev' /dev/fuse && exec setpriv --reuid=1000 --regid=1000 --clear-groups '$F' mount --log '$T/u.db' '$B' '$M'"

# umount of a mount that is not fsprism's
expect_fail "umount of a tmpfs" 1 "fsprism umount: $T/busy is not an fsprism mount (it is tmpfs)" \
	"$F" umount "$T/busy"
check "the tmpfs survived" mountpoint -q "$T/busy"

truncate -s 64M "$T/ext4.img"
mkfs.ext4 -q -F "$T/ext4.img"
sdev=$(losetup --find --show "$T/ext4.img") && fsp_track_loop "$sdev"
sum0=$(md5sum <"$sdev")
expect_fail "a store device carrying ext4" 1 "ext4" \
	"$F" mount --cow=always --store "$sdev" "$B" "$M"
expect_eq "that device is unchanged" "$sum0" "$(md5sum <"$sdev")"
expect_fail "--store-size for a block device" 2 "--store-size is for a store file" \
	"$F" mount --cow=always --store "$sdev" --store-size 64M "$B" "$M"
# an fsprism store on the device: re-mounting is allowed, formatting it is not
if fsp_mount "$B" "$M" --log "$DB" --cow=always --store "$sdev" --destroy-data --format; then
	echo data >"$M/kept"
	fsp_umount "$M"
	expect_fail "--format over an fsprism store without --destroy-data" 1 \
		"holds an fsprism store (use --destroy-data to overwrite it)" \
		"$F" mount --cow=always --store "$sdev" --format "$B" "$M"
	if fsp_mount "$B" "$M" --log "$DB" --cow=always --store "$sdev"; then
		expect_eq "the store re-mounts without --destroy-data, data intact" data "$(cat "$M/kept")"
		mkdir -p "$T/b2" "$T/m2"
		(cd "$T/cwd" && "$F" mount --cow=always --store "$sdev" "$T/b2" "$T/m2") >"$T/out" 2>"$T/err"
		rc=$?
		check "a store in use by another mount is refused (exit $rc: $(cat "$T/err"))" \
			sh -c "[ $rc -ne 0 ] && ! mountpoint -q '$T/m2'"
		fsp_umount "$M"
	else
		not_ok "re-mount of the device store"
	fi
else
	not_ok "format a device store with --destroy-data"
fi

if fsp_mount "$B" "$M" --log "$DB"; then
	(cd "$T/cwd" && "$F" mount --log "$T/second.db" "$B" "$M") 2>"$T/err"
	rc=$?
	check "mounting over a live fsprism mount fails (exit $rc: $(cat "$T/err"))" \
		sh -c "[ $rc -eq 1 ] && grep -q 'already a mount point (fuse.fsprism)' '$T/err'"

	# a burst of small-file work, then an immediate unmount: nothing lost
	N=3000
	python3 - "$M" "$N" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    fd = os.open(f"{d}/f{i}", os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"x" * 100)
    os.close(fd)
PY
	check "fsprism umount right after the burst" fsp_umount "$M"
	run=$(sqlite3 "$DB" "select max(id) from runs")
	creates=$(sqlite3 "$DB" "select count(*) from ops o join op_names n on o.op=n.op where run=$run and n.name='create'")
	writes=$(sqlite3 "$DB" "select count(*) from ops o join op_names n on o.op=n.op where run=$run and n.name='write'")
	expect_eq "every create is in the database when umount returns" "$N" "$creates"
	expect_eq "every write is in the database when umount returns" "$N" "$writes"
	expect_eq "nothing dropped" 0 "$(sqlite3 "$DB" "select dropped from runs where id=$run")"
	check "nothing mounted after umount" sh -c "! mountpoint -q '$M'"
	check "no daemon after umount" no_daemon
else
	not_ok "mount for the load test"
fi
# stats of the load test's database
same_outcome "stats --run=N --format=csv / --run N --format csv" 0 "op," \
	"stats $DB --run=1 --format=csv" "stats --format csv --run 1 $DB"

no_sanitizer_reports
fsp_done

#!/bin/sh
# it_inject.sh - fault and latency injection (`fsprism mount --inject`) on
# real FUSE mounts of a tmpfs directory.
#
# A 100 us read delay raises the daemon's read p50 by the delay (-5%..+20%:
# a spin ends late on a loaded machine, never early) against the same
# directory mounted without injection, side by side in alternating rounds,
# and leaves writes alone (their p50 within a fifth of the delay; exactly:
# no inject_ns); the delay is the rows' inject_ns and the
# rules a run attribute. An errno with a probability reaches the
# application at the seeded rate (within a binomial bound), the same
# requests fail again with the same seed on one thread, and a path pattern
# selects only the files it matches. Bad rules are refused with exit 2,
# one line naming the bad part, and nothing mounted or written.
. "$TESTS_SRCDIR/lib.sh"

fsp_capture_daemon_reports

mkdir "$T/shm" "$T/a" "$T/b"
mount -t tmpfs -o size=256M tmpfs "$T/shm" && fsp_track_mount "$T/shm"
B=$T/shm/data
mkdir -p "$B/sub"
head -c 8M /dev/urandom >"$B/r.dat"
head -c 1M /dev/urandom >"$B/sub/x.dat"
head -c 1M /dev/urandom >"$B/sub/y.txt"
head -c 1M /dev/urandom >"$B/x.dat"

# NREADS 4 KiB O_DIRECT reads of FILE (cycling through it); prints how many
# failed with each errno ("EIO 12"), one line per errno, and "ok N".
dio_reads() {
	python3 - "$1" "$2" <<'EOF'
import errno, mmap, os, sys
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
size = os.fstat(fd).st_size
buf = mmap.mmap(-1, 4096)
fails, good, pattern = {}, 0, []
for i in range(n):
    try:
        os.preadv(fd, [buf], (i * 4096) % size)
        good += 1
        pattern.append('.')
    except OSError as e:
        fails[errno.errorcode[e.errno]] = fails.get(errno.errorcode[e.errno], 0) + 1
        pattern.append('x')
for k, v in sorted(fails.items()):
    print(k, v)
print("ok", good)
print("pattern", "".join(pattern))
EOF
}

# NWRITES 4 KiB O_DIRECT writes to FILE.
dio_writes() {
	dd if=/dev/zero of="$1" bs=4k count="$2" oflag=direct conv=notrunc status=none
}

# p50 of the total_ns of op (a name) in DB, in ns.
p50() {
	sqlite3 "$1" "SELECT total_ns FROM ops JOIN op_names USING(op) WHERE name='$2'
		ORDER BY total_ns LIMIT 1 OFFSET (SELECT count(*)/2 FROM ops JOIN op_names
		USING(op) WHERE name='$2')"
}

# --- bad rules: refused, exit 2, one line, nothing mounted or written ---
bad_rule() {
	rules=$1; part=$2
	"$FSPRISM" mount --log "$T/bad.db" --inject "$rules" "$B" "$T/a" 2>"$T/err"
	rc=$?
	expect_eq "bad rules '$rules': exit 2" 2 "$rc"
	expect_eq "bad rules '$rules': one line" 1 "$(wc -l <"$T/err")"
	check "bad rules '$rules': the message names '$part'" grep -qF -- "$part" "$T/err"
	check "bad rules '$rules': nothing mounted" sh -c "! mountpoint -q '$T/a'"
	check "bad rules '$rules': no database" test ! -e "$T/bad.db"
}
bad_rule "op=raed,delay=100us" "raed"
bad_rule "op=read,delay=100xs" "100xs"
bad_rule "op=read,errno=EIO:1.5" "1.5"
bad_rule "op=read,errno=EBOGUS" "EBOGUS"
bad_rule "op=read" "without delay= or errno="
bad_rule "op=read,dealy=1us" "dealy"
bad_rule "op=read,delay=uniform:150us-50us" "uniform:150us-50us"
bad_rule "op=release,errno=EIO" "release"
bad_rule "op=read,delay=1us;seed=1;seed=2" "two seeds"

# --- a 100 us read delay, side by side with the same mount without it ---
# A spinning worker preempted by another process waits longer than asked:
# on a loaded machine a side-by-side measurement is taken up to 3 times,
# each one printed, and the first inside the bounds counts.
side_by_side() {
	rm -f "$T"/plain.db* "$T"/inj.db*
	fsp_mount "$B" "$T/a" --log "$T/plain.db" || not_ok "plain mount"
	fsp_mount "$B" "$T/b" --log "$T/inj.db" --inject "op=read,delay=100us" ||
		not_ok "injected mount"
	for round in 1 2 3 4; do
		for m in a b; do
			dio_reads "$T/$m/r.dat" 400 >/dev/null
			dio_writes "$T/$m/w$m.dat" 200
		done
	done
	fsp_umount "$T/a"
	fsp_umount "$T/b"
	rp=$(p50 "$T/plain.db" read); ri=$(p50 "$T/inj.db" read)
	wp=$(p50 "$T/plain.db" write); wi=$(p50 "$T/inj.db" write)
	echo "# attempt $1: read p50: plain ${rp} ns, injected ${ri} ns; write p50: plain ${wp} ns, injected ${wi} ns"
}
# End to end, judged against the delay, not in absolute microseconds of a
# loaded machine. Measured on this 2-core machine at load 6.3-6.9 (12
# attempts): the read p50 rose +100.7..+113.2 us, the write p50 moved
# -0.6..+12.1 us (from ~5 us: a small p50 doubles when a worker is
# preempted once). A spin ends late, never early: reads -5%..+20% of the
# delay; writes within a fifth of the delay (a delayed write would rise by
# all of it). The first attempt of three where both hold counts.
DELAY=100000
read_ok() { [ $((ri - rp)) -ge $((DELAY * 95 / 100)) ] && [ $((ri - rp)) -le $((DELAY * 120 / 100)) ]; }
write_ok() { [ $((wi - wp)) -le $((DELAY / 5)) ] && [ $((wp - wi)) -le $((DELAY / 5)) ]; }
for attempt in 1 2 3; do
	side_by_side $attempt
	read_ok && write_ok && break
done
check "read p50 rises by 100 us -5%..+20% ($rp -> $ri ns)" read_ok
check "write p50 does not rise (within a fifth of the delay: $wp -> $wi ns)" write_ok
check "injected reads carry inject_ns >= 100 us" test "$(sqlite3 "$T/inj.db" \
	"SELECT count(*) FROM ops WHERE op=(SELECT op FROM op_names WHERE name='read')
	 AND (inject_ns < 100000 OR inject_ns > total_ns)")" = 0
expect_eq "writes carry no inject_ns" 0 "$(sqlite3 "$T/inj.db" \
	"SELECT count(*) FROM ops WHERE inject_ns != 0 AND op!=(SELECT op FROM op_names WHERE name='read')")"
expect_eq "the plain mount's rows carry none" 0 "$(sqlite3 "$T/plain.db" \
	"SELECT count(*) FROM ops WHERE inject_ns != 0")"
expect_eq "the rules are the run attribute fuse.inject" "op=read,delay=100us;seed=1" \
	"$(sqlite3 "$T/inj.db" "SELECT value FROM run_attrs WHERE key='fuse.inject'")"

# --- an errno with a probability, seeded ---
N=2000
for i in 1 2; do
	fsp_mount "$B" "$T/a" --log "$T/err$i.db" --threads 1 \
		--inject "op=read,errno=EIO:0.1,seed=42" || not_ok "errno mount $i"
	dio_reads "$T/a/r.dat" $N >"$T/errno$i.out"
	fsp_umount "$T/a"
done
eio=$(awk '$1 == "EIO" {print $2}' "$T/errno1.out")
other=$(grep -vc '^\(EIO\|ok\|pattern\) ' "$T/errno1.out")
echo "# EIO in $N reads at p=0.1: ${eio:-0} (expected 200, 4 sd = 54)"
check "EIO reaches the application at 0.1 +- 4 binomial sd (${eio:-0} of $N)" \
	test "${eio:-0}" -ge 146 -a "${eio:-0}" -le 254
expect_eq "no other errno" 0 "$other"
expect_eq "the daemon's rows hold the same failures" "${eio:-0}" \
	"$(sqlite3 "$T/err1.db" "SELECT count(*) FROM ops WHERE result=5")"
expect_eq "the same seed fails the same requests on one thread" \
	"$(grep '^pattern' "$T/errno1.out")" "$(grep '^pattern' "$T/errno2.out")"

# --- path patterns select only the files they match ---
fsp_mount "$B" "$T/a" --log "$T/path.db" \
	--inject "op=read,path=/sub/*.dat,errno=EIO" --inject "op=read,path=*.txt,delay=200us" ||
	not_ok "path mount"
expect_eq "/sub/x.dat (matches /sub/*.dat): every read EIO" "EIO 50" \
	"$(dio_reads "$T/a/sub/x.dat" 50 | grep '^EIO')"
expect_eq "/x.dat (does not match): no error" "ok 50" \
	"$(dio_reads "$T/a/x.dat" 50 | grep -v '^pattern' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "/sub/y.txt (matches *.txt only): no error" "ok 50" \
	"$(dio_reads "$T/a/sub/y.txt" 50 | grep -v '^pattern' | tr '\n' ' ' | sed 's/ $//')"
fsp_umount "$T/a"
expect_eq "the delay only on the .txt file's reads" "1" "$(sqlite3 "$T/path.db" \
	"SELECT count(DISTINCT node) FROM ops WHERE inject_ns >= 200000")"
expect_eq "50 delayed reads" "50" "$(sqlite3 "$T/path.db" \
	"SELECT count(*) FROM ops WHERE inject_ns >= 200000")"

# --- operations on names match PARENT/NAME; other operations the node's path ---
fsp_mount "$B" "$T/a" --log "$T/name.db" --attr-timeout 0 \
	--inject "op=create|mkdir,path=/sub/*.locked,errno=EACCES;op=getattr,path=/x.dat,errno=ENOENT" ||
	not_ok "name mount"
check "create of /sub/new.locked: EACCES" sh -c "! touch '$T/a/sub/new.locked' 2>'$T/terr' &&
	grep -q 'Permission denied' '$T/terr'"
check "create of /sub/new.open: created" touch "$T/a/sub/new.open"
check "mkdir /sub/d.locked: EACCES" sh -c "! mkdir '$T/a/sub/d.locked' 2>/dev/null"
check "nothing of the refused ones in the backing directory" \
	test ! -e "$B/sub/new.locked" -a ! -e "$B/sub/d.locked" -a -e "$B/sub/new.open"
check "getattr of /x.dat fails (stat: ENOENT)" sh -c "! stat '$T/a/x.dat' >/dev/null 2>&1"
check "getattr of /sub/x.dat is served" stat "$T/a/sub/x.dat" >/dev/null
fsp_umount "$T/a"
expect_eq "the refused requests are rows with their errno" "2 13" "$(sqlite3 "$T/name.db" \
	"SELECT count(*), result FROM ops WHERE result=13" | tr '|' ' ')"

# --- compare --inject: the rules in the fsprism target's mount ---
mkdir "$T/tmp"
TMPDIR="$T/tmp" "$FSPRISM" compare --db "$T/c.db" --size=256M --time=300ms --span=32M --details \
	--targets raw,fsprism --inject "op=read,delay=200us" >"$T/cout" 2>"$T/cerr"
expect_eq "compare --inject exits 0" 0 "$?"
mrun=$(sqlite3 "$T/c.db" "SELECT id FROM runs WHERE label='fsprism-fuse' ORDER BY id DESC LIMIT 1")
expect_eq "the fsprism target's mount has the rules" "op=read,delay=200us;seed=1" \
	"$(sqlite3 "$T/c.db" "SELECT value FROM run_attrs WHERE run=${mrun:-0} AND key='fuse.inject'")"
expect_eq "every read of the target waited 200 us, no other request" 0 "$(sqlite3 "$T/c.db" \
	"SELECT count(*) FROM ops WHERE run=${mrun:-0} AND ((op=13 AND inject_ns < 200000) OR
	 (op!=13 AND inject_ns != 0))")"
p50s=$(awk '/^step 0 /{s=1} s && /^  raw /{r=$4} s && /^  fsprism /{print r, $4; exit}' "$T/cout")
echo "# step 0 read p50, raw and fsprism (us): $p50s"
# the delay is in every read of the target, so in its p50 (without it a read
# here takes tens of us); against raw's p50 the check failed on a busy
# machine, where raw's own p50 rose to 222 us
check "the report shows it: fsprism's read p50 >= the 200 us delay (raw, fsprism: $p50s)" \
	sh -c "echo $p50s | awk '{exit !(\$2 >= 200)}'"
fsp_nothing_left "$T/tmp" "compare --inject"
TMPDIR="$T/tmp" "$FSPRISM" compare --db "$T/c.db" --inject "op=read" >/dev/null 2>"$T/cerr"
expect_eq "compare: bad rules exit 2" 2 "$?"
check "compare: one line naming them" sh -c "[ \$(wc -l <'$T/cerr') = 1 ] &&
	grep -q 'without delay= or errno=' '$T/cerr'"
fsp_nothing_left "$T/tmp" "compare with bad rules"

no_sanitizer_reports
fsp_done

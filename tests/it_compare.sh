#!/bin/sh
# it_compare.sh - `fsprism compare` on the embedded default (temporary image,
# loop device, mkfs, mount, fsprism mount): it finishes, prints the table for
# all three targets and the per-layer split, records the runs with their
# parents, and leaves nothing behind -- after success, after SIGINT at
# different moments, and after bad input. With --cow=always the emu target
# (an emulating fsprism mount with the device as its store) is added, and
# its device-level summary agrees with `fsprism stats` on the same database.
. "$TESTS_SRCDIR/lib.sh"

# compare's temporary directory lives in $T/tmp, so "nothing left behind"
# is: no loop device on a file there, no mount there, an empty directory.
mkdir "$T/tmp"
TMPDIR="$T/tmp"
export TMPDIR
TINY="--size=512M --time=300ms --span=64M"

nothing_left() { fsp_nothing_left "$T/tmp" "$1"; }

q() { sqlite3 "$T/c.db" "$1"; }

# ---- a whole compare at tiny scale ----
# shellcheck disable=SC2086
"$FSPRISM" compare --db "$T/c.db" $TINY >"$T/out" 2>"$T/err"
rc=$?
expect_eq "compare exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$T/err"
for t in raw ext4 fsprism; do
	n=$(grep -c "^  $t " "$T/out")
	expect_eq "table has a $t row for each of the 11 mixes" 11 "$n"
done
check "table has ratios to raw" grep -q "x raw" "$T/out"
check "no emu target without --cow/--journal" sh -c "! grep -q '^  emu ' '$T/out'"
check "table has the mean over steps" grep -q "^mean over steps" "$T/out"
for l in "engine (app)" "fuse total" "backing fs" "fsprism"; do
	check "per-layer split has '$l' for reads" grep -q "^  read  *$l" "$T/out"
	check "per-layer split has '$l' for writes" grep -q "^  write  *$l" "$T/out"
done
# the kernel and FUSE transport: measured per IO when the mount traced it,
# else the difference of means
if [ "$(q "SELECT value FROM run_attrs WHERE key='fuse.traced' AND run=(SELECT id FROM runs
	WHERE kind='mount' AND label='fsprism-fuse')")" = 1 ]; then
	check "the FUSE transport is measured in the layers per IO" grep -q "fuse_queue" "$T/out"
	check "... and not estimated as a difference of means" sh -c "! grep -q 'kernel+FUSE' '$T/out'"
else
	check "per-layer split has 'kernel+FUSE' for reads" grep -q "^  read  *kernel+FUSE" "$T/out"
	check "per-layer split has 'kernel+FUSE' for writes" grep -q "^  write  *kernel+FUSE" "$T/out"
fi

cmp=$(q "SELECT id FROM runs WHERE kind='compare'")
expect_eq "one compare run" 1 "$(echo "$cmp" | wc -w)"
expect_eq "three child runs, labelled" "fs fsprism raw" \
	"$(q "SELECT label FROM runs WHERE kind='run' AND parent=$cmp ORDER BY label" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "the fsprism mount run belongs to the compare" "mount|fsprism-fuse" \
	"$(q "SELECT kind, label FROM runs WHERE kind='mount' AND parent=$cmp")"
expect_eq "every child run has 11 steps" "11 11 11" \
	"$(q "SELECT count(*) FROM steps JOIN runs ON runs.id=steps.run WHERE runs.parent=$cmp AND kind='run' GROUP BY run" | tr '\n' ' ' | sed 's/ $//')"
fuse_reads=$(q "SELECT count(*) FROM ops o JOIN runs r ON r.id=o.run WHERE r.parent=$cmp AND r.kind='mount' AND o.op=(SELECT op FROM op_names WHERE name='read')")
if [ "${fuse_reads:-0}" -gt 0 ]; then
	ok "the FUSE log has read ops ($fuse_reads)"
else
	not_ok "the FUSE log of the fsprism target has no read ops"
fi
expect_eq "compare run ended" 1 "$(q "SELECT ended_ns IS NOT NULL FROM runs WHERE id=$cmp")"
nothing_left "after a complete compare"

# ---- --cow=always: the emu target is appended ----
# shellcheck disable=SC2086
"$FSPRISM" compare --db "$T/e.db" $TINY --cow=always >"$T/eout" 2>"$T/eerr"
rc=$?
expect_eq "compare --cow=always exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$T/eerr"
for t in raw ext4 fsprism emu; do
	n=$(grep -c "^  $t " "$T/eout")
	expect_eq "--cow=always: a $t row for each of the 11 mixes" 11 "$n"
done
check "--cow=always: the emu mount's modes are named" \
	grep -q "^emu: fsprism mount --cow=always --journal=off" "$T/eout"
check "--cow=always: the mean line has emu" grep -q "^mean over steps.* emu [0-9.]* (x" "$T/eout"
check "--cow=always: per-layer split of the emu target" grep -q "^emu target, per layer" "$T/eout"
for l in "store IO" "emulation"; do
	check "emu split has '$l' for writes" \
		sh -c "sed -n '/^emu target, per layer/,\$p' '$T/eout' | grep -q '^  write  *$l'"
done
e=$(sqlite3 "$T/e.db" "SELECT id FROM runs WHERE kind='compare'")
emount=$(sqlite3 "$T/e.db" "SELECT id FROM runs WHERE kind='mount' AND parent=$e AND label='emu-fuse'")
expect_eq "the emu mount run belongs to the compare" 1 "$(echo "$emount" | wc -w)"
expect_eq "the emu child run has 11 steps" 11 \
	"$(sqlite3 "$T/e.db" "SELECT count(*) FROM steps JOIN runs ON runs.id=steps.run WHERE runs.parent=$e AND runs.label='emu'")"
expect_eq "the emu mount used cow=always on compare's loop device" \
	"always|$(sqlite3 "$T/e.db" "SELECT value FROM run_attrs WHERE run=$e AND key='device'")" \
	"$(sqlite3 "$T/e.db" "SELECT (SELECT value FROM run_attrs WHERE run=$emount AND key='emu.cow') || '|' || (SELECT value FROM run_attrs WHERE run=$emount AND key='emu.store')")"

# the device summary against `fsprism stats` of the same mount run
sed -n '/^emu target, device level/,$p' "$T/eout" >"$T/edev"
"$FSPRISM" stats "$T/e.db" --run "${emount:-0}" | sed -n '/^Emulation/,$p' >"$T/estats"
check "--cow=always: the emu device summary is printed" test -s "$T/edev"
check "fsprism stats has an Emulation section for the emu mount" test -s "$T/estats"
for k in data journal metadata checkpoint total; do
	mine=$(sed -n "s/.*write amplification:.* $k \([0-9.-]*\).*/\1/p" "$T/edev")
	theirs=$(awk -v k="$k" '$1 == k { print $4 }' "$T/estats")
	if [ -n "$mine" ] && [ "$mine" = "$theirs" ]; then
		ok "write amplification $k: $mine, as fsprism stats"
	else
		not_ok "write amplification $k: compare '$mine', stats '$theirs'"
	fi
done
total=$(sed -n "s/.*write amplification:.* total \([0-9.]*\).*/\1/p" "$T/edev")
check "--cow=always: total write amplification $total >= 1" \
	awk -v x="${total:-0}" 'BEGIN { exit !(x >= 1) }'
for l in "flushes " "device IOs " "files " "FUA writes "; do
	mine=$(grep "^  $l" "$T/edev")
	theirs=$(grep "^  $l" "$T/estats")
	if [ -n "$mine" ] && [ "$mine" = "$theirs" ]; then
		ok "'$mine' as fsprism stats"
	elif [ "$l" = "FUA writes " ] && [ -z "$mine$theirs" ]; then
		ok "no FUA count in either (the mount did not record dev.fua_writes)"
	else
		not_ok "compare '$mine', stats '$theirs'"
	fi
done
nothing_left "after compare --cow=always"

# ---- Ctrl-C: early (setup / raw run), and with the fsprism mount up ----
interrupt_after() {
	idesc=$1 wait_for=$2; shift 2
	"$FSPRISM" compare --db "$T/i.db" --size=512M --time=2s --span=64M "$@" \
		>"$T/iout" 2>"$T/ierr" &
	pid=$!
	i=0
	case $wait_for in
	fuse)	# until the fsprism mount is up (at most 60 s)
		while ! grep -F "$T/tmp" /proc/mounts | grep -q fuse &&
		      [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do
			sleep 0.1; i=$((i + 1))
		done ;;
	*)	sleep "$wait_for" ;;
	esac
	kill -INT $pid
	wait $pid
	rc=$?
	if [ "$rc" -ne 0 ]; then ok "$idesc: exit status $rc"; else not_ok "$idesc: exit status 0"; fi
	check "$idesc: says it was interrupted" grep -q "interrupted" "$T/ierr"
	nothing_left "$idesc"
}
interrupt_after "SIGINT after 2 s" 2
# only the fsprism target, so that its mount is up within seconds
interrupt_after "SIGINT with the fsprism mount up" fuse --targets fsprism
# the emu target: its mount holds the loop device as its store
interrupt_after "SIGINT with the emu mount up" fuse --targets emu --cow=always
# SIGTERM too (what a timeout or systemd sends)
"$FSPRISM" compare --db "$T/t.db" --size=512M --time=2s --span=64M >/dev/null 2>"$T/ierr" &
fsp_term_after 3 $!
expect_eq "SIGTERM: exit status 143 (128 + SIGTERM)" 143 "$rc"
# the running benchmark stops within a second; then compare tears down what it set up
check "SIGTERM: stopped, stored and torn down within 5 s (took $ms ms)" [ "$ms" -lt 5000 ]
expect_eq "SIGTERM: the compare run is marked interrupted" 1 \
	"$(sqlite3 "$T/t.db" "SELECT value FROM run_attrs a JOIN runs r ON r.id=a.run WHERE r.kind='compare' AND a.key='interrupted'")"
nothing_left "SIGTERM"

# ---- bad input: one line, non-zero, nothing set up ----
bad() {
	desc=$1 want=$2; shift 2
	"$FSPRISM" compare --db "$T/b.db" "$@" >"$T/bout" 2>"$T/berr"
	rc=$?
	if [ "$rc" -ne 0 ] && [ "$(wc -l < "$T/berr")" -eq 1 ] &&
	   grep -q "^fsprism compare: .*$want" "$T/berr"; then
		ok "$desc: $(cat "$T/berr")"
	else
		not_ok "$desc: status $rc, message: $(cat "$T/berr")"
	fi
	nothing_left "$desc"
}
bad "missing device" "/nonexistent" --device /nonexistent
bad "unsupported fs" "zfs" --fs zfs
bad "unknown profile" "nosuch" --profile nosuch
bad "unknown parameter" "--bogus" --bogus=1
bad "impossible parameter" "qd" --qd=0
bad "unknown target" "disk" --targets raw,disk
bad "too small image" "--size" --size=1M
bad "bad --cow" "--cow" --cow=sometimes
bad "bad --journal" "--journal" --journal=bogus
bad "bad --alloc" "--alloc" --alloc=best-fit
bad "--cow without the emu target in --targets" "emu" --targets raw,fs --cow=always

# a real device that holds data or is in use is refused before anything runs
D=$(fsp_loop_new 128M)
fsp_track_loop "$D"
mkfs.ext4 -q "$D"
bad "device with ext4" "$D carries an ext4" --device "$D"
mkdir "$T/m"
mount "$D" "$T/m" && fsp_track_mount "$T/m"
bad "mounted device, --destroy-data" "$D is mounted" --device "$D" --destroy-data
umount "$T/m"

# ---- --device: the ext4 on it is overwritten with --destroy-data ----
"$FSPRISM" compare --db "$T/d.db" --device "$D" --destroy-data --targets raw,fs \
	--time=200ms --span=32M >"$T/dout" 2>"$T/derr"
rc=$?
expect_eq "compare --device --destroy-data exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$T/derr"
expect_eq "--device: raw and ext4 rows for 11 mixes" "11 11" \
	"$(grep -c "^  raw " "$T/dout") $(grep -c "^  ext4 " "$T/dout")"
check "--device: nothing of compare mounted" sh -c "! grep -q '$D' /proc/mounts"
nothing_left "compare --device"

# ---- --device with the emu target: the device becomes an fsprism store ----
"$FSPRISM" compare --db "$T/d.db" --device "$D" --destroy-data --targets emu \
	--journal=ordered --time=200ms --span=32M >"$T/dout" 2>"$T/derr"
rc=$?
expect_eq "compare --device --targets emu exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$T/derr"
expect_eq "--device: emu rows for 11 mixes" 11 "$(grep -c "^  emu " "$T/dout")"
check "--device: the emu store is the device" grep -q "^  store $D  cow off  journal ordered" "$T/dout"
check "--device: nothing of compare mounted" sh -c "! grep -q '$D' /proc/mounts"
nothing_left "compare --device --targets emu"
# an fsprism store is data too: not overwritten without --destroy-data
bad "device holding an fsprism store" "$D holds an fsprism store" --device "$D" --targets raw

fsp_done

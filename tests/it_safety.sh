#!/bin/sh
# it_safety.sh - `fsprism run` refuses to write block devices that hold data
# or are in use (src/sys/target.c), on real loop devices:
#   a mounted partition (also with --destroy-data), an ext4 signature
#   (accepted with --destroy-data), a mounted device, swap, a loop device
#   stacked on it, an exclusive opener, a partition table, the second device
#   of a mounted two-device btrfs, an fsprism store (on the device or in a
#   partition; compare and mount --store --format refuse it with the same
#   message); a blank device is accepted. A refusal must leave the device byte-for-byte unchanged.
. "$TESTS_SRCDIR/lib.sh"

# partitions added by hand (partx) are removed before the loop devices go
fsp_parts=""
fsp_swaps=""
safety_cleanup() {
	for s in $fsp_swaps; do swapoff "$s" 2>/dev/null; done
	for d in $fsp_parts; do partx -d "$d" 2>/dev/null; done
	fsp_cleanup
}
trap safety_cleanup EXIT

# a tiny sequential write job: quick when it is allowed to run
JOB="burst-seqwrite --span=8M --bytes=2M --burst=1M --time=200ms --quiet"

# new_loop VAR: a fresh 64 MiB loop device in $VAR, tracked for cleanup
# (tracked here, not in a $(...) subshell, whose variables are lost).
new_loop() {
	d=$(fsp_loop_new 64M) || { echo "cannot make a loop device" >&2; exit 1; }
	fsp_track_loop "$d"
	eval "$1=\$d"
}

# refused DESC DEV EXPECTED_TEXT [run options]: run fails, message names
# EXPECTED_TEXT, device unchanged.
refused() {
	desc=$1 dev=$2 want=$3; shift 3
	sync
	runs_before=$(runs_stored)
	before=$(md5sum < "$dev")
	# shellcheck disable=SC2086
	"$FSPRISM" run $JOB "$dev" --db "$T/s.db" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	after=$(md5sum < "$dev")
	runs_after=$(runs_stored)
	msg=$(head -n 1 "$T/err")
	if [ "$rc" -eq 0 ]; then
		not_ok "$desc: was not refused"
	elif ! grep -qF -- "$want" "$T/err"; then
		not_ok "$desc: message does not name '$want': $msg"
	elif [ "$(wc -l < "$T/err")" -ne 1 ] || ! grep -q '^fsprism run: ' "$T/err"; then
		not_ok "$desc: not a one-line 'fsprism run:' message: $(cat "$T/err")"
	else
		ok "$desc ($msg)"
	fi
	# active swap is the kernel's to write at any time: no checksum there
	[ "${skip_sum:-0}" = 1 ] || expect_eq "$desc: device unchanged" "$before" "$after"
	expect_eq "$desc: no run stored" "$runs_before" "$runs_after"
}

runs_stored() {
	if [ -e "$T/s.db" ]; then sqlite3 "$T/s.db" "SELECT count(*) FROM runs"; else echo 0; fi
}

# no lazy initialisation: a mounted, idle ext4 must not write on its own
mkext4() { mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 "$1"; }

# format_refused WHAT DEV MESSAGE: mount --store DEV --format refuses with
# MESSAGE, mounts nothing and leaves DEV as it was (what run refuses too)
format_refused() {
	what=$1 dev=$2 want=$3
	before=$(md5sum < "$dev")
	fb=$T/format-back.${dev##*/} fm=$T/format-mnt.${dev##*/}
	mkdir -p "$fb" "$fm"
	fsp_track_mount "$fm"
	"$FSPRISM" mount --cow=always --store "$dev" --format "$fb" "$fm" >"$T/out" 2>"$T/err"
	rc=$?
	check "mount --store --format over $what: refused ($(head -n 1 "$T/err"))" \
		sh -c "[ $rc -ne 0 ] && grep -qF '$want' '$T/err' && ! mountpoint -q '$fm'"
	expect_eq "mount --format over $what: device unchanged" "$before" "$(md5sum < "$dev")"
}

accepted() {
	desc=$1 dev=$2; shift 2
	before=$(md5sum < "$dev")
	# shellcheck disable=SC2086
	if "$FSPRISM" run $JOB "$dev" --db "$T/s.db" "$@" >"$T/out" 2>"$T/err"; then
		ok "$desc"
	else
		not_ok "$desc: $(cat "$T/err")"
	fi
	after=$(md5sum < "$dev")
	if [ "$before" != "$after" ]; then
		ok "$desc: the job wrote the device"
	else
		not_ok "$desc: the device is unchanged after an accepted write job"
	fi
}

# A dos partition table with one Linux partition from sector 2048 to the end
# of a 64 MiB device (written by hand: no sfdisk/parted needed).
write_mbr() {
	printf '\000\000\000\000\203\000\000\000\000\010\000\000\000\370\001\000' |
		dd of="$1" bs=1 seek=446 conv=notrunc status=none
	printf '\125\252' | dd of="$1" bs=1 seek=510 conv=notrunc status=none
}

# (a) a device whose partition is mounted: refused, even with --destroy-data
img=$(mktemp "$T/part.XXXXXX")
truncate -s 64M "$img"
write_mbr "$img"
A=$(losetup --find --show --partscan "$img") || exit 1
fsp_track_loop "$A"
# kernels without the msdos parser (or slow udev) need the partition added
if [ ! -b "${A}p1" ]; then
	partx --add "$A" 2>/dev/null
	fsp_parts="$A $fsp_parts"
fi
i=0
while [ ! -b "${A}p1" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
if [ -b "${A}p1" ]; then
	mkext4 "${A}p1"
	mkdir "$T/m1"
	# read-only: a read-write ext4 may touch its own metadata while mounted,
	# which would blur the "device unchanged" check
	mount -o ro,noload "${A}p1" "$T/m1" && fsp_track_mount "$T/m1"
	refused "mounted partition" "$A" "mounted partition ${A}p1"
	refused "mounted partition, --destroy-data" "$A" "mounted partition ${A}p1" --destroy-data
	refused "the mounted partition itself" "${A}p1" "${A}p1 is mounted on $T/m1" --destroy-data
	umount "$T/m1"
	# unmounted: the partition table is still a signature
	refused "partition table" "$A" "dos partition table"
else
	not_ok "mounted partition: no ${A}p1 appeared (losetup -P, partx --add)"
fi

# (b) an ext4 signature, not mounted: refused, accepted with --destroy-data
new_loop B
mkext4 "$B"
refused "ext4 signature" "$B" "$B carries an ext4 file system signature"
accepted "ext4 signature, --destroy-data" "$B" --destroy-data

# (c) a mounted device: refused, also with --destroy-data
new_loop C
mkext4 "$C"
mkdir "$T/m3"
mount -o ro,noload "$C" "$T/m3" && fsp_track_mount "$T/m3"
refused "mounted device" "$C" "$C is mounted on $T/m3"
refused "mounted device, --destroy-data" "$C" "$C is mounted on $T/m3" --destroy-data
umount "$T/m3"

# (d) a blank device: accepted
new_loop D
accepted "blank device" "$D"

# (e) a loop device stacked on it (not a holder in sysfs, still in use)
new_loop E
E2=$(losetup --find --show "$E") && fsp_track_loop "$E2"
refused "loop device on top" "$E" "backing device of $E2" --destroy-data
losetup -d "$E2"

# (f) swap
new_loop F
mkswap -q "$F" >/dev/null
if swapon "$F" 2>/dev/null; then
	fsp_swaps="$F"
	skip_sum=1
	refused "swap" "$F" "$F is in use as swap" --destroy-data
	skip_sum=0
	swapoff "$F"
	fsp_swaps=""
else
	echo "# swapon not permitted here: swap case skipped"
fi

# (g) open exclusively by another program (what mkfs or a mount does)
new_loop G
if command -v python3 >/dev/null; then
	python3 -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)
open(sys.argv[2], "w").close()
time.sleep(30)' "$G" "$T/held" &
holder=$!
i=0
while [ ! -e "$T/held" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	refused "exclusive opener" "$G" "$G is busy" --destroy-data
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
fi

# (h) the second device of a two-device btrfs mounted from the first: the
# mount table names only the first, and sysfs has no holder link
new_loop H1
new_loop H2
# mixed block groups: 64 MiB devices are too small for separate ones
if mkfs.btrfs -q -f --mixed -d single -m single "$H1" "$H2" >/dev/null 2>"$T/mkfs.err"; then
	mkdir "$T/m8"
	if mount -o ro,device="$H2" "$H1" "$T/m8"; then
		fsp_track_mount "$T/m8"
		refused "device of a mounted btrfs" "$H2" "$H2 is a device of the btrfs"
		refused "device of a mounted btrfs, --destroy-data" "$H2" \
			"mounted on $T/m8" --destroy-data
		umount "$T/m8"
	else
		not_ok "two-device btrfs: mount failed"
	fi
else
	not_ok "two-device btrfs: mkfs.btrfs failed: $(cat "$T/mkfs.err")"
fi

# mkstore DEV: a real fsprism store on DEV (a --format mount, unmounted again)
mkstore() {
	mkdir -p "$T/sb" "$T/sm"
	fsp_track_mount "$T/sm"
	"$FSPRISM" mount --cow=always --store "$1" --format --destroy-data \
		--log "$T/store.db" "$T/sb" "$T/sm" >"$T/mkstore.err" 2>&1 &&
		"$FSPRISM" umount "$T/sm" >>"$T/mkstore.err" 2>&1
}

# (i) an fsprism store on the device: data like any signature
new_loop I
if mkstore "$I"; then
	refused "fsprism store" "$I" "$I holds an fsprism store (use --destroy-data to overwrite it)"
	# compare and mount say the same, from the same check
	"$FSPRISM" compare --device "$I" --targets raw --db "$T/c.db" >"$T/out" 2>"$T/err"
	check "compare over the store: refused with run's message ($(head -n 1 "$T/err"))" \
		grep -qF "$I holds an fsprism store (use --destroy-data to overwrite it)" "$T/err"
	format_refused "the store" "$I" "$I holds an fsprism store (use --destroy-data to overwrite it)"
	accepted "fsprism store, --destroy-data" "$I" --destroy-data
else
	not_ok "fsprism store: could not make one: $(cat "$T/mkstore.err")"
fi

# (j) an fsprism store inside a partition: found through the whole device
if [ -b "${A}p1" ] && mkstore "${A}p1"; then
	refused "fsprism store in a partition" "$A" \
		"$A has a partition ${A}p1 that holds an fsprism store"
	refused "fsprism store, the partition itself" "${A}p1" "${A}p1 holds an fsprism store"
else
	not_ok "fsprism store in a partition: ${A}p1 missing or no store: $(cat "$T/mkstore.err" 2>/dev/null)"
fi

# (k) mount --store --format over an ext4 signature: refused like run
new_loop K
mkext4 "$K"
format_refused ext4 "$K" "$K carries an ext4 file system signature"

# not a block device at all
refused "not a block device" /dev/null "/dev/null" --destroy-data

fsp_done

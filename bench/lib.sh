# bench/lib.sh - the set-up the FUSE-mount benchmarks share (sourced, not run).
#
# bench_ram_ext4 NAME CLEANUP: a temp dir $T (/tmp/fsprism-NAME.*), ext4 on a
# loop device ($LOOP) over a 1400 MiB file in /dev/shm ($IMG), so that no
# disk's stalls enter the numbers, mounted at $T/ext4, with $T/ext4/data/f a
# 1 GiB file of random data, fully written (not sparse). CLEANUP is the
# script's own clean-up, run on every exit; it undoes the script's mounts and
# then calls bench_ram_ext4_cleanup.
bench_ram_ext4() {
	T=$(mktemp -d "/tmp/fsprism-$1.XXXXXX")
	IMG=$(mktemp "/dev/shm/fsprism-$1.XXXXXX")
	LOOP=
	# shellcheck disable=SC2064 # the clean-up's name, now
	trap "$2" EXIT
	trap 'exit 130' INT TERM
	truncate -s 1400M "$IMG"
	LOOP=$(losetup --find --show "$IMG")
	mkfs.ext4 -q "$LOOP"
	mkdir "$T/ext4"
	mount "$LOOP" "$T/ext4"
	mkdir "$T/ext4/data"
	dd if=/dev/urandom of="$T/ext4/data/f" bs=1M count=1024 status=none conv=fsync
}

# Unmounts the ext4, detaches the loop device, removes the image and $T.
bench_ram_ext4_cleanup() {
	mountpoint -q "$T/ext4" && umount "$T/ext4"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	rm -f "$IMG"
	rm -rf "$T"
}

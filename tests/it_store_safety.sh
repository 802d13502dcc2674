#!/bin/sh
# it_store_safety.sh - the emulated store never loses data to a copied or a
# wrong backing directory, nor to a damaged header, through real mounts with
# the store on a loop device:
#  - `cp -a` of the backing directory: the copy mounts with every file's
#    data, and the original directory still has it afterwards (the objects
#    follow the id in each file's user.fsprism.obj, hidden from the mount);
#    a file copied through the mount has an object of its own, and one
#    copied in the backing directory (with its id) gets a clone of the data;
#  - an unrelated (empty) backing directory is refused and the store left
#    alone; --adopt-store mounts it, keeping the objects as orphans, which
#    the right directory gets back;
#  - the first MiB of the store zeroed: recovered from the backup header
#    (data intact), never formatted; after a crash (backup "in use") it is
#    refused and the device left as it was;
#  - a device carrying ext4, or a store file of zeros, without --format:
#    refused and unchanged, even with --destroy-data.
. "$TESTS_SRCDIR/lib.sh"

fsp_capture_daemon_reports
command -v getfattr >/dev/null || { echo "SKIP: getfattr (attr) not installed" >&2; exit 77; }

DB=$T/s.db
M=$T/mnt
mkdir "$M" "$T/cwd"
fsp_track_mount "$M"
dev=$(fsp_loop_new 128M) || { not_ok "losetup"; fsp_done; exit 1; }
fsp_track_loop "$dev"

# smount BACKING OPTIONS...: mount on $M with the store on $dev; stderr in
# $T/err (shown), exit status in $rc.
smount() {
	b=$1; shift
	(cd "$T/cwd" && "$FSPRISM" mount --log "$DB" --cow=always --journal=ordered \
		--store "$dev" "$@" "$b" "$M") 2>"$T/err"
	rc=$?
	[ -s "$T/err" ] && sed 's/^/# mount: /' "$T/err"
	return $rc
}
last_attr() { sqlite3 "$DB" "select value from run_attrs where key='$1' and run=(select max(id) from runs)"; }
# the content every file should have: name, then a size that differs per file
content() { i=0; while [ $i -lt $2 ]; do echo "$1 line $i"; i=$((i + 1)); done; }
FILES="a b c d e"
n=1
for f in $FILES; do n=$((n * 3)); content "$f" $n >"$T/want.$f"; done

# same_files DIR WHAT: every file of $FILES under DIR reads as written
same_files() {
	bad=""
	for f in $FILES; do cmp -s "$T/want.$f" "$1/$f" || bad="$bad $f"; done
	expect_eq "$2" "" "$bad"
}

B=$T/back
mkdir "$B"
if smount "$B" --format --destroy-data; then
	for f in $FILES; do cp "$T/want.$f" "$M/$f"; done
	mkdir "$M/sub"
	cp "$T/want.c" "$M/sub/c"
	cp "$M/a" "$M/a.copy"           # a copy through the mount
	echo changed >"$M/a.copy"
	same_files "$M" "files written through the mount"
	expect_eq "a copy through the mount has its own data" changed "$(cat "$M/a.copy")"
	check "the object id is not visible through the mount" \
		sh -c "! getfattr -d -m - '$M/a' 2>/dev/null | grep -q fsprism"
	check "nor settable through it" sh -c "! setfattr -n user.fsprism.obj -v x '$M/b' 2>/dev/null"
	fsp_umount "$M"
	check "the backing file carries its object id" \
		sh -c "getfattr --only-values -n user.fsprism.obj '$B/a' 2>/dev/null | grep -Eq '^[0-9a-f]{16}:[0-9a-f]{16}\$'"
else
	not_ok "format and first mount ($(cat "$T/err"))"
fi

# ---- a copy of the backing directory (cp -a: new inode numbers) ----
cp -a "$B" "$T/back2"
if smount "$T/back2"; then
	same_files "$M" "the cp -a copy of the backing directory mounts with every file's data"
	expect_eq "the copy: sub/c too" "" "$(cmp "$T/want.c" "$M/sub/c" 2>&1)"
	expect_eq "no message about the copy" "" "$(cat "$T/err")"
	expect_eq "the copy: no object orphaned" 0 "$(last_attr emu.orphans)"
	expect_eq "the copy: objects rebound to the new inode numbers" 7 "$(last_attr emu.objects_rebound)"
	fsp_umount "$M"
else
	not_ok "mount the copy ($(cat "$T/err"))"
fi
if smount "$B"; then
	same_files "$M" "the original directory afterwards: every file's data"
	expect_eq "the original: nothing removed" 0 "$(last_attr emu.orphans_removed)"
	fsp_umount "$M"
else
	not_ok "mount the original again ($(cat "$T/err"))"
fi

# ---- an unrelated backing directory ----
mkdir "$T/empty"
sum0=$(md5sum <"$dev")
smount "$T/empty"
check "an unrelated empty backing directory is refused (exit $rc)" \
	sh -c "[ $rc -eq 1 ] && ! mountpoint -q '$M'"
check "the message names the likely cause and --adopt-store" \
	sh -c "grep -q 'match no file of $T/empty' '$T/err' && grep -q 'a copy, a restore or another one' '$T/err' && grep -q -- '--adopt-store' '$T/err'"
mountpoint -q "$M" && fsp_umount "$M"
# the refused open closed the store cleanly: only its headers may differ
if smount "$B"; then
	same_files "$M" "after the refusal the store is unharmed"
	fsp_umount "$M"
else
	not_ok "mount after the refusal ($(cat "$T/err"))"
fi
if smount "$T/empty" --adopt-store; then
	expect_eq "--adopt-store: the empty directory mounts, empty" "" "$(ls "$M")"
	check "it says the objects are kept as orphans" \
		sh -c "grep -q '7 objects match no file of $T/empty and are kept as orphans' '$T/err'"
	expect_eq "emu.orphans" 7 "$(last_attr emu.orphans)"
	expect_eq "emu.orphans_new" 7 "$(last_attr emu.orphans_new)"
	echo new >"$M/new"
	fsp_umount "$M"
else
	not_ok "--adopt-store ($(cat "$T/err"))"
fi
if smount "$B"; then
	same_files "$M" "the orphans found their files again in the original directory"
	check "it says so" sh -c "grep -q '7 orphaned objects found their files again' '$T/err'"
	expect_eq "emu.orphans_found" 7 "$(last_attr emu.orphans_found)"
	expect_eq "the empty directory's new file is now the orphan" 1 "$(last_attr emu.orphans)"
	fsp_umount "$M"
else
	not_ok "mount the original after --adopt-store ($(cat "$T/err"))"
fi
if smount "$B" --drop-orphans; then
	expect_eq "--drop-orphans deletes the orphan" 1 "$(last_attr emu.orphans_removed)"
	same_files "$M" "and nothing else"
	fsp_umount "$M"
else
	not_ok "--drop-orphans ($(cat "$T/err"))"
fi

# ---- a copy of a file made in the backing directory (its id too) ----
cp -a "$B/b" "$B/b.copy"
if smount "$B"; then
	expect_eq "a copy made in the backing directory gets the data" "" "$(cmp "$T/want.b" "$M/b.copy" 2>&1)"
	check "as a clone, and the mount says so" \
		sh -c "grep -q '1 file of $B named the object of another file.*1 got a copy-on-write clone' '$T/err'"
	echo mine >"$M/b.copy"
	same_files "$M" "writing the copy leaves the original alone"
	fsp_umount "$M"
else
	not_ok "mount with a copy in the backing directory ($(cat "$T/err"))"
fi
if smount "$B"; then
	expect_eq "the copy keeps its own data" mine "$(cat "$M/b.copy")"
	expect_eq "with an id of its own: nothing said" "" "$(cat "$T/err")"
	fsp_umount "$M"
else
	not_ok "mount after the copy ($(cat "$T/err"))"
fi

# ---- a damaged header ----
dd if=/dev/zero of="$dev" bs=1M count=1 conv=notrunc,fsync status=none
# still the user's data for every command that writes a device
sum0=$(md5sum <"$dev")
"$FSPRISM" run burst-seqwrite "$dev" --db "$T/run.db" --quiet >/dev/null 2>"$T/err"
rc=$?
check "run over a store with a zeroed header: refused (exit $rc)" \
	sh -c "[ $rc -ne 0 ] && grep -q 'holds an fsprism store' '$T/err'"
expect_eq "run left that device unchanged" "$sum0" "$(md5sum <"$dev")"
if smount "$B"; then
	check "the zeroed header: recovered from the backup, and said so" \
		sh -c "grep -q 'recovered from the backup header' '$T/err'"
	expect_eq "emu.formatted" 0 "$(last_attr emu.formatted)"
	expect_eq "emu.header_recovered" 1 "$(last_attr emu.header_recovered)"
	same_files "$M" "the recovered store: every file's data"
	fsp_umount "$M"
	if smount "$B"; then
		expect_eq "the next mount needs no recovery" "" "$(cat "$T/err")"
		same_files "$M" "and has the data"
		# a crash: the backup header stays "in use"
		kill -9 "$(fsp_daemon_pid "$M")" 2>/dev/null
		sleep 0.5
		fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
	else
		not_ok "mount after the recovery ($(cat "$T/err"))"
	fi
	dd if=/dev/zero of="$dev" bs=1M count=1 conv=notrunc,fsync status=none
	sum0=$(md5sum <"$dev")
	smount "$B"
	check "zeroed header after a crash: refused (exit $rc), never formatted" \
		sh -c "[ $rc -ne 0 ] && ! mountpoint -q '$M' && grep -q 'did not end cleanly' '$T/err'"
	mountpoint -q "$M" && fsp_umount "$M"
	expect_eq "the device is unchanged" "$sum0" "$(md5sum <"$dev")"
else
	not_ok "the zeroed header: mount ($(cat "$T/err"))"
fi

# ---- what is not a store, without --format ----
edev=$(fsp_loop_new 64M) && fsp_track_loop "$edev"
mkfs.ext4 -q -F "$edev"
sum0=$(md5sum <"$edev")
(cd "$T/cwd" && "$FSPRISM" mount --cow=always --store "$edev" --destroy-data "$B" "$M") 2>"$T/err"
rc=$?
check "an ext4 device without --format, even with --destroy-data: refused (exit $rc)" \
	sh -c "[ $rc -eq 1 ] && ! mountpoint -q '$M' && grep -q \"is not an fsprism store (found: ext4 signature); use --format to create one\" '$T/err'"
mountpoint -q "$M" && fsp_umount "$M"
expect_eq "the ext4 device is unchanged" "$sum0" "$(md5sum <"$edev")"
truncate -s 32M "$T/zeros.store"
(cd "$T/cwd" && "$FSPRISM" mount --cow=always --store "$T/zeros.store" --destroy-data "$B" "$M") 2>"$T/err"
rc=$?
check "a store file of zeros without --format: refused (exit $rc)" \
	sh -c "[ $rc -eq 1 ] && grep -q 'found: all zeros' '$T/err'"
mountpoint -q "$M" && fsp_umount "$M"
expect_eq "that file is still all zeros" 0 "$(tr -d '\0' <"$T/zeros.store" | wc -c)"

no_sanitizer_reports
fsp_done

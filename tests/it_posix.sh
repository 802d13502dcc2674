#!/bin/sh
# it_posix.sh - POSIX semantics through the mount equal the backing fs's.
#
# tests/posix_ops runs the same fixed sequence of operations (errno cases,
# renames, links, truncates, times, xattrs, SEEK_DATA/HOLE, fallocate,
# copy_file_range, flock/fcntl locks between processes, O_DIRECT, and
# several user ids with allow_other,default_permissions) on a fresh
# directory of an ext4 loop device, and on an fsprism mount of another fresh
# directory of the same file system. The two outputs must be identical.
. "$TESTS_SRCDIR/lib.sh"

fsp_capture_daemon_reports

POSIX_OPS=$TESTS_BUILDDIR/posix_ops
chmod 755 "$T"   # other user ids must reach the directories below

fsp_ext4_new 256M "$T/ext4"
mkdir -m 755 "$T/ext4/native" "$T/ext4/backing" "$T/mnt"
chmod 755 "$T/mnt"

"$POSIX_OPS" "$T/ext4/native" >"$T/native.out" 2>"$T/native.err"
check "posix_ops on the backing file system" test $? -eq 0
lines=$(wc -l <"$T/native.out")
check "posix_ops printed its sequence ($lines lines)" test "$lines" -gt 200

if fsp_mount "$T/ext4/backing" "$T/mnt" --log "$T/posix.db" -o allow_other,default_permissions; then
	ok "mount with allow_other,default_permissions"
	# A server that deadlocks (say, workers all waiting for locks) must fail
	# this test, not hang it: after 300 s the daemon is killed, which ends
	# the connection and every request still waiting.
	(
		trap 'kill $nap 2>/dev/null; exit 0' TERM
		sleep 300 & nap=$!
		wait $nap && pkill -9 -f "mount .*$T/mnt"
	) &
	watchdog=$!
	"$POSIX_OPS" "$T/mnt" >"$T/fsprism.out" 2>"$T/fsprism.err"
	rc=$?
	kill "$watchdog" 2>/dev/null
	wait "$watchdog"
	check "posix_ops through fsprism" test $rc -eq 0
	if diff -u "$T/native.out" "$T/fsprism.out" >"$T/diff"; then
		ok "results through fsprism equal the backing file system's ($lines operations)"
	else
		not_ok "results through fsprism differ from the backing file system's:"
		cat "$T/diff"
	fi
	fsp_umount "$T/mnt"
	check "umount" test $? -eq 0
	# the mount's side effects landed on the backing dir with the same owners
	(cd "$T/ext4/native" && find . -printf '%p %y %m %u %g\n' | sort) >"$T/native.tree"
	(cd "$T/ext4/backing" && find . -printf '%p %y %m %u %g\n' | sort) >"$T/backing.tree"
	if diff -u "$T/native.tree" "$T/backing.tree" >"$T/tree.diff"; then
		ok "backing tree (names, types, modes, owners) equals the native one"
	else
		not_ok "backing tree differs:"; cat "$T/tree.diff"
	fi
	n=$(sqlite3 "$T/posix.db" "select count(*) from ops where op in (select op from op_names where name in ('setlk','getlk','flock'))")
	check "lock requests reached fsprism ($n rows)" test "$n" -gt 0
else
	not_ok "mount with allow_other,default_permissions"
fi
no_sanitizer_reports
fsp_done

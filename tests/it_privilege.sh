#!/bin/sh
# it_privilege.sh - a user without the needed privilege is told what is
# needed (root, or which access to which file, owned by whom, with what
# mode), not only "Permission denied"; the exit status is 1 and nothing is
# made. Needs root to set up; the commands run as nobody.
. "${TESTS_SRCDIR:-$(dirname "$0")}/lib.sh"

command -v runuser >/dev/null || fsp_skip "runuser (util-linux) is missing"
chmod 755 "$T"
cp "$FSPRISM" "$T/fsprism" && chmod 755 "$T/fsprism"
as_nobody() { # as_nobody ARGS... : stderr and status of fsprism ARGS as nobody
	(cd "$T/nobody" && runuser -u nobody -- "$T/fsprism" "$@") >"$T/out" 2>"$T/err"
	echo $? >"$T/status"
}
mkdir -p "$T/nobody" && chmod 777 "$T/nobody"

img=$T/disk.img
truncate -s 64M "$img"
loop=$(losetup --find --show "$img")
fsp_track_loop "$loop"
chmod 0660 "$loop"
chgrp disk "$loop" 2>/dev/null || true
as_nobody run mixed-seq "$loop" --db "$T/nobody/x.db"
expect_eq "run on a device it may not open: exit 1" 1 "$(cat "$T/status")"
check "run on a device names the access it needs" grep -q "$loop needs read and write access (a block device)" "$T/err"
check "run on a device names its owner and mode" grep -q "mode 0660" "$T/err"
if [ "$(stat -c %G "$loop")" = disk ]; then
	check "run on a device says which group gives access" grep -q "member of group disk" "$T/err"
fi
check "run on a device keeps the system's reason" grep -q "Permission denied" "$T/err"
check "run on a device stores nothing" test ! -e "$T/nobody/x.db"

head -c 1M /dev/urandom >"$T/readonly.dat"
chmod 0644 "$T/readonly.dat"
sum=$(cksum <"$T/readonly.dat")
as_nobody run sustained-randread "$T/readonly.dat" --db "$T/nobody/y.db" --time=100ms
expect_eq "run on a file it may not write: exit 1" 1 "$(cat "$T/status")"
check "run on a file names the access it needs" grep -q "readonly.dat needs read and write access: it is root:root, mode 0644" "$T/err"
expect_eq "run on a file leaves it as it was" "$sum" "$(cksum <"$T/readonly.dat")"

mkdir -p "$T/closed" && chmod 0755 "$T/closed"
as_nobody run sustained-randread "$T/closed/new.dat" --db "$T/nobody/z.db" --time=100ms
expect_eq "run creating a file where it may not: exit 1" 1 "$(cat "$T/status")"
check "run creating a file names the directory" grep -q "creating it in $T/closed needs write and search access" "$T/err"
check "run creating a file creates nothing" test ! -e "$T/closed/new.dat"

sqlite3 "$T/private.db" "create table t(x);"
chmod 0600 "$T/private.db"
as_nobody stats "$T/private.db"
expect_eq "stats on a database it may not read: exit 1" 1 "$(cat "$T/status")"
check "stats names the access the database needs" grep -q "private.db needs read access: it is root:root, mode 0600" "$T/err"

as_nobody compare --db "$T/nobody/c.db"
expect_eq "compare without root: exit 1" 1 "$(cat "$T/status")"
check "compare says it needs root and why" grep -q "must run as root (it attaches loop devices" "$T/err"

if [ "$(stat -c %a /dev/fuse)" != 666 ]; then
	mkdir -p "$T/nobody/b" "$T/nobody/m"
	as_nobody mount "$T/nobody/b" "$T/nobody/m" --log "$T/nobody/m.db" -f
	expect_eq "mount without access to /dev/fuse: exit 1" 1 "$(cat "$T/status")"
	check "mount says what /dev/fuse needs" grep -q "FUSE mounts by users need /dev/fuse at mode 0666" "$T/err"
	check "mount mounted nothing" sh -c "! mountpoint -q '$T/nobody/m'"
else
	echo "# /dev/fuse is open to every user here: the mount case does not arise"
fi
fsp_done

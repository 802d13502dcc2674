#!/bin/sh
# it_mount.sh - real tools through an fsprism mount of an ext4 loop device.
#
# cp -a and tar of a header tree, renames (plain, RENAME_NOREPLACE,
# RENAME_EXCHANGE), hard links, truncates, xattrs, symlinks, a sqlite3
# database and a git repository on the mount; then every byte and the
# metadata through the mount are compared with the backing directory and the
# source. After `fsprism umount` the database must hold rows for the
# operations used, and the daemon must flush on SIGTERM and on an external
# fusermount3 -u as well.
. "$TESTS_SRCDIR/lib.sh"

fsp_capture_daemon_reports

POSIX_OPS=$TESTS_BUILDDIR/posix_ops
SRC=/usr/include/linux
DB=$T/mount.db

fsp_ext4_new 512M "$T/ext4"
mkdir "$T/mnt"
mkdir "$T/ext4/data"
B=$T/ext4/data
M=$T/mnt

if ! fsp_mount "$B" "$M" --log "$DB"; then
	not_ok "fsprism mount"; fsp_done; exit 1
fi
ok "fsprism mount"
check "mount is listed as fuse.fsprism" sh -c "grep -q ' $M fuse.fsprism ' /proc/self/mounts"

# --- cp -a, tar ---
check "cp -a $SRC" cp -a "$SRC" "$M/tree"
check "cp -a copy equals the source (diff -r)" diff -r "$SRC" "$M/tree"
check "tar c through the mount" tar -C "$M" -cf "$T/tree.tar" tree
mkdir "$M/untar"
check "tar x into the mount" tar -C "$M/untar" -xf "$T/tree.tar"
check "untarred tree equals the source" diff -r "$SRC" "$M/untar/tree"
nsrc=$(find "$SRC" | wc -l)
nmnt=$(find "$M/untar/tree" | wc -l)
expect_eq "same number of entries after tar" "$nsrc" "$nmnt"

# --- renames ---
echo one >"$M/r1"; echo two >"$M/r2"; mkdir "$M/rd"
check "mv plain" mv "$M/r1" "$M/r1b"
expect_eq "RENAME_NOREPLACE onto an existing file" EEXIST "$("$POSIX_OPS" --rename2 noreplace "$M/r1b" "$M/r2")"
expect_eq "RENAME_NOREPLACE onto a free name" ok "$("$POSIX_OPS" --rename2 noreplace "$M/r1b" "$M/r1c")"
expect_eq "RENAME_EXCHANGE file <-> dir" ok "$("$POSIX_OPS" --rename2 exchange "$M/r2" "$M/rd")"
check "after exchange r2 is the dir" test -d "$B/r2"
expect_eq "after exchange rd holds r2's data" two "$(cat "$B/rd")"
check "mv a directory tree" mv "$M/untar" "$M/untar2"

# --- links, truncate, xattrs, symlinks ---
echo linked >"$M/h1"
check "ln (hard link)" ln "$M/h1" "$M/h2"
expect_eq "nlink through the mount" 2 "$(stat -c %h "$M/h1")"
expect_eq "nlink on the backing file" 2 "$(stat -c %h "$B/h1")"
expect_eq "hard link shares the inode on the backing fs" "$(stat -c %i "$B/h1")" "$(stat -c %i "$B/h2")"
check "truncate -s 1M" truncate -s 1M "$M/h1"
expect_eq "size after truncate grow" 1048576 "$(stat -c %s "$B/h2")"
check "truncate -s 3" truncate -s 3 "$M/h2"
expect_eq "content after truncate shrink" lin "$(cat "$M/h1")"
check "setfattr" setfattr -n user.color -v blue "$M/h1"
expect_eq "getfattr through the mount" blue "$(getfattr --absolute-names --only-values -n user.color "$M/h1")"
expect_eq "xattr landed on the backing file" blue "$(getfattr --absolute-names --only-values -n user.color "$B/h1")"
check "setfattr -x" setfattr -x user.color "$M/h1"
check "xattr removed" sh -c "! getfattr --absolute-names -n user.color '$B/h1' 2>/dev/null | grep -q color"
check "ln -s" ln -s tree/kernel.h "$M/sym"
expect_eq "readlink" tree/kernel.h "$(readlink "$M/sym")"
check "read through a symlink" cmp "$SRC/kernel.h" "$M/sym"
check "chmod" chmod 0600 "$M/h1"
check "chown" chown 1234:5678 "$M/h2"
expect_eq "mode and owner on the backing file" "600 1234 5678" "$(stat -c '%a %u %g' "$B/h1")"
check "touch -d" touch -d '2001-02-03 04:05:06' "$M/h1"
expect_eq "mtime on the backing file" "$(date -d '2001-02-03 04:05:06' +%s)" "$(stat -c %Y "$B/h1")"

# --- sqlite3 and git on the mount ---
check "sqlite3 creates a database on the mount" sqlite3 "$M/app.db" \
	"create table t(a integer primary key, b text); \
	 with recursive c(x) as (select 1 union all select x+1 from c where x<2000) \
	 insert into t(b) select hex(randomblob(40)) from c;"
expect_eq "sqlite3 query through the mount" 2000 "$(sqlite3 "$M/app.db" 'select count(*) from t')"
expect_eq "sqlite3 integrity_check" ok "$(sqlite3 "$M/app.db" 'pragma integrity_check')"
expect_eq "sqlite3 WAL mode" wal "$(sqlite3 "$M/app.db" 'pragma journal_mode=wal')"
check "sqlite3 writes in WAL mode" sqlite3 "$M/app.db" "update t set b='x' where a%2=0"
expect_eq "sqlite3 sees the update" 1000 "$(sqlite3 "$M/app.db" "select count(*) from t where b='x'")"
if command -v git >/dev/null; then
	(cd "$M" && mkdir repo && cd repo && git init -q && cp "$SRC"/f*.h . &&
	 git add . && git -c user.name=t -c user.email=t@t commit -qm one &&
	 echo change >>fs.h && git -c user.name=t -c user.email=t@t commit -qam two) >"$T/git.log" 2>&1
	check "git init/add/commit on the mount" test $? -eq 0
	expect_eq "git log" 2 "$(git -C "$M/repo" rev-list --count HEAD)"
	check "git fsck" sh -c "git -C '$M/repo' fsck --no-progress >/dev/null 2>&1"
fi

# --- concurrent name operations while the kernel forgets inodes ---
# (lookups, creates, readdirplus and unlinks on several threads, with
# FORGETs forced by dropping the dentry/inode caches)
for i in 1 2 3 4; do
	(cp -a "$SRC" "$M/stress$i" && diff -r "$SRC" "$M/stress$i" >/dev/null &&
	 find "$M/stress$i" -type f | head -200 | xargs cat >/dev/null &&
	 rm -rf "$M/stress$i") >"$T/stress$i.log" 2>&1 &
	eval "stress_pid$i=\$!"
done
for i in 1 2 3 4 5 6 7 8 9 10; do echo 2 >/proc/sys/vm/drop_caches; sleep 0.2; done
for i in 1 2 3 4; do
	eval "wait \$stress_pid$i"
	check "parallel cp/diff/rm worker $i (with inode cache drops)" test $? -eq 0
done
check "the mount still answers after the stress" test -d "$M/tree"

# --- everything through the mount equals the backing dir ---
check "diff -r mount backing (every byte)" diff -r --no-dereference "$M" "$B"
(cd "$M" && find . -printf '%p %y %m %u %g %s %n %l %T@\n' | sort) >"$T/m.meta"
(cd "$B" && find . -printf '%p %y %m %u %g %s %n %l %T@\n' | sort) >"$T/b.meta"
if diff "$T/m.meta" "$T/b.meta" >"$T/meta.diff"; then
	ok "metadata (type, mode, owner, size, nlink, link target, mtime) equals the backing dir's"
else
	not_ok "metadata differs:"; head -20 "$T/meta.diff"
fi
check "statfs through the mount" sh -c "df -P '$M' | grep -q fsprism || df -P '$M' >/dev/null"

# --- unmount: the database is complete when umount returns ---
check "fsprism umount" fsp_umount "$M"
check "nothing mounted afterwards" sh -c "! mountpoint -q '$M'"
ended=$(sqlite3 "$DB" "select ended_at is not null from runs where kind='mount' order by id desc limit 1")
expect_eq "the run is closed when umount returns" 1 "$ended"
for op in lookup create mkdir write read rename link symlink unlink setattr setxattr getxattr removexattr readlink fsync readdirplus; do
	n=$(sqlite3 "$DB" "select count(*) from ops o join op_names n on o.op=n.op where n.name='$op'")
	check "database has $op rows ($n)" test "${n:-0}" -gt 0
done
# (RENAME_NOREPLACE onto an existing name fails in the VFS, before FUSE)
err_rows=$(sqlite3 "$DB" "select count(*) from ops o join op_names n on o.op=n.op where n.name='getxattr' and o.result=61")
check "failed requests are stored with their errno (getxattr ENODATA: $err_rows)" test "$err_rows" -ge 1
bad=$(sqlite3 "$DB" "select count(*) from ops where total_ns < backing_ns or layer_ns != total_ns - backing_ns")
expect_eq "every row: backing <= total, layer = total - backing" 0 "$bad"
nr=$(sqlite3 "$DB" "select recorded from runs order by id desc limit 1")
nrows=$(sqlite3 "$DB" "select count(*) from ops where run=(select max(id) from runs)")
expect_eq "runs.recorded equals the stored rows" "$nrows" "$nr"
"$FSPRISM" stats "$DB" >"$T/stats.out" 2>&1
check "fsprism stats runs" test $? -eq 0
check "stats lists write and lookup" sh -c "grep -q '^write' '$T/stats.out' && grep -q '^lookup' '$T/stats.out'"

# --- SIGTERM: unmounts and stores everything ---
fsp_mount "$B" "$M" --log "$DB" || not_ok "second mount"
for i in $(seq 1 200); do echo "$i" >"$M/sig.$i"; done
pid=$(fsp_daemon_pid "$M")
check "daemon pid file exists" test -n "$pid"
kill -TERM "$pid" 2>/dev/null
for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
check "daemon exits on SIGTERM" sh -c "! kill -0 $pid 2>/dev/null"
check "SIGTERM unmounted" sh -c "! mountpoint -q '$M'"
n=$(sqlite3 "$DB" "select count(*) from ops o join op_names n on o.op=n.op where n.name='create' and o.run=(select max(id) from runs)")
expect_eq "all 200 creates stored after SIGTERM" 200 "$n"

# --- external fusermount3 -u: the daemon still flushes ---
fsp_mount "$B" "$M" --log "$DB" || not_ok "third mount"
for i in $(seq 1 100); do cat "$M/sig.$i" >/dev/null; done
check "fusermount3 -u" fusermount3 -u "$M"
for i in $(seq 1 100); do
	[ "$(sqlite3 "$DB" "select ended_at is not null from runs order by id desc limit 1")" = 1 ] && break
	sleep 0.1
done
expect_eq "run closed after an external unmount" 1 "$(sqlite3 "$DB" "select ended_at is not null from runs order by id desc limit 1")"
n=$(sqlite3 "$DB" "select count(*) from ops o join op_names n on o.op=n.op where n.name='read' and o.run=(select max(id) from runs)")
check "reads stored after an external unmount ($n)" test "$n" -ge 100
# --- a copy of the mount in another mount namespace (unshare, ip netns exec):
# fsprism umount still ends the daemon, its records stored, nothing served ---
fsp_mount "$B" "$M" --log "$DB" || not_ok "fourth mount"
for i in $(seq 1 50); do cat "$M/sig.$i" >/dev/null; done
pid=$(fsp_daemon_pid "$M")
unshare -m sleep 60 &
holder=$!
sleep 0.3
check "the other namespace sees the mount" nsenter -t "$holder" -m test -f "$M/sig.1"
timeout 60 "$FSPRISM" umount "$M" 2>"$T/held.err"
expect_eq "umount with a copy held elsewhere exits 0" 0 "$?"
check "... and says why it ends the daemon ($(cat "$T/held.err"))" \
	grep -q "still mounted in another mount namespace (that of pid $holder" "$T/held.err"
# (its records stored, it releases its lock and then exits)
for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
check "... the daemon has exited" sh -c "! kill -0 $pid 2>/dev/null"
expect_eq "... its run is closed" 1 "$(sqlite3 "$DB" "select ended_at is not null from runs order by id desc limit 1")"
n=$(sqlite3 "$DB" "select count(*) from ops o join op_names n on o.op=n.op where n.name='read' and o.run=(select max(id) from runs)")
check "... its reads are stored ($n)" test "$n" -ge 50
check "... the copy serves nothing any more" sh -c "! nsenter -t $holder -m cat '$M/sig.1' 2>/dev/null"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
no_sanitizer_reports
fsp_done

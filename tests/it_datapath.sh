#!/bin/sh
# it_datapath.sh - the data path of plain (not emulated) mounts loses nothing:
#  - emu_fsx (model-checked random operations) in every mode of the mount:
#    --backing-io=aio and sync, buffered, O_DIRECT, and buffered and O_DIRECT
#    handles mixed with shared mmap writes (so the kernel's write-back comes
#    through an O_DIRECT handle, cut at an unaligned end of file), hole
#    punching, zero range, copy_file_range and truncation; also with
#    --writeback-cache and --splice; after the unmount the backing files
#    equal the model;
#  - O_DIRECT + shared mmap: a mapped write to the last, partial page of a
#    file whose size is not a multiple of 512 is msync'd and reaches the
#    backing file; misaligned O_DIRECT writes and reads are served (through
#    the buffered fallback, counted in fuse.direct_fallbacks) and aligned
#    ones stay direct (nothing of them in the backing file's page cache);
#    on 4 KiB logical blocks, O_DIRECT from a buffer that starts inside a
#    page (which the kernel splits into odd lengths) is served too;
#  - atime: -o noatime and -o nodiratime leave the backing file's and
#    directory's atime alone, a mount without them updates it (as the
#    backing file system's rule says); relatime/strictatime are accepted
#    only when the backing file system follows that rule.
# Seeds derive from DATAPATH_SEED (default: the time), printed for reproduction.
. "$TESTS_SRCDIR/lib.sh"

fsp_capture_daemon_reports

FSX=$TESTS_BUILDDIR/emu_fsx
SEED=${DATAPATH_SEED:-$(date +%s)}
echo "# DATAPATH_SEED=$SEED (set it to repeat this run)"
command -v python3 >/dev/null || { echo "SKIP: python3 not installed" >&2; exit 77; }
PY=$(python3 -c 'import sys; print(sys.executable)')

# ext4 on a loop device (512-byte logical blocks, relatime by default)
fsp_ext4_new 512M "$T/ext4"
mkdir "$T/mnt"
B=$T/ext4/backing
M=$T/mnt
DB=$T/datapath.db
mkdir "$B"

last_run() { sqlite3 "$DB" "select max(id) from runs"; }
run_attr() { sqlite3 "$DB" "select value from run_attrs where run=$(last_run) and key='$1'"; }

# ---------------------------------------------------------------------------
# 1. emu_fsx in every mode of a plain mount
n=0
for io in aio sync; do
	for kind in buffered direct mix; do
		n=$((n + 1))
		s=$((SEED + n))
		case $kind in
		buffered) args="--mmap" ;;
		direct) args="--direct --mmap" ;;
		mix) args="--mix --mmap" ;;
		esac
		name="backing-io=$io $kind"
		rm -rf "$B/fsx"; mkdir "$B/fsx"
		if ! fsp_mount "$B" "$M" --log "$DB" --backing-io=$io; then
			not_ok "$name: mount"; continue
		fi
		"$FSX" run "$M/fsx" --seed $s --ops 0 --seconds 2 --max-size 512K $args \
			--state "$T/st" >"$T/fsx.out" 2>&1
		rc=$?
		fsp_umount "$M" || not_ok "$name: umount"
		expect_eq "$name: emu_fsx $args matches the model (seed $s; $(tail -1 "$T/fsx.out" | cut -c1-60))" 0 "$rc"
		[ $rc = 0 ] || sed 's/^/# /' "$T/fsx.out" | tail -15
		"$FSX" verify "$T/st" "$B/fsx" >"$T/fsx.out" 2>&1
		expect_eq "$name: after the unmount the backing files equal the model" 0 "$?"
	done
done
# the other write paths: kernel write-back caching, spliced payloads
for opt in --writeback-cache --splice; do
	n=$((n + 1))
	s=$((SEED + n))
	rm -rf "$B/fsx"; mkdir "$B/fsx"
	if ! fsp_mount "$B" "$M" --log "$DB" $opt; then
		not_ok "$opt: mount"; continue
	fi
	"$FSX" run "$M/fsx" --seed $s --ops 0 --seconds 2 --max-size 512K --mix --mmap \
		--state "$T/st" >"$T/fsx.out" 2>&1
	rc=$?
	fsp_umount "$M" || not_ok "$opt: umount"
	expect_eq "$opt mix: emu_fsx --mix --mmap matches the model (seed $s)" 0 "$rc"
	[ $rc = 0 ] || sed 's/^/# /' "$T/fsx.out" | tail -15
	"$FSX" verify "$T/st" "$B/fsx" >"$T/fsx.out" 2>&1
	expect_eq "$opt mix: after the unmount the backing files equal the model" 0 "$?"
done

# ---------------------------------------------------------------------------
# 2. O_DIRECT + shared mmap, misaligned O_DIRECT, aligned O_DIRECT stays direct
for io in aio sync; do
	head -c 5000 /dev/urandom >"$B/tail.$io"
	head -c 4096 "$B/tail.$io" >"$T/tail.want"
	head -c 904 /dev/zero | tr '\0' X >>"$T/tail.want"
	fsp_mount "$B" "$M" --log "$DB" --backing-io=$io || { not_ok "$io: mount"; continue; }
	"$PY" - "$M/tail.$io" 2>"$T/py.err" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_DIRECT)
m = mmap.mmap(fd, 5000)           # size 5000: not a multiple of 512
m[4096:5000] = b"X" * 904         # the last, partial page
m.flush()                         # msync(MS_SYNC)
m.close()
os.close(fd)
EOF
	check "$io: O_DIRECT handle + shared mmap: msync of a write ending at an unaligned end succeeds ($(head -c 200 "$T/py.err"))" test $? -eq 0
	fsp_umount "$M" || not_ok "$io: umount"
	check "$io: after the unmount the backing file holds the mapped write" cmp -s "$T/tail.want" "$B/tail.$io"

	# misaligned O_DIRECT IO is served, and counted
	head -c 16384 /dev/urandom >"$B/mis.$io"
	cp "$B/mis.$io" "$T/mis.want"
	printf 'misaligned write' | dd of="$T/mis.want" bs=1 seek=1 conv=notrunc status=none
	fsp_mount "$B" "$M" --log "$DB" --backing-io=$io || { not_ok "$io: mount"; continue; }
	got=$("$PY" - "$M/mis.$io" 2>"$T/py.err" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_DIRECT)
buf = mmap.mmap(-1, 8192)         # page-aligned memory
buf[0:16] = b"misaligned write"
os.pwritev(fd, [memoryview(buf)[0:16]], 1)
n = os.preadv(fd, [memoryview(buf)[0:4096]], 3)
print(n, bytes(buf[0:14]).decode())
os.close(fd)
EOF
)
	expect_eq "$io: misaligned O_DIRECT write 16@1 and read 4096@3 are served" \
		"4096 saligned write" "$got$(head -c 200 "$T/py.err")"
	fsp_umount "$M" || not_ok "$io: umount"
	check "$io: the misaligned O_DIRECT write reached the backing file" cmp -s "$T/mis.want" "$B/mis.$io"
	fb=$(run_attr fuse.direct_fallbacks)
	check "$io: run attribute fuse.direct_fallbacks counts them ($fb)" test "${fb:-0}" -ge 2

	# aligned O_DIRECT IO stays direct: nothing of it in the backing page cache
	rm -f "$B/al.$io"
	fsp_mount "$B" "$M" --log "$DB" --backing-io=$io || { not_ok "$io: mount"; continue; }
	dd if=/dev/urandom of="$M/al.$io" bs=64k count=16 oflag=direct status=none
	dd if="$M/al.$io" of=/dev/null bs=4k iflag=direct status=none
	cached=$(fincore -n -b -o RES "$B/al.$io" 2>/dev/null | tr -d ' ')
	fsp_umount "$M" || not_ok "$io: umount"
	expect_eq "$io: aligned O_DIRECT IO took no fallback" 0 "$(run_attr fuse.direct_fallbacks)"
	expect_eq "$io: aligned O_DIRECT IO left nothing in the backing page cache" 0 "$cached"
done

# ---------------------------------------------------------------------------
# 2b. 4 KiB logical blocks: O_DIRECT from a buffer that does not start on a
# page (which ext4 there accepts: 512-byte memory alignment) reaches the
# mount as pieces of odd lengths, which the backing O_DIRECT fd refuses
truncate -s 64M "$T/img4k"
dev4=$(losetup --find --show --sector-size 4096 "$T/img4k") || not_ok "losetup --sector-size 4096"
if [ -n "$dev4" ]; then
	fsp_track_loop "$dev4"
	mkfs.ext4 -q "$dev4"
	mkdir "$T/e4k"
	mount "$dev4" "$T/e4k" && fsp_track_mount "$T/e4k"
	mkdir "$T/e4k/native" "$T/e4k/backing"
	cat >"$T/offpage.py" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o644)
buf = mmap.mmap(-1, 2 << 20)
data = os.urandom(1 << 20)
buf[512:512 + len(data)] = data   # 512 bytes into a page
n = os.pwritev(fd, [memoryview(buf)[512:512 + len(data)]], 0)
os.close(fd)
open(sys.argv[2], "wb").write(data)
print(n)
EOF
	expect_eq "4k sectors: native ext4 takes a 1 MiB O_DIRECT write from a buffer 512 bytes into a page" \
		1048576 "$("$PY" "$T/offpage.py" "$T/e4k/native/f" "$T/want4k" 2>&1 | tail -1)"
	if fsp_mount "$T/e4k/backing" "$M" --log "$DB"; then
		expect_eq "4k sectors: through the mount too" \
			1048576 "$("$PY" "$T/offpage.py" "$M/f" "$T/want4k" 2>&1 | tail -1)"
		fsp_umount "$M" || not_ok "4k sectors: umount"
		check "4k sectors: the backing file holds the data" cmp -s "$T/want4k" "$T/e4k/backing/f"
		fb=$(run_attr fuse.direct_fallbacks)
		check "4k sectors: the odd-length pieces went buffered ($fb)" test "${fb:-0}" -ge 1
	else
		not_ok "4k sectors: mount"
	fi
fi

# ---------------------------------------------------------------------------
# 3. atime: the backing file system's ext4 is mounted relatime
old=946684800 # 2000-01-01 00:00:00 UTC: older than the files' mtime
atime() { stat -c %X "$1"; }
# read_through OPTS...: mount with OPTS, read file A and list directory D
# through the mount, unmount; the backing atimes are then "FILE DIR"
read_through() {
	printf 'some data\n' >"$B/a.txt"
	mkdir -p "$B/d" && touch "$B/d/x"
	touch -a -d @$old "$B/a.txt" "$B/d"
	fsp_mount "$B" "$M" --log "$DB" "$@" || { echo "mount-failed"; return; }
	cat "$M/a.txt" >/dev/null
	ls "$M/d" >/dev/null
	fsp_umount "$M"
	echo "$(atime "$B/a.txt") $(atime "$B/d")"
}
got=$(read_through)
check "no atime option: reading through the mount updates the backing atimes ($got)" \
	test "$got" != "$old $old" -a "$got" != mount-failed
case $got in "$old "*) not_ok "no atime option: file atime unchanged ($got)" ;; esac
expect_eq "-o noatime: reading leaves the backing file's and directory's atime" \
	"$old $old" "$(read_through -o noatime)"
got=$(read_through -o nodiratime)
expect_eq "-o nodiratime: listing leaves the backing directory's atime" "$old" "${got#* }"
check "-o nodiratime: reading a file still updates its atime ($got)" test "${got% *}" != "$old"
got=$(read_through -o relatime)
check "-o relatime over a relatime backing file system is accepted and updates ($got)" \
	test "$got" != mount-failed -a "${got% *}" != "$old"
"$FSPRISM" mount --log "$DB" -o strictatime "$B" "$M" 2>"$T/strict.err"
rc=$?
mountpoint -q "$M" && fsp_umount "$M"
expect_eq "-o strictatime over a relatime backing file system is refused (exit 2)" 2 "$rc"
check "... naming the backing file system's rule ($(cat "$T/strict.err"))" \
	grep -q "strictatime.*relatime" "$T/strict.err"

no_sanitizer_reports
fsp_done

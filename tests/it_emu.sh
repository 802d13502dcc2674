#!/bin/sh
# it_emu.sh - the copy-on-write / journaling emulation through
# real mounts, with the store on a loop device (direct IO):
#  - every --cow x --journal combination: emu_fsx (buffered, O_DIRECT, and
#    both mixed with shared mmap writes) checks every read against its
#    model, a clean unmount and remount must give back exactly the saved
#    model;
#  - crash and replay: the daemon is killed (-9) at a random moment of an
#    emu_fsx crash-mode run; after a remount every fsync'd block is intact
#    and nothing holds content that was never written there (without a
#    journal, losses are allowed only when the mount reported them);
#  - clones: copy_file_range shares physical extents (fsprism stats
#    --extents), overwriting part of the copy changes the copy only;
#  - device-level accounting: bytes written and flushes recorded in the
#    database equal the loop device's own counters;
#  - --cow=always fragments a file under random O_DIRECT overwrites,
#    --cow=off does not;
#  - the knobs --block-size, --tree-depth and --no-fsync-commit change the
#    device IO the way they should; --extent-cost adds its time per extent.
# Seeds derive from EMU_SEED (default: the time), printed for reproduction.
. "$TESTS_SRCDIR/lib.sh"

fsp_capture_daemon_reports

FSX=$TESTS_BUILDDIR/emu_fsx
DB=$T/emu.db
SEED=${EMU_SEED:-$(date +%s)}
echo "# EMU_SEED=$SEED (set it to repeat this run)"
command -v python3 >/dev/null || fsp_skip "python3 not installed"
# the interpreter itself, not a version-manager shim (which can cost a second a call)
PY=$(python3 -c 'import sys; print(sys.executable)')

# The store: a loop device with direct IO over a sparse file.
truncate -s 256M "$T/store.img"
dev=$(losetup --find --show --direct-io=on "$T/store.img") || {
	not_ok "losetup --direct-io=on"; fsp_done; exit 1; }
fsp_track_loop "$dev"
loopname=$(basename "$dev")
M=$T/mnt
mkdir "$M"
fsp_track_mount "$M"
bn=0 # backing directories are fresh for every formatted store

new_backing() { bn=$((bn + 1)); B=$T/backing$bn; mkdir "$B"; }

# emu_mount OPTIONS...: mount $B on $M with the store on $dev; the mount's
# stderr is kept in $T/mount.err.
emu_mount() {
	fsp_mount "$B" "$M" --log "$DB" --store "$dev" "$@" 2>"$T/mount.err"
	rc=$?
	[ -s "$T/mount.err" ] && sed 's/^/# mount: /' "$T/mount.err"
	return $rc
}
last_run() { sqlite3 "$DB" "select max(id) from runs"; }
run_attr() { sqlite3 "$DB" "select value from run_attrs where run=$1 and key='$2'"; }


# A number in [lo, hi) from the seed and a salt (shell arithmetic only).
pick() { echo $(( $1 + (SEED * 7919 + $3 * 104729) % ($2 - $1) )); }

# stats JSON of a run, and a python expression over its "emulation" object e
stats_json() { "$FSPRISM" stats "$DB" --run "$1" --format json --extents >"$T/stats.json" 2>"$T/stats.err"; }
emu_py() {
	"$PY" -c 'import json,sys; e=json.load(open(sys.argv[1]))["emulation"]; print(eval(sys.argv[2]))' \
		"$T/stats.json" "$1" 2>>"$T/stats.err"
}
# per-block physical map of file NAME (basename) in $T/stats.json, one
# "logical_block physical_block" line per mapped 4 KiB block
block_map() {
	"$PY" - "$T/stats.json" "$1" <<'EOF'
import json, os, sys
e = json.load(open(sys.argv[1]))["emulation"]
for x in e["extents"]:
    if os.path.basename(x["path"]) != sys.argv[2]:
        continue
    for i in range(x["length"] // 4096):
        print(x["logical"] // 4096 + i, x["physical"] // 4096 + i)
EOF
}
file_extents() { emu_py "[f['extents'] for f in e['files'] if f['path'].rsplit('/',1)[-1]=='$1'][0]"; }

# Random 4 KiB O_DIRECT overwrites of FILE (N blocks, seed S), the same
# bytes also written to REF (a plain file) so the content can be checked.
overwrite_direct() {
	"$PY" - "$@" <<'EOF'
import mmap, os, random, sys
path, ref, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
fd = os.open(path, os.O_RDWR | os.O_DIRECT)
rf = os.open(ref, os.O_RDWR)
blocks = os.fstat(fd).st_size // 4096
rnd = random.Random(seed)
buf = mmap.mmap(-1, 4096)
for i in range(n):
    off = rnd.randrange(blocks) * 4096
    data = rnd.randbytes(4096)
    buf.seek(0); buf.write(data)
    os.pwritev(fd, [buf], off)
    os.pwrite(rf, data, off)
os.fsync(fd)
EOF
}

t_section=$(date +%s)
section_done() { now=$(date +%s); echo "# section $1: $((now - t_section)) s"; t_section=$now; }

# ---------------------------------------------------------------------------
# 1. every mode combination: run, clean unmount, remount, verify
combo=0
for cow in off shared always; do
	for journal in off writeback ordered data; do
		combo=$((combo + 1))
		mode="cow=$cow journal=$journal"
		s=$((SEED + combo))
		new_backing
		if ! emu_mount --cow=$cow --journal=$journal --format --destroy-data \
			--commit-interval 1; then
			not_ok "$mode: mount (formatting the store)"; continue
		fi
		mkdir "$M/b" "$M/d" "$M/x"
		"$FSX" run "$M/b" --seed $s --ops 250 --max-size 512K --state "$T/st.b" >"$T/fsx.out" 2>&1
		rb=$?
		"$FSX" run "$M/d" --seed $s --ops 150 --max-size 512K --direct --state "$T/st.d" >>"$T/fsx.out" 2>&1
		rd=$?
		"$FSX" run "$M/x" --seed $s --ops 150 --max-size 512K --mix --mmap --state "$T/st.x" \
			>>"$T/fsx.out" 2>&1
		rx=$?
		fsp_umount "$M" || not_ok "$mode: umount"
		expect_eq "$mode: emu_fsx buffered, O_DIRECT and mixed+mmap runs match the model (seed $s)" \
			"0 0 0" "$rb $rd $rx"
		[ "$rb $rd $rx" = "0 0 0" ] || sed 's/^/# /' "$T/fsx.out" | head -30
		if ! emu_mount --cow=$cow --journal=$journal; then
			not_ok "$mode: remount"; continue
		fi
		run=$(last_run)
		"$FSX" verify "$T/st.b" "$M/b" >"$T/fsx.out" 2>&1
		vb=$?
		"$FSX" verify "$T/st.d" "$M/d" >>"$T/fsx.out" 2>&1
		vd=$?
		"$FSX" verify "$T/st.x" "$M/x" >>"$T/fsx.out" 2>&1
		vx=$?
		fsp_umount "$M" || not_ok "$mode: umount after verify"
		expect_eq "$mode: after a clean remount the three directories equal the saved model" \
			"0 0 0" "$vb $vd $vx"
		[ "$vb $vd $vx" = "0 0 0" ] || sed 's/^/# /' "$T/fsx.out" | head -30
		expect_eq "$mode: remount found a clean store it did not format" "1 0" \
			"$(run_attr "$run" emu.clean) $(run_attr "$run" emu.formatted)"
		if [ $combo -eq 1 ]; then
			# the check can fail: one changed byte is found
			emu_mount --cow=$cow --journal=$journal || not_ok "$mode: third mount"
			printf 'X' | dd of="$M/b/fsx.1" bs=1 seek=100 conv=notrunc status=none
			"$FSX" verify "$T/st.b" "$M/b" >"$T/fsx.out" 2>&1
			expect_eq "$mode: verify reports one byte changed through the mount" 1 "$?"
			fsp_umount "$M"
		fi
		rm -rf "$B"
	done
done

section_done "1 (modes)"

# ---------------------------------------------------------------------------
# 2. crash and replay: kill -9 during an emu_fsx crash-mode run
crash=0
for mode in "always ordered" "shared data" "off writeback" "always off" "off off"; do
	set -- $mode
	cow=$1; journal=$2
	crash=$((crash + 1))
	name="crash cow=$cow journal=$journal"
	s=$((SEED + 100 + crash))
	new_backing
	emu_mount --cow=$cow --journal=$journal --format --destroy-data --commit-interval 1 ||
		{ not_ok "$name: mount"; continue; }
	pid=$(fsp_daemon_pid "$M")
	mkdir "$M/c"
	direct=""
	[ $((crash % 2)) -eq 0 ] && direct=--direct
	"$FSX" run "$M/c" --seed $s --ops 0 --seconds 60 --max-size 512K $direct \
		--crash-log "$T/crash.log" >"$T/fsx.out" 2>&1 &
	fsx=$!
	ms=$(pick 700 2500 $crash)
	sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
	if [ -n "$pid" ] && kill -9 "$pid"; then
		ok "$name: daemon $pid killed after ${ms} ms"
	else
		not_ok "$name: no daemon pid to kill"
		kill "$fsx"
	fi
	wait $fsx
	rc=$?
	expect_eq "$name: emu_fsx stopped with 'mount gone' (exit 3) ($(tail -1 "$T/fsx.out"))" 3 "$rc"
	ops=$(grep -c -v '^synced' "$T/crash.log")
	check "$name: the crash log holds operations ($ops)" test "$ops" -gt 10
	for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fusermount3 -u -z "$M" 2>/dev/null || umount -l "$M" 2>/dev/null
	if ! emu_mount --cow=$cow --journal=$journal; then
		not_ok "$name: remount after the crash ($(cat "$T/mount.err"))"; continue
	fi
	run=$(last_run)
	check "$name: the mount says the store was not closed cleanly" \
		grep -q "was not closed cleanly" "$T/mount.err"
	expect_eq "$name: emu.clean is 0" 0 "$(run_attr "$run" emu.clean)"
	if [ "$journal" = off ] && [ "$cow" = off ]; then
		check "$name: the mount says there is no journal" grep -q "has no journal" "$T/mount.err"
		"$FSX" verify-crash "$T/crash.log" "$M/c" --allow-loss >"$T/vc.out" 2>&1
		vc=$?
		expect_eq "$name: verify-crash: no garbage (losses reported by the mount)" 0 "$vc"
		refused=$(sed -n 's/.* \([0-9]*\) refused (EIO).*/\1/p' "$T/vc.out")
		if [ "${refused:-0}" -gt 0 ]; then
			check "$name: $refused blocks refused with EIO, and the mount reported damaged objects" \
				grep -q "damaged" "$T/mount.err"
		fi
	else
		if [ "$journal" != off ]; then
			end=$(run_attr "$run" emu.replay.end)
			check "$name: journal replay recorded (emu.replay.end=$end)" test -n "$end"
		fi
		"$FSX" verify-crash "$T/crash.log" "$M/c" >"$T/vc.out" 2>&1
		vc=$?
		expect_eq "$name: verify-crash: every fsync'd block intact, no garbage" 0 "$vc"
	fi
	sed 's/^/# /' "$T/vc.out" | head -30
	nblk=$(sed -n 's/.* \([0-9]*\) blocks checked.*/\1/p' "$T/vc.out")
	check "$name: verify-crash checked some data (${nblk:-no} blocks)" test "${nblk:-0}" -ge 20
	fsp_umount "$M" || not_ok "$name: umount after the crash check"
	if [ $crash -eq 1 ]; then
		# the replayed store closes cleanly and reopens to the same content
		emu_mount --cow=$cow --journal=$journal || not_ok "$name: second remount"
		run=$(last_run)
		"$FSX" verify-crash "$T/crash.log" "$M/c" >"$T/vc2.out" 2>&1
		expect_eq "$name: after a clean close the content is still consistent" "$vc" "$?"
		expect_eq "$name: the second remount finds a clean store" 1 "$(run_attr "$run" emu.clean)"
		# the check can fail: stray bytes in a file are garbage
		head -c 100 /dev/urandom | dd of="$M/c/fsx.0" bs=1 seek=4096 conv=notrunc status=none
		"$FSX" verify-crash "$T/crash.log" "$M/c" >"$T/vc2.out" 2>&1
		expect_eq "$name: verify-crash reports 100 stray bytes as garbage" 1 "$?"
		fsp_umount "$M"
	fi
	rm -rf "$B"
done

section_done "2 (crash)"

# ---------------------------------------------------------------------------
# 3. clone sharing and divergence (copy_file_range)
head -c 1048576 /dev/urandom >"$T/src.ref"
for cow in shared off; do
	name="clone cow=$cow"
	new_backing
	emu_mount --cow=$cow --journal=ordered --format --destroy-data ||
		{ not_ok "$name: mount"; continue; }
	dd if="$T/src.ref" of="$M/src" bs=1M conv=fsync status=none
	"$PY" -c '
import os, sys
s = os.open(sys.argv[1], os.O_RDONLY); d = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT, 0o644)
left = os.fstat(s).st_size; off = 0
while left:
    n = os.copy_file_range(s, d, left, off, off)
    if n <= 0: sys.exit("copy_file_range returned %d" % n)
    off += n; left -= n
os.fsync(d)' "$M/src" "$M/copy"
	check "$name: copy_file_range of 1 MiB" test $? -eq 0
	fsp_umount "$M"
	run1=$(last_run)
	stats_json "$run1" || not_ok "$name: fsprism stats --extents --format json ($(cat "$T/stats.err"))"
	block_map src >"$T/src.map1"
	block_map copy >"$T/copy.map1"
	expect_eq "$name: src is mapped block by block (256 blocks)" 256 "$(wc -l <"$T/src.map1")"
	check "$name: the copy maps every block to the source's physical block" \
		cmp -s "$T/src.map1" "$T/copy.map1"
	user=$(emu_py "e['user_write_bytes']")
	expect_eq "$name: user_write_bytes = write + copy_file_range bytes" 2097152 "$user"

	emu_mount --cow=$cow --journal=ordered || { not_ok "$name: remount"; continue; }
	head -c 8192 /dev/urandom >"$T/patch"
	dd if="$T/patch" of="$M/copy" bs=4096 seek=64 conv=notrunc,fsync status=none
	cp "$T/src.ref" "$T/copy.ref"
	dd if="$T/patch" of="$T/copy.ref" bs=4096 seek=64 conv=notrunc status=none
	fsp_umount "$M"
	run2=$(last_run)
	emu_mount --cow=$cow --journal=ordered || { not_ok "$name: remount to read"; continue; }
	check "$name: the source is unchanged after the copy was overwritten" cmp "$T/src.ref" "$M/src"
	check "$name: the copy holds the overwrite" cmp "$T/copy.ref" "$M/copy"
	fsp_umount "$M"
	stats_json "$run2" || not_ok "$name: stats of the overwrite run"
	block_map src >"$T/src.map2"
	block_map copy >"$T/copy.map2"
	check "$name: the source's extents did not change" cmp -s "$T/src.map1" "$T/src.map2"
	moved=$(diff "$T/copy.map1" "$T/copy.map2" | grep -c '^>')
	expect_eq "$name: exactly the 2 overwritten blocks of the copy moved" 2 "$moved"
	shared=$(awk 'NR == FNR { phys[$1] = $2; next } phys[$1] == $2 { n++ } END { print n + 0 }' \
		"$T/src.map2" "$T/copy.map2")
	expect_eq "$name: the other 254 blocks are still shared" 254 "$shared"
	rm -rf "$B"
done

section_done "3 (clones)"

# ---------------------------------------------------------------------------
# 4. device-level accounting equals the loop device's counters
#    (/sys/block/loopN/stat: field 7 = sectors written, 16 = flushes)
loop_stat() { awk -v f="$1" '{ print $f }' "/sys/block/$loopname/stat"; }
dev_sum() { # RUN: "write_bytes flushes"
	sqlite3 -separator ' ' "$DB" "select
	  coalesce(sum(case when n.name like 'dev_write%' then o.bytes end), 0),
	  coalesce(sum(case when n.name = 'dev_flush' then 1 end), 0)
	  from ops o join op_names n on o.op=n.op where o.run=$1"
}
new_backing
emu_mount --cow=always --journal=ordered --format --destroy-data && fsp_umount "$M"
w0=$(loop_stat 7); f0=$(loop_stat 16)
if emu_mount --cow=always --journal=ordered; then
	dd if=/dev/urandom of="$M/acct" bs=64k count=64 conv=fsync status=none
	cp "$M/acct" "$T/acct.ref"
	overwrite_direct "$M/acct" "$T/acct.ref" 100 "$SEED"
	"$FSX" run "$M" --seed "$SEED" --files 2 --ops 200 --max-size 256K >"$T/fsx.out" 2>&1
	check "accounting: emu_fsx run" test $? -eq 0
	fsp_umount "$M"
	run=$(last_run)
	w1=$(loop_stat 7); f1=$(loop_stat 16)
	set -- $(dev_sum "$run")
	expect_eq "accounting: sectors written to $loopname = database dev_write_* bytes / 512" \
		"$(( w1 - w0 ))" "$(( $1 / 512 ))"
	# A FUA write is sent as the write and a flush, both recorded: the
	# device's flush count equals the dev_flush records exactly.
	if [ -n "$f1" ]; then
		expect_eq "accounting: flushes seen by $loopname = database dev_flush rows" \
			"$(( f1 - f0 ))" "$2"
	fi
	dropped=$(sqlite3 "$DB" "select dropped from runs where id=$run")
	expect_eq "accounting: no records dropped" 0 "$dropped"
	# --no-flush: the device sees no flush at all
	f0=$(loop_stat 16)
	emu_mount --cow=always --journal=ordered --no-flush && {
		dd if=/dev/urandom of="$M/nf" bs=64k count=16 conv=fsync status=none
		fsp_umount "$M"
	}
	[ -n "$f0" ] && expect_eq "accounting: --no-flush sends no flush to $loopname" "$f0" "$(loop_stat 16)"
else
	not_ok "accounting: mount"
fi
rm -rf "$B"

section_done "4 (accounting)"

# ---------------------------------------------------------------------------
# 5. fragmentation: --cow=always fragments under random O_DIRECT
#    overwrites, --cow=off does not
for cow in always off; do
	name="fragmentation cow=$cow"
	new_backing
	emu_mount --cow=$cow --journal=ordered --format --destroy-data ||
		{ not_ok "$name: mount"; continue; }
	dd if=/dev/urandom of="$M/frag" bs=1M count=8 oflag=direct conv=fsync status=none
	cp "$M/frag" "$T/frag.ref"
	fsp_umount "$M"
	stats_json "$(last_run)" || not_ok "$name: stats"
	before=$(file_extents frag)
	emu_mount --cow=$cow --journal=ordered || { not_ok "$name: remount"; continue; }
	overwrite_direct "$M/frag" "$T/frag.ref" 200 "$SEED"
	fsp_umount "$M"
	stats_json "$(last_run)" || not_ok "$name: stats after the overwrites"
	after=$(file_extents frag)
	emu_mount --cow=$cow --journal=ordered || { not_ok "$name: remount to read"; continue; }
	check "$name: content after the overwrites" cmp "$T/frag.ref" "$M/frag"
	fsp_umount "$M"
	echo "# $name: extents $before before, $after after 200 random 4 KiB overwrites"
	if [ "$cow" = always ]; then
		check "$name: at least 100 more extents ($before -> $after)" \
			test "${after:-0}" -ge $(( ${before:-0} + 100 ))
	else
		expect_eq "$name: extent count unchanged" "$before" "$after"
	fi
	rm -rf "$B"
done
section_done "5 (fragmentation)"

# ---------------------------------------------------------------------------
# 6. the default store: a file BACKING/.fsprism-store, hidden from the mount
new_backing
if fsp_mount "$B" "$M" --log "$DB" --cow=always --journal=ordered --store-size 64M 2>"$T/mount.err"; then
	"$FSX" run "$M" --seed "$SEED" --files 2 --ops 150 --max-size 256K --state "$T/st.f" >"$T/fsx.out" 2>&1
	check "default store: emu_fsx run" test $? -eq 0
	check "default store: the store file is in the backing directory" test -s "$B/.fsprism-store"
	check "default store: and not visible through the mount" sh -c "! ls -a '$M' | grep -q fsprism-store"
	# its name cannot be made or removed through the mount either
	S=.fsprism-store
	size=$(stat -c %s "$B/$S")
	echo x >"$M/plain"
	check "default store: create of its name refused (EPERM)" sh -c \
		"! touch '$M/$S' 2>'$T/e' && grep -q 'not permitted' '$T/e'"
	check "default store: mkdir of its name refused (EPERM)" sh -c \
		"! mkdir '$M/$S' 2>'$T/e' && grep -q 'not permitted' '$T/e'"
	check "default store: symlink to its name refused (EPERM)" sh -c \
		"! ln -s plain '$M/$S' 2>'$T/e' && grep -q 'not permitted' '$T/e'"
	check "default store: link to its name refused (EPERM)" sh -c \
		"! ln '$M/plain' '$M/$S' 2>'$T/e' && grep -q 'not permitted' '$T/e'"
	check "default store: rename onto its name refused (EPERM)" sh -c \
		"! mv -T '$M/plain' '$M/$S' 2>'$T/e' && grep -q 'not permitted' '$T/e'"
	check "default store: unlink of its name: no such file" sh -c \
		"! rm '$M/$S' 2>'$T/e' && grep -q 'No such file' '$T/e'"
	check "default store: rmdir of its name: no such file" sh -c \
		"! rmdir '$M/$S' 2>'$T/e' && grep -q 'No such file' '$T/e'"
	expect_eq "default store: the store file is as it was" "$size" "$(stat -c %s "$B/$S")"
	rm -f "$M/plain"
	fsp_umount "$M"
	fsp_mount "$B" "$M" --log "$DB" --cow=always --journal=ordered 2>"$T/mount.err" || not_ok "default store: remount"
	"$FSX" verify "$T/st.f" "$M" >"$T/fsx.out" 2>&1
	expect_eq "default store: remount gives back the saved model" 0 "$?"
	fsp_umount "$M"
else
	not_ok "default store: mount ($(cat "$T/mount.err"))"
fi
section_done "6 (default store)"

# ---------------------------------------------------------------------------
# 7. the knobs: block size (read-modify-write of smaller writes), tree depth
#    (more metadata per change), fsync without commit
dev_sum() { # OP-NAME: bytes of that op in the last run, from the histograms
	sqlite3 "$DB" "select coalesce(sum(h.bytes), 0) from hist h join op_names n on n.op = h.op
		where h.run = $(last_run) and n.name = '$1' and h.layer = 0"
}
dev_count() {
	sqlite3 "$DB" "select coalesce(sum(h.count), 0) from hist h join op_names n on n.op = h.op
		where h.run = $(last_run) and n.name = '$1' and h.layer = 0"
}
small_writes() { # FILE: 20 fsync'd 4 KiB overwrites of a 1 MiB file
	dd if=/dev/urandom of="$1" bs=64k count=16 conv=fsync status=none
	for i in $(seq 1 20); do
		dd if=/dev/urandom of="$1" bs=4k count=1 seek=$((i * 11)) conv=notrunc,fsync status=none
	done
}
for knob in "--block-size 4k" "--block-size 16k" "--tree-depth 3" "--no-fsync-commit"; do
	new_backing
	# shellcheck disable=SC2086
	emu_mount --format --destroy-data --cow=always --journal=off $knob || { not_ok "knob $knob: mount"; continue; }
	small_writes "$M/k"
	fsp_umount "$M"
	name=$(echo "$knob" | tr -d ' -')
	eval "reads_$name=$(dev_sum dev_read) meta_$name=$(dev_sum dev_write_meta)"
	eval "ckpt_$name=$(dev_count dev_write_ckpt)"
	rm -rf "$B"
done
# shellcheck disable=SC2154
{
echo "# knobs: device reads 4k $reads_blocksize4k, 16k $reads_blocksize16k;" \
	"metadata bytes depth 1 $meta_blocksize4k, depth 3 $meta_treedepth3;" \
	"checkpoints with fsync commits $ckpt_blocksize4k, without $ckpt_nofsynccommit"
check "--block-size 16k: 4 KiB writes read their 16 KiB blocks (reads $reads_blocksize4k -> $reads_blocksize16k)" \
	test "$reads_blocksize16k" -ge $((reads_blocksize4k + 20 * 16384))
check "--tree-depth 3: more metadata per commit ($meta_blocksize4k -> $meta_treedepth3)" \
	test "$meta_treedepth3" -gt "$meta_blocksize4k"
check "--no-fsync-commit: fsyncs write no checkpoints ($ckpt_blocksize4k -> $ckpt_nofsynccommit)" \
	test "$ckpt_nofsynccommit" -lt $((ckpt_blocksize4k - 15))
}
# --extent-cost: every extent a read crosses costs that much CPU. 16
# extents (odd blocks moved by overwrites after a commit) at 1 ms each.
new_backing
if emu_mount --format --destroy-data --cow=always --journal=off --extent-cost 1ms; then
	dd if=/dev/urandom of="$M/x" bs=64k count=1 oflag=direct conv=fsync status=none
	for i in 1 3 5 7 9 11 13 15; do
		dd if=/dev/urandom of="$M/x" bs=4k count=1 seek=$i oflag=direct conv=notrunc status=none
	done
	dd if="$M/x" of=/dev/null bs=64k count=1 iflag=direct status=none
	fsp_umount "$M"
	run=$(last_run)
	expect_eq "--extent-cost 1ms: stored with the run" 1000000 "$(run_attr "$run" emu.extent_cost_ns)"
	read_ns=$(sqlite3 "$DB" "select max(o.emu_ns) from ops o join op_names n on n.op = o.op
		where o.run = $run and n.name = 'read' and o.bytes = 65536")
	echo "# --extent-cost 1ms: a 64 KiB read over 16 extents: emulation share ${read_ns:-?} ns"
	check "--extent-cost 1ms: a read over 16 extents spends at least 16 ms in the emulation (${read_ns:-none} ns)" \
		test "${read_ns:-0}" -ge 16000000
else
	not_ok "knob --extent-cost: mount"
fi
rm -rf "$B"
section_done "7 (knobs)"

no_sanitizer_reports
fsp_done

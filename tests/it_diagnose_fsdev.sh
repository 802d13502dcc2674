#!/bin/sh
# it_diagnose_fsdev.sh - diagnose's device view of the fsprism passthrough:
# taken from its mount's own trace of the backing device (the rows of the
# mount run inside the step's window), as the emulation's is. A plain
# sequential read through the passthrough reaches the same device, the same
# file, in the same pattern as the native file system's: the fsprism
# target's requests per user IO, request size and read sequentiality must
# agree with the fs target's. Without a trace (--no-trace) it has no view.
. "$TESTS_SRCDIR/lib.sh"

fsp_tmpdir_tmpfs 2G
SIZES="--size=512M --time=300ms --span=64M"

# The pair fs -> fsprism of the one step, from diagnose's JSON, as
# "KEY=VALUE ..." of each side's numbers (null where absent).
pair_numbers() { # DB
	"$FSPRISM" diagnose "$1" --format json >"$T/dx.json" || return 1
	sqlite3 :memory: "SELECT 'a_dev=' || json_extract(v.value, '\$.a_numbers.device_view') ||
		' b_dev=' || json_extract(v.value, '\$.b_numbers.device_view') ||
		' a_req=' || ifnull(json_extract(v.value, '\$.a_numbers.dev_per_io'), 'null') ||
		' b_req=' || ifnull(json_extract(v.value, '\$.b_numbers.dev_per_io'), 'null') ||
		' a_bytes=' || ifnull(json_extract(v.value, '\$.a_numbers.dev_bytes'), 'null') ||
		' b_bytes=' || ifnull(json_extract(v.value, '\$.b_numbers.dev_bytes'), 'null') ||
		' a_seq=' || ifnull(json_extract(v.value, '\$.a_numbers.read_seq'), 'null') ||
		' b_seq=' || ifnull(json_extract(v.value, '\$.b_numbers.read_seq'), 'null')
		FROM json_each(readfile('$T/dx.json'), '\$.verdicts') v
		WHERE json_extract(v.value, '\$.a') = 'fs' AND json_extract(v.value, '\$.b') = 'fsprism'"
}
val() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# within REL of each other (both numbers)
near() { # X Y REL
	awk -v x="$1" -v y="$2" -v r="$3" 'BEGIN {
		if (x == "null" || y == "null" || x <= 0 || y <= 0) exit 1
		d = x > y ? x / y - 1 : y / x - 1; exit !(d <= r) }'
}

# ---- traced (the default): the mount's trace is fsprism's device view ----
# shellcheck disable=SC2086
"$FSPRISM" compare --db "$T/seq.db" $SIZES --targets raw,fs,fsprism --mix=100 --rounds 3 --details \
	>"$T/seq.out" 2>"$T/seq.err"
rc=$?
expect_eq "seq read: compare exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$T/seq.err"
traced=$(sqlite3 "$T/seq.db" "SELECT count(*) FROM runs r WHERE r.label = 'fsprism-fuse'
	AND (SELECT count(*) FROM block_ios b WHERE b.run = r.id) > 0")
expect_eq "seq read: each round's fsprism mount traced its backing device" 3 "$traced"
n=$(pair_numbers "$T/seq.db")
echo "# fs -> fsprism: $n"
expect_eq "seq read: the fs target has a device view" 1 "$(val "$n" a_dev)"
expect_eq "seq read: the fsprism target has a device view" 1 "$(val "$n" b_dev)"
check "seq read: fsprism's device requests per user IO > 0 ($(val "$n" b_req))" \
	awk -v x="$(val "$n" b_req)" 'BEGIN {exit !(x != "null" && x > 0)}'
check "seq read: fsprism's read sequentiality is present ($(val "$n" b_seq))" \
	awk -v x="$(val "$n" b_seq)" 'BEGIN {exit !(x != "null" && x >= 0)}'
# the same device, file and pattern: requests per IO and their size within 10%,
# the sequential share of the reads within 10 points
check "seq read: requests per IO agree, fs $(val "$n" a_req), fsprism $(val "$n" b_req) (10%)" \
	near "$(val "$n" a_req)" "$(val "$n" b_req)" 0.10
check "seq read: request size agrees, fs $(val "$n" a_bytes), fsprism $(val "$n" b_bytes) (10%)" \
	near "$(val "$n" a_bytes)" "$(val "$n" b_bytes)" 0.10
check "seq read: read sequentiality agrees, fs $(val "$n" a_seq), fsprism $(val "$n" b_seq) (0.10)" \
	awk -v x="$(val "$n" a_seq)" -v y="$(val "$n" b_seq)" \
	'BEGIN {exit !(x != "null" && y != "null" && x - y <= 0.10 && y - x <= 0.10)}'
check "seq read: the device pattern is the same, so not a device-side owner" \
	grep -q "ext4 -> fsprism *\(fuse-transport\|noise\)" "$T/seq.out"

# ---- not traced (--no-trace): no device view, as before ----
# shellcheck disable=SC2086
"$FSPRISM" compare --db "$T/nt.db" $SIZES --targets fs,fsprism --mix=100 --no-trace \
	>"$T/nt.out" 2>"$T/nt.err"
rc=$?
expect_eq "no trace: compare exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$T/nt.err"
n=$(pair_numbers "$T/nt.db")
echo "# fs -> fsprism: $n"
expect_eq "no trace: the fsprism target has no device view" 0 "$(val "$n" b_dev)"
expect_eq "no trace: nor its requests per IO" null "$(val "$n" b_req)"
left=$(losetup -a | grep -F "$TMPDIR" || true)$(grep -F "$TMPDIR/" /proc/mounts || true)
expect_eq "nothing left mounted or attached" "" "$left"

fsp_done

#!/bin/sh
# it_stall.sh - stalls and outliers named (docs/prism.md, "Stalls and
# outliers") with a real cause injected: a compare of the raw device and an
# fsprism mount on the embedded default, one step at QD 1 with 10% writes,
# every write of the mount delayed 250 ms in its handler (--inject
# 'op=write,delay=250ms'). At QD 1 nothing else is in flight while a write
# waits, so every whole 100 ms bucket under a delayed write completes
# nothing: `stats --run` of the fsprism target names a stall whose longest
# IO is a write of at least 250 ms spending at least 90% in the part
# `inject`. The raw target, not delayed, has no finding naming inject (a
# real disk may stall on its own: only the injected layer is asserted
# absent). The findings are the same in JSON and the table.
. "$TESTS_SRCDIR/lib.sh"

command -v mkfs.ext4 >/dev/null || fsp_skip "mkfs.ext4 missing"
fsp_tmpdir_tmpfs 512M
DB=$T/s.db
fsp_compare inj "$DB" --size=256M --time=300ms --span=32M --targets raw,fsprism \
	--qd=1 --mix=90 --inject 'op=write,delay=250ms'
run_of() { sqlite3 "$DB" "SELECT id FROM runs WHERE kind='run' AND label='$1' ORDER BY id DESC LIMIT 1"; }
fr=$(run_of fsprism)
rr=$(run_of raw)
echo "# engine runs: raw ${rr:-?}, fsprism ${fr:-?}"

# findings RUN: one line per finding of stats' JSON: kind part share io_ms
# at_ms duration_ms buckets op
findings() {
	"$FSPRISM" stats "$DB" --run "$1" --format json >"$T/j.$1" 2>"$T/e.$1" || {
		echo "stats-failed"; return; }
	python3 - "$T/j.$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for s in d.get("stalls", ["no-section"]):
    if s == "no-section":
        print(s); continue
    print(s["kind"], s["part"], "%.3f" % s["part_share"], "%.1f" % (s["io_us"] / 1e3),
          "%.1f" % s["at_ms"], "%.1f" % s["duration_ms"], s["zero_buckets"], s["op"])
PY
}
findings "${fr:-0}" >"$T/f.fsprism"
findings "${rr:-0}" >"$T/f.raw"
sed 's/^/# fsprism: /' "$T/f.fsprism"
sed 's/^/# raw: /' "$T/f.raw"
check "the fsprism target has a stall finding" grep -q '^zero ' "$T/f.fsprism"
check "... whose longest IO is a delayed write (>= 250 ms) held >= 90% in inject" \
	awk '$1 == "zero" && $2 == "inject" && $3 >= 0.9 && $4 >= 250 && $8 == "write" {f=1}
	     END {exit !f}' "$T/f.fsprism"
check "... of whole buckets inside that write (100 to 250 ms, 1 or 2 buckets)" \
	awk '$1 == "zero" && $2 == "inject" {n++; if ($6 < 100 || $6 > 250 || $7 < 1 || $7 > 2) bad=1}
	     END {exit !(n && !bad)}' "$T/f.fsprism"
check "the raw target's stats have the section" sh -c "! grep -q 'no-section\|stats-failed' '$T/f.raw'"
check "the raw target has no finding naming inject" sh -c "! grep -q ' inject ' '$T/f.raw'"
"$FSPRISM" stats "$DB" --run "${fr:-0}" >"$T/t.fsprism" 2>&1
check "the table says it for a person" grep -q \
	"^  step 0 (.*): [0-9]* ms at zero throughput from [0-9]* ms (. buckets\?); the longest IO, a write of [0-9]* ms (of 1 in flight), spent [0-9]*% in inject" \
	"$T/t.fsprism"
fsp_nothing_left "$T/tmp" "compare --inject"
fsp_done

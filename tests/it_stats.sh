#!/bin/sh
# it_stats.sh - `fsprism stats` on real databases: one written by hand with
# the sqlite3 CLI (known histograms, so every number printed is checked),
# one written by a real fsprism mount, and every bad input.
. "$TESTS_SRCDIR/lib.sh"

SCHEMA_H="$TESTS_SRCDIR/../src/schema.h"
DOC="$TESTS_SRCDIR/../docs/schema.md"
VERSION=$(sed -n 's/^#define FSP_SCHEMA_VERSION \([0-9]*\).*/\1/p' "$SCHEMA_H")

# The schema, straight from the C header the program uses.
schema_sql() {
	sed -n '/^#define FSP_SCHEMA_SQL/,/^$/p' "$SCHEMA_H" |
		sed -n 's/^"\(.*\)\\n" *\\\{0,1\}$/\1/p'
	echo "PRAGMA user_version=$VERSION;"
}

# --- a database with known histograms -------------------------------------
DB=$T/hand.db
{
	schema_sql
	cat <<'EOF'
INSERT INTO runs(id, kind, backing_path, backing_device, backing_fstype,
  record_mode, started_at, started_ns, ended_ns, recorded, dropped)
  VALUES(1, 'mount', '/srv/backing dir', '/dev/loop7', 'ext4', 'sample:10',
  '2026-11-30T08:00:00.000Z', 1000000000, 3000000000, 100, 7);
-- read: 50 x 100 ns, 49 x 200 ns, 1 x 1000 ns (exact buckets below 256 ns,
-- 1000 ns is bucket [1000,1003]); backing all 100 ns; layer the rest
INSERT INTO hist VALUES(1, 0, 13, 0, 100, 15800, 100, 1000, 4000000, 2);
INSERT INTO hist_bins VALUES(1, 0, 13, 0, 100, 100, 50);
INSERT INTO hist_bins VALUES(1, 0, 13, 0, 200, 200, 49);
INSERT INTO hist_bins VALUES(1, 0, 13, 0, 1000, 1003, 1);
INSERT INTO hist VALUES(1, 0, 13, 1, 100, 10000, 100, 100, 4000000, 2);
INSERT INTO hist_bins VALUES(1, 0, 13, 1, 100, 100, 100);
INSERT INTO hist VALUES(1, 0, 13, 2, 100, 5800, 0, 900, 4000000, 2);
INSERT INTO hist_bins VALUES(1, 0, 13, 2, 0, 0, 50);
INSERT INTO hist_bins VALUES(1, 0, 13, 2, 100, 100, 49);
INSERT INTO hist_bins VALUES(1, 0, 13, 2, 900, 903, 1);
-- getattr: one op of 5 us everywhere
INSERT INTO hist VALUES(1, 0, 2, 0, 1, 5000, 5000, 5000, 0, 0);
INSERT INTO hist_bins VALUES(1, 0, 2, 0, 4992, 5023, 1);
INSERT INTO hist VALUES(1, 0, 2, 1, 1, 5000, 5000, 5000, 0, 0);
INSERT INTO hist_bins VALUES(1, 0, 2, 1, 4992, 5023, 1);
INSERT INTO hist VALUES(1, 0, 2, 2, 1, 0, 0, 0, 0, 0);
INSERT INTO hist_bins VALUES(1, 0, 2, 2, 0, 0, 1);
-- run 2: a job run with two labelled steps
INSERT INTO runs(id, kind, backing_path, record_mode, started_ns, ended_ns)
  VALUES(2, 'run', '/dev/loop9', 'hist', 0, 10000000000);
INSERT INTO steps(run, step, label, started_ns, ended_ns) VALUES(2, 1, 'qd1', 0, 4000000000);
INSERT INTO steps(run, step, label, started_ns, ended_ns) VALUES(2, 2, 'qd32', 4000000000, 5000000000);
INSERT INTO hist VALUES(2, 1, 13, 0, 10, 1000000, 100000, 100000, 40960, 0);
INSERT INTO hist_bins VALUES(2, 1, 13, 0, 99840, 100351, 10);
INSERT INTO hist VALUES(2, 2, 13, 0, 20, 4000000, 200000, 200000, 81920, 0);
INSERT INTO hist_bins VALUES(2, 2, 13, 0, 199680, 200703, 20);
EOF
} | sqlite3 "$DB" || not_ok "could not build the hand-made database"

out=$("$FSPRISM" stats "$DB" --run 1)
expect_eq "table exits 0" 0 $?
echo "$out"
echo "$out" | grep -q "dropped 7 records" && ok "table prints dropped count" ||
	not_ok "table prints dropped count"
echo "$out" | grep -q "record sample:10" && ok "table prints record mode" ||
	not_ok "table prints record mode"
echo "$out" | grep -q "/dev/loop7 (ext4)" && ok "table prints device and fstype" ||
	not_ok "table prints device and fstype"
echo "$out" | grep -q "duration 2.000 s" && ok "table prints duration" ||
	not_ok "table prints duration"
# read total: count 100, 3.8 MiB, 2.00 MB/s (4e6 B / 2 s), 2 errors,
# mean 0.158 us, p50 0.10, p90 0.20, p99 0.20, p99.9 = max = 1.00
line=$(echo "$out" | grep '^read ')
expect_eq "table read/total line" \
	"read 100 3.8 MiB 2.00 2 total 0.16 0.10 0.20 0.20 1.00 1.00" \
	"$(echo "$line" | tr -s ' ')"
expect_eq "table has 3 layer lines per op" 6 \
	"$(echo "$out" | grep -cE ' (total|backing|layer) +[0-9.]+ ')"
echo "$out" | grep -q -- "-- step" && not_ok "single-step run shows step grouping" ||
	ok "single-step run shows no step grouping"
wide=$(echo "$out" | awk '{ if (length($0) > 120) n++ } END { print n + 0 }')
expect_eq "table fits 120 columns" 0 "$wide"

csv=$("$FSPRISM" stats "$DB" --run 1 --format csv)
expect_eq "csv exits 0" 0 $?
expect_eq "csv header" \
	"run,step,op,layer,count,bytes,mb_per_s,errors,mean_us,p50_us,p90_us,p99_us,p999_us,max_us" \
	"$(echo "$csv" | head -1)"
expect_eq "csv rows: one per (step, op, layer)" 6 "$(echo "$csv" | tail -n +2 | wc -l)"
expect_eq "csv read/total" "1,0,read,total,100,4000000,2.000,2,0.158,0.100,0.200,0.200,1.000,1.000" \
	"$(echo "$csv" | grep ',read,total,')"
expect_eq "csv read/layer" "1,0,read,layer,100,4000000,2.000,2,0.058,0.000,0.100,0.100,0.900,0.900" \
	"$(echo "$csv" | grep ',read,layer,')"
# 5000 ns sits in bucket [4992,5023]; a single value reads back exactly (clamped to min=max)
expect_eq "csv getattr/total" "1,0,getattr,total,1,0,0.000,0,5.000,5.000,5.000,5.000,5.000,5.000" \
	"$(echo "$csv" | grep ',getattr,total,')"

"$FSPRISM" stats "$DB" --run=1 --format=json > "$T/s.json"
expect_eq "json exits 0" 0 $?
check "json is valid JSON" python3 -m json.tool "$T/s.json" > /dev/null
expect_eq "json fields" "7 100 0.2 mount /srv/backing dir" "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = [o for o in d["ops"] if o["op"] == "read"][0]
print(d["run"]["dropped"], r["count"], r["layers"]["total"]["p90_us"], d["run"]["kind"], d["run"]["backing_path"])
' "$T/s.json")"

# default run = the newest; a multi-step run is grouped by step, throughput per step
out=$("$FSPRISM" stats "$DB")
expect_eq "default run exits 0" 0 $?
echo "$out"
echo "$out" | grep -q "^run 2 (run)" && ok "default is the newest run" || not_ok "default is the newest run"
echo "$out" | grep -q -- "-- step 1: qd1 (4.000 s)" && echo "$out" | grep -q -- "-- step 2: qd32 (1.000 s)" &&
	ok "multi-step run grouped by step" || not_ok "multi-step run grouped by step"
# 40960 B over 4 s and 81920 B over 1 s
expect_eq "per-step throughput" "0.01 0.08" \
	"$(echo "$out" | awk '$1 == "read" { printf "%s%s", sep, $5; sep = " " }')"
"$FSPRISM" stats "$DB" --format json | python3 -m json.tool > /dev/null &&
	ok "multi-step json is valid" || not_ok "multi-step json is valid"

# The quantile query documented in docs/schema.md gives the same p90 (200 ns).
docq=$(sed -n '/^-- quantile-example-begin/,/^-- quantile-example-end/p' "$DOC")
if [ -n "$docq" ]; then
	p90=$(printf '%s\n' "$docq" | sed 's/:run/1/g; s/:step/0/g; s/:op/13/g; s/:layer/0/g; s/:q/0.9/g' |
		sqlite3 "$DB")
	expect_eq "docs/schema.md quantile query" 200 "$p90"
	p999=$(printf '%s\n' "$docq" | sed 's/:run/1/g; s/:step/0/g; s/:op/13/g; s/:layer/0/g; s/:q/0.999/g' |
		sqlite3 "$DB")
	expect_eq "docs/schema.md quantile query (top rank)" 1000 "$p999"
else
	not_ok "docs/schema.md has a quantile example query"
fi

# --- bad input --------------------------------------------------------------
# expect_fail DESC EXIT MESSAGE-REGEX CMD...: exits EXIT with one stderr line matching
expect_fail() {
	desc=$1 code=$2 re=$3; shift 3
	"$@" > "$T/out" 2> "$T/err"
	rc=$?
	if [ "$rc" = "$code" ] && [ "$(wc -l < "$T/err")" = 1 ] && grep -qE "$re" "$T/err" &&
		[ ! -s "$T/out" ]; then
		ok "$desc"
	else
		not_ok "$desc: exit $rc, stderr: $(cat "$T/err")"
	fi
}

expect_fail "missing database" 1 "^fsprism stats: no database at $T/none.db\$" \
	"$FSPRISM" stats "$T/none.db"
[ -e "$T/none.db" ] && not_ok "stats created a missing database" || ok "stats creates no database"
expect_fail "unknown run" 1 "^fsprism stats: no run 42 in .*hand.db\$" "$FSPRISM" stats "$DB" --run 42
expect_fail "bad run id" 2 "^fsprism stats: --run needs a positive run id, not 'abc'\$" \
	"$FSPRISM" stats "$DB" --run abc
expect_fail "bad format" 2 "^fsprism stats: unknown format 'xml' \(table, csv or json\)\$" \
	"$FSPRISM" stats "$DB" --format xml
expect_fail "unknown option" 2 "^fsprism stats: unknown option '--frobnicate'\$" \
	"$FSPRISM" stats "$DB" --frobnicate
expect_fail "no database argument" 2 "^fsprism stats: no database given" "$FSPRISM" stats
expect_fail "--run without value" 2 "^fsprism stats: --run needs a value\$" "$FSPRISM" stats "$DB" --run

sqlite3 "$T/v99.db" "CREATE TABLE runs(id); PRAGMA user_version=99;"
expect_fail "unknown schema version" 1 \
	"^fsprism stats: database $T/v99.db has schema version 99, this fsprism knows version $VERSION\$" \
	"$FSPRISM" stats "$T/v99.db"
expect_eq "unknown version database untouched" 99 "$(sqlite3 "$T/v99.db" 'PRAGMA user_version')"

echo "not a database, just text, long enough to be looked at as a header......" > "$T/text.db"
expect_fail "not a database" 1 "^fsprism stats: $T/text.db is not a SQLite database\$" \
	"$FSPRISM" stats "$T/text.db"

schema_sql | sqlite3 "$T/empty.db"
expect_fail "database without runs" 1 "^fsprism stats: no runs in $T/empty.db\$" \
	"$FSPRISM" stats "$T/empty.db"

# --- a database written by a real mount -------------------------------------
if "$FSPRISM" mount --help > /dev/null 2>&1; then
	mkdir -p "$T/back" "$T/mnt"
	if fsp_mount "$T/back" "$T/mnt" --log "$T/mount.db" --record full; then
		dd if=/dev/zero of="$T/mnt/f" bs=64k count=16 oflag=direct status=none
		dd if="$T/mnt/f" of=/dev/null bs=4k count=100 iflag=direct status=none
		fsp_umount "$T/mnt"
		csv=$("$FSPRISM" stats "$T/mount.db" --format csv)
		expect_eq "mount: 16 direct writes of 64 KiB" "16,1048576" \
			"$(echo "$csv" | awk -F, '$3 == "write" && $4 == "total" { print $5 "," $6 }')"
		expect_eq "mount: 100 direct reads of 4 KiB" "100,409600" \
			"$(echo "$csv" | awk -F, '$3 == "read" && $4 == "total" { print $5 "," $6 }')"
		expect_eq "mount: histogram counts equal stored rows" \
			"$(sqlite3 "$T/mount.db" 'SELECT count(*) FROM ops')" \
			"$(sqlite3 "$T/mount.db" 'SELECT sum(count) FROM hist WHERE layer=0')"
		expect_eq "mount: nothing dropped" 0 "$(sqlite3 "$T/mount.db" 'SELECT dropped FROM runs')"
		"$FSPRISM" stats "$T/mount.db" | grep -q "dropped 0 records" &&
			ok "mount: table prints dropped 0" || not_ok "mount: table prints dropped 0"
	else
		not_ok "fsprism mount for the stats test"
	fi
else
	echo "# fsprism mount not available yet: real-mount part not run"
fi

fsp_done

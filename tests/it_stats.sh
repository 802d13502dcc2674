#!/bin/sh
# it_stats.sh - `fsprism stats` on real databases: one written by hand with
# the sqlite3 CLI (known histograms, so every number printed is checked),
# one of an emulated mount made from a generated workload of user and
# device operations (the device-level accounting stats prints is checked
# against the same numbers computed here from the op rows), one written by
# a real fsprism mount, and every bad input.
FSP_ROOT_LATER=1 # everything before the real mount needs no root
. "$TESTS_SRCDIR/lib.sh"

SCHEMA_H="$TESTS_SRCDIR/../src/db/schema.h"
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
INSERT INTO hist(run, step, op, layer, count, sum_ns, min_ns, max_ns, bytes, errors) VALUES(1, 0, 13, 0, 100, 15800, 100, 1000, 4000000, 2);
INSERT INTO hist_bins VALUES(1, 0, 13, 0, 100, 100, 50);
INSERT INTO hist_bins VALUES(1, 0, 13, 0, 200, 200, 49);
INSERT INTO hist_bins VALUES(1, 0, 13, 0, 1000, 1003, 1);
INSERT INTO hist(run, step, op, layer, count, sum_ns, min_ns, max_ns, bytes, errors) VALUES(1, 0, 13, 1, 100, 10000, 100, 100, 4000000, 2);
INSERT INTO hist_bins VALUES(1, 0, 13, 1, 100, 100, 100);
INSERT INTO hist(run, step, op, layer, count, sum_ns, min_ns, max_ns, bytes, errors) VALUES(1, 0, 13, 2, 100, 5800, 0, 900, 4000000, 2);
INSERT INTO hist_bins VALUES(1, 0, 13, 2, 0, 0, 50);
INSERT INTO hist_bins VALUES(1, 0, 13, 2, 100, 100, 49);
INSERT INTO hist_bins VALUES(1, 0, 13, 2, 900, 903, 1);
-- getattr: one op of 5 us everywhere
INSERT INTO hist(run, step, op, layer, count, sum_ns, min_ns, max_ns, bytes, errors) VALUES(1, 0, 2, 0, 1, 5000, 5000, 5000, 0, 0);
INSERT INTO hist_bins VALUES(1, 0, 2, 0, 4992, 5023, 1);
INSERT INTO hist(run, step, op, layer, count, sum_ns, min_ns, max_ns, bytes, errors) VALUES(1, 0, 2, 1, 1, 5000, 5000, 5000, 0, 0);
INSERT INTO hist_bins VALUES(1, 0, 2, 1, 4992, 5023, 1);
INSERT INTO hist(run, step, op, layer, count, sum_ns, min_ns, max_ns, bytes, errors) VALUES(1, 0, 2, 2, 1, 0, 0, 0, 0, 0);
INSERT INTO hist_bins VALUES(1, 0, 2, 2, 0, 0, 1);
-- run 2: a job run with two labelled steps
INSERT INTO runs(id, kind, backing_path, record_mode, started_ns, ended_ns)
  VALUES(2, 'run', '/dev/loop9', 'hist', 0, 10000000000);
INSERT INTO steps(run, step, label, started_ns, ended_ns) VALUES(2, 1, 'qd1', 0, 4000000000);
INSERT INTO steps(run, step, label, started_ns, ended_ns) VALUES(2, 2, 'qd32', 4000000000, 5000000000);
INSERT INTO hist(run, step, op, layer, count, sum_ns, min_ns, max_ns, bytes, errors) VALUES(2, 1, 13, 0, 10, 1000000, 100000, 100000, 40960, 0);
INSERT INTO hist_bins VALUES(2, 1, 13, 0, 99840, 100351, 10);
INSERT INTO hist(run, step, op, layer, count, sum_ns, min_ns, max_ns, bytes, errors) VALUES(2, 2, 13, 0, 20, 4000000, 200000, 200000, 81920, 0);
INSERT INTO hist_bins VALUES(2, 2, 13, 0, 199680, 200703, 20);
-- as the engine stores them: backing = total, layer 0 (not a split)
INSERT INTO hist(run, step, op, layer, count, sum_ns, min_ns, max_ns, bytes, errors) VALUES(2, 1, 13, 1, 10, 1000000, 100000, 100000, 40960, 0);
INSERT INTO hist_bins VALUES(2, 1, 13, 1, 99840, 100351, 10);
INSERT INTO hist(run, step, op, layer, count, sum_ns, min_ns, max_ns, bytes, errors) VALUES(2, 1, 13, 2, 10, 0, 0, 0, 40960, 0);
INSERT INTO hist_bins VALUES(2, 1, 13, 2, 0, 0, 10);
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
expect_eq "table read/total line (p90 only with --wide)" \
	"read 100 3.8 MiB 2.00 2 total 0.16 0.10 0.20 1.00 1.00" \
	"$(echo "$line" | tr -s ' ')"
expect_eq "--wide read/total line has p90" \
	"read 100 3.8 MiB 2.00 2 total 0.16 0.10 0.20 0.20 1.00 1.00" \
	"$("$FSPRISM" stats "$DB" --run 1 --wide | grep '^read ' | tr -s ' ')"
expect_eq "table fits 100 columns" "" "$(echo "$out" | awk 'length($0) > 100')"
expect_eq "table has 3 layer lines per op" 6 \
	"$(echo "$out" | grep -cE ' (total|backing|layer) +[0-9.]+ ')"
echo "$out" | grep -q -- "-- step" && not_ok "single-step run shows step grouping" ||
	ok "single-step run shows no step grouping"
wide=$(echo "$out" | awk '{ if (length($0) > 120) n++ } END { print n + 0 }')
expect_eq "table fits 120 columns" 0 "$wide"

csv=$("$FSPRISM" stats "$DB" --run 1 --format csv)
expect_eq "csv exits 0" 0 $?
expect_eq "csv header" \
	"run,step,op,layer,count,bytes,mb_per_s,errors,mean_us,p50_us,p90_us,p99_us,p999_us,max_us,expected,step_label,target" \
	"$(echo "$csv" | head -1)"
expect_eq "csv rows: one per (step, op, layer)" 6 "$(echo "$csv" | tail -n +2 | wc -l)"
expect_eq "csv read/total" "1,0,read,total,100,4000000,2.000,2,0.158,0.100,0.200,0.200,1.000,1.000,0,," \
	"$(echo "$csv" | grep ',read,total,')"
expect_eq "csv read/layer" "1,0,read,layer,100,4000000,2.000,2,0.058,0.000,0.100,0.100,0.900,0.900,0,," \
	"$(echo "$csv" | grep ',read,layer,')"
# 5000 ns sits in bucket [4992,5023]; a single value reads back exactly (clamped to min=max)
expect_eq "csv getattr/total" "1,0,getattr,total,1,0,0.000,0,5.000,5.000,5.000,5.000,5.000,5.000,0,," \
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
# an engine run has no backing or layer split: only total, in every format
expect_eq "engine run: no backing or layer line" 0 "$(echo "$out" | grep -cE ' (backing|layer) +[0-9.]+ ')"
echo "$out" | grep -q "total = the engine's submission to completion" &&
	ok "engine run: the header says what total is" || not_ok "engine run: the header says what total is"
expect_eq "engine run: csv has total rows only" "total total" \
	"$("$FSPRISM" stats "$DB" --format csv | awk -F, 'NR > 1 && $1 == 2 { printf "%s%s", sep, $4; sep = " " }')"
expect_eq "csv carries the step labels of a multi-step run" "qd1 qd32" \
	"$("$FSPRISM" stats "$DB" --run 2 --format csv | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "step_label") k = i }
		NR > 1 { printf "%s%s", sep, $k; sep = " " }')"
expect_eq "engine run: json has the total layer only" "total;total" "$("$FSPRISM" stats "$DB" --format json |
	python3 -c 'import json,sys; d = json.load(sys.stdin); print(";".join(",".join(r["layers"]) for r in d["ops"]))')"

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

# The hand-made mount has no emulation: no emu layer, no Emulation section.
out=$("$FSPRISM" stats "$DB" --run 1)
echo "$out" | grep -qE ' emu +[0-9.]+ |^Emulation' && not_ok "plain run shows emulation" ||
	ok "plain run shows no emu layer and no Emulation section"

# --- an emulated mount: device rows, emu files -------------------------------
# A seeded workload in the shape of a copy-on-write + journal store: user
# writes, copy_file_range and fsyncs, and the device IOs they cause (data at
# a moving frontier, journal blocks, metadata, checkpoints, flushes, reads),
# some of them from background commits (cause_ns 0). The op rows are the
# ground truth; the histograms are built from them with SQL (latencies under
# 256 ns, so each value is its own bucket), as fsprism's oplog would.
EDB=$T/emu.db
{
	schema_sql
	python3 - <<'PY'
import random
r = random.Random(4)
OP = {n: i for i, n in enumerate("""lookup forget getattr setattr readlink mknod mkdir
 unlink rmdir symlink rename link open read write flush release fsync opendir readdir
 readdirplus releasedir fsyncdir statfs setxattr getxattr listxattr removexattr access
 create getlk setlk flock fallocate copy_file_range lseek dev_read dev_write_data
 dev_write_journal dev_write_meta dev_write_ckpt dev_flush""".split())}
# op numbers are stored in databases and never change: this list is also a check
for name, num in OP.items():
    print("INSERT INTO op_names VALUES(%d, '%s');" % (num, name))
print("INSERT INTO runs(id, kind, backing_path, record_mode, started_ns, ended_ns, recorded)"
      " VALUES(1, 'mount', '/srv/b', 'full', 0, 4000000000, 0);")
rows = []
t = 1000
def row(op, pid, off, length, nbytes, cause):
    global t
    t += r.randint(1, 50)
    total = r.randint(60, 255)
    backing = r.randint(0, total)
    emu = r.randint(0, 120)        # sometimes backing + emu > total: layer clamps
    layer = max(total - backing - emu, 0)
    rows.append((OP[op], r.randint(1, 9), pid, off, length, nbytes, t, total, backing,
                 layer, emu, cause))
    return t
frontier, jpos = 1 << 24, 1 << 20
for i in range(300):
    pid = r.choice([101, 102, 103])
    k = r.random()
    if k < 0.55 or k >= 0.9:
        op = "write" if k < 0.55 else "copy_file_range"
        n = 4096 * r.randint(1, 16) - r.choice([0, 0, 100])
        start = row(op, pid, r.randint(0, 1000) * 4096, n, n, 0)
        if r.random() < 0.2:
            row("dev_read", pid, frontier - 8192, 4096, 4096, start)   # read-modify-write
        m = (n + 4095) // 4096 * 4096
        row("dev_write_data", pid, frontier, m, m, start)
        frontier += m
    else:
        start = row("fsync", pid, 0, 0, 0, 0)
        nj = r.randint(1, 4)
        row("dev_write_journal", pid, jpos, 4096 * nj, 4096 * nj, start)
        jpos += 4096 * nj
        row("dev_flush", pid, 0, 0, 0, start)
        row("dev_write_journal", pid, jpos, 4096, 4096, start)     # commit block, FUA
        jpos += 4096
        if r.random() < 0.5:
            row("dev_flush", pid, 0, 0, 0, start)
    if r.random() < 0.05:                                          # background commit
        row("dev_write_meta", 0, r.randint(64, 4000) * 4096, 4096, 4096, 0)
        row("dev_write_meta", 0, r.randint(64, 4000) * 4096, 4096, 4096, 0)
        row("dev_flush", 0, 0, 0, 0, 0)
        row("dev_write_ckpt", 0, 4096, 4096, 4096, 0)
for x in rows:
    print("INSERT INTO ops(run, step, op, node, pid, offset, length, bytes, result, start_ns,"
          " total_ns, backing_ns, layer_ns, emu_ns, cause_ns) VALUES(1, 0, %d, %d, %d, %d,"
          " %d, %d, 0, %d, %d, %d, %d, %d, %d);" % x)
# device sequentiality as the store would report it (the 32 most recent ends)
ios = seq = 0
ends = []
for x in rows:
    if x[0] >= OP["dev_read"] and x[0] != OP["dev_flush"]:
        ios += 1
        seq += x[3] in ends
        ends = (ends + [x[3] + x[4]])[-32:]
for k, v in [("emu.store", "/srv/b/.fsprism-store"), ("emu.cow", "always"),
             ("emu.journal", "ordered"), ("emu.alloc", "next-fit"), ("emu.formatted", "0"),
             ("emu.clean", "0"), ("emu.replay.end", "incomplete"), ("emu.replay.txns", "3"),
             ("emu.replay.blocks", "12"), ("emu.replay.discarded", "1"),
             ("emu.damaged_objects", "0"), ("emu.bitmap_mismatches", "0"),
             ("dev.ios", ios), ("dev.seq_ios", seq), ("dev.streams_x1000", 1375)]:
    print("INSERT INTO run_attrs VALUES(1, '%s', '%s');" % (k, v))
# files (paths relative to the mount, as the mount stores them): a fragmented
# one (a space and quotes in its name), a one-extent one, an empty one, and
# one whose path is not known
files = [(5001, "d/frag \"x\" file", 30), (5002, "d/seq", 1), (5003, "empty", 0),
         (4999, "", 2)]
for obj, path, n in files:
    log = 0
    alloc = 0
    for e in range(n):
        length = 4096 * r.randint(1, 8)
        print("INSERT INTO emu_extents VALUES(1, %d, %d, %d, %d);"
              % (obj, log, (1 << 24) + r.randint(0, 10000) * 4096, length))
        log += length + 4096 * r.randint(0, 1)  # holes between some extents
        alloc += length
    print("INSERT INTO emu_files VALUES(1, %d, '%s', %d, %d, %d);"
          % (obj, path.replace("'", "''"), log, alloc, n))
PY
	# the four layers' histograms, from the rows
	for l in 0:total_ns 1:backing_ns 2:layer_ns 3:emu_ns; do
		c=${l#*:} n=${l%%:*}
		echo "INSERT INTO hist SELECT run, step, op, $n, count(*), sum($c), min($c), max($c),"
		echo "  sum(bytes), sum(result != 0), 0 FROM ops GROUP BY run, step, op;"
		echo "INSERT INTO hist_bins SELECT run, step, op, $n, $c, $c, count(*) FROM ops"
		echo "  GROUP BY run, step, op, $c;"
	done
} | sqlite3 "$EDB" || not_ok "could not build the emulated-mount database"

eq() { sqlite3 "$EDB" "$1"; }
OPS="SELECT op FROM op_names WHERE name"
# expected numbers, from the op rows (the program reads only histograms and attributes)
USER=$(eq "SELECT sum(bytes) FROM ops WHERE op IN ($OPS IN ('write', 'copy_file_range'))")
kind_bytes() { eq "SELECT coalesce(sum(bytes), 0) FROM ops WHERE op = ($OPS = '$1')"; }
kind_count() { eq "SELECT count(*) FROM ops WHERE op = ($OPS = '$1')"; }
wa() { awk -v a="$1" -v b="$USER" 'BEGIN { printf "%.3f", a / b }'; }
FLUSHES=$(kind_count dev_flush)
FSYNCS=$(kind_count fsync)
IOS=$(eq "SELECT value FROM run_attrs WHERE key = 'dev.ios'")
SEQ=$(eq "SELECT value FROM run_attrs WHERE key = 'dev.seq_ios'")
# the attributes must agree with the rows they were computed from
expect_eq "emu db: dev.ios equals the device read/write rows" "$IOS" \
	"$(eq "SELECT count(*) FROM ops WHERE op >= ($OPS = 'dev_read') AND op != ($OPS = 'dev_flush')")"
[ "$USER" -gt 0 ] && [ "$FSYNCS" -gt 0 ] && [ "$SEQ" -gt 0 ] && [ "$SEQ" -lt "$IOS" ] &&
	ok "emu db: workload has user writes, fsyncs and partly sequential device IO" ||
	not_ok "emu db: degenerate workload (user $USER fsyncs $FSYNCS seq $SEQ/$IOS)"

out=$("$FSPRISM" stats "$EDB")
expect_eq "emu table exits 0" 0 $?
echo "$out"
echo "$out" | grep -q "total = backing + emu" && ok "emu table: header names the emu layer" ||
	not_ok "emu table: header names the emu layer"
nops=$(eq "SELECT count(DISTINCT op) FROM ops")
expect_eq "emu table: 4 layer lines per op, device ops included" $((4 * nops)) \
	"$(echo "$out" | sed '/^Emulation/q' | grep -cE ' (total|backing|emu|layer) +[0-9.]+ ')"
wide=$("$FSPRISM" stats "$EDB" --wide)
for op in dev_read dev_write_data dev_write_journal dev_write_meta dev_write_ckpt dev_flush; do
	expect_eq "emu table --wide: $op count" "$(kind_count $op)" \
		"$(echo "$wide" | awk -v op=$op '$1 == op && $0 ~ / total / { print $2 }')"
	# 100 columns: a name longer than the op column stands above its numbers
	expect_eq "emu table: $op count" "$(kind_count $op)" \
		"$(echo "$out" | awk -v op=$op 'name && / total / { print $1; exit }
			{ name = ($1 == op && NF == 1) || ($1 == op && / total /) }
			$1 == op && / total / { print $2; exit }')"
done
expect_eq "emu table's op rows fit 100 columns" "" \
	"$(echo "$out" | sed '/^Emulation/q' | awk 'length($0) > 100')"
expect_eq "emu table: user bytes written" "$USER" \
	"$(echo "$out" | sed -n 's/^  user bytes written (write + copy_file_range): \([0-9]*\) .*/\1/p')"
tw=0 tb=0
for k in data:dev_write_data journal:dev_write_journal metadata:dev_write_meta \
	checkpoint:dev_write_ckpt; do
	name=${k%%:*} op=${k#*:}
	b=$(kind_bytes $op) c=$(kind_count $op)
	tw=$((tw + c)) tb=$((tb + b))
	expect_eq "emu table: $name writes, bytes, amplification" "$c $b $(wa "$b")" \
		"$(echo "$out" | awk -v k=$name '$1 == k && NF == 4 { print $2, $3, $4 }')"
done
expect_eq "emu table: total writes, bytes, amplification" "$tw $tb $(wa "$tb")" \
	"$(echo "$out" | awk '$1 == "total" && NF == 4 { print $2, $3, $4 }')"
expect_eq "emu table: device reads" "$(kind_count dev_read), $(kind_bytes dev_read) bytes" \
	"$(echo "$out" | sed -n 's/^  device reads //p')"
expect_eq "emu table: flushes per fsync" \
	"flushes $FLUSHES, user fsyncs $FSYNCS, flushes per fsync $(awk -v a=$FLUSHES -v b=$FSYNCS 'BEGIN { printf "%.3f", a / b }')" \
	"$(echo "$out" | sed -n 's/^  \(flushes .*\)/\1/p')"
expect_eq "emu table: device IOs, sequential share, streams" \
	"device IOs $IOS, sequential $SEQ ($(awk -v a=$SEQ -v b=$IOS 'BEGIN { printf "%.1f", 100 * a / b }')%), streams 1.375" \
	"$(echo "$out" | sed -n 's/^  \(device IOs [^(]*([^)]*), streams [0-9.]*\).*/\1/p')"
echo "$out" | grep -q "NOT closed cleanly" && ok "emu table: store not closed cleanly" ||
	not_ok "emu table: store not closed cleanly"
echo "$out" | grep -q "journal replay: ended at incomplete, 3 transactions (12 blocks) replayed, 1 discarded" &&
	ok "emu table: replay report" || not_ok "emu table: replay report"
expect_eq "emu table: files with extent counts" \
	"$(eq "SELECT obj || ' ' || extents || ' ' || coalesce(nullif(path, ''), '(no path)')
	       FROM emu_files ORDER BY path = '', path")" \
	"$(echo "$out" | awk '/^  +obj +size/ { f = 1; next } f && NF >= 5 && $1 ~ /^[0-9]+$/ {
		p = $0; sub(/^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+  /, "", p); print $1, $4, p }')"
wide=$(echo "$out" | awk '{ if (length($0) > 120) n++ } END { print n + 0 }')
expect_eq "emu table fits 120 columns" 0 "$wide"

# --extents: one line per extent, logical..end physical..end length, per file
out=$("$FSPRISM" stats "$EDB" --extents)
expect_eq "extents exits 0" 0 $?
echo "$out" | sed -n '/^Extents/,$p' | head -12
expect_eq "extents: every extent listed, in bytes" \
	"$(eq "SELECT e.logical || '..' || (e.logical + e.length - 1) || ' ' || e.physical || '..' ||
	       (e.physical + e.length - 1) || ' ' || e.length FROM emu_extents e JOIN emu_files f
	       USING (run, obj) ORDER BY f.path = '', f.path, e.logical")" \
	"$(echo "$out" | sed -n '/^Extents/,$p' | awk '$1 ~ /^[0-9]+:$/ {
		gsub(/: /, ":"); gsub(/\.\. */, ".."); print $2, $3, $4 }' | tr -d ':')"
expect_eq "extents: a header per file with extents" \
	"d/frag \"x\" file (obj 5001)
d/seq (obj 5002)
(no path) (obj 4999)" \
	"$(echo "$out" | sed -n 's/^\(.* (obj [0-9]*)\): size [0-9]*, [0-9]* extents$/\1/p')"

# the same numbers in JSON
"$FSPRISM" stats "$EDB" --format json --extents > "$T/e.json"
expect_eq "emu json exits 0" 0 $?
check "emu json is valid JSON" python3 -m json.tool "$T/e.json" > /dev/null
res=$(python3 - "$T/e.json" "$EDB" <<'PY'
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))["emulation"]
db = sqlite3.connect(sys.argv[2])
q = lambda sql, *a: db.execute(sql, a).fetchone()[0]
op = lambda n: q("SELECT op FROM op_names WHERE name = ?", n)
kb = lambda n: q("SELECT coalesce(sum(bytes), 0) FROM ops WHERE op = ?", op(n))
kc = lambda n: q("SELECT count(*) FROM ops WHERE op = ?", op(n))
user = kb("write") + kb("copy_file_range")
bad = []
def same(what, got, want, tol=0.0):
    if got is None or abs(got - want) > tol:
        bad.append("%s: %r != %r" % (what, got, want))
same("user_write_bytes", d["user_write_bytes"], user)
kinds = {"data": "dev_write_data", "journal": "dev_write_journal",
         "metadata": "dev_write_meta", "checkpoint": "dev_write_ckpt"}
for k, o in kinds.items():
    same("wa " + k, d["write_amplification"][k], kb(o) / user, 0.0005)
    same("bytes " + k, d["device_bytes"][k], kb(o))
same("wa total", d["write_amplification"]["total"], sum(kb(o) for o in kinds.values()) / user, 0.0005)
same("flushes", d["flushes"], kc("dev_flush"))
same("fsyncs", d["fsyncs"], kc("fsync"))
same("flushes_per_fsync", d["flushes_per_fsync"], kc("dev_flush") / kc("fsync"), 0.0005)
ios = kc("dev_read") + sum(kc(o) for o in kinds.values())
attr = lambda k: int(q("SELECT value FROM run_attrs WHERE key = ?", k))
same("device ios", d["device"]["ios"], ios)
same("device seq_ios", d["device"]["seq_ios"], attr("dev.seq_ios"))
same("seq_share", d["device"]["seq_share"], attr("dev.seq_ios") / ios, 0.0005)
same("streams", d["device"]["streams"], attr("dev.streams_x1000") / 1000, 0.0005)
if d["attributes"].get("emu.replay.end") != "incomplete" or d["attributes"].get("emu.clean") != 0:
    bad.append("attributes: %r" % d["attributes"])
files = sorted((f["obj"], f["path"], f["size"], f["allocated"], f["extents"]) for f in d["files"])
want = sorted(db.execute("SELECT obj, path, size, allocated, extents FROM emu_files"))
if files != want:
    bad.append("files %r != %r" % (files, want))
ext = sorted((e["obj"], e["path"], e["logical"], e["physical"], e["length"]) for e in d["extents"])
want = sorted(db.execute("SELECT e.obj, f.path, e.logical, e.physical, e.length"
                         " FROM emu_extents e JOIN emu_files f USING (run, obj)"))
if ext != want:
    bad.append("extents differ (%d vs %d)" % (len(ext), len(want)))
print("; ".join(bad) if bad else "ok")
PY
)
expect_eq "emu json: accounting equals the op rows" ok "$res"

csv=$("$FSPRISM" stats "$EDB" --format csv)
expect_eq "emu csv: one row per (op, layer), emu included" $((4 * nops)) \
	"$(echo "$csv" | tail -n +2 | wc -l)"
expect_eq "emu csv: dev_write_data bytes" "$(kind_bytes dev_write_data)" \
	"$(echo "$csv" | awk -F, '$3 == "dev_write_data" && $4 == "emu" { print $6 }')"

# How a device row joins the operation that caused it (docs/schema.md runs
# this exact text): device IOs and bytes per causing op. Expected here by
# another route: start_ns is unique in this workload, so matching it alone
# (without the pid) finds the same causes.
docq=$(sed -n '/^-- cause-example-begin/,/^-- cause-example-end/p' "$DOC")
if [ -n "$docq" ]; then
	expect_eq "docs/schema.md cause query" \
		"$(eq "SELECT n.name || '|' || count(d.op) || '|' || sum(d.bytes) FROM ops d, ops u, op_names n
		       WHERE d.cause_ns = u.start_ns AND d.cause_ns != 0 AND n.op = u.op GROUP BY n.name
		       UNION ALL SELECT '(background)|' || count(*) || '|' || sum(bytes) FROM ops
		       WHERE cause_ns = 0 AND op >= ($OPS = 'dev_read')" | LC_ALL=C sort)" \
		"$(printf '%s\n' "$docq" | sed 's/:run/1/g' | sqlite3 "$EDB" | LC_ALL=C sort)"
else
	not_ok "docs/schema.md has a cause example query"
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
expect_fail "unknown option" 2 "^fsprism stats: unknown option '--frobnicate' \(see 'fsprism stats --help'\)\$" \
	"$FSPRISM" stats "$DB" --frobnicate
expect_fail "no database argument" 2 "^fsprism stats: no database given" "$FSPRISM" stats
expect_fail "--run without value" 2 "^fsprism stats: --run needs a value \(see 'fsprism stats --help'\)\$" \
	"$FSPRISM" stats "$DB" --run

sqlite3 "$T/v99.db" "CREATE TABLE runs(id); PRAGMA user_version=99;"
expect_fail "unknown schema version" 1 \
	"^fsprism stats: database $T/v99.db has schema version 99, this fsprism knows version $VERSION\$" \
	"$FSPRISM" stats "$T/v99.db"
expect_eq "unknown version database untouched" 99 "$(sqlite3 "$T/v99.db" 'PRAGMA user_version')"

# a database of the previous schema version (1) is refused, not migrated
sqlite3 "$T/v1.db" "CREATE TABLE ops(run, step, op, layer_ns); PRAGMA user_version=1;"
expect_fail "schema version 1 refused" 1 \
	"^fsprism stats: database $T/v1.db has schema version 1, this fsprism knows version $VERSION\$" \
	"$FSPRISM" stats "$T/v1.db"
expect_fail "--extents with csv" 2 "^fsprism stats: --extents needs --format table or json\$" \
	"$FSPRISM" stats "$DB" --format csv --extents

echo "not a database, just text, long enough to be looked at as a header......" > "$T/text.db"
expect_fail "not a database" 1 "^fsprism stats: $T/text.db is not a SQLite database\$" \
	"$FSPRISM" stats "$T/text.db"

schema_sql | sqlite3 "$T/empty.db"
expect_fail "database without runs" 1 "^fsprism stats: no runs in $T/empty.db\$" \
	"$FSPRISM" stats "$T/empty.db"

# --- a database written by a real mount -------------------------------------
fsp_need_root
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

	# expected replies: a lookup of a missing name (ENOENT), a getxattr of a
	# missing attribute (ENODATA) answer the question; they are not errors
	mkdir -p "$T/xback" "$T/xmnt"
	if fsp_mount "$T/xback" "$T/xmnt" --log "$T/x.db" --record full; then
		echo data >"$T/xmnt/f"
		for i in 1 2 3 4 5 6 7 8 9 10; do
			stat "$T/xmnt/missing$i" >/dev/null 2>&1
			getfattr -n user.missing$i "$T/xmnt/f" >/dev/null 2>&1
		done
		fsp_umount "$T/xmnt"
		xcsv=$("$FSPRISM" stats "$T/x.db" --format csv)
		col() { # the value of column $1 of op $2's total row
			echo "$xcsv" | awk -F, -v c="$1" -v op="$2" '
				NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i }
				NR > 1 && $3 == op && $4 == "total" { print $k }'
		}
		expect_eq "expected replies: lookups of missing names are no errors" 0 \
			"$(col errors lookup)"
		expect_eq "expected replies: getxattr of missing attributes are no errors" 0 \
			"$(col errors getxattr)"
		n=$(col expected lookup)
		check "expected replies: the 10 missing lookups counted as expected ($n)" \
			[ "${n:-0}" -ge 10 ]
		# (writing the file asks for security.capability too: also ENODATA)
		n=$(col expected getxattr)
		check "expected replies: the 10 missing getxattrs counted as expected ($n)" \
			[ "${n:-0}" -ge 10 ]
		expect_eq "expected replies: the histogram still counts them as ops" \
			"$(sqlite3 "$T/x.db" "SELECT count(*) FROM ops WHERE op=(SELECT op FROM op_names WHERE name='getxattr')")" \
			"$(col count getxattr)"
		expect_eq "expected replies: the rows keep the errno (ENODATA)" "$n" \
			"$(sqlite3 "$T/x.db" "SELECT count(*) FROM ops WHERE result=61 AND op=(SELECT op FROM op_names WHERE name='getxattr')")"
		"$FSPRISM" stats "$T/x.db" --format json | python3 -c '
import json, sys
ops = {o["op"]: o for o in json.load(sys.stdin)["ops"]}
g = ops["getxattr"]
sys.exit(0 if g["errors"] == 0 and g["expected"] >= 10 else 1)' &&
			ok "expected replies: json getxattr errors 0, expected >= 10" ||
			not_ok "expected replies: json getxattr errors/expected"
		"$FSPRISM" stats "$T/x.db" | grep -q "^getxattr .* 0/$n total" &&
			ok "expected replies: the table shows getxattr 0/$n" ||
			not_ok "expected replies: the table shows getxattr 0/$n"
		# the ops table (the FUSE-transport section below is another's)
		wide=$("$FSPRISM" stats "$T/x.db" | sed '/^(latencies/q' | awk 'length > 100' | wc -l)
		expect_eq "expected replies: the ops table still fits 100 columns" 0 "$wide"
	else
		not_ok "fsprism mount for the expected-replies test"
	fi
else
	echo "# fsprism mount not available yet: real-mount part not run"
fi

fsp_done

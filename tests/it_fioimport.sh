#!/bin/sh
# it_fioimport.sh - fio's results in fsprism and fsprism's recordings in
# fio. Import: the installed fio runs two jobs (json+, lat_percentiles=1),
# fsprism import stores them as a run of two steps, and fsprism stats on it
# gives fio's counts and bytes exactly, its max exactly and its percentiles
# within the bins' precision (half a fio bucket: 1/128 of the value); the
# report draws it, also against a run of fsprism's own (--vs); fio
# --client's result (the committed fixture) becomes one run per host, and
# stats of their parent shows them side by side with the fleet's
# percentiles from their merged bins.
# Export: a run recorded with --record=full, exported as a fio iolog v3,
# is replayed by fio with as many IOs as the run recorded, and fsprism's
# own iolog reader reads back the same IOs; a mount's recorded requests
# (files by inode) replayed by fio onto one file (replay_redirect). Bad input: one line, exit 2
# (1 for a file or database that cannot be read or written), no database
# made.
. "$TESTS_SRCDIR/lib.sh"

command -v fio >/dev/null 2>&1 || fsp_skip "fio is not installed"
command -v jq >/dev/null 2>&1 || fsp_skip "jq is not installed"
FIX=$TESTS_SRCDIR/fixtures/fio

# ---- import: fio's percentiles are fsprism's, within the bins' precision ----
cat >"$T/two.fio" <<EOF
[global]
filename=$T/f.dat
size=8M
ioengine=libaio
direct=1
bs=4k
lat_percentiles=1
randseed=7

[rr]
rw=randread
iodepth=4
io_size=4M

[rw]
stonewall
rw=randrw
rwmixread=70
iodepth=2
io_size=2M
EOF
fio --output-format=json+ "$T/two.fio" >"$T/two.json" 2>"$T/two.err"
expect_eq "fio runs" 0 $?
db=$T/i.db
"$FSPRISM" import "$T/two.json" --db "$db" --label fio-here >"$T/import.out"
expect_eq "import exits 0" 0 $?
run=$(sed -n 's/^run \([0-9]*\): fio-3.*, 2 jobs$/\1/p' "$T/import.out")
check "import names the run and its jobs ($(cat "$T/import.out"))" test -n "$run"
"$FSPRISM" stats "$db" --run "${run:-0}" --format json >"$T/stats.json"
expect_eq "stats on the imported run exits 0" 0 $?

# fio's and fsprism's numbers of job J (0, 1), direction D (read, write)
compare_dir() {
	j=$1 d=$2 name=$3
	n_fio=$(jq ".jobs[$j].$d.total_ios" "$T/two.json")
	sel=".ops[] | select(.step == $j and .op == \"$d\")"
	expect_eq "$name $d: fio's count" "$n_fio" "$(jq "$sel | .count" "$T/stats.json")"
	expect_eq "$name $d: fio's bytes" "$(jq ".jobs[$j].$d.io_bytes" "$T/two.json")" \
		"$(jq "$sel | .bytes" "$T/stats.json")"
	expect_eq "$name $d: fio's max (exact)" \
		"$(jq ".jobs[$j].$d.lat_ns.max" "$T/two.json")" \
		"$(jq "$sel | .layers.total.max_us * 1000 | round" "$T/stats.json")"
	for p in 50 90 99 99.9; do
		key=$(printf '%.6f' "$p")
		case $p in 99.9) f=p999_us ;; *) f=p${p}_us ;; esac
		want=$(jq ".jobs[$j].$d.lat_ns.percentile[\"$key\"]" "$T/two.json")
		got=$(jq "$sel | .layers.total.$f * 1000 | round" "$T/stats.json")
		check "$name $d p$p: fsprism ${got} ns, fio ${want} ns, within 1/128" \
			awk -v w="$want" -v g="$got" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d <= w / 128 + 1) }'
	done
}
compare_dir 0 read rr
compare_dir 1 read rw
compare_dir 1 write rw
expect_eq "the steps are fio's jobs" "rr|4096|4|100 rw|4096|2|70" \
	"$(sqlite3 "$db" "SELECT group_concat(label || '|' || block_size || '|' || qd || '|' || read_pct, ' ')
	   FROM (SELECT * FROM steps WHERE run = ${run:-0} ORDER BY step)")"
expect_eq "the run keeps fio's version" "fio-3.33" \
	"$(sqlite3 "$db" "SELECT value FROM run_attrs WHERE run = ${run:-0} AND key = 'fio.version'")"
"$FSPRISM" stats "$db" --run "${run:-0}" >"$T/stats.txt"
check "stats' table shows both steps" sh -c "grep -q 'step 0: rr' '$T/stats.txt' && grep -q 'step 1: rw' '$T/stats.txt'"

# the report, alone and against a run of fsprism's own
"$FSPRISM" report "$db" --run "${run:-0}" -o "$T/fio.html" >/dev/null
expect_eq "report on the imported run exits 0" 0 $?
check "report written" test -s "$T/fio.html"
"$FSPRISM" run sustained-randread "$T/g.dat" --qd=4 --time=0 --bytes=1M --span=8M --db "$db" \
	--quiet --no-trace >/dev/null
own=$(sqlite3 "$db" "SELECT max(id) FROM runs")
"$FSPRISM" report "$db" --run "$own" --vs "${run:-0}" -o "$T/vs.html" >/dev/null
expect_eq "report of fsprism's run against fio's (--vs) exits 0" 0 $?

# fio --client of two servers (the fixture): one run per host, by name
"$FSPRISM" import "$FIX/fio-3.33-clients.json" --db "$db" --label fleet >"$T/clients.out"
expect_eq "clients: import exits 0" 0 $?
expect_eq "clients: a run per host under the fleet's run" "127.0.0.2|run|128 127.0.0.3|run|128" \
	"$(sqlite3 "$db" "SELECT group_concat(r.label || '|' || r.kind || '|' || s.read_ios, ' ')
	   FROM runs r JOIN steps s ON s.run = r.id JOIN runs p ON r.parent = p.id
	   WHERE p.label = 'fleet' AND p.kind = 'fio-clients'")"

# stats of the fleet's run: the hosts side by side, and merged
parent=$(sqlite3 "$db" "SELECT id FROM runs WHERE kind = 'fio-clients' AND label = 'fleet'")
"$FSPRISM" stats "$db" --run "${parent:-0}" --format json >"$T/fleet.json"
expect_eq "clients: stats of the fleet exits 0" 0 $?
expect_eq "clients: a row per host and the fleet's" "127.0.0.2:128 127.0.0.3:128 all hosts:256" \
	"$(jq -r '[.rows[] | "\(.host):\(.count)"] | join(" ")' "$T/fleet.json")"
# the fleet's percentiles are those of the hosts' bins merged, not an average
want=$(python3 - "$FIX/fio-3.33-clients.json" <<'PY'
import json, sys
t = open(sys.argv[1]).read()
d = json.loads(t[t.index("\n{") + 1:])
bins = {}
for j in d["client_stats"]:
    if j["jobname"] == "All clients":
        continue
    for v, n in j["read"]["lat_ns"]["bins"].items():
        bins[int(v)] = bins.get(int(v), 0) + n
total = sum(bins.values())
for q in (0.50, 0.99):
    rank, seen = max(1, -(-int(q * total * 1000) // 1000)), 0
    for v in sorted(bins):
        seen += bins[v]
        if seen >= rank:
            print(v, end=" ")
            break
PY
)
got=$(jq -r '.rows[] | select(.host == "all hosts") | "\(.p50_us * 1000 | round) \(.p99_us * 1000 | round)"' "$T/fleet.json")
check "clients: the fleet's p50 and p99 ($got ns) are the merged bins' ($want ns) within 1/128" \
	awk -v w="$want" -v g="$got" 'BEGIN { split(w, a, " "); split(g, b, " ");
		for (i = 1; i <= 2; i++) { d = a[i] - b[i]; if (d < 0) d = -d; if (!(a[i] > 0 && d <= a[i] / 128 + 1)) exit 1 } }'
"$FSPRISM" stats "$db" --run "${parent:-0}" >"$T/fleet.txt"
check "clients: the table names both hosts and the fleet" sh -c "grep -q '127.0.0.2' '$T/fleet.txt' &&
	grep -q '127.0.0.3' '$T/fleet.txt' && grep -q 'all hosts' '$T/fleet.txt'"
expect_eq "clients: CSV, a row per host and the fleet's after its header" 4 \
	"$("$FSPRISM" stats "$db" --run "${parent:-0}" --format csv | wc -l)"

# ---- import: bad input ----
# refused NAME STATUS FILE [ARGS]: exit STATUS, one line, no database made
refused() {
	name=$1 status=$2
	shift 2
	rm -f "$T/none.db"
	"$FSPRISM" import "$@" --db "$T/none.db" >"$T/out" 2>"$T/err"
	expect_eq "$name: exit $status" "$status" $?
	expect_eq "$name: one line ($(cat "$T/err"))" 1 "$(wc -l <"$T/err")"
	check "$name: no database made" test ! -e "$T/none.db"
}
refused "not fio's JSON" 2 "$FIX/not-fio.json"
refused "not JSON" 2 "$FIX/not-json.json"
refused "truncated" 2 "$FIX/truncated.json"
refused "json without bins" 2 "$FIX/fio-3.33-json.json"
refused "a missing file" 1 "$T/missing.json"
refused "no file" 2
refused "two files" 2 "$FIX/not-fio.json" "$FIX/not-fio.json"
refused "fio 2.x" 2 "$FIX/fio-2.21-version.json"
check "fio 2.x: said so" grep -q "fio version 'fio-2.21' is not supported (fio 3.x)" "$T/err"
"$FSPRISM" import "$T/two.json" --db "$T/no/such/dir/x.db" >/dev/null 2>"$T/err"
expect_eq "an unwritable database: exit 1" 1 $?
expect_eq "an unwritable database: one line" 1 "$(wc -l <"$T/err")"

# ---- export: a recorded run as a fio iolog, replayed by fio ----
edb=$T/e.db
"$FSPRISM" run sustained-randread "$T/e.dat" --qd=4 --time=0 --bytes=512k --span=4M --record=full \
	--db "$edb" --quiet --no-trace >/dev/null
"$FSPRISM" run sustained-seqwrite "$T/e.dat" --qd=2 --time=0 --bytes=1M --span=4M --record=full \
	--db "$edb" --quiet --no-trace >/dev/null
for r in 1 2; do
	"$FSPRISM" export "$edb" --run $r -o "$T/e$r.log"
	expect_eq "export of run $r exits 0" 0 $?
	rows=$(sqlite3 "$edb" "SELECT count(*) FROM ops WHERE run = $r") # an engine run: its IOs
	ios=$(awk 'NF == 5' "$T/e$r.log" | wc -l)
	expect_eq "run $r: an IO line per recorded IO" "$rows" "$ios"
	fio --name=replay --ioengine=libaio --direct=1 --read_iolog="$T/e$r.log" \
		--output-format=json >"$T/replay$r.json" 2>"$T/replay$r.err"
	expect_eq "run $r: fio replays the log" 0 $?
	expect_eq "run $r: fio issues that many IOs" "$ios" \
		"$(jq '.jobs[0].read.total_ios + .jobs[0].write.total_ios' "$T/replay$r.json")"
	"$FSPRISM" replay "$T/e$r.log" --dump >"$T/dump$r" 2>&1
	expect_eq "run $r: fsprism's iolog reader reads it" 0 $?
	expect_eq "run $r: and reads back the same IOs (op, offset, length, time)" \
		"$(awk 'NF == 5 {print $3, $4, $5, $1 * 1000}' "$T/e$r.log")" \
		"$(awk '$1 == "io" {print $6, $8, $9, $2}' "$T/dump$r")"
done
expect_eq "the write run's log writes 1M in 128k writes" 8 "$(awk '$3 == "write"' "$T/e2.log" | wc -l)"
expect_eq "the logs name the run's target" "$T/e.dat" "$(awk 'NF == 5 {print $2}' "$T/e1.log" | sort -u)"

# a mount's recorded requests: files named by inode, sent to one file by fio's replay_redirect
mkdir "$T/back" "$T/mnt"
fsp_capture_daemon_reports
fsp_mount "$T/back" "$T/mnt" --log "$T/m.db" --record=full --no-trace
dd if=/dev/urandom of="$T/mnt/a" bs=64k count=4 conv=fsync status=none
dd if="$T/mnt/a" of=/dev/null bs=64k status=none
fsp_umount "$T/mnt"
"$FSPRISM" export "$T/m.db" -o "$T/m.log"
expect_eq "export of a mount run exits 0" 0 $?
check "the mount's file by its inode" sh -c "awk 'NF == 5 {print \$2}' '$T/m.log' | sort -u | grep -qx 'ino[0-9]*'"
check "its writes, fsync and reads" sh -c "grep -q ' write 0 65536\$' '$T/m.log' &&
	grep -q ' sync 0 0\$' '$T/m.log' && grep -q ' read ' '$T/m.log'"
mios=$(awk 'NF == 5 && ($3 == "read" || $3 == "write")' "$T/m.log" | wc -l)
truncate -s 1M "$T/redirect.dat"
fio --name=replay --ioengine=psync --read_iolog="$T/m.log" --replay_redirect="$T/redirect.dat" \
	--output-format=json >"$T/mreplay.json" 2>"$T/mreplay.err"
expect_eq "fio replays the mount's log onto one file" 0 $?
expect_eq "fio issues its $mios reads and writes" "$mios" \
	"$(jq '.jobs[0].read.total_ios + .jobs[0].write.total_ios' "$T/mreplay.json")"

# ---- export: bad input ----
"$FSPRISM" run sustained-randread "$T/e.dat" --qd=1 --time=0 --bytes=64k --span=4M \
	--db "$edb" --quiet --no-trace >/dev/null
"$FSPRISM" export "$edb" -o "$T/x.log" 2>"$T/err"
expect_eq "export of a run without --record=full: exit 2" 2 $?
check "export of a run without --record=full: said" grep -q "only --record=full keeps every IO" "$T/err"
check "export of a run without --record=full: no file" test ! -e "$T/x.log" -a ! -e "$T/x.log.tmp"
"$FSPRISM" export "$edb" --run 99 2>"$T/err"
expect_eq "export of a missing run: exit 2" 2 $?
"$FSPRISM" export "$T/missing.db" 2>"$T/err"
expect_eq "export of a missing database: exit 1" 1 $?
"$FSPRISM" export "$edb" --format csv 2>"$T/err"
expect_eq "export in another format: exit 2" 2 $?
"$FSPRISM" export "$db" --run "${run:-0}" 2>"$T/err"
expect_eq "export of an imported run (no IOs recorded): exit 2" 2 $?

no_sanitizer_reports # of the daemon, and of every command since it started
fsp_done

#!/bin/sh
# it_compare.sh - `fsprism compare` on the embedded default (temporary image,
# loop device, mkfs, mount, fsprism mount): it finishes, prints the table for
# all three targets and the per-layer split, records the runs with their
# parents, and leaves nothing behind -- after success, after SIGINT at
# different moments, and after bad input. With --cow=always the emu target
# (an emulating fsprism mount with the device as its store) is added, and
# its device-level summary agrees with `fsprism stats` on the same database.
. "$TESTS_SRCDIR/lib.sh"

# compare's temporary directory lives in $T/tmp, so "nothing left behind"
# is: no loop device on a file there, no mount there, an empty directory.
mkdir "$T/tmp"
TMPDIR="$T/tmp"
export TMPDIR
TINY="--size=512M --time=300ms --span=64M"

nothing_left() { fsp_nothing_left "$T/tmp" "$1"; }

q() { sqlite3 "$T/c.db" "$1"; }

# ---- a whole compare at tiny scale ----
# shellcheck disable=SC2086
"$FSPRISM" compare --db "$T/c.db" $TINY --details >"$T/out" 2>"$T/err"
rc=$?
expect_eq "compare exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$T/err"
for t in raw ext4 fsprism; do
	n=$(grep -c "^  $t " "$T/out")
	expect_eq "table has a $t row for each of the 11 mixes" 11 "$n"
done
check "table has ratios to raw" grep -q "x raw" "$T/out"
check "no emu target without --cow/--journal" sh -c "! grep -q '^  emu ' '$T/out'"
check "table has the mean over steps" grep -q "^mean over steps" "$T/out"
for l in "engine (app)" "fuse total" "backing fs" "fsprism"; do
	check "per-layer split has '$l' for reads" grep -q "^  read  *$l" "$T/out"
	check "per-layer split has '$l' for writes" grep -q "^  write  *$l" "$T/out"
done
# the kernel and FUSE transport: measured per IO when the mount traced it,
# else the difference of means
if [ "$(q "SELECT value FROM run_attrs WHERE key='fuse.traced' AND run=(SELECT id FROM runs
	WHERE kind='mount' AND label='fsprism-fuse')")" = 1 ]; then
	check "the FUSE transport is measured in the layers per IO" grep -q "fuse_queue" "$T/out"
	check "... and not estimated as a difference of means" sh -c "! grep -q 'kernel+FUSE' '$T/out'"
else
	check "per-layer split has 'kernel+FUSE' for reads" grep -q "^  read  *kernel+FUSE" "$T/out"
	check "per-layer split has 'kernel+FUSE' for writes" grep -q "^  write  *kernel+FUSE" "$T/out"
fi

cmp=$(q "SELECT id FROM runs WHERE kind='compare'")
expect_eq "one compare run" 1 "$(echo "$cmp" | wc -w)"
expect_eq "three child runs, labelled" "fs fsprism raw" \
	"$(q "SELECT label FROM runs WHERE kind='run' AND parent=$cmp ORDER BY label" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "the fsprism mount run belongs to the compare" "mount|fsprism-fuse" \
	"$(q "SELECT kind, label FROM runs WHERE kind='mount' AND parent=$cmp")"
expect_eq "every child run has 11 steps" "11 11 11" \
	"$(q "SELECT count(*) FROM steps JOIN runs ON runs.id=steps.run WHERE runs.parent=$cmp AND kind='run' GROUP BY run" | tr '\n' ' ' | sed 's/ $//')"
fuse_reads=$(q "SELECT count(*) FROM ops o JOIN runs r ON r.id=o.run WHERE r.parent=$cmp AND r.kind='mount' AND o.op=(SELECT op FROM op_names WHERE name='read')")
if [ "${fuse_reads:-0}" -gt 0 ]; then
	ok "the FUSE log has read ops ($fuse_reads)"
else
	not_ok "the FUSE log of the fsprism target has no read ops"
fi
expect_eq "compare run ended" 1 "$(q "SELECT ended_ns IS NOT NULL FROM runs WHERE id=$cmp")"
nothing_left "after a complete compare"

# ---- the table as JSON and CSV: the numbers the table printed ----
# (stats on the compare run prints what compare --format prints)
"$FSPRISM" stats "$T/c.db" --run "${cmp:-0}" --format json >"$T/c.json"
"$FSPRISM" stats "$T/c.db" --run "${cmp:-0}" --format csv >"$T/c.csv"
same_as_table() { # $1: json or csv; prints "ok N" or what differs
	python3 - "$T/out" "$1" "$T/c.$1" <<'PY'
import csv, json, re, sys
table, fmt, path = sys.argv[1:]
printed, step = {}, None
for line in open(table):
    m = re.match(r"^step (\d+)  (\S+)  \(", line)
    if m:
        step = (int(m.group(1)), m.group(2))
        continue
    m = re.match(r"^  (\S+) +([0-9.]+) +(\S+) +(\S+) +(\S+) +(\S+) +(\S+)$", line)
    if m and step:
        printed[(step, m.group(1))] = m.groups()[1:]
    if line.startswith("mean over"):
        step = None
def row(mbps, x, lat):
    return (mbps, x) + tuple(lat)
def same(p, g):  # a value equals the printed one at the table's precision
    if p == "-" or g is None:
        return p == "-" and g is None
    dec = len(p.split(".")[1]) if "." in p else 0
    return abs(float(p) - g) <= 0.5 * 10 ** -dec + 0.0005  # json/csv: 3 decimals
got = {}
if fmt == "json":
    d = json.load(open(path))
    names = {t["target"]: t["name"] for t in d["targets"]}
    for s in d["steps"]:
        for t, v in s["targets"].items():
            got[((s["step"], s["step_label"]), names[t])] = row(v["mb_per_s"], v["x_raw"],
                [v[k] for k in ("read_p50_us", "read_p99_us", "write_p50_us", "write_p99_us")])
else:
    for r in csv.DictReader(open(path)):
        f = lambda k: float(r[k]) if r[k] else None
        got[((int(r["step"]), r["step_label"]), r["name"])] = row(float(r["mb_per_s"]),
            f("x_raw"), [f(k) for k in ("read_p50_us", "read_p99_us", "write_p50_us", "write_p99_us")])
diff = [k for k in printed if k not in got or not all(map(same, printed[k], got[k]))] + \
       [k for k in got if k not in printed]
print("ok %d" % len(printed) if printed and not diff else
      "differ: %s printed %s got %s" % (diff[:1], printed.get(diff[0]) if diff else None,
                                        got.get(diff[0]) if diff else None))
PY
}
expect_eq "stats --format json of the compare: the printed table's numbers" "ok 33" \
	"$(same_as_table json)"
expect_eq "stats --format csv of the compare: the printed table's numbers" "ok 33" \
	"$(same_as_table csv)"
expect_eq "the csv has a row per step and target, labelled" "33 raw,ext4,fsprism" \
	"$(awk -F, 'NR > 1 { n++; if (!s[$9]++) l = l (l ? "," : "") $9 } END { print n, l }' "$T/c.csv")"
# the child runs' own stats carry their target and step labels
expect_eq "stats csv of a target's run: its target and step labels" "fs mix=100/0" \
	"$("$FSPRISM" stats "$T/c.db" --run "$(q "SELECT id FROM runs WHERE parent=$cmp AND label='fs'")" --format csv |
	   awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { print $c["target"], $c["step_label"] }')"
# up to the diagnosis, which is printed as fsprism diagnose prints it
expect_eq "the report fits 100 columns (table, splits, block, layers per IO)" 0 \
	"$(sed '/^diagnosis of compare run/,$d' "$T/out" | awk 'length > 100' | wc -l)"

# ---- the default screen: the answer first, in one screen ----
# (two rounds, so that the noise rule judges; the default profile)
"$FSPRISM" compare --db "$T/a.db" $TINY --rounds 2 >"$T/aout" 2>"$T/aerr"
rc=$?
expect_eq "default screen: compare exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$T/aerr"
sed 's/^/# /' "$T/aout"
expect_eq "default screen: no line over 100 columns" 0 "$(awk 'length > 100' "$T/aout" | wc -l)"
lines=$(wc -l <"$T/aout")
check "default screen: about one screen ($lines lines, at most 60)" [ "$lines" -le 60 ]
check "default screen: the answer, judged over 2 rounds" grep -q "^the answer (2 rounds; " "$T/aout"
check "default screen: a headline for ext4 against raw" \
	grep -q "^- ext4 \(not \)\?slower than raw at " "$T/aout"
check "default screen: a headline for fsprism against ext4" \
	grep -q "^- fsprism \(not \)\?slower than ext4 at " "$T/aout"
check "default screen: the bathtub line" grep -q "^- \(no \)\?bathtub: " "$T/aout"
expect_eq "default screen: a row per mix" 11 \
	"$(grep -c '^  [0-9]*/[0-9]*  *[0-9.]*[* ]  *[0-9.]*[* ]  *[0-9.]*' "$T/aout")"
check "default screen: the mean and the ratio to raw" grep -q "^  x raw  *1.00 " "$T/aout"
check "default screen: where the details are" grep -q "^  every verdict: fsprism diagnose $T/a.db --run " "$T/aout"
for gone in "per layer" "layers per IO" "diagnosis of compare run" "^step 0 "; do
	check "default screen: no '$gone' (behind --details)" sh -c "! grep -q '$gone' '$T/aout'"
done
# compare's answer is the one diagnose prints, and its owners are the JSON's
a=$(sqlite3 "$T/a.db" "SELECT id FROM runs WHERE kind='compare'")
"$FSPRISM" diagnose "$T/a.db" --run "${a:-0}" >"$T/adx"
sed -n '/^the answer (/,/^diagnosis of compare run/p' "$T/adx" | sed '$d' | sed '$d' >"$T/adx.a"
sed -n '/^the answer (/,/^details: /p' "$T/aout" | sed '$d' | sed '$d' >"$T/aout.a"
check "default screen: the answer as fsprism diagnose prints it" cmp -s "$T/adx.a" "$T/aout.a"
"$FSPRISM" diagnose "$T/a.db" --wide >"$T/adxw"
"$FSPRISM" diagnose "$T/a.db" --format json >"$T/adxj"
r=$(python3 "$TESTS_SRCDIR/answer_check.py" "$T/adxw" "$T/adxj")
case $r in
ok*) ok "default screen: text and JSON name the same owners ($r)" ;;
*) not_ok "default screen: text and JSON name the same owners: $r" ;;
esac
expect_eq "default screen: the JSON has a headline per pair" 2 \
	"$(sqlite3 :memory: "SELECT json_array_length(readfile('$T/adxj'), '\$.answer.headlines')")"
nothing_left "after the default screen"

# ---- --format csv on a pipe, with run's options, status lines ----
# shellcheck disable=SC2086
"$FSPRISM" compare --db "$T/f.db" $TINY --targets raw,fsprism --format csv \
	--record=sample:4 --no-trace --status-interval 0.2 2>&1 >"$T/fout" | cat >"$T/ferr"
expect_eq "compare --format csv: only the csv, a row per step and target" \
	"compare_run,step,step_label 22" \
	"$(head -1 "$T/fout" | cut -d, -f1-3) $(tail -n +2 "$T/fout" | wc -l)"
f=$(sqlite3 "$T/f.db" "SELECT id FROM runs WHERE kind='compare'")
expect_eq "--record=sample:4 reaches every run and the mount" "sample:4 sample:4 sample:4" \
	"$(sqlite3 "$T/f.db" "SELECT record_mode FROM runs WHERE parent=$f ORDER BY id" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "--no-trace: no block request nor FUSE request traced" "0 0" \
	"$(sqlite3 "$T/f.db" "SELECT (SELECT count(*) FROM block_ios) || ' ' || (SELECT count(*) FROM fuse_reqs)")"
n=$(grep -c "^fsprism 2/2, mixed-seq: step [0-9]* ([0-9]* of 11) .* ETA [0-9]*s, all [0-9]*s$" "$T/ferr")
check "status lines on a pipe: the run of all, step numbers, ETA of all ($n)" [ "${n:-0}" -ge 3 ]
check "status lines on a pipe: the raw target's first" \
	grep -q "^raw 1/2, mixed-seq: step 0 (1 of 11) mix=100/0 " "$T/ferr"
check "status lines on a pipe: no carriage return" sh -c "! grep -q \"\$(printf '\\r')\" '$T/ferr'"
"$FSPRISM" compare --db "$T/f.db" $TINY --targets raw >/dev/null 2>"$T/ferr2"
expect_eq "no status lines on a pipe without --status-interval" 0 \
	"$(grep -c 'step [0-9]* (' "$T/ferr2")"
nothing_left "after compare --format csv"

# ---- --cow=always: the emu target is appended ----
# shellcheck disable=SC2086
"$FSPRISM" compare --db "$T/e.db" $TINY --cow=always --details >"$T/eout" 2>"$T/eerr"
rc=$?
expect_eq "compare --cow=always exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$T/eerr"
for t in raw ext4 fsprism emu; do
	n=$(grep -c "^  $t " "$T/eout")
	expect_eq "--cow=always: a $t row for each of the 11 mixes" 11 "$n"
done
check "--cow=always: the emu mount's modes are named" \
	grep -q "^emu: fsprism mount --cow=always --journal=off" "$T/eout"
check "--cow=always: the mean line has emu" grep -q "^mean over steps.* emu [0-9.]* (x" "$T/eout"
check "--cow=always: per-layer split of the emu target" grep -q "^emu target, per layer" "$T/eout"
for l in "store IO" "emulation"; do
	check "emu split has '$l' for writes" \
		sh -c "sed -n '/^emu target, per layer/,\$p' '$T/eout' | grep -q '^  write  *$l'"
done
e=$(sqlite3 "$T/e.db" "SELECT id FROM runs WHERE kind='compare'")
emount=$(sqlite3 "$T/e.db" "SELECT id FROM runs WHERE kind='mount' AND parent=$e AND label='emu-fuse'")
expect_eq "the emu mount run belongs to the compare" 1 "$(echo "$emount" | wc -w)"
expect_eq "the emu child run has 11 steps" 11 \
	"$(sqlite3 "$T/e.db" "SELECT count(*) FROM steps JOIN runs ON runs.id=steps.run WHERE runs.parent=$e AND runs.label='emu'")"
expect_eq "the emu mount used cow=always on compare's loop device" \
	"always|$(sqlite3 "$T/e.db" "SELECT value FROM run_attrs WHERE run=$e AND key='device'")" \
	"$(sqlite3 "$T/e.db" "SELECT (SELECT value FROM run_attrs WHERE run=$emount AND key='emu.cow') || '|' || (SELECT value FROM run_attrs WHERE run=$emount AND key='emu.store')")"

# the device summary against `fsprism stats` of the same mount run
sed -n '/^emu target, device level/,$p' "$T/eout" >"$T/edev"
"$FSPRISM" stats "$T/e.db" --run "${emount:-0}" | sed -n '/^Emulation/,$p' >"$T/estats"
check "--cow=always: the emu device summary is printed" test -s "$T/edev"
check "fsprism stats has an Emulation section for the emu mount" test -s "$T/estats"
for k in data journal metadata checkpoint total; do
	mine=$(sed -n "s/.*write amplification:.* $k \([0-9.-]*\).*/\1/p" "$T/edev")
	theirs=$(awk -v k="$k" '$1 == k { print $4 }' "$T/estats")
	if [ -n "$mine" ] && [ "$mine" = "$theirs" ]; then
		ok "write amplification $k: $mine, as fsprism stats"
	else
		not_ok "write amplification $k: compare '$mine', stats '$theirs'"
	fi
done
total=$(sed -n "s/.*write amplification:.* total \([0-9.]*\).*/\1/p" "$T/edev")
check "--cow=always: total write amplification $total >= 1" \
	awk -v x="${total:-0}" 'BEGIN { exit !(x >= 1) }'
for l in "flushes " "device IOs " "files " "FUA writes "; do
	mine=$(grep "^  $l" "$T/edev")
	theirs=$(grep "^  $l" "$T/estats")
	if [ -n "$mine" ] && [ "$mine" = "$theirs" ]; then
		ok "'$mine' as fsprism stats"
	elif [ "$l" = "FUA writes " ] && [ -z "$mine$theirs" ]; then
		ok "no FUA count in either (the mount did not record dev.fua_writes)"
	else
		not_ok "compare '$mine', stats '$theirs'"
	fi
done
nothing_left "after compare --cow=always"

# ---- Ctrl-C: early (setup / raw run), and with the fsprism mount up ----
interrupt_after() {
	idesc=$1 wait_for=$2; shift 2
	"$FSPRISM" compare --db "$T/i.db" --size=512M --time=2s --span=64M "$@" \
		>"$T/iout" 2>"$T/ierr" &
	pid=$!
	i=0
	case $wait_for in
	fuse)	# until the fsprism mount is up (at most 60 s)
		while ! grep -F "$T/tmp" /proc/mounts | grep -q fuse &&
		      [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do
			sleep 0.1; i=$((i + 1))
		done ;;
	*)	sleep "$wait_for" ;;
	esac
	kill -INT $pid
	wait $pid
	rc=$?
	if [ "$rc" -ne 0 ]; then ok "$idesc: exit status $rc"; else not_ok "$idesc: exit status 0"; fi
	check "$idesc: says it was interrupted" grep -q "interrupted" "$T/ierr"
	nothing_left "$idesc"
}
interrupt_after "SIGINT after 2 s" 2
# only the fsprism target, so that its mount is up within seconds
interrupt_after "SIGINT with the fsprism mount up" fuse --targets fsprism
# the emu target: its mount holds the loop device as its store
interrupt_after "SIGINT with the emu mount up" fuse --targets emu --cow=always
# SIGINT once the second target has finished a few steps: the table says
# "interrupted" where that target stopped and the mean is over the steps
# every target finished, and only those
"$FSPRISM" compare --db "$T/s.db" --size=512M --time=300ms --span=64M --targets raw,fs --details \
	>"$T/sout" 2>"$T/serr" &
pid=$!
i=0
# (a run stores its steps at its end: wait for the fs run's row, then ~3 steps)
while [ "$(sqlite3 "$T/s.db" "SELECT count(*) FROM runs WHERE label='fs'" 2>/dev/null || echo 0)" -lt 1 ] &&
      [ $i -lt 1200 ] && kill -0 $pid 2>/dev/null; do
	sleep 0.1; i=$((i + 1))
done
sleep 3
kill -INT $pid
wait $pid
expect_eq "SIGINT in the fs target: exit status 130" 130 "$?"
expect_eq "SIGINT in the fs target: raw has all 11 steps in the table" 11 "$(grep -c '^  raw ' "$T/sout")"
expect_eq "SIGINT in the fs target: 'interrupted' once, on the fs row where it stopped" 1 \
	"$(grep -c '^  ext4 .*interrupted$' "$T/sout")"
done_fs=$(awk '/^  ext4 / && !/interrupted/ && !/not run/' "$T/sout" | wc -l)
check "SIGINT in the fs target: fs finished some steps, not all ($done_fs)" \
	[ "$done_fs" -ge 1 ] && [ "$done_fs" -lt 11 ]
check "SIGINT in the fs target: the mean says over how many steps" \
	grep -q "^mean over the $done_fs steps every target finished (MB/s):" "$T/sout"
# the mean of raw over exactly those steps, from the table
want=$(awk '/^step / { s = $2 } /^  ext4 / && !/interrupted/ && !/not run/ { f[s] = 1 }
	/^  raw / { r[s] = $2 } END { for (k in f) { t += r[k]; n++ } printf "%.1f", t / n }' "$T/sout")
# (the table's values are rounded to 0.1: their mean is the program's within 0.1)
got=$(sed -n 's/^mean over the .* (MB\/s):  raw \([0-9.]*\) .*/\1/p' "$T/sout")
check "SIGINT in the fs target: raw's mean is over the finished steps only ($got, from the table $want)" \
	awk -v a="${got:-x}" -v b="$want" 'BEGIN { d = a - b; exit !(a != "x" && d <= 0.1001 && d >= -0.1001) }'
nothing_left "SIGINT in the fs target"

# SIGTERM too (what a timeout or systemd sends)
"$FSPRISM" compare --db "$T/t.db" --size=512M --time=2s --span=64M >/dev/null 2>"$T/ierr" &
fsp_term_after 3 $!
expect_eq "SIGTERM: exit status 143 (128 + SIGTERM)" 143 "$rc"
# the running benchmark stops within a second; then compare tears down what it set up
check "SIGTERM: stopped, stored and torn down within 5 s (took $ms ms)" [ "$ms" -lt 5000 ]
expect_eq "SIGTERM: the compare run is marked interrupted" 1 \
	"$(sqlite3 "$T/t.db" "SELECT value FROM run_attrs a JOIN runs r ON r.id=a.run WHERE r.kind='compare' AND a.key='interrupted'")"
nothing_left "SIGTERM"

# ---- bad input: one line, non-zero, nothing set up ----
bad() {
	desc=$1 want=$2; shift 2
	"$FSPRISM" compare --db "$T/b.db" "$@" >"$T/bout" 2>"$T/berr"
	rc=$?
	if [ "$rc" -ne 0 ] && [ "$(wc -l < "$T/berr")" -eq 1 ] &&
	   grep -q "^fsprism compare: .*$want" "$T/berr"; then
		ok "$desc: $(cat "$T/berr")"
	else
		not_ok "$desc: status $rc, message: $(cat "$T/berr")"
	fi
	nothing_left "$desc"
}
bad "missing device" "/nonexistent" --device /nonexistent
bad "unsupported fs" "zfs" --fs zfs
bad "unknown profile" "nosuch" --profile nosuch
bad "unknown parameter" "--bogus" --bogus=1
bad "impossible parameter" "qd" --qd=0
bad "unknown target" "disk" --targets raw,disk
bad "too small image" "--size" --size=1M
bad "bad --cow" "--cow" --cow=sometimes
bad "bad --journal" "--journal" --journal=bogus
bad "bad --alloc" "--alloc" --alloc=best-fit
bad "--cow without the emu target in --targets" "emu" --targets raw,fs --cow=always

# a real device that holds data or is in use is refused before anything runs
D=$(fsp_loop_new 128M)
fsp_track_loop "$D"
mkfs.ext4 -q "$D"
bad "device with ext4" "$D carries an ext4" --device "$D"
mkdir "$T/m"
mount "$D" "$T/m" && fsp_track_mount "$T/m"
bad "mounted device, --destroy-data" "$D is mounted" --device "$D" --destroy-data
umount "$T/m"

# ---- --device: the ext4 on it is overwritten with --destroy-data ----
"$FSPRISM" compare --db "$T/d.db" --device "$D" --destroy-data --targets raw,fs --details \
	--time=200ms --span=32M >"$T/dout" 2>"$T/derr"
rc=$?
expect_eq "compare --device --destroy-data exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$T/derr"
expect_eq "--device: raw and ext4 rows for 11 mixes" "11 11" \
	"$(grep -c "^  raw " "$T/dout") $(grep -c "^  ext4 " "$T/dout")"
check "--device: nothing of compare mounted" sh -c "! grep -q '$D' /proc/mounts"
nothing_left "compare --device"

# ---- --device with the emu target: the device becomes an fsprism store ----
"$FSPRISM" compare --db "$T/d.db" --device "$D" --destroy-data --targets emu --details \
	--journal=ordered --time=200ms --span=32M >"$T/dout" 2>"$T/derr"
rc=$?
expect_eq "compare --device --targets emu exits 0" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$T/derr"
expect_eq "--device: emu rows for 11 mixes" 11 "$(grep -c "^  emu " "$T/dout")"
check "--device: the emu store is the device" grep -q "^  store $D  cow off  journal ordered" "$T/dout"
check "--device: nothing of compare mounted" sh -c "! grep -q '$D' /proc/mounts"
nothing_left "compare --device --targets emu"
# an fsprism store is data too: not overwritten without --destroy-data
bad "device holding an fsprism store" "$D holds an fsprism store" --device "$D" --targets raw

fsp_done

#!/bin/sh
# it_decomp.sh - the layers of each engine IO (docs/prism.md) on real loop
# devices: a compare (raw device, a file of ext4 on it, a file through an
# fsprism mount over that) gives every target its parts, every recorded IO
# is decomposed, the parts' means add up to the total's, the residual of the
# raw and native targets is under 3% and named; through the mount (its FUSE
# transport traced) every part of the path is measured and the residual is
# under 3% too; in a build without eBPF what lies outside the daemon is
# residual no_fuse and nothing else (the 3% check is then skipped, saying
# so). A 100 us delay injected in the daemon's handler is its own part,
# inject, at 100 us +-5% at p50, not in fsprism's own. An emulating
# mount's device part is its store device's requests. Known causes: reads of an unwritten extent make no
# device IO, and the residual says no_block and the device part is 0; once
# written, the same reads have a device part and almost no residual. An IO
# split by the device's request limit is served by all its requests. The
# device's own read time (/sys/block/DEV/stat) agrees with the block queue
# and device parts within 10%. The
# target file's layout is stored before the first step and again after a
# step whose writes converted unwritten extents. A version-3 database from
# before block_ios.tid and file_extents is read as it is and upgraded by a
# command that writes to it.
. "$TESTS_SRCDIR/lib.sh"

command -v mkfs.ext4 >/dev/null || fsp_skip "mkfs.ext4 missing"
mkdir "$T/tmp"
TMPDIR="$T/tmp"
export TMPDIR
DB=$T/d.db
q() { sqlite3 "$DB" "$1"; }

# layers RUN KIND MAXRES: checks of stats' JSON for engine run RUN; prints
# one word per failed check (nothing: all good) and the residual's reasons.
layers() {
	"$FSPRISM" stats "$DB" --run "$1" --format json >"$T/s.json" 2>"$T/s.err" || {
		echo "stats-failed:$(cat "$T/s.err")"; return; }
	recorded=$(q "SELECT count(*) FROM ops WHERE run=$1 AND op IN (SELECT op FROM op_names
		WHERE name IN ('read','write')) AND result=0")
	lost=$(q "SELECT coalesce(sum(value),0) FROM run_attrs WHERE run=$1
		AND key IN ('block.missed','block.dropped_ring')")
	python3 - "$T/s.json" "$2" "$3" "$recorded" "$lost" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
kind, maxres, recorded, lost = sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
L = d.get("layers")
bad = []
if not L or L.get("available") is False:
    print("no-layers:%s" % (L or {}).get("reason")); sys.exit()
if L["target"] != kind: bad.append("target=" + L["target"])
if L["ios"] != recorded: bad.append("ios=%d/recorded=%d" % (L["ios"], recorded))
why = {}
for s in L["steps"]:
    parts = s["parts"]
    total = s["total"]["mean_us"]
    summed = sum(p["mean_us"] for p in parts.values())
    if abs(summed - total) > 0.0005 * (len(parts) + 1):
        bad.append("step%d-%s:sum=%.3f/total=%.3f" % (s["step"], s["op"], summed, total))
    if s["residual_pct"] > maxres:
        bad.append("step%d-%s:residual=%.2f%%" % (s["step"], s["op"], s["residual_pct"]))
    if parts.get("device", {}).get("mean_us", 0) <= 0:
        bad.append("step%d-%s:no-device" % (s["step"], s["op"]))
    if kind != "mount" and s["ios_without_rows"] > lost:
        bad.append("step%d-%s:%d-without-rows/lost=%d" % (s["step"], s["op"], s["ios_without_rows"], lost))
    for k, v in s["residual_why_pct"].items():
        why[k] = max(why.get(k, 0), v)
print(" ".join(bad))
print(" ".join("%s=%.2f" % (k, v) for k, v in sorted(why.items()) if v > 0), file=sys.stderr)
EOF
}

# ---- a compare: every target gets its parts ---------------------------------------
"$FSPRISM" compare --db "$DB" --size=512M --profile sustained-randread --qd=1,32 --details \
	--time=1s --span=64M >"$T/out" 2>"$T/err"
expect_eq "compare exits 0" 0 "$?"
cmp=$(q "SELECT id FROM runs WHERE kind='compare'")
for t in raw fs; do
	run=$(q "SELECT id FROM runs WHERE parent=$cmp AND label='$t'")
	kind=$([ $t = raw ] && echo raw || echo file)
	bad=$(layers "$run" "$kind" 3 2>"$T/why")
	expect_eq "$t target: every IO decomposed, parts add up, residual under 3% ($(cat "$T/why"))" "" "$bad"
	grep -q "^$t target, layers per IO (engine run $run): " "$T/out" \
		&& ok "compare prints the $t target's layers per IO" \
		|| not_ok "compare prints the $t target's layers per IO: $(grep -n 'layers per IO' "$T/out")"
done
run=$(q "SELECT id FROM runs WHERE parent=$cmp AND label='fsprism'")
bad=$(layers "$run" mount 100 2>"$T/why")
expect_eq "fsprism target: every IO decomposed through the mount's rows, parts add up" "" "$bad"
expect_eq "compare stored the layout of the fsprism target's backing file" 1 \
	"$(q "SELECT count(*) > 0 FROM file_extents WHERE run=$run")"
mrun=$(q "SELECT id FROM runs WHERE parent=$cmp AND label='fsprism-fuse'")
# the mount traced its FUSE transport unless eBPF is not in this build (or
# not allowed): then, and only then, the 3% check is skipped
FUSE_TRACED=$(q "SELECT coalesce((SELECT value FROM run_attrs WHERE run=$mrun AND key='fuse.traced'), 0)")
if [ "$FUSE_TRACED" = 1 ]; then
	expect_eq "the mount run holds the FUSE transport's rows" 1 \
		"$(q "SELECT count(*) > 0 FROM fuse_reqs WHERE run=$mrun")"
	bad=$(layers "$run" mount 3 2>"$T/why")
	expect_eq "fsprism target: residual under 3% with the FUSE transport ($(cat "$T/why"))" "" "$bad"
	python3 - "$T/s.json" <<'EOF4' && ok "fsprism target: every part of the mount's path measured" || not_ok "fsprism target: parts missing: $(cat "$T/miss")"
import json, sys
need = ["submit", "fuse_queue", "daemon_recv", "layer", "backing", "block_queue", "device",
        "fuse_reply", "complete"]
miss = ["step%d-%s:%s" % (s["step"], s["op"], k) for s in json.load(open(sys.argv[1]))["layers"]["steps"]
        for k in need if s["parts"].get(k, {}).get("mean_us", 0) <= 0]
open(sys.argv[1].replace("s.json", "miss"), "w").write(" ".join(miss))
sys.exit(1 if miss else 0)
EOF4
else
	skipped "fsprism target: residual under 3%" \
		"the mount did not trace its FUSE transport ($(q "SELECT value FROM run_attrs WHERE run=$mrun AND key='fuse.untraced_reason'"))"
	other=$(tr ' ' '\n' <"$T/why" | grep -v '^no_fuse=' | grep -v '^$' | tr '\n' ' ')
	case " $(cat "$T/why")" in
	*" no_fuse="*) ok "fsprism target: without the FUSE transport the residual is named no_fuse ($(cat "$T/why"))" ;;
	*) not_ok "fsprism target: residual reasons '$(cat "$T/why")', expected no_fuse" ;;
	esac
	# the rest (a request missed by the trace, a gap) stays small
	python3 -c "import sys; v=[float(x.split('=')[1]) for x in sys.argv[1:]]; sys.exit(0 if sum(v) < 3 else 1)" $other \
		&& ok "fsprism target: residual other than no_fuse under 3% ($other)" \
		|| not_ok "fsprism target: residual other than no_fuse: $other"
fi

# ---- a known delay in the daemon's handler ------------------------------------------
# mount --inject 'op=read,delay=100us' (a spin at handler entry, docs/inject.md):
# the delay is its own part, inject, within 5% of 100 us at p50, and taken out
# of fsprism's own time (layer), which moves by less than 5% of the delay.
"$FSPRISM" compare --db "$DB" --targets fsprism --inject 'op=read,delay=100us' --size=512M \
	--profile sustained-randread --qd=1,32 --time=1s --span=64M >"$T/iout" 2>"$T/ierr"
expect_eq "compare --inject exits 0" 0 "$?"
icmp=$(q "SELECT max(id) FROM runs WHERE kind='compare'")
irun=$(q "SELECT id FROM runs WHERE parent=$icmp AND label='fsprism'")
"$FSPRISM" stats "$DB" --run "$irun" --format json >"$T/i.json"
"$FSPRISM" stats "$DB" --run "$run" --format json >"$T/n.json"
recovered=$(python3 - "$T/i.json" "$T/n.json" <<'EOF3'
import json, sys
def step0(f):
    L = json.load(open(f))["layers"]
    return [s for s in L["steps"] if s["step"] == 0 and s["op"] == "read"][0]["parts"]
inj, base = step0(sys.argv[1]), step0(sys.argv[2])
got = inj.get("inject", {}).get("p50_us", 0)
lay, lay0 = inj["layer"]["p50_us"], base["layer"]["p50_us"]
# layer: not the delay's (it would add ~100 us): within 5% of it, 5 us
# (after a 100 us spin the handler's own microsecond can take two, as seen
# under the sanitizers)
ok = abs(got - 100) <= 5 and abs(lay - lay0) <= max(0.05 * lay0, 5.0) and "inject" not in base
print("%s inject p50 %.2f us, layer p50 %.2f us (without the delay %.2f us)" % (
      "recovered" if ok else "not-recovered", got, lay, lay0))
EOF3
)
case $recovered in
recovered*) ok "a 100 us delay injected in the handler is the inject part: $recovered" ;;
*) not_ok "a 100 us delay injected in the handler: $recovered" ;;
esac
bad=$(layers "$irun" mount $([ "$FUSE_TRACED" = 1 ] && echo 3 || echo 100) 2>"$T/why")
expect_eq "with the delay: every IO decomposed, parts add up ($(cat "$T/why"))" "" "$bad"

# ---- the same delay with every thread on one CPU ------------------------------------
# A handler that spins has had more than its share of the CPU, and the
# scheduler lets it wait while the engine polls on (sched_yield does not
# hand the CPU to it): the engine must stop polling then (bench/engine/reap.c,
# FSP_POLL_HELD_NS), or the next request waits in the kernel's FUSE queue
# (p50 +71 us when it did not). Both compares under one taskset: the FUSE
# queue's p50 with the delay within 30 us of it without (under half the
# regression; another process on that CPU raised it by 17 us in a CI run
# with the machine at load 6), the pair taken up to 3 times, each printed,
# the first that holds counting.
one_cpu_pair() {
	cpu=$(($(nproc) - 1))
	for d in none delay; do
		taskset -c "$cpu" "$FSPRISM" compare --db "$DB" --targets fsprism \
			$([ "$d" = delay ] && echo "--inject op=read,delay=100us") --size=512M \
			--profile sustained-randread --qd=1 --time=1s --span=64M >"$T/c1out" 2>"$T/c1err" ||
			not_ok "one CPU, $d: compare failed: $(head -c 300 "$T/c1err")"
		c=$(q "SELECT max(id) FROM runs WHERE kind='compare'")
		"$FSPRISM" stats "$DB" --run "$(q "SELECT id FROM runs WHERE parent=$c AND label='fsprism'")" \
			--format json >"$T/one-$d.json"
	done
	held=$(python3 - "$T/one-none.json" "$T/one-delay.json" <<'EOF5'
import json, sys
def parts(f):
    L = json.load(open(f))["layers"]
    return [s for s in L["steps"] if s["step"] == 0 and s["op"] == "read"][0]["parts"]
a, b = parts(sys.argv[1]), parts(sys.argv[2])
q0, q1 = a["fuse_queue"]["p50_us"], b["fuse_queue"]["p50_us"]
inj = b.get("inject", {}).get("p50_us", 0)
print("%s FUSE queue p50 %.2f -> %.2f us, inject p50 %.2f us" % (
      "kept" if q1 - q0 <= 30 and abs(inj - 100) <= 5 else "held", q0, q1, inj))
EOF5
)
	echo "# one CPU, attempt $1: $held"
}
if [ "$FUSE_TRACED" = 1 ]; then
	for attempt in 1 2 3; do
		one_cpu_pair $attempt
		case $held in kept*) break ;; esac
	done
	case $held in
	kept*) ok "one CPU: the engine's wait does not hold a spinning daemon off: $held" ;;
	*) not_ok "one CPU: the daemon waited for the engine's poll: $held" ;;
	esac
else
	skipped "one CPU: the engine's wait does not hold a spinning daemon off" "no FUSE transport trace"
fi

# ---- an emulating mount: its backing IO is its store's --------------------------------
# 4 KiB random reads at QD1 on --cow=always: each is one read request on the
# store device, in the mount's own trace; the IOs' device part is those
# requests' device time (not that of the disk holding the backing directory,
# which the engine run traces).
"$FSPRISM" compare --db "$DB" --targets emu --cow=always --size=512M \
	--profile sustained-randread --qd=1 --time=1s --span=64M >"$T/eout" 2>"$T/eerr"
expect_eq "compare --targets emu exits 0" 0 "$?"
ecmp=$(q "SELECT max(id) FROM runs WHERE kind='compare'")
erun=$(q "SELECT id FROM runs WHERE parent=$ecmp AND label='emu'")
emnt=$(q "SELECT id FROM runs WHERE parent=$ecmp AND label='emu-fuse'")
if [ "$(q "SELECT coalesce((SELECT value FROM run_attrs WHERE run=$emnt AND key='block.traced'), 0)")" = 1 ]; then
	"$FSPRISM" stats "$DB" --run "$erun" --format json >"$T/e.json"
	store=$(q "SELECT count(*) || ' ' || (avg(complete_ns - issue_ns) / 1000.0) FROM block_ios
		WHERE run=$emnt AND op='read' AND error=0 AND issue_ns BETWEEN
		(SELECT started_ns FROM steps WHERE run=$erun AND step=0) AND
		(SELECT ended_ns FROM steps WHERE run=$erun AND step=0)")
	# a request whose completion the trace missed (block.missed) is no row
	lost=$(q "SELECT coalesce((SELECT value FROM run_attrs WHERE run=$emnt AND key='block.missed'), 0)")
	same=$(python3 - "$T/e.json" $store "$lost" <<'EOF5'
import json, sys
s = [x for x in json.load(open(sys.argv[1]))["layers"]["steps"] if x["step"] == 0 and x["op"] == "read"][0]
n, dev, lost = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
mine = s["parts"].get("device", {}).get("mean_us", 0)
ok = abs(mine - dev) <= 0.02 * dev and 0 <= s["ios"] - n <= lost
print("%s device part %.2f us over %d IOs, the store's %d reads %.2f us (%d missed)" % (
      "same" if ok else "differ", mine, s["ios"], n, dev, lost))
EOF5
)
	case $same in
	same*) ok "emulating mount: the device part is its store's: $same" ;;
	*) not_ok "emulating mount: the device part against its store's requests: $same" ;;
	esac
else
	skipped "emulating mount: the device part is its store's" "the mount's block layer was not traced"
fi

# ---- known causes on a file of ext4 ------------------------------------------------
LOOP=$(fsp_loop_new 256M) || { not_ok "make a loop device"; fsp_done; exit 1; }
fsp_track_loop "$LOOP"
mkfs.ext4 -q -F "$LOOP" >/dev/null 2>&1
mkdir "$T/mnt"
mount "$LOOP" "$T/mnt" && fsp_track_mount "$T/mnt"
run_one() { # ARGS...: fsprism run, sets RUN
	"$FSPRISM" run "$@" --db "$DB" --record=full --quiet >"$T/rout" 2>"$T/rerr"
	RUN=$(sed -n 's/^.*run \([0-9]*\) stored in .*/\1/p' "$T/rout")
	[ -n "$RUN" ] || { not_ok "fsprism run $*: $(cat "$T/rerr")"; RUN=0; }
}
# allocated, never written: fsprism run leaves an existing file's data alone
fallocate -l 16M "$T/mnt/unwritten"
run_one sustained-randread "$T/mnt/unwritten" --qd=1 --time=1s --span=16M --ramp=0
"$FSPRISM" stats "$DB" --run "$RUN" --format json >"$T/u.json"
verdict=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["layers"]["steps"][0]
print("no_block=%d device=%.3f" % (s["residual_why_pct"]["no_block"] >= 95, s["parts"]["device"]["mean_us"]))
' "$T/u.json")
expect_eq "reads of an unwritten extent: residual no_block, no device part" "no_block=1 device=0.000" "$verdict"
expect_eq "the unwritten layout is stored before the first step (flag 0x800)" 1 \
	"$(q "SELECT count(*) > 0 FROM file_extents WHERE run=$RUN AND after_step=-1 AND flags & 2048")"
# the same file written sequentially (a step that writes: the layout again after it)
run_one sustained-seqwrite "$T/mnt/unwritten" --qd=4 --bs=1m --time=1s --span=16M --ramp=0
expect_eq "after the writing step the layout is stored again, converted" "1|0" \
	"$(q "SELECT count(*) > 0, coalesce(sum(flags & 2048), 0) FROM file_extents WHERE run=$RUN AND after_step=0")"
run_one sustained-randread "$T/mnt/unwritten" --qd=1 --time=1s --span=16M --ramp=0
bad=$(layers "$RUN" file 3 2>"$T/why")
expect_eq "the same reads once written: a device part, residual under 3% ($(cat "$T/why"))" "" "$bad"
umount "$T/mnt"

# ---- an IO split by the device's request size limit --------------------------------
wipefs -qa "$LOOP" >/dev/null 2>&1
echo 64 >"/sys/block/${LOOP#/dev/}/queue/max_sectors_kb"
run_one sustained-seqread "$LOOP" --qd=1 --bs=256k --time=1s --span=64M --ramp=0
bad=$(layers "$RUN" raw 3 2>"$T/why")
expect_eq "256 KiB IOs split in 64 KiB requests: decomposed, residual under 3% ($(cat "$T/why"))" "" "$bad"
per_io=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["layers"]["steps"][0]
print(round(s["rows"] / s["ios"], 1))
' "$T/s.json")
expect_eq "each 256 KiB IO is served by its four requests" 4.0 "$per_io"

# ---- the device part against the device's own counters -----------------------------
# /sys/block/DEV/stat's read ticks: the sum over completed reads of the time
# from the request's making (rq->start_time_ns, the trace's queue stamp too)
# to the kernel's accounting in __blk_mq_end_request. The trace ends a
# request at block_rq_complete, which blk_update_request fires before it
# ends the request's bios; the kernel's clock runs on through their
# completion callbacks (the engine's aio completion and its wake-up), so it
# is always a little longer: 2-6 us here on a quiet machine, tens of us on a
# loaded one, whose wake-ups wait. Hence a device whose reads take ~100 us (a
# loop device in direct IO on a file of the disk), not the page cache's
# ~25 us, and up to three measurements: a trace that is off by more than 10%
# is off in all three.
truncate -s 128M "$T/direct.img"
DLOOP=$(losetup --direct-io=on --find --show "$T/direct.img") && fsp_track_loop "$DLOOP"
dd if=/dev/urandom of="$DLOOP" bs=1M count=64 oflag=direct status=none
stat_of() { awk '{ print $1, $4 }' "/sys/block/${DLOOP#/dev/}/stat"; }
tries=""
for try in 1 2 3; do
	before=$(stat_of)
	run_one sustained-randread "$DLOOP" --qd=1 --time=2s --span=64M --ramp=0
	after=$(stat_of)
	"$FSPRISM" stats "$DB" --run "$RUN" --format json >"$T/k.json"
	agree=$(python3 - "$T/k.json" "$before" "$after" <<'EOF2'
import json, sys
s = json.load(open(sys.argv[1]))["layers"]["steps"][0]
b, a = [list(map(int, x.split())) for x in sys.argv[2:4]]
reads, ticks_ms = a[0] - b[0], a[1] - b[1]
kernel = ticks_ms * 1000.0 / reads
mine = s["parts"]["block_queue"]["mean_us"] + s["parts"]["device"]["mean_us"]
print("%s kernel %.1f us/read over %d reads, block_queue+device %.1f us over %d IOs" % (
      "agree" if abs(mine - kernel) <= 0.1 * kernel else "differ", kernel, reads, mine, s["ios"]))
EOF2
)
	tries="$tries${tries:+; }try $try: $agree"
	case $agree in agree*) break ;; esac
done
case $agree in
agree*) ok "device part within 10% of the device's own counters: $tries" ;;
*) not_ok "device part against the device's own counters: $tries" ;;
esac

# ---- a version-3 database from before block_ios.tid --------------------------------
cp "$DB" "$T/old.db"
sqlite3 "$T/old.db" "CREATE TABLE b AS SELECT run, step, dev, sector, bytes, op, flags, tgid,
	queue_ns, insert_ns, issue_ns, complete_ns, error FROM block_ios; DROP TABLE block_ios;
	ALTER TABLE b RENAME TO block_ios; DROP TABLE file_extents;"
DB=$T/old.db
bad=$(layers "$RUN" raw 3 2>"$T/why")
expect_eq "without block_ios.tid and file_extents: still read, decomposed" "" "$bad"
expect_eq "reading did not change it" 0 "$(q "SELECT count(*) FROM pragma_table_info('block_ios') WHERE name='tid'")"
run_one sustained-randread "$LOOP" --qd=1 --time=300ms --span=16M --ramp=0
expect_eq "a run writing to it adds block_ios.tid and file_extents, and fills tid" "1|1|1" \
	"$(q "SELECT (SELECT count(*) FROM pragma_table_info('block_ios') WHERE name='tid'),
		(SELECT count(*) FROM sqlite_master WHERE name='file_extents'),
		(SELECT count(*) > 0 AND count(*) = count(tid) FROM block_ios WHERE run=$RUN)")"

fsp_done

#!/bin/sh
# it_curve.sh - the load curves (docs/profiles.md, "Load curves") at a tiny
# scale: every curve profile through `fsprism compare` on the raw device, the
# native file system, the fsprism mount and the emulated mount; per target
# run 13 steps labelled rate=max, rate=10% .. rate=120%, each rate step asked
# its share of what step 0 achieved, its schedule kept (IOs sent plus those
# left unissued = asked x time), never faster than asked, a step short of its
# rate showing late or unissued IOs, the achieved rate the IOs over the send
# time stored, the lag stored (attributes and the lag histogram), the layer
# split per IO at every rate step with the lag as its own part; on raw and fs
# all but one of the steps up to 30% sent on schedule (lag p50 under 1 ms,
# none unissued), the achieved rates up to 50% printed; --stop-p99 ending the
# curve after the first rate step past the bound, said in the attributes and
# in run's output; compare's answer and stats showing the curve; nothing left
# behind.
#
# How near the asked rate a 100 ms step comes depends on how the machine
# schedules the engine (CI shares two CPUs): the achieved rates are printed
# as TAP comments, and what is asserted holds exactly or, for the schedule
# kept on raw and fs, by the median IO, which a stall of some milliseconds
# does not move.
. "$TESTS_SRCDIR/lib.sh"

# compare's image on a tmpfs: no host disk stalls under the loop device
fsp_tmpdir_tmpfs 640M
TINY="--size=256M --time=100ms --span=32M --rounds 1"
TARGETS=raw,fs,fsprism,emu

expect_eq "profiles lists the four curves" 4 \
	"$("$FSPRISM" profiles | grep -c '^curve-\(randread\|randwrite\|seqread\|seqwrite\) - ')"

# check_curve DB NAME STEPS TARGETS: every engine run of the newest compare in DB.
# python3 prints PASS/FAIL lines, turned into TAP here.
check_curve() {
	python3 - "$1" "$2" "$3" 0.1 "$FSPRISM" "$4" "${5:-0}" >"$T/check.out" 2>&1 <<'EOF'
import json, math, sqlite3, subprocess, sys
db, name, want, secs, fsprism = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
targets = sys.argv[6].split(",")
defer = sys.argv[7] == "1" # a schedule check that fails is tried again (SCHED line)
c = sqlite3.connect(db)
cmp = c.execute("SELECT max(id) FROM runs WHERE kind='compare'").fetchone()[0]
def say(ok, desc):
    print(("PASS " if ok else "FAIL ") + name + ": " + desc)
def attr(run, key):
    r = c.execute("SELECT value FROM run_attrs WHERE run=? AND key=?", (run, key)).fetchone()
    return None if r is None else r[0]
labels = ["rate=max"] + ["rate=%d%%" % p for p in range(10, 130, 10)]
runs = c.execute("SELECT id, label FROM runs WHERE parent=? AND kind='run' ORDER BY id",
                 (cmp,)).fetchall()
say(sorted(l for _, l in runs) == sorted(targets),
    "one engine run per target (%s)" % ",".join(l for _, l in runs))
for run, label in runs:
    steps = c.execute("SELECT step, label, read_ios + write_ios FROM steps WHERE run=? ORDER BY step",
                      (run,)).fetchall()
    say(len(steps) == want, "%s: %d steps (got %d)" % (label, want, len(steps)))
    say([s[1] for s in steps] == labels[:len(steps)], "%s: labels %s" % (label, [s[1] for s in steps]))
    top = float(attr(run, "rate.step.0.achieved_iops") or 0)
    say(top > 0, "%s: step 0 (closed loop) achieved %.0f IOPS" % (label, top))
    sched, below, bad_asked, bad_sched, bad_lag, fast, silent, bad_ach = [], 0, [], [], [], [], [], []
    off_sched = []
    uniform = attr(run, "rate.arrivals") == "uniform"
    # rows lost to full buffers (none expected) would leave the schedule unprovable
    dropped = c.execute("SELECT coalesce(dropped, 0) FROM runs WHERE id=?", (run,)).fetchone()[0]
    if dropped:
        print("# %s: %d op rows dropped: the schedule of each IO not checked" % (label, dropped))
    for step, lab, ios in steps[1:]:
        pct = int(lab[5:-1])
        asked = float(attr(run, "rate.step.%d.asked_iops" % step) or -1)
        ach = float(attr(run, "rate.step.%d.achieved_iops" % step) or -1)
        unissued = int(attr(run, "rate.step.%d.unissued_ios" % step) or -1)
        late = int(attr(run, "rate.step.%d.late_ios" % step) or 0)
        lag50 = attr(run, "rate.step.%d.lag_p50_ns" % step)
        lag99 = attr(run, "rate.step.%d.lag_p99_ns" % step)
        send = attr(run, "rate.step.%d.send_ns" % step)
        if abs(asked - top * pct / 100) > 0.002 * asked + 0.01:
            bad_asked.append("%s: asked %.1f, not %d%% of %.1f" % (lab, asked, pct, top))
        # the schedule: IOs sent + IOs never sent = the IOs due in the step's time
        due = math.ceil(asked * secs - 1e-6)
        if unissued < 0 or abs(ios + unissued - due) > 1:
            bad_sched.append("%s: %d IOs + %d unissued, %d due" % (lab, ios, unissued, due))
        if lag50 is None or lag99 is None or attr(run, "rate.step.%d.late_ios" % step) is None:
            bad_lag.append(lab)
        # the achieved rate as stored: the IOs sent over the send time, at least the step's
        # each IO's intended time (ops.start_ns) is the schedule's own, as the
        # engine computes it from the step's start: none sent early, none skipped
        starts = [r[0] for r in c.execute("SELECT start_ns FROM ops WHERE run=? AND step=? "
                                          "ORDER BY start_ns", (run, step))]
        if uniform and asked > 0 and not dropped:
            period = 1e9 / asked
            off = sum(1 for i, t in enumerate(starts) if t != starts[0] + int(float(i) * period))
            if off or len(starts) != ios:
                off_sched.append("%s: %d of %d rows off the schedule, %d IOs" % (lab, off, len(starts), ios))
        if send is None or int(send) < secs * 1e9 or abs(ach - ios * 1e9 / int(send)) > 0.01 * ach + 0.5:
            bad_ach.append("%s: %.1f stored, %d IOs over %s ns" % (lab, ach, ios, send))
        # never faster than asked (a rate step that ran closed loop would be)
        if ach > asked * 1.001 + 1 / secs:
            fast.append("%s: %.0f of %.0f" % (lab, ach, asked))
        # a step that missed its rate says so: its IOs went out late or not at all
        if ach < 0.99 * asked and late + max(unissued, 0) == 0:
            silent.append("%s: %.0f of %.0f, no IO late" % (lab, ach, asked))
        if pct <= 30:
            below += 1
            if lag50 is not None and int(lag50) < 1000000 and unissued == 0:
                sched.append(lab)
        if pct <= 50:
            print("# %s %s: achieved %.0f of %.0f asked (%.1f%%), lag p50 %.1f us, late %d, unissued %d"
                  % (label, lab, ach, asked, 100 * ach / asked if asked > 0 else 0,
                     int(lag50 or 0) / 1e3, late, unissued))
    if len(steps) > 1:
        say(not bad_asked, "%s: every rate step asked its share of step 0 %s" % (label, "; ".join(bad_asked)))
        say(not bad_sched, "%s: every rate step's IOs sent + unissued = asked x time %s" % (label, "; ".join(bad_sched)))
        say(not bad_lag, "%s: every rate step's lag stored %s" % (label, "; ".join(bad_lag)))
        say(not bad_ach, "%s: every rate step's achieved rate = IOs / send time %s" % (label, "; ".join(bad_ach)))
        say(uniform and not off_sched, "%s: every IO's intended time the uniform schedule's, to the ns %s"
            % (label, "; ".join(off_sched[:3])))
        say(not fast, "%s: no rate step faster than asked %s" % (label, "; ".join(fast)))
        say(not silent, "%s: every rate step short of its rate has late or unissued IOs %s" % (label, "; ".join(silent)))
    if below and label in ("raw", "fs"):
        # the median IO of a step on schedule, at 10-30% of the maximum, far
        # from saturation: a controller that fell behind or sent in bunches
        # misses it at every step; a stall of the machine longer than half a
        # step costs that step (seen here: fs at 10%, lag p50 16 ms). At 40
        # and 50% the maximum measured in step 0 may not hold a second later
        # on a shared machine (raw: lag p50 1.0-1.2 ms, the queue full), so
        # those are printed, as are the FUSE targets, whose daemon shares
        # the two CPUs
        desc = ("%s: sent on schedule (lag p50 under 1 ms, none unissued) at %d of %d steps up to 30%%"
                % (label, len(sched), below))
        if len(sched) >= below - 1 or not defer:
            say(len(sched) >= below - 1, desc)
        else:
            print("SCHED %s|%s" % (label, desc))
    # the lag of each IO as the engine's layer histogram of a rate step
    n = c.execute("SELECT count FROM hist WHERE run=? AND step=1 AND layer=2 AND count > 0", (run,)).fetchall()
    say(len(n) > 0 and n[0][0] > 0, "%s: the lag histogram of step 1 is stored" % label)
    # the layer split per IO at every step (stats "layers", from --record=full):
    # at a rate step the lag is its own part, and the parts' total is the
    # latency from the intended time the engine stored for each IO
    out = subprocess.run([fsprism, "stats", db, "--run", str(run), "--format", "json"],
                         capture_output=True, text=True)
    try:
        lay = json.loads(out.stdout).get("layers") or {}
    except ValueError:
        lay = {}
    bad_split = []
    for step, lab, ios in steps:
        at = [s for s in lay.get("steps", []) if s.get("step") == step and s.get("ios", 0) > 0]
        if not at:
            bad_split.append("%s: none" % lab)
            continue
        n = sum(s["ios"] for s in at)
        mean = sum(s["total"]["mean_us"] * s["ios"] for s in at) / n
        # an engine run's rows are its reads and writes
        db_n, db_mean = c.execute("SELECT count(*), avg(total_ns) / 1e3 FROM ops WHERE run=? AND step=? "
                                  "AND result=0", (run, step)).fetchone()
        if n != db_n or abs(mean - db_mean) > 0.001 * db_mean + 0.01:
            bad_split.append("%s: %d IOs, mean %.3f us; stored %d, %.3f us" % (lab, n, mean, db_n, db_mean))
        if lab != "rate=max" and not all("lag" in s.get("parts", {}) for s in at):
            bad_split.append("%s: no lag part" % lab)
    say(not bad_split, "%s: the layers per IO at every step, the lag its own part at a rate step, "
        "their total the stored latency %s" % (label, "; ".join(bad_split)))
EOF
	grep '^# ' "$T/check.out" >&9
	while IFS= read -r line; do
		case $line in
		PASS\ *) ok "${line#PASS }" ;;
		FAIL\ *) not_ok "${line#FAIL }" ;;
		SCHED\ *) echo "${line#SCHED }" >>"$T/sched.failed" ;;
		esac
	done <"$T/check.out"
	grep -q '^\(PASS\|FAIL\) ' "$T/check.out" || not_ok "$2: the check ran ($(cat "$T/check.out"))"
}

# check_answer NAME DB TARGETS: compare's screen and diagnose's JSON answer
# of a curve: steps named by their rate, IOPS and p99 per target, where the
# latency grew; the JSON's points equal to the runs' stored rates
check_answer() {
	out=$T/$1.out
	check "$1: the answer says it is a load curve" grep -q '^the answer (.*): a load curve' "$out"
	check "$1: the answer's maximum line" grep -q '^- maximum (closed loop): raw [0-9]* IOPS' "$out"
	for r in max 10% 50% 100% 120%; do
		check "$1: the answer's curve row rate=$r (IOPS and p99 per target)" \
			grep -q "^  rate=$r\(  *[0-9][0-9]*[ !]  *[0-9][0-9.]*\)\{$(echo "$3" | tr , '\n' | wc -l)\}\$" "$out"
	done
	check "$1: the answer says where latency grows" \
		grep -q '^  where latency grows: the part of the layer split per IO' "$out"
	check "$1: no MB/s headline across targets' different rates" \
		sh -c "! grep -q 'slower than .* at [0-9]*/13 steps' '$out'"
	"$FSPRISM" diagnose "$2" --format json >"$T/$1.dx.json" 2>"$T/$1.dx.err"
	expect_eq "$1: diagnose --format json exits 0" 0 "$?"
	python3 - "$2" "$T/$1.dx.json" "$3" >"$T/$1.ans" 2>&1 <<'EOF2'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
a = json.load(open(sys.argv[2]))["answer"]
bad = []
for t in sys.argv[3].split(","):
    run = c.execute("SELECT max(id) FROM runs WHERE kind='run' AND label=?", (t,)).fetchone()[0]
    pts = [p for p in a.get("curve", []) if p["target"] == t]
    if len(pts) != 13:
        bad.append("%s: %d points" % (t, len(pts)))
    for p in pts:
        v = c.execute("SELECT value FROM run_attrs WHERE run=? AND key=?",
                      (run, "rate.step.%d.achieved_iops" % p["step"])).fetchone()
        if v is None or abs(float(v[0]) - p["iops"]) > 1e-3 * float(v[0]) or p["p99_us"] <= 0:
            bad.append("%s %s: %s IOPS, stored %s, p99 %s" % (t, p["label"], p["iops"], v, p["p99_us"]))
print("PASS" if not bad else "FAIL " + "; ".join(bad[:5]))
EOF2
	check "$1: diagnose's answer.curve: 13 points per target, the stored IOPS ($(cat "$T/$1.ans"))" \
		grep -q '^PASS$' "$T/$1.ans"
}

# retry_sched PROF: the raw and fs targets whose steps were not sent on
# schedule (a machine busy beyond its two CPUs: seen at load 7, fs's median
# IO 0.9 to 21 ms late at 10-30%) measured again, up to two more compares of
# those targets alone; the last attempt's result is the check's
retry_sched() {
	for a in 2 3; do
		[ -s "$T/sched.failed" ] || return 0
		tg=$(cut -d'|' -f1 "$T/sched.failed" | paste -sd, -)
		echo "# $1: $(cut -d'|' -f2 "$T/sched.failed" | paste -sd';' -): attempt $a of $tg" >&9
		rm -f "$T/sched.failed"
		fsp_compare "$1-$a" "$T/$1-$a.db" --profile "$1" --targets "$tg" $TINY
		check_curve "$T/$1-$a.db" "$1 (attempt $a)" 13 "$tg" "$([ $a -lt 3 ] && echo 1 || echo 0)"
		fsp_nothing_left "$TMPDIR" "$1-$a"
	done
}

# every profile; randwrite on every target with --stop-p99 below
for pt in curve-randread:raw,fs,fsprism,emu curve-seqread:raw,fs,fsprism,emu \
	curve-seqwrite:raw,fs,fsprism,emu; do
	prof=${pt%%:*} targets=${pt#*:}
	cow=; case $targets in *emu*) cow=--cow=always ;; esac
	rm -f "$T/sched.failed"
	fsp_compare "$prof" "$T/$prof.db" --profile "$prof" --targets "$targets" $TINY $cow
	check_curve "$T/$prof.db" "$prof" 13 "$targets" 1
	[ "$prof" = curve-randread ] && check_answer "$prof" "$T/$prof.db" "$targets"
	fsp_nothing_left "$TMPDIR" "$prof"
	retry_sched "$prof"
done

# ---- --stop-p99: a bound every rate step passes ends each curve after step 1 ----
fsp_compare stop "$T/stop.db" --profile curve-randwrite --targets $TARGETS $TINY --cow=always --stop-p99=1us
check_curve "$T/stop.db" "stop-p99" 2 $TARGETS
for label in raw fs fsprism emu; do
	run=$(sqlite3 "$T/stop.db" "SELECT max(id) FROM runs WHERE kind='run' AND label='$label'")
	expect_eq "stop-p99 $label: curve.stopped_after" 1 \
		"$(sqlite3 "$T/stop.db" "SELECT value FROM run_attrs WHERE run=$run AND key='curve.stopped_after'")"
	expect_eq "stop-p99 $label: curve.stop_p99_ns" 1000 \
		"$(sqlite3 "$T/stop.db" "SELECT value FROM run_attrs WHERE run=$run AND key='curve.stop_p99_ns'")"
done
fsp_nothing_left "$TMPDIR" "stop-p99"

# ---- fsprism run's own table, and the stop said in its output ----
F=$T/file
"$FSPRISM" run curve-randread "$F" --db "$T/run.db" --time=100ms --span=16M --no-trace \
	--stop-p99=1us >"$T/run.out" 2>"$T/run.err"
expect_eq "run: exits 0" 0 "$?"
check "run: the curve table (asked, IOPS, lag, late, p99.9)" \
	grep -q '^step  *asked  *IOPS  *lag p50  *lag p99  *lag max  *late  .*p99.9$' "$T/run.out"
check "run: the max step and the 10% step in it" grep -q '^10%  ' "$T/run.out"
check "run: says where the curve stopped" \
	grep -q '^curve stopped after step 1 (rate=10%): p99 .* us > stop-p99 1.0 us$' "$T/run.out"
expect_eq "run: 2 steps stored" 2 "$(sqlite3 "$T/run.db" "SELECT count(*) FROM steps")"
check "stats: a rate step's asked and achieved IOPS" \
	sh -c "'$FSPRISM' stats '$T/run.db' | grep -q '^   asked [0-9]* IOPS, achieved [0-9]*; lag p50 '"
"$FSPRISM" stats "$T/run.db" >"$T/stats.out" 2>&1
check "stats: the load curve's table" \
	grep -q '^  step  *asked  *IOPS  *lag p50  *lag p99  *lag max  *late  .*p99.9$' "$T/stats.out"
check "stats: the curve's rows max and 10% (IOPS, lag, latency from the intended time)" \
	sh -c "grep -q '^  max  *max  *[0-9][0-9]*  *-  *-  *-  *- rd ' '$T/stats.out' &&
	       grep -q '^  10%  *[0-9][0-9]*  *[0-9][0-9]*  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9][0-9]* rd ' '$T/stats.out'"
check "stats: where the curve stopped" grep -q '^  (stopped after step 1: its p99 passed stop-p99)$' "$T/stats.out"
# without the bound: all 13
"$FSPRISM" run curve-randread "$F" --db "$T/run.db" --time=50ms --span=16M --no-trace \
	--quiet >/dev/null 2>"$T/run.err"
expect_eq "run without stop-p99: 13 steps" 13 \
	"$(sqlite3 "$T/run.db" "SELECT count(*) FROM steps WHERE run=(SELECT max(id) FROM runs)")"
# a percentage needs a closed-loop step before it
"$FSPRISM" run curve-randread "$F" --db "$T/run.db" --rate=50% >/dev/null 2>"$T/bad.err"
expect_eq "rate=50% alone: usage error" 2 "$?"
check "rate=50% alone: says why" grep -q 'needs a closed-loop step (max) before it' "$T/bad.err"

fsp_done

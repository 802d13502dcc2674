#!/bin/bash
# bench/decomp-residual.sh - how much of each engine IO the layers per IO
# (docs/prism.md) leave unattributed: runs the default `fsprism compare`
# (or the given compare options) and prints, for every target and step, the
# mean residual as a share of the mean total (the residual's sum over the
# step's IOs / the totals' sum), with its reasons, and whether it is within
# the target of 3%. Needs root (compare makes a loop device).
#
# With --delay D --pairs N: the recovery of a known delay instead. N pairs
# of compares of the fsprism target alone, alternating without and with
# `--inject op=read,delay=D` (so that the machine's drift falls on both
# alike), and per step the p50 of every part of the reads in each round,
# with and without, and the median over the pairs of the difference: the
# delay should be in the inject part (D within 5%), every other part unchanged.
#
# usage: bench/decomp-residual.sh [--keep DB] [COMPARE OPTIONS...]
#        bench/decomp-residual.sh --delay 100us --pairs 3 [COMPARE OPTIONS...]
#   FSPRISM=path/to/fsprism overrides the binary (default ./build/fsprism).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KEEP='' DELAY='' PAIRS=3
bench_options decomp-residual "--keep=KEEP --delay=DELAY --pairs=PAIRS ANY" "$@"
shift "$BENCH_SHIFT"
bench_need decomp-residual
W=$(mktemp -d /var/tmp/fsprism-decomp-residual.XXXXXX)
trap 'rm -rf "$W"' EXIT
DB=${KEEP:-$W/d.db}

if [ -n "$DELAY" ]; then
	echo "# $(date -u +%Y-%m-%dT%H:%MZ) $($FSPRISM version 2>/dev/null | head -1), $(uname -r)"
	echo "# $PAIRS pairs of: fsprism compare --db DB --targets fsprism $* [--inject op=read,delay=$DELAY]"
	for i in $(seq "$PAIRS"); do
		for inj in 0 1; do
			if [ $inj = 1 ]; then set -- "$@" --inject "op=read,delay=$DELAY"; fi
			"$FSPRISM" compare --db "$DB" --targets fsprism "$@" >"$W/out" 2>"$W/err" || {
				cat "$W/err" >&2; exit 1; }
			if [ $inj = 1 ]; then
				n=$#; args=("$@"); set -- "${args[@]:0:$((n - 2))}"
			fi
			cmp=$(sqlite3 "$DB" "SELECT max(id) FROM runs WHERE kind='compare'")
			run=$(sqlite3 "$DB" "SELECT id FROM runs WHERE parent=$cmp AND label='fsprism'")
			"$FSPRISM" stats "$DB" --run "$run" --format json >"$W/s.$i.$inj.json"
		done
	done
	python3 - "$W" "$PAIRS" "$DELAY" <<'PY'
import json, statistics, sys
w, pairs, delay = sys.argv[1], int(sys.argv[2]), sys.argv[3]
asked = float(delay.rstrip("us")) if delay.endswith("us") else float(delay.rstrip("ms")) * 1000
def steps(f):
    return {s["step"]: s for s in json.load(open(f))["layers"]["steps"] if s["op"] == "read"}
runs = [(steps("%s/s.%d.0.json" % (w, i)), steps("%s/s.%d.1.json" % (w, i))) for i in range(1, pairs + 1)]
bad = 0
for step in sorted(runs[0][0]):
    parts = ["total"] + list(runs[0][1][step]["parts"])
    print("step %d (reads): p50 in us per pair, without / with the delay; median difference" % step)
    for p in parts:
        get = lambda s: (s["total"] if p == "total" else s["parts"].get(p, {})).get("p50_us", 0.0)
        cells = ["%8.2f/%-8.2f" % (get(a[step]), get(b[step])) for a, b in runs]
        diff = statistics.median(get(b[step]) - get(a[step]) for a, b in runs)
        base = statistics.median(get(a[step]) for a, _ in runs)
        if p == "inject":
            verdict = "ok" if abs(diff - asked) <= 0.05 * asked else "OFF"
        elif p == "total":
            verdict = "ok" if abs(diff - asked) <= 0.05 * asked else "off"
        else:
            verdict = "ok" if abs(diff) <= max(0.05 * base, 0.05) else "moved"
        bad += verdict == "OFF"
        print("  %-12s %s  %+8.2f  %s" % (p, " ".join(cells), diff, verdict))
sys.exit(1 if bad else 0)
PY
	exit
fi

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $($FSPRISM version 2>/dev/null | head -1), $(uname -r)"
echo "# fsprism compare --db DB $*"
"$FSPRISM" compare --db "$DB" "$@" >"$W/out" 2>"$W/err" || {
	cat "$W/err" >&2; exit 1; }
cmp=$(sqlite3 "$DB" "SELECT max(id) FROM runs WHERE kind='compare'")
printf '%-8s %-5s %-6s %8s %12s %12s %9s  %s\n' target step dir ios "total us" "residual us" share reasons
fails=0
for run in $(sqlite3 "$DB" "SELECT id FROM runs WHERE parent=$cmp AND kind='run' ORDER BY id"); do
	label=$(sqlite3 "$DB" "SELECT label FROM runs WHERE id=$run")
	"$FSPRISM" stats "$DB" --run "$run" --format json >"$W/s.json"
	python3 - "$W/s.json" "$label" <<'PY' || fails=$((fails + 1))
import json, sys
d = json.load(open(sys.argv[1]))
L = d.get("layers")
if not L or L.get("available") is False:
    print("%-8s no layers: %s" % (sys.argv[2], (L or {}).get("reason")))
    sys.exit(1)
bad = 0
for s in L["steps"]:
    why = ", ".join("%s %.2f%%" % (k, v) for k, v in s["residual_why_pct"].items() if v > 0)
    ok = s["residual_pct"] <= 3.0
    bad += not ok
    print("%-8s %-5d %-6s %8d %12.2f %12.3f %8.2f%%  %s%s" % (sys.argv[2], s["step"], s["op"],
          s["ios"], s["total"]["mean_us"], s["parts"]["residual"]["mean_us"], s["residual_pct"],
          why or "-", "" if ok else "  OVER 3%"))
sys.exit(1 if bad else 0)
PY
done
if [ "$fails" -eq 0 ]; then
	echo "# every target and step: mean residual <= 3% of the mean total"
else
	echo "# $fails target(s) with a step over 3% (or no layers)"
fi

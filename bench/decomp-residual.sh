#!/bin/bash
# bench/decomp-residual.sh - how much of each engine IO the layers per IO
# (docs/prism.md) leave unattributed: runs the default `fsprism compare`
# (or the given compare options) and prints, for every target and step, the
# mean residual as a share of the mean total (the residual's sum over the
# step's IOs / the totals' sum), with its reasons, and whether it is within
# the target of 3%. Needs root (compare makes a loop device).
#
# usage: bench/decomp-residual.sh [--keep DB] [COMPARE OPTIONS...]
#   FSPRISM=path/to/fsprism overrides the binary (default ./build/fsprism).
set -euo pipefail

FSPRISM=${FSPRISM:-./build/fsprism}
KEEP=
if [ "${1:-}" = --keep ]; then KEEP=$2; shift 2; fi
[ "$(id -u)" = 0 ] || { echo "decomp-residual: run as root" >&2; exit 1; }
W=$(mktemp -d /var/tmp/fsprism-decomp-residual.XXXXXX)
trap 'rm -rf "$W"' EXIT
DB=${KEEP:-$W/d.db}

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

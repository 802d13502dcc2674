#!/bin/sh
# bench/report-load.sh - how fast a report page becomes usable: writes the
# report of one database with fsprism A (and with fsprism B, if given), then
# loads each page ROUNDS times in headless Chromium at 1400x900, the two
# alternating, and prints per load the time from navigation start to the end
# of the page's scripts (performance.now(), read by a script added after the
# page's own) and the page's element count; then each one's median and the
# ratio of the medians B / A.
#
# usage: bench/report-load.sh [--rounds N] [--run ID] DB
#   FSPRISM=path/to/fsprism (A, default ./build/fsprism), FSPRISM_B=path (B).
# The database is read, never written. docs/results/report-load.md has the
# dated results.
set -eu
. "$(dirname "$0")/lib.sh"

ROUNDS=5 RUN=''
bench_options report-load "--rounds=ROUNDS --run=RUN WORD" "$@"
shift "$BENCH_SHIFT"
[ $# -eq 1 ] || { echo "report-load: give one database (--help)" >&2; exit 2; }
DB=$1
[ -r "$DB" ] || { echo "report-load: cannot read $DB" >&2; exit 1; }
bench_need report-load chromium python3
W=$(mktemp -d /var/tmp/fsprism-report-load.XXXXXX)
trap 'rm -rf "$W"' EXIT INT TERM

# report TAG BINARY: the page, with the measuring script added before </body>
report() {
	# shellcheck disable=SC2086 # --run ID, or nothing
	"$2" report "$DB" ${RUN:+--run "$RUN"} -o "$W/$1.html" >/dev/null
	python3 - "$W/$1.html" "$W/$1.m.html" <<'PY'
import sys
s = open(sys.argv[1]).read()
m = ('<script>document.documentElement.setAttribute("data-measure", '
     'performance.now().toFixed(0) + " " + document.getElementsByTagName("*").length);</script>')
i = s.rindex("</body>")
open(sys.argv[2], "w").write(s[:i] + m + s[i:])
PY
}

# load TAG: "MS ELEMENTS" of one load
load() {
	HOME=$W timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --user-data-dir="$W/profile" --window-size=1400,900 \
		--dump-dom "file://$W/$1.m.html" 2>/dev/null |
		sed -n 's/.*data-measure="\([0-9]*\) \([0-9]*\)".*/\1 \2/p' | head -1
}

median() { sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

TAGS=A
report A "$FSPRISM"
if [ -n "${FSPRISM_B:-}" ]; then
	report B "$FSPRISM_B"
	TAGS="A B"
fi
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
echo "# A: $FSPRISM${FSPRISM_B:+; B: $FSPRISM_B}; report of $DB${RUN:+ --run $RUN}"
echo "# round tool ms elements"
for i in $(seq "$ROUNDS"); do
	for t in $TAGS; do
		r=$(load "$t")
		[ -n "$r" ] || { echo "report-load: the page of $t did not finish loading" >&2; exit 1; }
		echo "$i $t $r" | tee -a "$W/loads"
	done
done
for t in $TAGS; do
	ms=$(awk -v t="$t" '$2 == t { print $3 }' "$W/loads" | median)
	el=$(awk -v t="$t" '$2 == t { print $4 }' "$W/loads" | median)
	echo "$t: median $ms ms, $el elements"
	eval "med_$t=\$ms"
done
if [ -n "${FSPRISM_B:-}" ]; then
	# shellcheck disable=SC2154 # set by the eval above
	awk -v a="$med_A" -v b="$med_B" 'BEGIN { printf "B / A: %.3f\n", b / a }'
fi

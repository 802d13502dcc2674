#!/bin/sh
# it_report.sh - fsprism report: real reports of real runs, rendered in
# headless Chromium. For a database with only a mount run, with only engine
# runs (one overlaid on another with --vs) and for a compare with the
# emulation: no console message, a screenshot of the whole page that is not
# blank, a first screen (1400x900) with the headline and a drawn chart, a
# small page whose numbers tables are made when opened, nothing fetched
# (Chart.js embedded as installed, no http(s) URL elsewhere), and every
# number the charts plotted (read back from the rendered page) equal to
# `fsprism stats --format json` of the same run, the answer's headlines and
# owners equal to `fsprism diagnose --format json`'s. Then bad input: a
# missing run, --vs of another kind, an unwritable output: one line, exit 1,
# nothing written and an existing report left as it was.
. "$TESTS_SRCDIR/lib.sh"

command -v chromium >/dev/null 2>&1 || fsp_skip "chromium is not installed (./setup installs it)"
command -v python3 >/dev/null 2>&1 || fsp_skip "python3 is not installed"
CHARTJS=$("$FSPRISM" report --help | sed -n 's/.*--chartjs FILE *Chart.js to embed (default: \(.*\))$/\1/p')
[ -r "$CHARTJS" ] || fsp_skip "no Chart.js configured ('$CHARTJS'): install libjs-chart.js and configure again"
CHECK="python3 $TESTS_SRCDIR/report_check.py"

# result LINES: the PASS/FAIL lines of report_check.py as TAP
result() {
	while IFS= read -r line; do
		case $line in
		PASS*) ok "$name: ${line#PASS }" ;;
		FAIL*) not_ok "$name: ${line#FAIL }" ;;
		SKIP*) what=${line#SKIP }; skipped "$name: ${what%%:*}" "${what#*: }" ;;
		*) not_ok "$name: report_check.py said: $line" ;;
		esac
	done
}

# render NAME HTML: the page's DOM after its script ran (1400x900), the
# console, a screenshot of the whole page (a window as high as the page, with
# time for the charts drawn as they come on screen), and the DOM of the page
# opened with #open=ID for the first numbers table (NAME.lazy-id)
render() {
	name=$1 page=$2
	profile=$T/chrome-$1
	set -- --headless --disable-gpu --no-sandbox --no-first-run --user-data-dir="$profile" \
		--hide-scrollbars --enable-logging=stderr --v=0
	HOME=$T timeout 120 chromium "$@" --window-size=1400,900 --dump-dom "file://$page" \
		>"$T/$name.dom" 2>"$T/$name.log"
	height=$(sed -n 's/.*<body[^>]* data-height="\([0-9]*\)".*/\1/p' "$T/$name.dom" | head -1)
	HOME=$T timeout 180 chromium "$@" --window-size=1400,"${height:-900}" --virtual-time-budget=5000 \
		--screenshot="$T/$name.png" "file://$page" >/dev/null 2>"$T/$name.log2"
	cat "$T/$name.log2" >>"$T/$name.log"
	grep -o '<details data-numbers="[^"]*"><summary>' "$T/$name.dom" | head -1 | cut -d'"' -f2 >"$T/$name.lazy-id"
	HOME=$T timeout 120 chromium "$@" --window-size=1400,900 --virtual-time-budget=2000 \
		--dump-dom "file://$page#open=$(cat "$T/$name.lazy-id")" >"$T/$name.opened" 2>>"$T/$name.log"
}

# stats_of DB: stats JSON of every run of DB, and diagnose JSON of every
# compare, where report_check.py reads them
stats_of() {
	for r in $(sqlite3 "$1" "SELECT id FROM runs"); do
		"$FSPRISM" stats "$1" --run "$r" --format json >"$T/stats/stats-$r.json"
	done
	for r in $(sqlite3 "$1" "SELECT id FROM runs WHERE kind='compare'"); do
		"$FSPRISM" diagnose "$1" --run "$r" --format json >"$T/stats/diagnose-$r.json"
	done
}

# says NAME DOM TEXT: the rendered page says TEXT (what is missing, instead of an empty chart)
says() {
	if grep -qF "$3" "$2"; then ok "$1: the page says '$3'"
	else not_ok "$1: the page does not say '$3'"; fi
}
# no_chart NAME DOM PREFIX: no chart PREFIX* was drawn
no_chart() {
	if grep -q "<canvas id=\"$3" "$2"; then not_ok "$1: a chart $3* drawn"
	else ok "$1: no chart $3*"; fi
}

# look NAME HTML DB MIN_CHARTS REQUIRED...: render the report and check it
look() {
	name=$1 html=$2 db=$3 min=$4
	shift 4
	rm -rf "$T/stats" && mkdir "$T/stats"
	stats_of "$db"
	render "$name" "$html"
	# (into a file: a pipe into result would count in a subshell)
	$CHECK page "$html" "$T/$name.dom" "$T/$name.log" "$T/$name.png" "$CHARTJS" "$min" \
		>"$T/$name.check" 2>&1
	$CHECK lazy "$T/$name.dom" "$T/$name.opened" "$(cat "$T/$name.lazy-id")" >>"$T/$name.check" 2>&1
	$CHECK numbers "$T/$name.dom" "$T/stats" "$@" >>"$T/$name.check" 2>&1
	result <"$T/$name.check"
}

# bad NAME EXPECTED_STATUS OUT CMD...: one line on stderr, the status, no OUT nor OUT.tmp
bad() {
	name=$1 want=$2 out=$3
	shift 3
	"$@" >"$T/bad.out" 2>"$T/bad.err"
	st=$?
	expect_eq "$name: exit status" "$want" "$st"
	expect_eq "$name: one line on stderr ($(head -c 160 "$T/bad.err"))" 1 "$(wc -l <"$T/bad.err")"
	if [ -e "$out" ] || [ -e "$out.tmp" ]; then not_ok "$name: $out or $out.tmp was written"
	else ok "$name: nothing written"; fi
}

# --- a database with only a mount run ------------------------------------------
mkdir "$T/back" "$T/mnt"
if fsp_mount "$T/back" "$T/mnt" --log "$T/mount.db" --record full; then
	for i in 1 2 3; do
		dd if=/dev/zero of="$T/mnt/f$i" bs=64k count=32 conv=fsync 2>/dev/null
		cat "$T/mnt/f$i" >/dev/null
	done
	fsp_umount "$T/mnt"
	check "mount: report written" "$FSPRISM" report "$T/mount.db" -o "$T/mount.html"
	look mount "$T/mount.html" "$T/mount.db" 3 lat- cdf-mount- heatmap-
	says mount "$T/mount.dom" "No layer split: it is made for the IOs of an engine run"
	no_chart mount "$T/mount.dom" layers-
	no_chart mount "$T/mount.dom" diagnosis-
else
	not_ok "fsprism mount"
fi

# --- only engine runs: run --report, then --vs ----------------------------------
DEV=$(fsp_loop_new 256M) && fsp_track_loop "$DEV" || not_ok "losetup"
TINY="--time=300ms --span=64M --mix=100,50,0 --quiet"
# shellcheck disable=SC2086
if "$FSPRISM" run mixed-seq "$DEV" --db "$T/run.db" $TINY --report "$T/run.html" >"$T/run.out" 2>"$T/run.err" &&
	# shellcheck disable=SC2086
	"$FSPRISM" run mixed-seq "$DEV" --db "$T/run.db" $TINY --bs=64k >>"$T/run.out" 2>>"$T/run.err"; then
	ok "two runs"
	expect_eq "run --report says where the report is" "report written to $T/run.html" \
		"$(grep '^report written' "$T/run.out")"
	look run "$T/run.html" "$T/run.db" 4 curve-total curve-rw lat- cdf-read cdf-write timeline-
	# run records no per-IO rows by default: no layer split, and the page says why
	says run "$T/run.dom" "no layer split: no per-IO rows (record mode hist)"
	no_chart run "$T/run.dom" layers-
	no_chart run "$T/run.dom" diagnosis-
	check "run: report --run 2 --vs 1" "$FSPRISM" report "$T/run.db" --run 2 --vs 1 -o "$T/vs.html"
	look vs "$T/vs.html" "$T/run.db" 4 curve-total curve-rw lat- cdf-read
	if grep -q 'data-chart="ratios"' "$T/vs.dom"; then ok "vs: the table of ratios"
	else not_ok "vs: no table of ratios"; fi
	runs=$(python3 -c 'import json,re,html,sys
d=json.loads(html.unescape(re.search(r"<pre id=\"fsp-plotted\"[^>]*>(.*?)</pre>", open(sys.argv[1]).read(), re.S).group(1)))
print(" ".join(str(r) for r in sorted({x["fsp"]["run"] for x in d["curve-total"]["datasets"]})))' "$T/vs.dom")
	expect_eq "vs: the curve overlays both runs" "1 2" "$runs"
else
	not_ok "fsprism run: $(cat "$T/run.err")"
fi

# --- a compare with the emulation, its own --report ----------------------------
if "$FSPRISM" compare --cow=always --size 1G --db "$T/cmp.db" --time=300ms --mix=100,50,0 --quiet \
	--report "$T/cmp.html" >"$T/cmp.out" 2>"$T/cmp.err"; then
	ok "compare --cow=always --report"
	expect_eq "compare --report says where the report is" "report written to $T/cmp.html" \
		"$(grep '^report written' "$T/cmp.out")"
	look compare "$T/cmp.html" "$T/cmp.db" 12 curve-total curve-rw lat- cdf-read cdf-write wa- \
		blocktimes- block- pattern- heatmap- timeline-read timeline-write diagnosis-1 diagnosis-1-table \
		layers-mid- layers-tail- layers-attr- answer-1 owners-1 partdiff-mid- partdiff-tail-
	# every engine target has its split, and the answer is the page's first section
	for r in $(sqlite3 "$T/cmp.db" "SELECT id FROM runs WHERE parent=1 AND kind='run'"); do
		if grep -q "<canvas id=\"layers-tail-$r\"" "$T/compare.dom"; then ok "compare: layers of run $r"
		else not_ok "compare: no layer split of engine run $r"; fi
	done
	first=$(grep -o '<section [^>]*>' "$T/compare.dom" | head -1)
	expect_eq "compare: the answer at the top" '<section class="sec answer" id="fsp-answer">' "$first"
	if grep -q '<table data-chart="findings-1" class="findings">' "$T/compare.dom"; then
		ok "compare: the findings in one table"
	else not_ok "compare: no table of findings"; fi
else
	not_ok "compare: $(tail -3 "$T/cmp.err")"
fi

# --- a second compare overlaid on the first: targets matched by name -----------
# (two rounds: the page shows the last round's runs, its bathtub the medians)
if "$FSPRISM" compare --targets raw,fs --size 1G --db "$T/cmp.db" --time=300ms --mix=100,50,0 --quiet \
	--rounds 2 >"$T/cmp2.out" 2>"$T/cmp2.err"; then
	second=$(sqlite3 "$T/cmp.db" "SELECT max(id) FROM runs WHERE kind='compare'")
	check "compare --rounds 2: report --run $second" \
		"$FSPRISM" report "$T/cmp.db" --run "$second" -o "$T/rounds.html"
	look rounds "$T/rounds.html" "$T/cmp.db" 6 curve-total curve-rw lat- answer-$second
	got=$(python3 -c 'import json,re,html,sys
d=json.loads(html.unescape(re.search(r"<pre id=\"fsp-plotted\"[^>]*>(.*?)</pre>", open(sys.argv[1]).read(), re.S).group(1)))
c=d["curve-total"]["datasets"]
print(len(c), " ".join(sorted(x["label"] for x in c)), all(x["fsp"].get("answer") for x in c))' "$T/rounds.dom")
	expect_eq "compare --rounds 2: the bathtub has one line per target, the answer's medians" \
		"2 fs raw True" "$got"
	last=$(sqlite3 "$T/cmp.db" "SELECT group_concat(id, ' ') FROM (SELECT max(id) AS id FROM runs
		WHERE parent=$second AND kind='run' GROUP BY label ORDER BY id)")
	got=$(python3 -c 'import json,re,html,sys
d=json.loads(html.unescape(re.search(r"<pre id=\"fsp-plotted\"[^>]*>(.*?)</pre>", open(sys.argv[1]).read(), re.S).group(1)))
print(" ".join(str(r) for r in sorted({x["fsp"]["run"] for x in d["curve-rw"]["datasets"]})))' "$T/rounds.dom")
	expect_eq "compare --rounds 2: the other charts show the last round's runs" "$last" "$got"
	check "compare: report --run $second --vs 1" \
		"$FSPRISM" report "$T/cmp.db" --run "$second" --vs 1 -o "$T/cmpvs.html"
	look cmpvs "$T/cmpvs.html" "$T/cmp.db" 6 curve-total curve-rw lat- cdf-read
	raw1=$(sqlite3 "$T/cmp.db" "SELECT id FROM runs WHERE parent=1 AND label='raw'")
	raw2=$(sqlite3 "$T/cmp.db" "SELECT max(id) FROM runs WHERE parent=$second AND label='raw'")
	got=$(python3 -c 'import json,re,html,sys
d=json.loads(html.unescape(re.search(r"<pre id=\"fsp-plotted\"[^>]*>(.*?)</pre>", open(sys.argv[1]).read(), re.S).group(1)))
print(" ".join(str(r) for r in sorted({x["fsp"]["run"] for x in d["curve-total"]["datasets"] if x["label"].startswith("raw")})))' "$T/cmpvs.dom")
	expect_eq "compare --vs: the raw target of both compares on one curve" "$raw1 $raw2" "$got"
	if grep -q 'data-chart="ratios"' "$T/cmpvs.dom"; then ok "compare --vs: the table of ratios"
	else not_ok "compare --vs: no table of ratios"; fi
else
	not_ok "second compare: $(tail -3 "$T/cmp2.err")"
fi

# --- bad input ------------------------------------------------------------------------
name=bad
bad "missing run" 1 "$T/x.html" "$FSPRISM" report "$T/run.db" --run 99 -o "$T/x.html"
bad "--vs of another kind" 1 "$T/x.html" "$FSPRISM" report "$T/cmp.db" --run 1 --vs 2 -o "$T/x.html"
bad "output in a missing directory" 1 "$T/nodir/x.html" "$FSPRISM" report "$T/run.db" -o "$T/nodir/x.html"
: >"$T/afile"
bad "output under a file" 1 "$T/afile/x.html" "$FSPRISM" report "$T/run.db" -o "$T/afile/x.html"
bad "no output" 2 "$T/x.html" "$FSPRISM" report "$T/run.db"
# a failed write leaves the report that was there as it was
cp "$T/run.html" "$T/keep.html"
bad_keep() {
	"$FSPRISM" report "$T/run.db" --run 1 --chartjs "$T/afile" -o "$T/keep.html" 2>"$T/bad.err"
	expect_eq "not Chart.js: exit 1" 1 $?
	check "not Chart.js: the previous report is untouched" cmp -s "$T/run.html" "$T/keep.html"
	if [ -e "$T/keep.html.tmp" ]; then not_ok "not Chart.js: keep.html.tmp left"
	else ok "not Chart.js: no .tmp left"; fi
}
bad_keep
before=$(sqlite3 "$T/run.db" "SELECT count(*) FROM runs")
bad "run --report into a missing directory" 1 "$T/nodir/r.html" \
	"$FSPRISM" run mixed-seq "$DEV" --db "$T/run.db" --time=100ms --span=64M --quiet --report "$T/nodir/r.html"
expect_eq "run --report refused before the run: no run stored" "$before" \
	"$(sqlite3 "$T/run.db" "SELECT count(*) FROM runs")"

fsp_done

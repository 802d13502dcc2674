#!/bin/sh
# it_bench.sh - the benchmark that puts the job engine beside fio
# (bench/bench-engine.sh): its options and their refusals (exit 2, one line
# naming the problem, nothing created), a short real run over the placement
# axis whose every round and summary cell is printed, a run against another
# build (--base), and a run stopped half-way: the loop device detached, the
# RAM disk and scratch directory removed, the workqueues' CPUs as before.
# And the options every bench script shares (bench/lib.sh): --help, and an
# unknown option refused.
# It checks that the script measures and cleans up, not what it measures:
# the ratios themselves are results (docs/results/engine-vs-fio.md).
FSP_ROOT_LATER=1 # the option checks need no root
. "$TESTS_SRCDIR/lib.sh"

BENCH="sh $TESTS_SRCDIR/../bench/bench-engine.sh"
# only what a case passes counts, not the caller's environment
unset PINS JOBS ROUNDS SECS RAMP SIZE FSPRISM_BASE FSPRISM_ARGS

# the scratch files a run makes; none may outlive it
leftovers() {
	ls -d /tmp/bench-engine.* /dev/shm/bench-engine.* 2>/dev/null
	losetup -a | grep -F /dev/shm/bench-engine. || true
}
before=$(leftovers)

# refused DESC SUBSTRING ARGS...: exit 2, one line with SUBSTRING, nothing made
refused() {
	desc=$1 want=$2; shift 2
	$BENCH "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -qF -- "$want" "$T/err" &&
	   [ ! -s "$T/out" ] && [ "$(leftovers)" = "$before" ]; then
		ok "$desc: exit 2, '$(cat "$T/err")'"
	else
		not_ok "$desc: expected exit 2 and one line with '$want', got exit $rc: '$(cat "$T/err")'"
	fi
}
refused "an unknown option" "unknown option '--bogus'" --bogus "$FSPRISM"
refused "an option without its value" "--pin needs a value" "$FSPRISM" --pin
refused "rounds not a number" "--rounds: 'x'" --rounds x "$FSPRISM"
refused "zero rounds" "--rounds: '0'" --rounds 0 "$FSPRISM"
refused "seconds not a number" "--secs: '1.5'" --secs 1.5 "$FSPRISM"
refused "an unknown placement" "--pin: 'both'" --pin "same,both" "$FSPRISM"
refused "no placement" "--pin: no placement" --pin "" "$FSPRISM"
refused "an unknown job" "--jobs: 'randread-4k-qd64'" --jobs "randread-4k-qd1 randread-4k-qd64" "$FSPRISM"
refused "an unknown job with -huge" "--jobs: 'seqread-1m-qd1-huge'" --jobs seqread-1m-qd1-huge "$FSPRISM"
refused "two binaries" "one FSPRISM binary" "$FSPRISM" "$FSPRISM"

$BENCH --help >"$T/help" 2>"$T/err"
rc=$?
missing=""
for o in --pin --jobs --rounds --secs --ramp --size --base --fsprism-args none same split \
	 randread-4k-qd1 mixrand-4k-qd32 seqwrite-128k-qd32; do
	grep -qF -- "$o" "$T/help" || missing="$missing $o"
done
if [ "$rc" -eq 0 ] && [ ! -s "$T/err" ] && [ -z "$missing" ]; then
	ok "--help: exit 0, every option, placement and job named"
else
	not_ok "--help: exit $rc, missing:$missing"
fi

# Every bench script reads its options through bench/lib.sh: --help prints
# its opening comment (with its usage) and exits 0; an unknown option is one
# line and exit 2, before anything runs. bash: some scripts need it.
for s in "$TESTS_SRCDIR"/../bench/*.sh; do
	name=$(basename "$s")
	[ "$name" != lib.sh ] || continue
	bash "$s" --help >"$T/help" 2>"$T/err"
	rc=$?
	if [ "$rc" -eq 0 ] && [ ! -s "$T/err" ] && grep -q "^bench/$name\|^$name" "$T/help" &&
	   grep -qi "usage\|options" "$T/help"; then
		ok "$name --help: exit 0, its opening comment"
	else
		not_ok "$name --help: exit $rc, '$(head -1 "$T/help")' '$(cat "$T/err")'"
	fi
	# decomp-residual passes what it does not take on to fsprism compare
	[ "$name" != decomp-residual.sh ] || continue
	bash "$s" --bogus-option >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	# the line names the script, with or without its .sh
	line=$(cat "$T/err")
	if [ "$rc" -eq 2 ] && [ "${line#"${name%.sh}"*: }" = "unknown option '--bogus-option' (--help lists them)" ]; then
		ok "$name: an unknown option: exit 2, one line"
	else
		not_ok "$name: an unknown option: exit $rc, '$(cat "$T/err")'"
	fi
done

fsp_need_root
command -v fio >/dev/null && command -v jq >/dev/null || { not_ok "fio and jq are installed"; fsp_done; exit 1; }
WQ_MASK=/sys/devices/virtual/workqueue/cpumask
mask_before=$(cat "$WQ_MASK")
# mask_kept DESC: the workqueues' CPUs as before the runs (put back if not)
mask_kept() {
	expect_eq "$1" "$mask_before" "$(cat "$WQ_MASK")"
	[ "$(cat "$WQ_MASK")" = "$mask_before" ] || echo "$mask_before" >"$WQ_MASK"
}

# summary_ok FILE CELL: one summary row for CELL (nine columns, where a
# round's row has eight) with an IOPS ratio above 0
summary_ok() {
	awk -v c="$2" '$1 == c && NF == 9 { k++; if ($2 + 0 <= 0) bad = 1 }
		END { exit !(k == 1 && !bad) }' "$1"
}

# Two rounds, one job at two placements, options as a user would give them.
$BENCH --rounds 2 --secs 1 --ramp 1s --size 64M --jobs randread-4k-qd1 --pin same,split \
	--fsprism-args --no-trace "$FSPRISM" >"$T/run" 2>"$T/err"
rc=$?
expect_eq "a two-round run exits 0 ($(head -c 300 "$T/err"))" 0 "$rc"
check "its header names the placements and the arguments" \
	grep -q "placements: same split" "$T/run"
check "its header names the arguments given to fsprism" grep -q "with --no-trace" "$T/run"
for cell in randread-4k-qd1@same randread-4k-qd1@split; do
	check "$cell: a row per tool and round, IOPS above 0" \
		awk -v c="$cell" '$1 == c && NF == 8 && $4 + 0 > 0 { n[$3]++ } END { exit !(n["fio"] == 2 && n["fsprism"] == 2) }' "$T/run"
	check "$cell: a summary row with its IOPS ratio" summary_ok "$T/run" "$cell"
done
check "the summary names the cells below 1.0 (or none)" \
	grep -Eq '^# cells with IOPS below 1.00 of fio: (none|.*@(same|split) \([0-9.]+\))$' "$T/run"
mask_kept "the workqueues' CPUs are as before"
expect_eq "nothing is left after the run" "$before" "$(leftovers)"

# Another build where fio was: the same binary on both sides.
$BENCH --rounds 1 --secs 1 --size 64M --jobs randread-4k-qd1 --base "$FSPRISM" "$FSPRISM" \
	>"$T/base" 2>"$T/err"
rc=$?
expect_eq "a run against --base exits 0 ($(head -c 300 "$T/err"))" 0 "$rc"
check "--base: the header says which build stands where fio was" \
	grep -qF "# --base: the 'fio' columns are $FSPRISM" "$T/base"
check "--base: a summary row for the cell" summary_ok "$T/base" randread-4k-qd1@none

# Stopped half-way, while pinned: everything undone all the same.
$BENCH --rounds 4 --secs 2 --size 64M --jobs randread-4k-qd1 --pin split "$FSPRISM" \
	>"$T/stopped" 2>&1 &
pid=$!
sleep 4
kill -TERM "$pid"
wait "$pid"
rc=$?
check "a stopped run exits non-zero (exit $rc)" test "$rc" -ne 0
mask_kept "a stopped run: the workqueues' CPUs are as before"
expect_eq "a stopped run: nothing is left" "$before" "$(leftovers)"

fsp_done

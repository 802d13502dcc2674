#!/bin/bash
# bench/rate-accuracy.sh - how well a rate step of the job engine holds its
# rate and its IOs' intended times (docs/profiles.md, "Load curves"): one
# `fsprism run` per round of 4 KiB random reads at QD16 on an O_DIRECT file
# in /dev/shm (no device in the numbers, only the engine and the machine),
# a closed-loop step (the file's maximum), then one rate step per asked
# rate. Prints per round and rate the achieved rate (IOs over the time they
# took to send, as stored) against the asked one, the lag of the
# submissions behind their intended times (p50, p99, max), the IOs late by
# more than 1 ms and those never sent; then per rate the medians over the
# rounds. What the machine does beside it is in the numbers: run it on an
# idle machine for the engine's own accuracy, on a busy one for CI's.
#
# usage: bench/rate-accuracy.sh [--rounds N] [--time DURATION] [--rates LIST]
#        [--arrivals uniform|poisson]
#   defaults: 3 rounds, 2s a step, rates 100,1000,10000,100000, uniform.
#   FSPRISM=path/to/fsprism overrides the binary (default ./build/fsprism).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROUNDS=3
TIME=2s
RATES=100,1000,10000,100000
ARRIVALS=uniform
bench_options rate-accuracy "--rounds=ROUNDS --time=TIME --rates=RATES --arrivals=ARRIVALS" "$@"
bench_need rate-accuracy python3
case $ROUNDS in '' | *[!0-9]* | 0) echo "rate-accuracy: --rounds takes a whole number above 0" >&2; exit 2 ;; esac
case $RATES in '' | *[!0-9,]* | ,* | *,) echo "rate-accuracy: --rates takes IOPS, comma-separated" >&2; exit 2 ;; esac
case $ARRIVALS in uniform | poisson) ;; *) echo "rate-accuracy: --arrivals is uniform or poisson" >&2; exit 2 ;; esac

W=$(mktemp -d /dev/shm/fsprism-rate-accuracy.XXXXXX)
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

echo "rate-accuracy: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds of" \
	"$TIME steps at $RATES IOPS ($ARRIVALS), $(uname -r)"
for r in $(seq 1 "$ROUNDS"); do
	"$FSPRISM" run curve-randread "$W/file" --db "$W/rate.db" --qd=16 --span=64M \
		--time="$TIME" --rate="max,$RATES" --arrivals="$ARRIVALS" --seed="$r" \
		--record=hist --no-trace --quiet >/dev/null 2>"$W/err" ||
		{ echo "rate-accuracy: round $r: fsprism run failed: $(cat "$W/err")" >&2; exit 1; }
done

python3 - "$W/rate.db" <<'EOF'
import sqlite3, statistics, sys
c = sqlite3.connect(sys.argv[1])
def attr(run, key):
    r = c.execute("SELECT value FROM run_attrs WHERE run=? AND key=?", (run, key)).fetchone()
    return None if r is None else float(r[0])
rows = {}
print("%5s %8s %10s %10s %8s %9s %9s %10s %7s %8s" % ("round", "step", "asked", "achieved",
      "err %", "lag p50", "lag p99", "lag max", "late", "unissued"))
for k, (run,) in enumerate(c.execute("SELECT id FROM runs WHERE kind='run' ORDER BY id").fetchall()):
    steps = c.execute("SELECT step, label FROM steps WHERE run=? ORDER BY step", (run,)).fetchall()
    for step, label in steps:
        asked = attr(run, "rate.step.%d.asked_iops" % step)
        got = attr(run, "rate.step.%d.achieved_iops" % step)
        if asked is None:
            print("%5d %8s %10s %10.0f  (closed loop: the file's maximum at QD16)" % (k + 1, "max", "-", got))
            continue
        v = [attr(run, "rate.step.%d.%s" % (step, n)) for n in
             ("lag_p50_ns", "lag_p99_ns", "lag_max_ns", "late_ios", "unissued_ios")]
        err = 100 * (got / asked - 1)
        rows.setdefault(asked, []).append((err, v[0] / 1e3, v[1] / 1e3, v[2] / 1e3, v[3], v[4]))
        print("%5d %8s %10.0f %10.1f %+8.3f %9.1f %9.1f %10.1f %7.0f %8.0f" %
              (k + 1, label[5:], asked, got, err, v[0] / 1e3, v[1] / 1e3, v[2] / 1e3, v[3], v[4]))
print("\nmedians over the rounds (lag in us):")
print("%10s %8s %9s %9s %10s %7s %8s" % ("asked", "err %", "lag p50", "lag p99", "lag max", "late", "unissued"))
for asked in sorted(rows):
    m = [statistics.median(x[i] for x in rows[asked]) for i in range(6)]
    print("%10.0f %+8.3f %9.1f %9.1f %10.1f %7.0f %8.0f" % (asked, *m))
EOF

#!/bin/sh
# it_fiowrite.sh - the fio job file of a profile (fsprism profiles --fio)
# makes the installed fio run what the profile says, on a loop device: one
# job per step with the step's name and depth, the IO counts the byte
# limit gives, the block size, the offsets inside the span (random: on the
# block grid; sequential: one after the other from the span's start), the
# mix, the idle between steps at least as long as asked, zeros written
# where the pattern says zeros, nothing outside the span; each job's IOs
# read from fio's own write_iolog (and parsed by fsprism's iolog reader),
# and fio's json+ result imported back as a run of those steps.
# Bad input: one line, exit 2, no file left.
. "$TESTS_SRCDIR/lib.sh"

command -v fio >/dev/null 2>&1 || fsp_skip "fio is not installed"
command -v jq >/dev/null 2>&1 || fsp_skip "jq is not installed"

dev=$(fsp_loop_new 64M) || { not_ok "loop device"; fsp_done; exit 1; }
fsp_track_loop "$dev"
M=1048576

# io_lines LOG [ACTION]: the IO lines of a fio iolog v3 (TIME FILE ACTION OFFSET LENGTH)
io_lines() { awk -v a="${2:-}" 'NF == 5 && (a == "" || $3 == a)' "$1"; }

# fio_run NAME: fio on $T/NAME.fio, its json+ in $T/NAME.json
fio_run() {
	if fio --output-format=json+ "$T/$1.fio" >"$T/$1.json" 2>"$T/$1.err"; then
		ok "$1: fio runs the job file"
	else
		not_ok "$1: fio runs the job file: $(head -3 "$T/$1.err")"
	fi
}

# ---- random reads at two depths, a byte limit, a span, an idle between ----
"$FSPRISM" profiles --fio sustained-randread --qd=1,4 --time=0 --bytes=1M --span=16M \
	--offset=4M --idle=200ms --target "$dev" --iolog "$T/rr" -o "$T/rr.fio"
expect_eq "rr: profiles --fio exits 0" 0 $?
fio_run rr
expect_eq "rr: one job per step, the idle between them" "qd=1 fsprism-idle-0 qd=4" \
	"$(jq -r '[.jobs[].jobname] | join(" ")' "$T/rr.json")"
expect_eq "rr: each step's depth" "1 4" \
	"$(jq -r '[.jobs[] | select(.jobname | startswith("qd")) | .["job options"].iodepth] | join(" ")' "$T/rr.json")"
for step in 0 1; do
	log=$T/rr.$step
	expect_eq "rr step $step: 1M in 4k reads: 256 of them" 256 "$(io_lines "$log" read | wc -l)"
	expect_eq "rr step $step: no other IO" 256 "$(io_lines "$log" | wc -l)"
	expect_eq "rr step $step: every read 4096 bytes" "" "$(io_lines "$log" | awk '$5 != 4096')"
	expect_eq "rr step $step: every offset on the 4k grid inside [4M, 20M)" "" \
		"$(io_lines "$log" | awk -v lo=$((4 * M)) -v hi=$((20 * M)) '$4 % 4096 || $4 < lo || $4 + $5 > hi')"
	expect_eq "rr step $step: of the device" "$dev" "$(io_lines "$log" | awk '{print $2}' | sort -u)"
	check "rr step $step: fsprism's iolog reader reads fio's log (256 IOs)" \
		sh -c "'$FSPRISM' replay '$log' --dump | grep -q '^# 256 IOs'"
done
idle_ms=$(jq '.jobs[] | select(.jobname == "fsprism-idle-0") | .job_runtime' "$T/rr.json")
check "rr: the idle job idled at least 200 ms ($idle_ms ms)" test "${idle_ms:-0}" -ge 200

# fio's result back into fsprism: the steps the profile has
db=$T/rr.db
"$FSPRISM" import "$T/rr.json" --db "$db" >"$T/rr.import"
expect_eq "rr: import exits 0" 0 $?
expect_eq "rr: imported as the profile's steps" "0|qd=1|4096|1|100|256|0 1|qd=4|4096|4|100|256|0" \
	"$(sqlite3 "$db" "SELECT group_concat(step || '|' || label || '|' || block_size || '|' || qd || '|' ||
	   read_pct || '|' || read_ios || '|' || write_ios, ' ') FROM (SELECT * FROM steps ORDER BY step)")"

# ---- sequential writes of zeros: in order from the span's start, nothing outside ----
dd if=/dev/urandom of="$dev" bs=1M count=4 oflag=direct status=none
"$FSPRISM" profiles --fio sustained-seqwrite --qd=2 --time=0 --bytes=1M --span=1M --offset=1M \
	--pattern=zeros --target "$dev" --iolog "$T/sw" -o "$T/sw.fio"
fio_run sw
expect_eq "sw: 1M in 128k writes, one after the other from 1M" \
	"$(seq $M 131072 $((2 * M - 1)) | tr '\n' ' ')" \
	"$(io_lines "$T/sw.0" write | awk '{printf "%s ", $4}')"
check "sw: the span is zeros (pattern=zeros)" \
	sh -c "dd if='$dev' bs=1M skip=1 count=1 iflag=direct status=none | cmp -s - /dev/zero -n $M"
check "sw: before the span the random data is untouched" \
	sh -c "! dd if='$dev' bs=1M count=1 iflag=direct status=none | cmp -s - /dev/zero -n $M"
check "sw: after the span too" \
	sh -c "! dd if='$dev' bs=1M skip=2 count=1 iflag=direct status=none | cmp -s - /dev/zero -n $M"

# ---- a mix, sequential, one position per direction ----
"$FSPRISM" profiles --fio mixed-seq --mix=70 --qd=1 --time=0 --bytes=4M --span=8M --offset=0 \
	--duty=100 --target "$dev" --iolog "$T/mx" -o "$T/mx.fio"
fio_run mx
reads=$(io_lines "$T/mx.0" read | wc -l)
writes=$(io_lines "$T/mx.0" write | wc -l)
expect_eq "mx: 4M in 128k IOs: 32 of them" 32 $((reads + writes))
check "mx: 70/30 as fio's rwmixread draws it ($reads reads, $writes writes)" \
	sh -c "[ $reads -ge 16 ] && [ $reads -le 30 ]"
expect_eq "mx: the job says rwmixread=70" 70 \
	"$(jq -r '.jobs[0]["job options"].rwmixread' "$T/mx.json")"
for a in read write; do
	expect_eq "mx: the ${a}s one after the other" "" \
		"$(io_lines "$T/mx.0" $a | awk 'NR > 1 && $4 != prev + 131072 {print} {prev = $4}')"
done

# ---- what fio cannot be told, and bad input: one line, exit 2, nothing written ----
"$FSPRISM" profiles --fio burst-randread --time=0 --target "$dev" -o "$T/bad.fio" 2>"$T/bad.err"
expect_eq "bursts without a time: exit 2" 2 $?
expect_eq "bursts without a time: one line" 1 "$(wc -l <"$T/bad.err")"
check "bursts without a time: no file" test ! -e "$T/bad.fio" -a ! -e "$T/bad.fio.tmp"
"$FSPRISM" profiles --fio curve-randread --target "$dev" -o "$T/bad.fio" 2>"$T/bad.err"
expect_eq "a load curve's rate steps: exit 2" 2 $?
check "a load curve's rate steps: said" grep -q "^fsprism profiles: rate: " "$T/bad.err"
check "a load curve's rate steps: no file" test ! -e "$T/bad.fio" -a ! -e "$T/bad.fio.tmp"
"$FSPRISM" profiles --fio no-such-profile -o "$T/bad.fio" 2>"$T/bad.err"
expect_eq "an unknown profile: exit 2" 2 $?
check "an unknown profile: said" grep -q "unknown profile 'no-such-profile'" "$T/bad.err"
"$FSPRISM" profiles --bs=4k 2>"$T/bad.err"
expect_eq "a parameter without --fio: exit 2" 2 $?
"$FSPRISM" profiles --fio fill --qd=0 2>"$T/bad.err"
expect_eq "a bad parameter: exit 2" 2 $?
check "a bad parameter: named" grep -q "^fsprism profiles: qd: " "$T/bad.err"
"$FSPRISM" profiles --fio fill -o "$T/no/such/dir/x.fio" 2>"$T/bad.err"
expect_eq "an output that cannot be written: exit 1" 1 $?
expect_eq "an output that cannot be written: one line" 1 "$(wc -l <"$T/bad.err")"

fsp_done

# tests/lib.sh - shared helpers for the integration tests (sourced, not run).
#
# Every test works under one temp dir ($T) and registers what it creates
# (mounts, loop devices, daemons) so that cleanup undoes it on any exit,
# failure included. Tests print "ok - ..." / "not ok - ..." lines (TAP:
# automake's TAP driver counts each one) and end with fsp_done, which prints
# the plan and "N passed, N failed" and sets the exit status.

set -u
FSPRISM=${FSPRISM:-$(pwd)/fsprism}
TESTS_BUILDDIR=${TESTS_BUILDDIR:-$(pwd)/tests}
TESTS_SRCDIR=${TESTS_SRCDIR:-$(dirname "$0")}
fsp_pass=0
fsp_fail=0
fsp_mounts=""
fsp_loops=""

# Skip the whole script (TAP: a plan of 0 with the reason).
fsp_skip() {
	echo "1..0 # SKIP $*"
	exit 0
}

# A script whose first part needs no root sets FSP_ROOT_LATER=1 before
# sourcing this file and calls fsp_need_root where the part that needs root
# begins; without root the checks so far count and the rest is skipped.
# Any other script needs root from the start.
fsp_need_root() {
	[ "$(id -u)" = 0 ] && return 0
	echo "# the rest of $0 needs root (FUSE mounts, loop devices): not run"
	# the reports of what ran so far (fsp_capture_daemon_reports)
	[ -z "${FSPRISM_DAEMON_LOG:-}" ] || no_sanitizer_reports
	fsp_done
	exit $?
}
if [ "$(id -u)" != 0 ] && [ "${FSP_ROOT_LATER:-0}" != 1 ]; then
	fsp_skip "$0 needs root (FUSE mounts, loop devices)"
fi

T=$(mktemp -d /tmp/fsprism-test.XXXXXX)

fsp_cleanup() {
	for m in $fsp_mounts; do
		if mountpoint -q "$m" 2>/dev/null; then
			fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	for l in $fsp_loops; do
		losetup -d "$l" 2>/dev/null
	done
	# give daemons a moment to finish flushing before the dir goes away
	sleep 0.2
	rm -rf "$T"
}
trap fsp_cleanup EXIT
trap 'exit 1' INT TERM

# Remember a mountpoint / loop device for cleanup.
fsp_track_mount() { fsp_mounts="$1 $fsp_mounts"; }

# fsp_tmpdir_tmpfs SIZE: TMPDIR (where compare puts its image) becomes a
# tmpfs of SIZE under $T, unmounted at exit: no host disk, whose stalls from
# whatever else the machine runs would be the largest difference between two
# targets, under the loop device.
fsp_tmpdir_tmpfs() {
	mkdir -p "$T/tmp"
	mount -t tmpfs -o size="$1" tmpfs "$T/tmp" && fsp_track_mount "$T/tmp"
	TMPDIR="$T/tmp"
	export TMPDIR
}
fsp_track_loop() { fsp_loops="$1 $fsp_loops"; }

# The TAP lines go to the script's own stdout (fd 9) even from a command
# whose output a test redirects (check "..." cmd >/dev/null).
exec 9>&1
ok() { fsp_pass=$((fsp_pass + 1)); echo "ok - $*" >&9; }
not_ok() { fsp_fail=$((fsp_fail + 1)); echo "not ok - $*" >&9; }
# skipped DESCRIPTION REASON: a check that cannot run here (TAP: a skip, counted in the plan)
skipped() { fsp_pass=$((fsp_pass + 1)); echo "ok - $1 # SKIP $2" >&9; }

# check DESCRIPTION CMD...: runs CMD, ok if it exits 0.
check() {
	desc=$1; shift
	if "$@"; then ok "$desc"; else not_ok "$desc (command: $*)"; fi
}

# expect_eq DESCRIPTION EXPECTED ACTUAL
expect_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1: expected '$2', got '$3'"; fi
}

# Make a loop device over a sparse file of SIZE (e.g. 512M) in $T or $2.
# Prints the device path.
fsp_loop_new() {
	size=$1; dir=${2:-$T}
	img=$(mktemp "$dir/img.XXXXXX")
	truncate -s "$size" "$img"
	dev=$(losetup --find --show "$img") || return 1
	echo "$dev"
}

# fsp_ext4_new SIZE DIR: ext4 on a new loop device of SIZE, mounted at DIR
# (made here), both tracked; the device is in $dev. Without a loop device
# the test cannot go on: not ok, the plan, exit 1.
fsp_ext4_new() {
	dev=$(fsp_loop_new "$1") || { not_ok "loop device"; fsp_done; exit 1; }
	fsp_track_loop "$dev"
	mkfs.ext4 -q "$dev"
	mkdir "$2"
	mount "$dev" "$2" && fsp_track_mount "$2"
}

# fsp_term_after SECONDS PID: SIGTERM to the background job PID after
# SECONDS; sets rc to its exit status and ms to how long it took to exit
# once signalled.
fsp_term_after() {
	sleep "$1"
	t0=$(date +%s%N)
	kill -TERM "$2"
	wait "$2"
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
}

# fsp_mount BACKING MNT [options...]: fsprism mount (daemonized), tracked.
fsp_mount() {
	b=$1; m=$2; shift 2
	fsp_track_mount "$m"
	"$FSPRISM" mount "$@" "$b" "$m"
}

# fsp_umount MNT: fsprism umount (waits until the daemon has stored everything).
fsp_umount() { "$FSPRISM" umount "$1"; }

# A daemonized fsprism's stderr is /dev/null: send its sanitizer reports
# (sanitized builds) and its own stderr to files, which no_sanitizer_reports
# checks and shows.
fsp_capture_daemon_reports() {
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:log_path=$T/asan"; export ASAN_OPTIONS
	UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:log_path=$T/ubsan"; export UBSAN_OPTIONS
	FSPRISM_DAEMON_LOG=$T/daemon.log; export FSPRISM_DAEMON_LOG
}

no_sanitizer_reports() {
	if ls "$T"/asan.* "$T"/ubsan.* >/dev/null 2>&1; then
		not_ok "sanitizer reports:"; cat "$T"/asan.* "$T"/ubsan.* 2>/dev/null | head -60
	else
		ok "no sanitizer reports"
	fi
	if [ -s "$T/daemon.log" ]; then
		echo "# daemon stderr:"; sed 's/^/# /' "$T/daemon.log" | head -40
	fi
}

# fsp_nothing_left DIR DESCRIPTION: ok if no loop device is backed by a file
# under DIR, nothing is mounted under DIR and DIR is empty (DIR itself may be
# a mount, a tmpfs for the images); else not_ok, and what was left is undone
# so that it does not leak into the next case.
fsp_nothing_left() {
	nl_dir=${1%/} nl_desc=$2 # without a trailing /, or "$nl_dir/" matches nothing
	loops=$(losetup -a | grep -F "$nl_dir/" || true)
	mounts=$(grep -F "$nl_dir/" /proc/mounts || true)
	files=$(ls -A "$nl_dir")
	if [ -z "$loops$mounts$files" ]; then
		ok "$nl_desc: nothing left behind"
		return
	fi
	not_ok "$nl_desc: left behind: loops [$loops] mounts [$mounts] files [$files]"
	for m in $(grep -F "$nl_dir/" /proc/mounts | cut -d' ' -f2 | sort -r); do
		umount -l "$m"
	done
	for l in $(losetup -a | grep -F "$nl_dir/" | cut -d: -f1); do
		losetup -d "$l"
	done
	rm -rf "${nl_dir:?}"/* "${nl_dir:?}"/.[!.]*
}

# fsp_compare NAME DB ARGS...: fsprism compare --db DB ARGS, its output in
# $T/NAME.out and $T/NAME.err; checks that it exits 0, and puts its errors
# in the log where it did not.
fsp_compare() {
	fc_name=$1 fc_db=$2
	shift 2
	"$FSPRISM" compare --db "$fc_db" "$@" >"$T/$fc_name.out" 2>"$T/$fc_name.err"
	fc_rc=$?
	expect_eq "$fc_name: compare exits 0" 0 "$fc_rc"
	[ "$fc_rc" -eq 0 ] || cat "$T/$fc_name.err"
}

fsp_done() {
	echo "1..$((fsp_pass + fsp_fail))"
	echo "$fsp_pass passed, $fsp_fail failed"
	[ "$fsp_fail" -eq 0 ]
}

# The pid of the daemon serving MOUNTPOINT, from the pid file fsprism names
# after the mountpoint (every byte but [A-Za-z0-9._] escaped as %XX).
fsp_daemon_pid() {
	name=$(python3 -c 'import re,sys; print(re.sub(r"[^A-Za-z0-9._]", lambda m: "%%%02X" % ord(m.group()), sys.argv[1]))' "$1")
	cat "/run/fsprism/$name.pid" 2>/dev/null
}
